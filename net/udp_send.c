/* SPDX-License-Identifier: MIT */
/*
 * udp_send.c - the sending leaves of a UDP socket: one datagram from
 * iovecs, a buffer cut into equal datagrams (UDP_SEGMENT), and a batch
 * of datagrams submitted together.
 *
 * A pw_udp_send keeps one sendmsg in flight; the message header, the
 * address and the control message live in the leaf, since the kernel may
 * read them after the poll returns. Segments go as one request of up to
 * PW_UDP_GSO_SEGS datagrams with a UDP_SEGMENT control message. Whether
 * the kernel takes it is learnt once per leaf: getsockopt(UDP_SEGMENT)
 * before the first such send (a kernel without it says ENOPROTOOPT),
 * then the first send itself (a device that cannot checksum segments
 * fails it with EIO, an older kernel's check with EINVAL): nothing was
 * sent then, and the same bytes go again one datagram per request, as
 * they do with PW_UDP_NO_GSO.
 *
 * A batch is one SQE per datagram, all prepared in one poll, so they
 * reach the kernel in the shard's next submission; each datagram embeds
 * its own request (struct pw_udp_out.op) so that its completion finds it.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/udp.h>
#include <string.h>

#include "net/net_int.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

enum { GSO_UNTRIED = 0, GSO_WORKS, GSO_REFUSED };

/* The most one UDP_SEGMENT request carries: the IPv4 payload limit. */
#define GSO_MAX_BYTES 65507u

_Static_assert(sizeof(((struct pw_udp_send *)0)->cmsg.buf) >=
		       CMSG_SPACE(sizeof(uint16_t)),
	       "room for UDP_SEGMENT");

void pw_udp_send_init(struct pw_udp_send *s, int fd, uint32_t flags)
{
	if (!s)
		return;
	memset(s, 0, sizeof(*s));
	pw_sleep_init_at(&s->timer, PW_TIME_NEVER);
	s->fd = fd;
	s->flags = flags;
	if (flags & PW_UDP_NO_GSO)
		s->gso = GSO_REFUSED;
}

/* Whether a failed UDP_SEGMENT send means "not supported here". */
static bool gso_refusal(const struct pw_udp_send *s, int res)
{
	return res == -EIO || res == -ENOPROTOOPT ||
	       (res == -EINVAL && s->gso != GSO_WORKS);
}

void pw__udp_send_cqe(struct pw__shard *sh, struct pw_net_op *op,
		      const struct io_uring_cqe *cqe, bool final, bool alive)
{
	struct pw_udp_send *s = (struct pw_udp_send *)(void *)op;
	int res = cqe->res;

	if (final)
		op->state = PW__NS_IDLE;
	if (!alive)
		return;
	if (res >= 0) {
		s->done += s->chunk;
		/* One datagram per segment; an empty send is one too. */
		s->datagrams += s->seg && s->chunk ?
					(s->chunk + s->seg - 1) / s->seg :
					1;
		s->sent_one = true;
		if (s->gso_in_flight)
			s->gso = GSO_WORKS;
		if (sh->net)
			sh->net->st.send_bytes += (uint64_t)res;
	} else if (s->gso_in_flight && gso_refusal(s, res)) {
		s->gso = GSO_REFUSED; /* nothing went: resent one by one */
	} else if (!s->err) {
		s->err = res;
	}
}

/* The probe before the first UDP_SEGMENT send. */
static void gso_probe(struct pw_udp_send *s)
{
	int v = 0;
	socklen_t len = sizeof(v);

	if (getsockopt(s->fd, IPPROTO_UDP, UDP_SEGMENT, &v, &len))
		s->gso = GSO_REFUSED;
}

/* The next request of segments: as many as one UDP_SEGMENT request
 * takes, or one datagram. */
