/* SPDX-License-Identifier: MIT */
/*
 * reader.c - lines and exact counts over a pw_recv (pinwheel/reader.h).
 *
 * The reader takes one chunk at a time from its receive and copies from
 * it into the caller's memory. When a read completes in the middle of a
 * chunk, the rest is given back with pw_recv_unread(): a ring buffer's
 * rest moves into the receive's own memory (one copy, at most a
 * buffer), and that memory's chunks are given back by moving an offset,
 * so a buffer of many short lines is copied once, not once per line.
 */
#include <errno.h>
#include <string.h>

#include "pinwheel/reader.h"

void pw_reader_init(struct pw_reader *rd, int fd)
{
	if (!rd)
		return;
	memset(rd, 0, sizeof(*rd));
	pw_recv_init(&rd->rx, fd);
}

/* A chunk to read from: PW_READY with *@res > 0 when one is held, or the
 * receive's 0 (end of stream) or -errno; PW_PENDING. */
static enum pw_poll fill(struct pw_cx *cx, struct pw_reader *rd,
			 pw_time_t deadline, int32_t *res)
{
	if (rd->have) {
		*res = 1;
		return PW_READY;
	}
	if (pw_recv_poll(cx, &rd->rx, deadline, &rd->buf, res) == PW_PENDING)
		return PW_PENDING;
	if (*res > 0) {
		rd->have = true;
		rd->off = 0;
	}
	return PW_READY;
}

/* Take @k bytes of the held chunk; a chunk used up goes back. */
static void take(struct pw_reader *rd, uint32_t k)
{
	rd->off += k;
	if (rd->off == rd->buf.len) {
		pw_net_buf_release(&rd->buf);
		rd->have = false;
	}
}

/* A read completed: give back the rest of the held chunk (kept when the
 * memory for it is lacking: the next read goes on from it). */
static void settle(struct pw_reader *rd)
{
	if (rd->have && !pw_recv_unread(&rd->rx, &rd->buf, rd->off))
		rd->have = false;
}

/* The end of a read: *@res = @v, the progress reset. */
static enum pw_poll done(struct pw_reader *rd, int64_t *res, int64_t v)
{
	if (v != -ETIMEDOUT)
		rd->got = 0;
	settle(rd);
	*res = v;
	return PW_READY;
}

/* Copy up to @cap bytes into @out (stopping after @delim when it is
 * not -1) until @delim, @cap or the stream's end. */
static enum pw_poll read_some(struct pw_cx *cx, struct pw_reader *rd, int delim,
			      char *out, size_t cap, pw_time_t deadline,
			      int64_t *res)
{
	int32_t r;

	for (;;) {
		if (fill(cx, rd, deadline, &r) == PW_PENDING)
			return PW_PENDING;
		if (r == 0)
			return done(rd, res, (int64_t)rd->got);
		if (r < 0)
			return done(rd, res, r);
		const char *p = (const char *)rd->buf.data + rd->off;
		size_t k = rd->buf.len - rd->off;
		const char *q = NULL;

		if (k > cap - rd->got)
			k = cap - rd->got;
		if (delim >= 0 && (q = memchr(p, delim, k)))
			k = (size_t)(q - p) + 1;
		memcpy(out + rd->got, p, k);
		rd->got += k;
		take(rd, (uint32_t)k);
		if (q || rd->got == cap)
			return done(rd, res,
				    q || delim < 0 ? (int64_t)rd->got :
						     -EMSGSIZE);
	}
}

enum pw_poll pw_read_until_poll(struct pw_cx *cx, struct pw_reader *rd,
				int delim, void *out, size_t cap,
				pw_time_t deadline, int64_t *res)
{
	if (!res)
		return PW_READY;
	if (!cx || !rd || !out || !cap || delim < 0 || delim > 255 ||
	    rd->got >= cap) {
		*res = -EINVAL;
		return PW_READY;
	}
	return read_some(cx, rd, delim, out, cap, deadline, res);
}

enum pw_poll pw_read_exact_poll(struct pw_cx *cx, struct pw_reader *rd,
				void *out, size_t n, pw_time_t deadline,
				int64_t *res)
{
	if (!res)
		return PW_READY;
	if (!cx || !rd || (!out && n) || rd->got > n || n > INT64_MAX) {
		*res = -EINVAL;
		return PW_READY;
	}
	if (!n) {
		*res = 0;
		return PW_READY;
	}
	return read_some(cx, rd, -1, out, n, deadline, res);
}

void pw_reader_park(struct pw_reader *rd)
{
	if (!rd)
		return;
	settle(rd);
	pw_recv_park(&rd->rx);
}

void pw_reader_cancel(struct pw_reader *rd)
{
	if (!rd)
		return;
	if (rd->have)
		pw_net_buf_release(&rd->buf);
	rd->have = false;
	rd->got = 0;
	pw_recv_cancel(&rd->rx);
}
