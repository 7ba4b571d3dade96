/* SPDX-License-Identifier: MIT */
/*
 * stream.c - the streaming reader (see pinwheel/file.h): a range of a
 * file read in order with its own read-ahead, @depth reads in flight.
 *
 * The stream's memory (struct pw__fs_stream) holds one slot per read in
 * flight, each an owned pw_op (shard/op_int.h) and its chunk of the one
 * aligned buffer. Slots are used as a ring: [head, head + busy) are in
 * flight or filled, in file order; the chunk handed out last is the slot
 * before head, read into again at the next poll. The memory is counted:
 * one reference for the stream, one per read given up by
 * pw_file_stream_cancel() while in flight, whose final completion drops
 * it (slot_release()); the last reference frees it all. So a stream
 * dropped mid-read never leaves the kernel a freed buffer. With
 * PW_FILE_STREAM_FIXED the buffer is registered with the shard's ring at
 * the first poll (fs/fixed.c) and read with READ_FIXED; the kernel's
 * requests hold the registered pages themselves, so the slot is freed at
 * the cancel even with reads in flight.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/file_int.h"
#include "shard/op_int.h"

struct pw__fs_slot {
	struct pw__op_owned o;
	struct pw__fs_stream *m;
	char *buf;    /* its chunk of m->data */
	uint64_t off; /* the read's offset */
	uint32_t want;
};

struct pw__fs_stream {
	uint32_t refs; /* the stream's, plus one per read given up */
	int fd;
	bool want_fixed;	 /* PW_FILE_STREAM_FIXED, not yet tried */
	char *data;		 /* depth chunks, PW_FILE_ALIGN-aligned */
	size_t bytes;		 /* of data */
	struct pw_file_fixed fx; /* data, registered (index >= 0) or not */
	struct pw__fs_slot slot[];
};

static void stream_put(struct pw__fs_stream *m)
{
	if (--m->refs)
		return;
	pw_file_buf_free(m->data);
	free(m);
}

/* The final completion of a read given up by its stream. */
static void slot_release(struct pw__op_owned *o)
{
	stream_put(pw_container_of(o, struct pw__fs_slot, o)->m);
}

static void slot_prep(struct io_uring_sqe *sqe, void *arg)
{
	struct pw__fs_slot *sl = arg;
	struct pw__fs_stream *m = sl->m;

	if (m->fx.index >= 0)
		io_uring_prep_read_fixed(sqe, m->fd, sl->buf, sl->want, sl->off,
					 m->fx.index);
	else
		io_uring_prep_read(sqe, m->fd, sl->buf, sl->want, sl->off);
}

static bool stream_args_ok(int fd, uint64_t off, uint64_t len, uint32_t chunk,
			   uint32_t depth, unsigned flags)
{
	if (fd < 0 || chunk < PW_FILE_ALIGN || chunk % PW_FILE_ALIGN ||
	    chunk > (64u << 20) || depth < 1 || depth > PW_FILE_STREAM_MAX ||
	    (flags & ~(PW_FILE_STREAM_DIRECT | PW_FILE_STREAM_FIXED)))
		return false;
	/* Direct reads: every offset and length aligned (the last read of
	 * a range to the end of the file is a whole chunk: short at EOF). */
	if ((flags & PW_FILE_STREAM_DIRECT) &&
	    (off % PW_FILE_ALIGN ||
	     (len != PW_FILE_TO_EOF && len % PW_FILE_ALIGN)))
		return false;
	return true;
}

int pw_file_stream_init(struct pw_file_stream *st, int fd, uint64_t off,
			uint64_t len, uint32_t chunk, uint32_t depth,
			unsigned flags)
{
	if (!st || !stream_args_ok(fd, off, len, chunk, depth, flags))
		return -EINVAL;
	if (flags & PW_FILE_STREAM_DIRECT) {
		int err = pw_file_direct(fd, true);
		if (err)
			return err;
	}
	struct pw__fs_stream *m =
		calloc(1, sizeof(*m) + depth * sizeof(m->slot[0]));
	char *data = pw_file_buf_alloc((size_t)chunk * depth);
	if (!m || !data) {
		free(m);
		pw_file_buf_free(data);
		return -ENOMEM;
	}
	m->refs = 1;
	m->fd = fd;
	m->data = data;
	m->bytes = (size_t)chunk * depth;
	m->want_fixed = flags & PW_FILE_STREAM_FIXED;
	m->fx.index = -1;
	for (uint32_t i = 0; i < depth; i++) {
		pw_op_init(&m->slot[i].o.op);
		m->slot[i].o.release = slot_release;
		m->slot[i].m = m;
		m->slot[i].buf = data + (size_t)i * chunk;
	}
	memset(st, 0, sizeof(*st));
	st->m = m;
	pw_sleep_init_at(&st->timer, PW_TIME_NEVER);
	st->fd = fd;
	st->chunk = chunk;
	st->depth = depth;
	st->next = off;
	st->end = len == PW_FILE_TO_EOF || len > UINT64_MAX - off ? UINT64_MAX :
								    off + len;
	return 0;
}