static void segs_msg(struct pw_udp_send *s)
{
	size_t left = s->len - s->done;
	size_t per = GSO_MAX_BYTES / s->seg;

	if (per > PW_UDP_GSO_SEGS)
		per = PW_UDP_GSO_SEGS;
	if (s->gso == GSO_UNTRIED && per > 1 && left > s->seg)
		gso_probe(s);
	s->gso_in_flight = s->gso != GSO_REFUSED && per > 1 && left > s->seg;
	s->chunk = s->gso_in_flight ?
			   (left < per * s->seg ? left : per * s->seg) :
			   (left < s->seg ? left : s->seg);
	s->one.iov_base = (void *)(uintptr_t)(s->data + s->done);
	s->one.iov_len = s->chunk;
	s->msg.msg_iov = &s->one;
	s->msg.msg_iovlen = 1;
	if (s->gso_in_flight) {
		struct cmsghdr *c = (struct cmsghdr *)(void *)s->cmsg.buf;
		uint16_t seg = (uint16_t)s->seg;

		memset(&s->cmsg, 0, sizeof(s->cmsg));
		s->msg.msg_control = s->cmsg.buf;
		s->msg.msg_controllen = CMSG_SPACE(sizeof(seg));
		c->cmsg_level = IPPROTO_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(seg));
		memcpy(CMSG_DATA(c), &seg, sizeof(seg));
	}
}

static void udp_send_arm(struct pw_cx *cx, struct pw_udp_send *s)
{
	struct io_uring_sqe *sqe = pw__nop_sqe(cx);

	if (!sqe)
		return; /* polled again once the ring has room */
	memset(&s->msg, 0, sizeof(s->msg));
	if (s->to.len) {
		s->msg.msg_name = &s->to.u;
		s->msg.msg_namelen = s->to.len;
	}
	if (s->iov) {
		s->msg.msg_iov = (struct iovec *)(uintptr_t)s->iov;
		s->msg.msg_iovlen = (size_t)s->iovcnt;
		s->chunk = s->len;
		s->gso_in_flight = false;
	} else {
		segs_msg(s);
	}
	io_uring_prep_sendmsg(sqe, s->fd, &s->msg, MSG_NOSIGNAL);
	pw__nop_arm(cx, &s->op, sqe, PW__NK_UDP_SEND);
}

static enum pw_poll send_end(struct pw_cx *cx, struct pw_udp_send *s,
			     int32_t *res)
{
	if (!pw__coop_proceed(cx))
		return PW_PENDING;
	*res = s->timed_out ? -ETIMEDOUT : s->err ? s->err : (int32_t)s->len;
	s->started = false;
	pw_sleep_cancel(&s->timer);
	return PW_READY;
}

/* Begin a send: the caller checked its arguments. */
static void send_start(struct pw_udp_send *s, const struct iovec *iov,
		       int iovcnt, const void *data, size_t len, uint32_t seg,
		       const struct pw_net_addr *to)
{
	s->iov = iov;
	s->iovcnt = iovcnt;
	s->data = data;
	s->len = len;
	s->seg = seg;
	s->done = 0;
	s->err = 0;
	s->sent_one = false;
	s->timed_out = false;
	s->started = true;
	memset(&s->to, 0, sizeof(s->to));
	if (to)
		s->to = *to;
}

/* The poll of every send, once started. */
static enum pw_poll send_step(struct pw_cx *cx, struct pw_udp_send *s,
			      pw_time_t deadline, int32_t *res)
{
	struct pw_net_op *op = &s->op;

	if (op->state != PW__NS_IDLE) {
		if (op->state == PW__NS_ARMED &&
		    pw__deadline_passed(cx, &s->timer, deadline)) {
			s->timed_out = true;
			pw__nop_cancel(cx->shard, op);
		}
		return PW_PENDING;
	}
	if (s->timed_out || s->err || (s->sent_one && s->done >= s->len))
		return send_end(cx, s, res);
	if (pw__deadline_passed(cx, &s->timer, deadline)) {
		s->started = false;
		*res = -ETIMEDOUT;
		return PW_READY;
	}
	udp_send_arm(cx, s);
	return PW_PENDING;
}

