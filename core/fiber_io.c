/* SPDX-License-Identifier: MIT */
/*
 * fiber_io.c - the fiber's blocking-style calls over channels, the
 * blocking pool and sockets.
 *
 * Each call is the same few lines: a small struct holding the leaf's
 * arguments and outputs (on the fiber's stack: it is read only during a
 * poll), a step function that polls the leaf with the fiber's task
 * context, the leaf's cancel, and one pw__fiber_wait(). A new leaf
 * future gets its fiber form the same way. Socket leaves take the
 * fiber's deadline themselves (their own timeouts leave them armed, so
 * nothing is lost); the others use the fiber's timer (timed wait).
 *
 * A leaf a call owns (a connect, a close) lives in the fiber's record,
 * in the task's memory, not in the call's frame: a cancelled fiber
 * cannot wait for the final completion of its request, and that frame
 * is reused as soon as the call returns. After an error that leaves a
 * request in flight, a call that is not cancelled waits for its final
 * completion (settle()), so the leaf (or the caller's send buffer) is
 * free when it returns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fiber_int.h"
#include "net/net_int.h"
#include "pinwheel/channel.h"
#include "pinwheel/net.h"
#include "pinwheel/reader.h"

/* ---- channels ------------------------------------------------------------ */

struct ch_send {
	struct pw_channel *ch;
	struct pw_channel_sender snd;
	const void *item;
	int res;
};

static enum pw_poll ch_send_step(struct pw_cx *cx, void *st)
{
	struct ch_send *w = st;

	return pw_channel_send_poll(cx, w->ch, &w->snd, w->item, &w->res);
}

static void ch_send_cancel(void *st)
{
	struct ch_send *w = st;

	pw_channel_send_cancel(&w->snd);
}

int pw_fiber_channel_send(struct pw_channel *ch, const void *item)
{
	struct pw__fiber *f = pw__fiber_cur();
	struct ch_send w = { .ch = ch, .item = item };

	if (!f)
		return -EPERM;
	int err = pw__fiber_wait(f, ch_send_step, &w, ch_send_cancel, true);
	return err ? err : w.res;
}

struct ch_recv {
	struct pw_channel *ch;
	void *item;
	int res;
};

static enum pw_poll ch_recv_step(struct pw_cx *cx, void *st)
{
	struct ch_recv *w = st;

	return pw_channel_recv_poll(cx, w->ch, w->item, &w->res);
}

int pw_fiber_channel_recv(struct pw_channel *ch, void *item)
{
	struct pw__fiber *f = pw__fiber_cur();
	struct ch_recv w = { ch, item, 0 };

	if (!f)
		return -EPERM;
	/* Nothing to cancel: the channel keeps an owned waker only. */
	int err = pw__fiber_wait(f, ch_recv_step, &w, NULL, true);
	return err ? err : w.res;
}

/* ---- the blocking pool ------------------------------------------------ */

struct blk_wait {
	struct pw_blocking *b;
	int64_t res;
};

static enum pw_poll blk_step(struct pw_cx *cx, void *st)
{
	struct blk_wait *w = st;

	return pw_blocking_poll(cx, w->b, &w->res);
}

int64_t pw_fiber_blocking(int64_t (*fn)(void *arg), void *arg)
{
	struct pw__fiber *f = pw__fiber_cur();
	struct blk_wait w = { NULL, 0 };

	if (!f)
		return -EPERM;
	if (f->flags & PW__F_CANCELLED)
		return -ECANCELED;
	/* The job lives in the task (f->blk), not on the stack: a wait that
	 * ends early leaves it running. Take an earlier one's result first. */
	w.b = &f->blk;
	if (f->blk.state != PW_BLOCKING_IDLE) {
		int err = pw__fiber_wait(f, blk_step, &w, NULL, false);
		if (err)
			return err;
	}
	int err = pw_spawn_blocking(&f->blk, fn, arg);
	if (err)
		return err;
	err = pw__fiber_wait(f, blk_step, &w, NULL, true);
	return err ? err : w.res;
}

/* ---- sockets ------------------------------------------------------------ */

/* Wait until @op has no request in flight, so the leaf holding it may
 * leave scope. Not bounded by the deadline: the request was cancelled
 * already, its final completion is near and wakes the task. */
static enum pw_poll settle_step(struct pw_cx *cx, void *st)
{
	const struct pw_net_op *op = st;

