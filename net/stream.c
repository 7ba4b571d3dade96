/* SPDX-License-Identifier: MIT */
/*
 * stream.c - the sending leaves of a connected socket: send, connect,
 * shutdown and cancel-then-close (the receive is net/recv.c).
 *
 * pw_send keeps one send in flight (MSG_NOSIGNAL, without MSG_WAITALL)
 * and resubmits the rest after a short send, so a send that moves bytes
 * slowly is seen moving (pw_send_progress()) and one that moves none is
 * seen stuck; with SEND_ZC a request ends at its notification CQE, when
 * the kernel no longer reads the bytes. A try (pw_send_try_poll()) is one
 * MSG_DONTWAIT request: io_uring completes it with what the socket took,
 * or -EAGAIN, instead of waiting for room, so the caller holds its bytes
 * for one turn at most.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <string.h>
#include <unistd.h>

#include "net/net_int.h"

/* ---- send ------------------------------------------------------------- */

void pw_send_init(struct pw_send *s, int fd)
{
	if (!s)
		return;
	memset(s, 0, sizeof(*s));
	pw_sleep_init_at(&s->timer, PW_TIME_NEVER);
	s->fd = fd;
}

void pw__send_cqe(struct pw__shard *sh, struct pw_net_op *op,
		  const struct io_uring_cqe *cqe, bool final, bool alive)
{
	struct pw_send *s = (struct pw_send *)(void *)op;

	if (final)
		op->state = PW__NS_IDLE;
	if (!alive || (cqe->flags & IORING_CQE_F_NOTIF))
		return;
	if (cqe->res > 0) {
		s->done += (size_t)cqe->res;
		s->total += (uint64_t)cqe->res;
		if (sh->net)
			sh->net->st.send_bytes += (uint64_t)cqe->res;
	} else if (cqe->res == -EAGAIN && s->once) {
		/* no room: the try took nothing */
	} else if (cqe->res == 0) {
		s->err = -EPIPE; /* no progress: do not spin */
	} else if (!s->err) {
		s->err = cqe->res;
	}
}

/* Point @v's message at the bytes not yet sent: from the first iovec
 * not wholly sent; one whose head was sent goes alone, as its rest. */
static void sendv_msg(struct pw_sendv *v)
{
	size_t done = v->tx.done;
	int i = 0;

	while (i < v->iovcnt && done >= v->iov[i].iov_len)
		done -= v->iov[i++].iov_len;
	memset(&v->msg, 0, sizeof(v->msg));
	if (done) {
		v->head.iov_base = (char *)v->iov[i].iov_base + done;
		v->head.iov_len = v->iov[i].iov_len - done;
		v->msg.msg_iov = &v->head;
		v->msg.msg_iovlen = 1;
	} else {
		v->msg.msg_iov = (struct iovec *)(uintptr_t)(v->iov + i);
		v->msg.msg_iovlen = (size_t)(v->iovcnt - i);
	}
}

/* Submit the rest of @s: SEND_ZC from the shard's threshold on, never
 * for a try, which asks MSG_DONTWAIT instead, nor for iovecs (a
 * sendmsg). */
static void send_arm(struct pw_cx *cx, struct pw_send *s)
{
	int err = 0;
	struct pw__net *n = pw__net_get(cx->shard, &err);
	uint32_t zc = n && !s->once && !s->vec ? n->cfg.zc_threshold : 0;
	struct io_uring_sqe *sqe = pw__nop_sqe(cx);
	size_t left = s->len - s->done;

	if (!sqe)
		return; /* polled again once the ring has room */
	s->zc = zc && left >= zc;
	if (s->vec) {
		struct pw_sendv *v = pw_container_of(s, struct pw_sendv, tx);

		sendv_msg(v);
		io_uring_prep_sendmsg(sqe, s->fd, &v->msg,
				      MSG_NOSIGNAL |
					      (s->once ? MSG_DONTWAIT : 0));
	} else if (s->zc) {
		io_uring_prep_send_zc(sqe, s->fd, s->data + s->done, left,
				      MSG_NOSIGNAL, 0);
		n->st.zc_sends++;
	} else {
		io_uring_prep_send(sqe, s->fd, s->data + s->done, left,
				   MSG_NOSIGNAL | (s->once ? MSG_DONTWAIT : 0));
	}
	s->tried = true;
	pw__nop_arm(cx, &s->op, sqe, PW__NK_SEND);
}