/* The bytes of @iov, or -EINVAL for a bad vector. */
static int64_t iov_bytes(const struct iovec *iov, int iovcnt)
{
	int64_t total = 0;

	if (iovcnt < 0 || iovcnt > IOV_MAX || (!iov && iovcnt))
		return -EINVAL;
	for (int i = 0; i < iovcnt; i++) {
		if ((!iov[i].iov_base && iov[i].iov_len) ||
		    iov[i].iov_len > INT32_MAX)
			return -EINVAL;
		total += (int64_t)iov[i].iov_len;
		if (total > INT32_MAX)
			return -EINVAL;
	}
	return total;
}

static bool to_ok(const struct pw_net_addr *to)
{
	return !to ||
	       (to->u.sa.sa_family == AF_INET &&
		to->len == sizeof(to->u.in4)) ||
	       (to->u.sa.sa_family == AF_INET6 && to->len == sizeof(to->u.in6));
}

enum pw_poll pw_udp_send_poll(struct pw_cx *cx, struct pw_udp_send *s,
			      const struct iovec *iov, int iovcnt,
			      const struct pw_net_addr *to, pw_time_t deadline,
			      int32_t *res)
{
	if (!res)
		return PW_READY;
	if (!cx || !s || s->fd < 0) {
		*res = -EINVAL;
		return PW_READY;
	}
	if (!s->started) {
		int64_t len = iov_bytes(iov, iovcnt);
		if (len < 0 || !to_ok(to)) {
			*res = -EINVAL;
			return PW_READY;
		}
		if (s->op.state != PW__NS_IDLE)
			return PW_PENDING; /* a cancelled send still ends */
		send_start(s, iov, iovcnt, NULL, (size_t)len, 0, to);
	}
	return send_step(cx, s, deadline, res);
}

enum pw_poll pw_udp_send_to_poll(struct pw_cx *cx, struct pw_udp_send *s,
				 const void *data, size_t len,
				 const struct pw_net_addr *to,
				 pw_time_t deadline, int32_t *res)
{
	if (!s) {
		if (res)
			*res = -EINVAL;
		return PW_READY;
	}
	/* The vector lives in the leaf: the kernel reads it later. Not
	 * touched while a cancelled request may still read it. */
	if (!s->started && s->op.state == PW__NS_IDLE) {
		s->one.iov_base = (void *)(uintptr_t)data;
		s->one.iov_len = len;
	}
	return pw_udp_send_poll(cx, s, &s->one, 1, to, deadline, res);
}

enum pw_poll pw_udp_send_segs_poll(struct pw_cx *cx, struct pw_udp_send *s,
				   const void *data, size_t len, uint32_t seg,
				   const struct pw_net_addr *to,
				   pw_time_t deadline, int32_t *res)
{
	if (!res)
		return PW_READY;
	if (!cx || !s || s->fd < 0) {
		*res = -EINVAL;
		return PW_READY;
	}
	if (!s->started) {
		if (!seg || seg > UINT16_MAX || (!data && len) ||
		    len > INT32_MAX || !to_ok(to)) {
			*res = -EINVAL;
			return PW_READY;
		}
		if (s->op.state != PW__NS_IDLE)
			return PW_PENDING;
		send_start(s, NULL, 0, data, len, seg, to);
	}
	return send_step(cx, s, deadline, res);
}

void pw_udp_send_cancel(struct pw_udp_send *s)
{
	struct pw__shard *sh = pw__cur_shard;

	if (!s || !sh)
		return;
	pw__nop_cancel(sh, &s->op);
	s->started = false;
	pw_sleep_cancel(&s->timer);
}

bool pw_udp_send_in_flight(const struct pw_udp_send *s)
{
	return s && s->op.state != PW__NS_IDLE;
}

int pw_udp_send_gso(const struct pw_udp_send *s)
{
	if (!s)
		return 0;
	return s->gso == GSO_WORKS ? 1 : s->gso == GSO_REFUSED ? 0 : -1;
}

/* ---- batches ------------------------------------------------------------ */

void pw_udp_batch_init(struct pw_udp_batch *b, int fd)
{
	if (!b)
		return;
	memset(b, 0, sizeof(*b));
	pw_sleep_init_at(&b->timer, PW_TIME_NEVER);
	b->fd = fd;
}