/* Submit reads into the free slots, in file order, up to depth; the
 * first registers the buffers when asked (plain reads if it cannot). */
static void stream_fill(struct pw_cx *cx, struct pw_file_stream *st)
{
	struct pw__fs_stream *m = st->m;

	if (m->want_fixed) {
		m->want_fixed = false;
		if (pw_file_fixed_register(cx, &m->fx, m->data, m->bytes))
			m->fx.index = -1;
	}
	while (!st->eof && st->busy < st->depth && st->next < st->end) {
		struct pw__fs_slot *sl =
			&st->m->slot[(st->head + st->busy) % st->depth];
		uint64_t left = st->end - st->next;
		int32_t v;

		sl->off = st->next;
		sl->want = left < st->chunk ? (uint32_t)left : st->chunk;
		(void)pw_op_poll(cx, &sl->o.op, slot_prep, sl, &v);
		if (sl->o.op.state == PW_OP_IDLE)
			return; /* no SQE this turn: polled again */
		st->next += sl->want;
		st->busy++;
	}
}

enum pw_poll pw_file_stream_poll(struct pw_cx *cx, struct pw_file_stream *st,
				 pw_time_t deadline, struct pw_file_chunk *out,
				 int32_t *res)
{
	if (!res)
		return PW_READY;
	if (!cx || !st || !st->m || !out) {
		*res = -EINVAL;
		return PW_READY;
	}
	st->lent = false; /* the chunk lent last is read into again */
	if (st->err || st->eof) {
		*res = st->err;
		return PW_READY;
	}
	stream_fill(cx, st);
	if (!st->busy) {
		if (st->next < st->end)
			return PW_PENDING; /* no SQE yet: polled next turn */
		*res = 0;
		return PW_READY;
	}
	struct pw__fs_slot *sl = &st->m->slot[st->head];
	int32_t v;
	if (sl->o.op.state != PW_OP_DONE) {
		if (!pw__deadline_passed(cx, &st->timer, deadline))
			return PW_PENDING;
		*res = -ETIMEDOUT; /* the reads stay in flight */
		return PW_READY;
	}
	if (pw_op_poll(cx, &sl->o.op, slot_prep, sl, &v) == PW_PENDING)
		return PW_PENDING; /* out of budget: the chunk waits */
	pw_sleep_cancel(&st->timer);
	st->head = (st->head + 1) % st->depth;
	st->busy--;
	if (v <= 0) {
		/* An error is sticky; 0 is the end of the file. */
		st->err = v;
		st->eof = true;
		*res = v;
		return PW_READY;
	}
	if ((uint32_t)v < sl->want)
		st->eof = true; /* short: the file ends in this chunk */
	out->data = sl->buf;
	out->len = (uint32_t)v;
	out->off = sl->off;
	st->lent = true;
	*res = v;
	return PW_READY;
}

void pw_file_stream_cancel(struct pw_file_stream *st)
{
	if (!st || !st->m)
		return;
	struct pw__fs_stream *m = st->m;

	st->m = NULL;
	st->busy = 0;
	st->lent = false;
	pw_sleep_cancel(&st->timer);
	/* Reads in flight keep their own hold on the registered pages;
	 * the memory itself waits for their final completions. */
	if (m->fx.index >= 0)
		(void)pw_file_fixed_unregister(&m->fx);
	for (uint32_t i = 0; i < st->depth; i++)
		if (pw__op_orphan(&m->slot[i].o))
			m->refs++;
	stream_put(m);
}