/* The send's end, once reached: *@res and PW_READY, @s idle again. */
static enum pw_poll send_end(struct pw_cx *cx, struct pw_send *s, int32_t *res)
{
	if (!pw__coop_proceed(cx))
		return PW_PENDING;
	*res = (s->op.flags & PW__NF_TIMEDOUT) ? -ETIMEDOUT :
	       s->err			       ? s->err :
	       s->once			       ? (int32_t)s->done :
						 (int32_t)s->len;
	s->started = false;
	s->op.flags = 0;
	pw_sleep_cancel(&s->timer);
	return PW_READY;
}

static enum pw_poll send_poll(struct pw_cx *cx, struct pw_send *s,
			      const void *data, size_t len, pw_time_t deadline,
			      int32_t *res, bool once, bool vec)
{
	if (!res)
		return PW_READY;
	if (!cx || !s || s->fd < 0 || (!data && len) || len > INT32_MAX) {
		*res = -EINVAL;
		return PW_READY;
	}
	struct pw_net_op *op = &s->op;
	if (!s->started) {
		if (op->state != PW__NS_IDLE)
			return PW_PENDING; /* a cancelled send still ends */
		s->data = data;
		s->len = len;
		s->done = 0;
		s->err = 0;
		s->once = once;
		s->vec = vec;
		s->tried = false;
		s->started = true;
		op->flags = 0;
	}
	if (op->state != PW__NS_IDLE) {
		if (op->state == PW__NS_ARMED &&
		    pw__deadline_passed(cx, &s->timer, deadline)) {
			op->flags |= PW__NF_TIMEDOUT;
			pw__nop_cancel(cx->shard, op);
		}
		return PW_PENDING;
	}
	if ((op->flags & PW__NF_TIMEDOUT) || s->err || s->done >= s->len ||
	    (s->once && s->tried))
		return send_end(cx, s, res);
	if (pw__deadline_passed(cx, &s->timer, deadline)) {
		s->started = false;
		*res = -ETIMEDOUT;
		return PW_READY;
	}
	send_arm(cx, s);
	return PW_PENDING;
}

enum pw_poll pw_send_poll(struct pw_cx *cx, struct pw_send *s, const void *data,
			  size_t len, pw_time_t deadline, int32_t *res)
{
	return send_poll(cx, s, data, len, deadline, res, false, false);
}

enum pw_poll pw_send_try_poll(struct pw_cx *cx, struct pw_send *s,
			      const void *data, size_t len, int32_t *res)
{
	return send_poll(cx, s, data, len, PW_TIME_NEVER, res, true, false);
}

void pw_sendv_init(struct pw_sendv *v, int fd)
{
	if (!v)
		return;
	memset(v, 0, sizeof(*v));
	pw_send_init(&v->tx, fd);
}

/* The bytes of @iov, or -EINVAL for a bad vector. */
static int64_t iov_bytes(const struct iovec *iov, int iovcnt)
{
	int64_t total = 0;

	if (iovcnt < 0 || iovcnt > IOV_MAX || (!iov && iovcnt))
		return -EINVAL;
	for (int i = 0; i < iovcnt; i++) {
		if (!iov[i].iov_base && iov[i].iov_len)
			return -EINVAL;
		if (iov[i].iov_len > INT32_MAX)
			return -EINVAL;
		total += (int64_t)iov[i].iov_len;
		if (total > INT32_MAX)
			return -EINVAL;
	}
	return total;
}

