/* SPDX-License-Identifier: MIT */
/*
 * recv.c - the receiving leaf of a connected socket: a multishot recv on
 * the shard's provided-buffer ring, a bounded share of that ring per
 * connection, and memory of its own for a task that cannot read.
 *
 * pw_recv keeps one multishot recv armed with IOSQE_BUFFER_SELECT on the
 * shard's buffer ring. Filled buffers queue in the pw_recv, linked through
 * the ring's next[] array, so a burst of CQEs never needs room in the
 * leaf. The request is re-armed whenever it ends: after ENOBUFS once
 * buffers come back (the shard's starved list), and after a pause: a
 * receive whose queue reaches recv_cap buffers (PW_NET_RECV_SHARE, a few
 * whatever the ring's size) is cancelled, so one reader that falls behind
 * holds a few buffers, never a share that grows with the ring.
 *
 * A task that stops reading for a while (its send waits on a peer that
 * does not read) parks its receive: the queued buffers are copied into
 * memory the leaf owns and go back to the ring at once, and so does
 * every buffer that arrives while parked, until the owned bytes reach
 * recv_cap buffers' worth; then the receive is cancelled and the
 * kernel's socket buffer and TCP's window hold the peer. The copy is
 * paid only when bytes arrive for a task that is not reading, and the
 * ring stays free for the connections that can progress. Owned bytes are
 * handed out before the queue (they are older), in one chunk, and freed
 * once consumed: an idle connection owns nothing. pw_recv_unread() puts
 * the unconsumed tail of a borrowed buffer there too, so a task that
 * stops in the middle of a buffer need not keep it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/fault.h"
#include "net/net_int.h"

void pw_recv_init(struct pw_recv *r, int fd)
{
	if (!r)
		return;
	memset(r, 0, sizeof(*r));
	pw_sleep_init_at(&r->timer, PW_TIME_NEVER);
	r->fd = fd; /* starved stays NULL (unlinked): the leaf may be copied */
}

/* ---- the leaf's own memory -------------------------------------------- */

static uint32_t own_waiting(const struct pw_recv *r)
{
	return r->own_len - r->own_off;
}

/* Move @r's waiting bytes into a block of at least @cap bytes, @front
 * bytes free before them. 0 or -ENOMEM (nothing changed). */
static int own_grow(struct pw_recv *r, uint32_t cap, uint32_t front)
{
	uint32_t wait = own_waiting(r), size = 4096;
	char *p;

	while (size < cap)
		size *= 2;
	p = pw__fault_malloc(PW__FAULT_NET, size);
	if (!p)
		return -ENOMEM;
	if (wait)
		memcpy(p + front, r->own + r->own_off, wait);
	free(r->own);
	r->own = p;
	r->own_cap = size;
	r->own_off = front;
	r->own_len = front + wait;
	return 0;
}

/* Append @len bytes after the waiting ones. 0 or -ENOMEM. */
static int own_append(struct pw_recv *r, const void *data, uint32_t len)
{
	if (r->own_len + len > r->own_cap) {
		uint32_t wait = own_waiting(r);

		if (wait + len <= r->own_cap) {
			memmove(r->own, r->own + r->own_off, wait);
			r->own_off = 0;
			r->own_len = wait;
		} else if (own_grow(r, wait + len, 0)) {
			return -ENOMEM;
		}
	}
	memcpy(r->own + r->own_len, data, len);
	r->own_len += len;
	return 0;
}

/* Put @len bytes before the waiting ones. 0 or -ENOMEM. */
static int own_prepend(struct pw_recv *r, const void *data, uint32_t len)
{
	if (r->own_off < len && own_grow(r, own_waiting(r) + len, len))
		return -ENOMEM;
	r->own_off -= len;
	memcpy(r->own + r->own_off, data, len);
	return 0;
}

/* The chunk handed out last is consumed; free the memory once nothing
 * waits. */
static void own_settle(struct pw_recv *r)
{
	if (r->own_lent_end) {
		r->own_off = r->own_lent_end;
		r->own_lent_end = 0;
	}
	if (r->own && r->own_off == r->own_len) {
		free(r->own);
		r->own = NULL;
		r->own_off = r->own_len = r->own_cap = 0;
	}
}

/* A leaf's share in bytes: the owned bytes at which a parked receive
 * stops the kernel's receive, and the most one arming may deliver. */
static uint32_t park_max(const struct pw__net *n)
{
	return n->recv_cap * n->cfg.buf_size;
}

/* The bytes @r holds: owned, and queued ring buffers counted whole. */
static uint32_t recv_held(const struct pw__net *n, const struct pw_recv *r)
{
	return own_waiting(r) + r->count * n->cfg.buf_size;
}

/* ---- completions ------------------------------------------------------- */