	(void)cx;
	if (op->state == PW__NS_ARMED || op->state == PW__NS_CANCELLING)
		return PW_PENDING;
	return PW_READY;
}

static void settle(struct pw__fiber *f, const struct pw_net_op *op)
{
	(void)pw__fiber_wait(f, settle_step, (void *)op, NULL, false);
}

struct acc_wait {
	struct pw_accept *a;
	uint64_t deadline;
	int res;
};

static enum pw_poll acc_step(struct pw_cx *cx, void *st)
{
	struct acc_wait *w = st;

	return pw_accept_poll(cx, w->a, w->deadline, &w->res);
}

static void acc_cancel(void *st)
{
	struct acc_wait *w = st;

	pw_accept_cancel(w->a);
}

int pw_fiber_accept(struct pw_accept *a)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	struct acc_wait w = { a, f->deadline, 0 };
	int err = pw__fiber_wait(f, acc_step, &w, acc_cancel, false);
	return err ? err : w.res;
}

struct conn_wait {
	struct pw_connect *c;
	uint64_t deadline;
	int res;
};

static enum pw_poll conn_step(struct pw_cx *cx, void *st)
{
	struct conn_wait *w = st;

	return pw_connect_poll(cx, w->c, w->deadline, &w->res);
}

static void conn_cancel(void *st)
{
	struct conn_wait *w = st;

	pw_connect_cancel(w->c);
}

int pw_fiber_connect(const struct pw_net_addr *addr)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	if (!addr)
		return -EINVAL;
	if (f->flags & PW__F_CANCELLED)
		return -ECANCELED;
	if (!f->connect && !(f->connect = malloc(sizeof(*f->connect))))
		return -ENOMEM;
	struct conn_wait w = { f->connect, f->deadline, 0 };
	pw_connect_init(w.c, addr);
	int err = pw__fiber_wait(f, conn_step, &w, conn_cancel, false);
	if (err == -ECANCELED)
		return err; /* the leaf is in the task: it may finish later */
	if (err || w.res < 0)
		settle(f, &w.c->op);
	return err ? err : w.res;
}

struct recv_wait {
	struct pw_recv *r;
	uint64_t deadline;
	struct pw_net_buf buf;
	int32_t res;
};

static enum pw_poll recv_step(struct pw_cx *cx, void *st)
{
	struct recv_wait *w = st;

	return pw_recv_poll(cx, w->r, w->deadline, &w->buf, &w->res);
}

static void recv_cancel(void *st)
{
	struct recv_wait *w = st;

	pw_recv_cancel(w->r);
}

int64_t pw_fiber_recv(struct pw_recv *r, void *buf, size_t len)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	if (!r || !buf || !len)
		return -EINVAL;
	struct recv_wait w = { .r = r, .deadline = f->deadline };
	int err = pw__fiber_wait(f, recv_step, &w, recv_cancel, false);
	if (err)
		return err;
	if (w.res <= 0)
		return w.res;
	size_t n = (size_t)w.res < len ? (size_t)w.res : len;
	memcpy(buf, w.buf.data, n);
	if (n == (size_t)w.res) {
		pw_net_buf_release(&w.buf);
		return (int64_t)n;
	}
	err = pw_recv_unread(r, &w.buf, (uint32_t)n);
	if (err) {
		pw_net_buf_release(&w.buf);
		return err;
	}
	return (int64_t)n;
}

struct send_wait {
	struct pw_send *s;
	const void *data;
	size_t len;
	uint64_t deadline;
	int32_t res;
};

static enum pw_poll send_step(struct pw_cx *cx, void *st)
{
	struct send_wait *w = st;

	return pw_send_poll(cx, w->s, w->data, w->len, w->deadline, &w->res);
}

static void send_cancel(void *st)
{
	struct send_wait *w = st;

	pw_send_cancel(w->s);
}

int64_t pw_fiber_send(struct pw_send *s, const void *buf, size_t len)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	if (!s)
		return -EINVAL;
	struct send_wait w = { s, buf, len, f->deadline, 0 };
	int err = pw__fiber_wait(f, send_step, &w, send_cancel, false);
	if (err == -ECANCELED)
		return err;
	if ((err || w.res < 0) && pw_send_in_flight(s))
		settle(f, &s->op);
	return err ? err : w.res;
}

/* ---- the buffered reader and vector sends --------------------------- */

struct read_wait {
	struct pw_reader *rd;
	int delim; /* -1: read exactly cap bytes */
	void *out;
	size_t cap;
	uint64_t deadline;
	int64_t res;
};