void pw__udp_batch_cqe(struct pw__shard *s, struct pw_net_op *op,
		       const struct io_uring_cqe *cqe, bool final, bool alive)
{
	struct pw_udp_out *m = (struct pw_udp_out *)(void *)op;

	if (!final)
		return;
	op->state = PW__NS_IDLE;
	if (!alive)
		return;
	m->res = cqe->res;
	m->batch->pending--;
	if (cqe->res > 0 && s->net)
		s->net->st.send_bytes += (uint64_t)cqe->res;
}

static bool batch_ok(int fd, struct pw_udp_out *msgs, unsigned n)
{
	if (fd < 0 || (!msgs && n) || n > INT32_MAX)
		return false;
	for (unsigned i = 0; i < n; i++)
		if (iov_bytes(msgs[i].iov, msgs[i].iovcnt) < 0 ||
		    !to_ok(msgs[i].to))
			return false;
	return true;
}

/* Prepare every datagram's request; those the ring cannot take yet end
 * with -EAGAIN (counted out of the result). */
static void batch_arm(struct pw_cx *cx, struct pw_udp_batch *b)
{
	for (unsigned i = 0; i < b->n; i++) {
		struct pw_udp_out *m = &b->msgs[i];
		struct io_uring_sqe *sqe = pw__shard_sqe(cx->shard);

		memset(&m->op, 0, sizeof(m->op));
		m->batch = b;
		if (!sqe) {
			m->res = -EAGAIN;
			continue;
		}
		memset(&m->msg, 0, sizeof(m->msg));
		if (m->to) {
			m->msg.msg_name = (void *)(uintptr_t)&m->to->u;
			m->msg.msg_namelen = m->to->len;
		}
		m->msg.msg_iov = (struct iovec *)(uintptr_t)m->iov;
		m->msg.msg_iovlen = (size_t)m->iovcnt;
		io_uring_prep_sendmsg(sqe, b->fd, &m->msg, MSG_NOSIGNAL);
		pw__nop_arm(cx, &m->op, sqe, PW__NK_UDP_BATCH);
		b->pending++;
	}
}

enum pw_poll pw_udp_batch_poll(struct pw_cx *cx, struct pw_udp_batch *b,
			       struct pw_udp_out *msgs, unsigned n,
			       pw_time_t deadline, int32_t *res)
{
	if (!res)
		return PW_READY;
	if (!cx || !b) {
		*res = -EINVAL;
		return PW_READY;
	}
	if (!b->started) {
		if (!batch_ok(b->fd, msgs, n)) {
			*res = -EINVAL;
			return PW_READY;
		}
		if (b->pending)
			return PW_PENDING; /* a cancelled batch still ends */
		b->msgs = msgs;
		b->n = n;
		b->started = true;
		b->timed_out = false;
		batch_arm(cx, b);
	}
	if (b->pending) {
		if (!b->timed_out &&
		    pw__deadline_passed(cx, &b->timer, deadline)) {
			b->timed_out = true;
			pw_udp_batch_cancel(b);
			b->started = true; /* still ours: ends as usual */
		}
		return PW_PENDING;
	}
	if (!pw__coop_proceed(cx))
		return PW_PENDING;
	int32_t sent = 0;
	for (unsigned i = 0; i < b->n; i++)
		sent += b->msgs[i].res >= 0 ? 1 : 0;
	*res = b->timed_out ? -ETIMEDOUT : sent;
	b->started = false;
	pw_sleep_cancel(&b->timer);
	return PW_READY;
}

void pw_udp_batch_cancel(struct pw_udp_batch *b)
{
	struct pw__shard *s = pw__cur_shard;

	if (!b || !s)
		return;
	for (unsigned i = 0; b->pending && i < b->n; i++)
		pw__nop_cancel(s, &b->msgs[i].op);
	b->started = false;
	pw_sleep_cancel(&b->timer);
}

bool pw_udp_batch_in_flight(const struct pw_udp_batch *b)
{
	return b && b->pending;
}