/* A filled buffer @bid of @len bytes for a live receive: copied into the
 * leaf's memory while parked (and recycled), else queued. */
static void recv_take(struct pw__net *n, struct pw_recv *r, uint16_t bid,
		      uint32_t len)
{
	const char *data = n->mem + (size_t)bid * n->cfg.buf_size;

	if (r->parked && !own_append(r, data, len)) {
		n->st.parked_bytes += len;
		n->st.recv_bytes += len;
		pw__net_buf_recycle(n, bid);
		return;
	}
	pw__net_buf_enqueue(n, r, bid, len);
}

/* Whether @r holds its share: its queue, or its parked bytes. */
static bool recv_full(const struct pw__net *n, const struct pw_recv *r)
{
	return r->count >= n->recv_cap ||
	       (r->parked && own_waiting(r) >= park_max(n));
}

/* Cancel @r's armed request to hold it at its share. */
static void recv_pause(struct pw__shard *s, struct pw__net *n,
		       struct pw_recv *r)
{
	if (r->op.state != PW__NS_ARMED)
		return;
	r->op.flags |= PW__NF_PAUSED;
	n->st.recv_pauses++;
	pw__nop_cancel(s, &r->op);
}

void pw__recv_cqe(struct pw__shard *s, struct pw_net_op *op,
		  const struct io_uring_cqe *cqe, bool final, bool alive)
{
	struct pw_recv *r = (struct pw_recv *)(void *)op;
	struct pw__net *n = s->net;
	int res = cqe->res;
	uint16_t bid;

	if (final)
		op->state = PW__NS_IDLE;
	if (pw__net_cqe_buf(n, op, cqe, alive, &bid))
		recv_take(n, r, bid, (uint32_t)res);
	if (!alive || (op->flags & PW__NF_DROPPED))
		return;
	if ((op->flags & PW__NF_LIMITED) && res > 0)
		n->recv_limit = PW__LIMIT_WORKS;
	if ((op->flags & PW__NF_LIMITED) && res == -EINVAL &&
	    n->recv_limit != PW__LIMIT_WORKS) {
		/* A kernel older than the byte limit refuses the field (every
		 * receive armed before the first refusal came back): the
		 * woken task's next poll arms without it. */
		n->recv_limit = PW__LIMIT_REFUSED;
	} else if (res == 0 && final) {
		r->eof = true;
	} else if (res == -ENOBUFS) {
		n->st.enobufs++;
		op->flags |= PW__NF_STARVED;
	} else if (res == -ECANCELED && (op->flags & PW__NF_PAUSED)) {
		/* our own pause */
	} else if (res < 0) {
		/* -ECANCELED here is another's cancel (a close of the socket):
		 * terminal, never re-armed on a descriptor that is gone. */
		r->err = res;
	}
	if (final)
		op->flags &= (uint8_t)~PW__NF_PAUSED;
	else if (recv_full(n, r))
		recv_pause(s, n, r);
}
static void recv_arm(struct pw_cx *cx, struct pw_recv *r, struct pw__net *n)
{
	struct pw_net_op *op = &r->op;

	if (op->flags & PW__NF_STARVED) {
		if (n->out >= n->cfg.buf_count) {
			if (!r->starved.next)
				pw_list_add_tail(&r->starved, &n->starved);
			return; /* pw__net_buf_recycle() wakes us */
		}
		op->flags &= (uint8_t)~PW__NF_STARVED;
	}
	pw__recv_unstarve(r);
	struct io_uring_sqe *sqe = pw__nop_sqe(cx);
	if (!sqe)
		return;
	io_uring_prep_recv_multishot(sqe, r->fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = PW__NET_BGID;
	op->flags &= (uint8_t)~PW__NF_LIMITED;
	if (n->recv_limit != PW__LIMIT_REFUSED) {
		/* The kernel ends the request once it delivered the rest of
		 * the share (the field it reads as optlen; it may overshoot
		 * by part of one buffer), so no burst of its multishot loop
		 * outruns a pause. */
		uint32_t held = recv_held(n, r), max = park_max(n);
		sqe->file_index = held + n->cfg.buf_size < max ?
					  max - held :
					  n->cfg.buf_size;
		op->flags |= PW__NF_LIMITED;
		/* The tests play an older kernel: a field it rejects. */
		if (n->recv_limit == PW__LIMIT_UNKNOWN &&
		    pw__fault(PW__FAULT_RECV_LIMIT))
			sqe->addr2 = 1;
	}
	pw__nop_arm(cx, op, sqe, PW__NK_RECV);
}

/* Hand out the next chunk: owned bytes first (they are older), else the
 * head of the queue. Counts ring bytes as received. */
static void recv_lend(struct pw__net *n, struct pw_recv *r,
		      struct pw_net_buf *buf)
{
	if (own_waiting(r)) {
		buf->bid = PW_NET_BUF_OWN;
		buf->data = r->own + r->own_off;
		buf->len = own_waiting(r);
		r->own_lent_end = r->own_len;
		return;
	}
	uint16_t bid = r->head;
	r->head = n->next[bid];
	r->count--;
	n->where[bid] = PW__BUF_LENT;
	buf->bid = bid;
	buf->data = n->mem + (size_t)bid * n->cfg.buf_size;
	buf->len = n->len[bid];
	n->st.recv_bytes += buf->len;
}

enum pw_poll pw_recv_poll(struct pw_cx *cx, struct pw_recv *r,
			  pw_time_t deadline, struct pw_net_buf *buf,
			  int32_t *res)
{
	int err = 0;

	if (!res)
		return PW_READY;
	if (!cx || !r || !buf || r->fd < 0) {
		*res = -EINVAL;
		return PW_READY;
	}
	struct pw__net *n = pw__net_get(cx->shard, &err);
	if (!n || (err = pw__net_bufs_ready(cx->shard, n))) {
		*res = err;
		return PW_READY;
	}
	struct pw_net_op *op = &r->op;
	op->flags &= (uint8_t)~PW__NF_DROPPED;
	op->task = cx->task; /* the starved list wakes this task */
	own_settle(r);
	r->parked = false;
	if (r->count || own_waiting(r)) {
		if (!pw__coop_proceed(cx))
			return PW_PENDING;
		recv_lend(n, r, buf);
		*res = (int32_t)buf->len;
		/* Re-armed early while the leaf holds under half its
		 * share (an owned chunk out included): a large owned chunk
		 * gets no company until it is consumed. */
		if (op->state == PW__NS_IDLE && !r->eof && !r->err &&
		    recv_held(n, r) < park_max(n) / 2)
			recv_arm(cx, r, n);
		pw_sleep_cancel(&r->timer);
		return PW_READY;
	}
	if (r->err || r->eof) {
		*res = r->err;
		pw_sleep_cancel(&r->timer);
		return PW_READY;
	}
	if (op->state == PW__NS_IDLE)
		recv_arm(cx, r, n);
	if (pw__deadline_passed(cx, &r->timer, deadline)) {
		*res = -ETIMEDOUT;
		return PW_READY;
	}
	return PW_PENDING;
}

void pw_recv_park(struct pw_recv *r)
{
	struct pw__shard *s = pw__cur_shard;
	struct pw__net *n = s ? s->net : NULL;

	if (!r || !n || !n->br)
		return;
	own_settle(r);
	r->parked = true;
	if (!r->count) {
		if (recv_full(n, r))
			recv_pause(s, n, r);
		return;
	}
	n->st.parks++;
	while (r->count) {
		uint16_t bid = r->head;
		uint32_t len = n->len[bid];

		if (own_append(r, n->mem + (size_t)bid * n->cfg.buf_size, len))
			break; /* out of memory: the rest stays queued */
		r->head = n->next[bid];
		r->count--;
		n->st.parked_bytes += len;
		n->st.recv_bytes += len;
		pw__net_buf_recycle(n, bid);
	}
	if (recv_full(n, r))
		recv_pause(s, n, r);
}

int pw_recv_unread(struct pw_recv *r, struct pw_net_buf *buf, uint32_t used)
{
	struct pw__shard *s = pw__cur_shard;
	struct pw__net *n = s ? s->net : NULL;

	if (!r || !buf || !n || used > buf->len)
		return -EINVAL;
	if (buf->bid == PW_NET_BUF_OWN) {
		if (!r->own_lent_end || buf->data != r->own + r->own_off ||
		    buf->len != r->own_lent_end - r->own_off)
			return -EINVAL;
		r->own_off += used;
		r->own_lent_end = 0;
	} else {
		if (!pw__net_buf_lent(n, buf))
			return -EINVAL;
		own_settle(r);
		if (used < buf->len &&
		    own_prepend(r, (const char *)buf->data + used,
				buf->len - used))
			return -ENOMEM;
		pw__net_buf_recycle(n, buf->bid);
	}
	own_settle(r);
	buf->data = NULL;
	buf->len = 0;
	return 0;
}

void pw_recv_cancel(struct pw_recv *r)
{
	struct pw__shard *s = pw__cur_shard;

	if (!r || !s)
		return;
	r->op.flags |= PW__NF_DROPPED;
	pw__recv_unstarve(r);
	pw__nop_cancel(s, &r->op);
	while (r->count && s->net) {
		uint16_t bid = r->head;
		r->head = s->net->next[bid];
		r->count--;
		pw__net_buf_recycle(s->net, bid);
	}
	free(r->own);
	r->own = NULL;
	r->own_off = r->own_len = r->own_cap = r->own_lent_end = 0;
	r->parked = false;
	pw_sleep_cancel(&r->timer);
}