static enum pw_poll read_step(struct pw_cx *cx, void *st)
{
	struct read_wait *w = st;

	if (w->delim < 0)
		return pw_read_exact_poll(cx, w->rd, w->out, w->cap,
					  w->deadline, &w->res);
	return pw_read_until_poll(cx, w->rd, w->delim, w->out, w->cap,
				  w->deadline, &w->res);
}

static void read_cancel(void *st)
{
	struct read_wait *w = st;

	pw_reader_cancel(w->rd);
}

/* One read of the reader: a line (@delim >= 0) or @cap bytes exactly. */
static int64_t fiber_read(struct pw_reader *rd, int delim, void *out,
			  size_t cap)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	if (!rd || !out || !cap)
		return -EINVAL;
	struct read_wait w = { rd, delim, out, cap, f->deadline, 0 };
	int err = pw__fiber_wait(f, read_step, &w, read_cancel, false);
	return err ? err : w.res;
}

int64_t pw_fiber_read_until(struct pw_reader *rd, int delim, void *out,
			    size_t cap)
{
	if (delim < 0 || delim > 255)
		return -EINVAL;
	return fiber_read(rd, delim, out, cap);
}

int64_t pw_fiber_read_exact(struct pw_reader *rd, void *out, size_t n)
{
	return fiber_read(rd, -1, out, n);
}

struct sendv_wait {
	struct pw_sendv *v;
	const struct iovec *iov;
	int iovcnt;
	uint64_t deadline;
	int32_t res;
};

static enum pw_poll sendv_step(struct pw_cx *cx, void *st)
{
	struct sendv_wait *w = st;

	return pw_sendv_poll(cx, w->v, w->iov, w->iovcnt, w->deadline, &w->res);
}

static void sendv_cancel(void *st)
{
	struct sendv_wait *w = st;

	pw_sendv_cancel(w->v);
}

int64_t pw_fiber_sendv(struct pw_sendv *v, const struct iovec *iov, int iovcnt)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	if (!v)
		return -EINVAL;
	struct sendv_wait w = { v, iov, iovcnt, f->deadline, 0 };
	int err = pw__fiber_wait(f, sendv_step, &w, sendv_cancel, false);
	if (err == -ECANCELED)
		return err;
	if ((err || w.res < 0) && pw_send_in_flight(&v->tx))
		settle(f, &v->tx.op);
	return err ? err : w.res;
}

struct close_wait {
	struct pw_close *c;
	int32_t res;
};

static enum pw_poll close_step(struct pw_cx *cx, void *st)
{
	struct close_wait *w = st;

	return pw_close_poll(cx, w->c, &w->res);
}

static void close_cancel(void *st)
{
	struct close_wait *w = st;

	if (!pw_close_cancel(w->c))
		close(w->c->fd);
}

int pw_fiber_close(int fd)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	if (f->flags & PW__F_CANCELLED)
		return close(fd) ? -errno : 0;
	struct close_wait w = { &f->close, 0 };
	pw_close_init(w.c, fd);
	int err = pw__fiber_wait(f, close_step, &w, close_cancel, false);
	if (err == -ECANCELED)
		return 0; /* close_cancel() closed it, or the leaf will */
	return w.res;
}

/* ---- UDP ------------------------------------------------------------------ */

struct udp_recv_wait {
	struct pw_udp_recv *r;
	uint64_t deadline;
	struct pw_udp_dgram *d;
	int32_t res;
};

static enum pw_poll udp_recv_step(struct pw_cx *cx, void *st)
{
	struct udp_recv_wait *w = st;

	return pw_udp_recv_poll(cx, w->r, w->deadline, w->d, &w->res);
}

static void udp_recv_cancel(void *st)
{
	struct udp_recv_wait *w = st;

	pw_udp_recv_cancel(w->r);
}

int64_t pw_fiber_udp_recv(struct pw_udp_recv *r, struct pw_udp_dgram *d)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	if (!r || !d)
		return -EINVAL;
	struct udp_recv_wait w = { r, f->deadline, d, 0 };
	int err = pw__fiber_wait(f, udp_recv_step, &w, udp_recv_cancel, false);
	return err ? err : w.res;
}

int64_t pw_fiber_udp_recv_from(struct pw_udp_recv *r, void *buf, size_t len,
			       struct pw_net_addr *from, uint32_t *flags)
{
	struct pw_udp_dgram d;