static enum pw_poll sendv_poll(struct pw_cx *cx, struct pw_sendv *v,
			       const struct iovec *iov, int iovcnt,
			       pw_time_t deadline, int32_t *res, bool once)
{
	int64_t len;

	if (!res)
		return PW_READY;
	if (!v) {
		*res = -EINVAL;
		return PW_READY;
	}
	if (!v->tx.started) {
		len = iov_bytes(iov, iovcnt);
		if (len < 0) {
			*res = -EINVAL;
			return PW_READY;
		}
		v->iov = iov;
		v->iovcnt = iovcnt;
	} else {
		len = (int64_t)v->tx.len;
	}
	/* No data pointer: the bytes are the vector's (send_arm()). */
	return send_poll(cx, &v->tx, v->iov, (size_t)len, deadline, res, once,
			 true);
}

enum pw_poll pw_sendv_poll(struct pw_cx *cx, struct pw_sendv *v,
			   const struct iovec *iov, int iovcnt,
			   pw_time_t deadline, int32_t *res)
{
	return sendv_poll(cx, v, iov, iovcnt, deadline, res, false);
}

enum pw_poll pw_sendv_try_poll(struct pw_cx *cx, struct pw_sendv *v,
			       const struct iovec *iov, int iovcnt,
			       int32_t *res)
{
	return sendv_poll(cx, v, iov, iovcnt, PW_TIME_NEVER, res, true);
}

void pw_sendv_cancel(struct pw_sendv *v)
{
	if (v)
		pw_send_cancel(&v->tx);
}

void pw_send_cancel(struct pw_send *s)
{
	struct pw__shard *sh = pw__cur_shard;

	if (!s || !sh)
		return;
	pw__nop_cancel(sh, &s->op);
	s->started = false;
	pw_sleep_cancel(&s->timer);
}

bool pw_send_in_flight(const struct pw_send *s)
{
	return s && s->op.state != PW__NS_IDLE;
}

uint64_t pw_send_progress(const struct pw_send *s)
{
	return s ? s->total : 0;
}

int pw_net_abort(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)))
		return -errno;
	return 0;
}

/* ---- connect ------------------------------------------------------------ */

void pw_connect_init(struct pw_connect *c, const struct pw_net_addr *addr)
{
	if (!c)
		return;
	memset(c, 0, sizeof(*c));
	pw_sleep_init_at(&c->timer, PW_TIME_NEVER);
	if (addr)
		c->addr = *addr;
	c->fd = -1;
}

void pw__connect_cqe(struct pw__shard *s, struct pw_net_op *op,
		     const struct io_uring_cqe *cqe, bool final, bool alive)
{
	struct pw_connect *c = (struct pw_connect *)(void *)op;

	(void)s;
	if (!final)
		return;
	op->res = cqe->res;
	op->state = PW__NS_DONE;
	if ((!alive || (op->flags & PW__NF_DROPPED)) && c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
		op->state = PW__NS_IDLE;
	}
}

enum pw_poll pw_connect_poll(struct pw_cx *cx, struct pw_connect *c,
			     pw_time_t deadline, int *res)
{
	if (!res)
		return PW_READY;
	int family = c ? c->addr.u.sa.sa_family : AF_UNSPEC;
	if (!cx || !c ||
	    (family != AF_INET && family != AF_INET6 && family != AF_UNIX)) {
		*res = -EINVAL;
		return PW_READY;
	}
	struct pw_net_op *op = &c->op;
	switch (op->state) {
	case PW__NS_ARMED:
		if (pw__deadline_passed(cx, &c->timer, deadline)) {
			c->timed_out = true;
			pw__nop_cancel(cx->shard, op);
		}
		return PW_PENDING;
	case PW__NS_CANCELLING:
		return PW_PENDING;
	case PW__NS_DONE:
		op->state = PW__NS_IDLE;
		pw_sleep_cancel(&c->timer);
		if (op->res == 0) {
			*res = c->fd;
		} else {
			close(c->fd);
			*res = c->timed_out ? -ETIMEDOUT : op->res;
		}
		c->fd = -1;
		c->timed_out = false;
		return PW_READY;
	default:
		break;
	}
	if (pw__deadline_passed(cx, &c->timer, deadline)) {
		*res = -ETIMEDOUT;
		return PW_READY;
	}
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		pw_sleep_cancel(&c->timer);
		*res = -errno;
		return PW_READY;
	}
	struct io_uring_sqe *sqe = pw__nop_sqe(cx);
	if (!sqe) {
		close(fd); /* polled again next turn */
		return PW_PENDING;
	}
	if (family != AF_UNIX) {
		int one = 1;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				 sizeof(one));
	}
	c->fd = fd;
	c->timed_out = false;
	op->flags = 0;
	io_uring_prep_connect(sqe, fd, &c->addr.u.sa, c->addr.len);
	pw__nop_arm(cx, op, sqe, PW__NK_CONNECT);
	return PW_PENDING;
}

void pw_connect_cancel(struct pw_connect *c)
{
	struct pw__shard *s = pw__cur_shard;

	if (!c || !s)
		return;
	c->op.flags |= PW__NF_DROPPED;
	pw__nop_cancel(s, &c->op);
	if (c->op.state == PW__NS_DONE && c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
		c->op.state = PW__NS_IDLE;
	}
	pw_sleep_cancel(&c->timer);
}

/* ---- shutdown and close ----------------------------------------------- */

void pw_shutdown_init(struct pw_close *c, int fd, int how)
{
	if (!c)
		return;
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->how = how;
}

void pw_close_init(struct pw_close *c, int fd)
{
	pw_shutdown_init(c, fd, -1);
}

void pw__close_cqe(struct pw__shard *s, struct pw_net_op *op,
		   const struct io_uring_cqe *cqe, bool final, bool alive)
{
	struct pw_close *c = (struct pw_close *)(void *)op;

	(void)s;
	if (!final)
		return;
	op->res = cqe->res;
	op->state = PW__NS_DONE;
	if (!alive && c->how < 0 && op->stage == 1) {
		/* The cancel ended but nobody will submit the close. */
		close(c->fd);
	}
}

enum pw_poll pw_close_poll(struct pw_cx *cx, struct pw_close *c, int32_t *res)
{
	if (!res)
		return PW_READY;
	if (!cx || !c || c->fd < 0 ||
	    (c->how != -1 && c->how != SHUT_RD && c->how != SHUT_WR &&
	     c->how != SHUT_RDWR)) {
		*res = -EINVAL;
		return PW_READY;
	}
	struct pw_net_op *op = &c->op;
	if (op->state == PW__NS_ARMED || op->state == PW__NS_CANCELLING)
		return PW_PENDING;
	if (op->stage == 3) {
		*res = -EBADF; /* closed already */
		return PW_READY;
	}
	if (op->state == PW__NS_DONE) {
		op->state = PW__NS_IDLE;
		if (op->stage == 2 || c->how >= 0) {
			op->stage = c->how >= 0 ? 0 : 3;
			*res = op->res;
			return PW_READY;
		}
	}
	struct io_uring_sqe *sqe = pw__nop_sqe(cx);
	if (!sqe)
		return PW_PENDING;
	if (c->how >= 0) {
		io_uring_prep_shutdown(sqe, c->fd, c->how);
	} else if (op->stage == 0) {
		io_uring_prep_cancel_fd(sqe, c->fd, IORING_ASYNC_CANCEL_ALL);
		op->stage = 1;
	} else {
		io_uring_prep_close(sqe, c->fd);
		op->stage = 2;
	}
	pw__nop_arm(cx, op, sqe, PW__NK_CLOSE);
	return PW_PENDING;
}

bool pw_close_cancel(struct pw_close *c)
{
	if (!c || c->how >= 0 || c->op.stage == 0)
		return false;
	/* A cancel stage in flight closes the socket when it ends
	 * (pw__close_cqe()); the close itself completes on its own; only a
	 * finished cancel stage awaiting its next poll is left to do. */
	if (c->op.state == PW__NS_DONE && c->op.stage == 1) {
		close(c->fd);
		c->op.state = PW__NS_IDLE;
		c->op.stage = 3;
	}
	return true;
}