	if (!buf && len)
		return -EINVAL;
	int64_t res = pw_fiber_udp_recv(r, &d);
	if (res < 0)
		return res;
	size_t n = d.len < len ? d.len : len;
	if (n)
		memcpy(buf, d.data, n);
	if (from)
		*from = d.peer;
	if (flags)
		*flags = n < d.full_len ? PW_UDP_TRUNC : 0;
	(void)pw_udp_dgram_release(&d);
	return (int64_t)d.full_len;
}

struct udp_send_wait {
	struct pw_udp_send *s;
	const struct iovec *iov;
	int iovcnt;
	const void *data;
	size_t len;
	uint32_t seg; /* 0: one datagram, of iov or of data */
	const struct pw_net_addr *to;
	uint64_t deadline;
	int32_t res;
};

static enum pw_poll udp_send_step(struct pw_cx *cx, void *st)
{
	struct udp_send_wait *w = st;

	if (!w->seg && !w->iov)
		return pw_udp_send_to_poll(cx, w->s, w->data, w->len, w->to,
					   w->deadline, &w->res);
	if (!w->seg)
		return pw_udp_send_poll(cx, w->s, w->iov, w->iovcnt, w->to,
					w->deadline, &w->res);
	return pw_udp_send_segs_poll(cx, w->s, w->data, w->len, w->seg, w->to,
				     w->deadline, &w->res);
}

static void udp_send_cancel(void *st)
{
	struct udp_send_wait *w = st;

	pw_udp_send_cancel(w->s);
}

/* One send of @w, the leaf settled again unless the fiber is cancelled. */
static int64_t udp_send_wait(struct udp_send_wait *w)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	if (!w->s)
		return -EINVAL;
	w->deadline = f->deadline;
	int err = pw__fiber_wait(f, udp_send_step, w, udp_send_cancel, false);
	if (err == -ECANCELED)
		return err;
	if ((err || w->res < 0) && pw_udp_send_in_flight(w->s))
		settle(f, &w->s->op);
	return err ? err : w->res;
}

int64_t pw_fiber_udp_sendv(struct pw_udp_send *s, const struct iovec *iov,
			   int iovcnt, const struct pw_net_addr *to)
{
	struct udp_send_wait w = {
		.s = s, .iov = iov, .iovcnt = iovcnt, .to = to
	};

	return udp_send_wait(&w);
}

int64_t pw_fiber_udp_send_to(struct pw_udp_send *s, const void *buf, size_t len,
			     const struct pw_net_addr *to)
{
	/* No vector here: pw_udp_send_to_poll() keeps it in the leaf,
	 * which outlives this frame if the fiber is cancelled. */
	struct udp_send_wait w = { .s = s, .data = buf, .len = len, .to = to };

	return udp_send_wait(&w);
}

int64_t pw_fiber_udp_send_segs(struct pw_udp_send *s, const void *buf,
			       size_t len, uint32_t seg,
			       const struct pw_net_addr *to)
{
	struct udp_send_wait w = {
		.s = s, .data = buf, .len = len, .seg = seg, .to = to
	};

	if (!seg)
		return -EINVAL;
	return udp_send_wait(&w);
}

struct udp_batch_wait {
	struct pw_udp_batch *b;
	struct pw_udp_out *msgs;
	unsigned n;
	uint64_t deadline;
	int32_t res;
};

static enum pw_poll udp_batch_step(struct pw_cx *cx, void *st)
{
	struct udp_batch_wait *w = st;

	return pw_udp_batch_poll(cx, w->b, w->msgs, w->n, w->deadline, &w->res);
}

static void udp_batch_cancel(void *st)
{
	struct udp_batch_wait *w = st;

	pw_udp_batch_cancel(w->b);
}

static enum pw_poll batch_settle_step(struct pw_cx *cx, void *st)
{
	(void)cx;
	return pw_udp_batch_in_flight(st) ? PW_PENDING : PW_READY;
}

int64_t pw_fiber_udp_batch(struct pw_udp_batch *b, struct pw_udp_out *msgs,
			   unsigned n)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	if (!b)
		return -EINVAL;
	struct udp_batch_wait w = { b, msgs, n, f->deadline, 0 };
	int err =
		pw__fiber_wait(f, udp_batch_step, &w, udp_batch_cancel, false);
	if (err == -ECANCELED)
		return err;
	if (err && pw_udp_batch_in_flight(b))
		(void)pw__fiber_wait(f, batch_settle_step, b, NULL, false);
	return err ? err : w.res;
}
