/* SPDX-License-Identifier: MIT */
/*
 * udp_recv.c - the receiving leaf of a UDP socket: a multishot recvmsg on
 * the shard's provided-buffer ring (the one pw_recv uses), one datagram
 * handed out per poll with its peer's address.
 *
 * Each completion fills one ring buffer as the kernel lays out a
 * multishot recvmsg: a struct io_uring_recvmsg_out, the peer's address
 * (room for an IPv6 one), control messages, then the payload. MSG_TRUNC
 * is passed in so that the header's payloadlen is the datagram's real
 * length: a datagram longer than its buffer is delivered cut, marked
 * PW_UDP_TRUNC with that length, never silently. Filled buffers queue in
 * the leaf (the embedded pw_recv's queue, linked through the ring's
 * next[]), and the request pauses at the leaf's share of the ring, as a
 * stream receive does; the socket's own queue holds the rest.
 *
 * With UDP_GRO the kernel may put a burst of one peer's equal datagrams
 * in one buffer, with a UDP_GRO control message giving their size: the
 * leaf hands them out one by one. A buffer being handed out is lent
 * (PW__BUF_LENT); the first four bytes of its header, read by then, count
 * its references: each datagram lent plus the leaf while datagrams are
 * left in it. The last release recycles it.
 */
#include <errno.h>
#include <netinet/udp.h>
#include <string.h>

#include "net/net_int.h"

#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/* The layout of each buffer: the address room holds an IPv6 address and
 * keeps the control messages 8-byte aligned. */
#define UDP_NAMELEN 32u
#define UDP_CTLLEN  (PW_UDP_RECV_OVERHEAD - 16u - UDP_NAMELEN)

_Static_assert(sizeof(struct io_uring_recvmsg_out) == 16, "recvmsg header");
_Static_assert(UDP_NAMELEN >= sizeof(struct sockaddr_in6), "address room");

enum { GRO_UNTRIED = 0, GRO_ON, GRO_OFF };

static struct pw_udp_recv *udp_of(struct pw_net_op *op)
{
	return pw_container_of(op, struct pw_udp_recv, rx.op);
}

void pw_udp_recv_init(struct pw_udp_recv *r, int fd, uint32_t flags)
{
	if (!r)
		return;
	memset(r, 0, sizeof(*r));
	pw_recv_init(&r->rx, fd);
	r->flags = flags;
}

/* The buffer's reference count, kept over its header once parsed. */
static uint32_t *buf_refs(const struct pw__net *n, uint16_t bid)
{
	return (uint32_t *)(void *)(n->mem + (size_t)bid * n->cfg.buf_size);
}

static void buf_unref(struct pw__net *n, uint16_t bid)
{
	if (--*buf_refs(n, bid) == 0)
		pw__net_buf_recycle(n, bid);
}

static uint32_t share(const struct pw__net *n, const struct pw_udp_recv *r)
{
	uint32_t cap = r->share ? r->share : PW_UDP_RECV_SHARE;
	uint32_t quarter = n->cfg.buf_count / 4 ? n->cfg.buf_count / 4 : 1;

	return cap < quarter ? cap : quarter;
}

/* ---- completions ------------------------------------------------------- */

void pw__udp_recv_cqe(struct pw__shard *s, struct pw_net_op *op,
		      const struct io_uring_cqe *cqe, bool final, bool alive)
{
	struct pw_udp_recv *r = udp_of(op);
	struct pw__net *n = s->net;
	int res = cqe->res;
	uint16_t bid;

	if (final)
		op->state = PW__NS_IDLE;
	if (pw__net_cqe_buf(n, op, cqe, alive, &bid))
		pw__net_buf_enqueue(n, &r->rx, bid, (uint32_t)res);
	if (!alive || (op->flags & PW__NF_DROPPED))
		return;
	if (res == -ENOBUFS) {
		n->st.enobufs++;
		op->flags |= PW__NF_STARVED;
	} else if (res == -ECANCELED && (op->flags & PW__NF_PAUSED)) {
		/* our own pause */
	} else if (res < 0) {
		r->rx.err = res;
		/* Another's cancel (a close) or a closed socket: never
		 * re-armed. An ICMP error leaves the socket usable. */
		r->sticky = res == -ECANCELED || res == -EBADF ||
			    res == -ENOTSOCK;
	}
	if (final) {
		op->flags &= (uint8_t)~PW__NF_PAUSED;
	} else if (r->rx.count >= share(n, r) && op->state == PW__NS_ARMED) {
		op->flags |= PW__NF_PAUSED;
		n->st.recv_pauses++;
		pw__nop_cancel(s, op);
	}
}

/* Turn UDP_GRO on once, if the buffers can hold a coalesced burst. */
static void gro_try(const struct pw__net *n, struct pw_udp_recv *r)
{
	int one = 1;

	r->gro = GRO_OFF;
	if ((r->flags & PW_UDP_NO_GRO) ||
	    n->cfg.buf_size < PW_UDP_GRO_ROOM + PW_UDP_RECV_OVERHEAD)
		return;
	if (!setsockopt(r->rx.fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)))
		r->gro = GRO_ON;
}

static void udp_arm(struct pw_cx *cx, struct pw_udp_recv *r, struct pw__net *n)
{
	struct pw_net_op *op = &r->rx.op;

	if (op->flags & PW__NF_STARVED) {
		if (n->out >= n->cfg.buf_count) {
			if (!r->rx.starved.next)
				pw_list_add_tail(&r->rx.starved, &n->starved);
			return; /* pw__net_buf_recycle() wakes us */
		}
		op->flags &= (uint8_t)~PW__NF_STARVED;
	}
	pw__recv_unstarve(&r->rx);
	struct io_uring_sqe *sqe = pw__nop_sqe(cx);
	if (!sqe)
		return;
	memset(&r->msg, 0, sizeof(r->msg));
	r->msg.msg_namelen = UDP_NAMELEN;
	r->msg.msg_controllen = UDP_CTLLEN;
	io_uring_prep_recvmsg_multishot(sqe, r->rx.fd, &r->msg, MSG_TRUNC);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = PW__NET_BGID;
	pw__nop_arm(cx, op, sqe, PW__NK_UDP_RECV);
}

/* ---- handing datagrams out --------------------------------------------- */

/* The GRO segment size in @o's control messages, or 0. */
static uint32_t gro_size(struct io_uring_recvmsg_out *o, struct msghdr *m)
{
	struct cmsghdr *c = io_uring_recvmsg_cmsg_firsthdr(o, m);

	for (; c; c = io_uring_recvmsg_cmsg_nexthdr(o, m, c)) {
		if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
			int v;
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			return v > 0 ? (uint32_t)v : 0;
		}
	}
	return 0;
}

/* Take the head of the queue as the buffer being handed out. */
static void cur_open(struct pw__net *n, struct pw_udp_recv *r)
{
	uint16_t bid = r->rx.head;
	char *b = n->mem + (size_t)bid * n->cfg.buf_size;
	uint32_t used = n->len[bid];
	struct io_uring_recvmsg_out *o =
		io_uring_recvmsg_validate(b, (int)used, &r->msg);

	r->rx.head = n->next[bid];
	r->rx.count--;
	n->where[bid] = PW__BUF_LENT;
	r->cur_bid = bid;
	memset(&r->cur_peer, 0, sizeof(r->cur_peer));
	if (!o) { /* cannot happen: the kernel writes the header first */
		r->cur_off = r->cur_len = r->cur_full = r->cur_seg = 0;
		r->cur_flags = PW_UDP_TRUNC;
		r->cur_left = 1;
		*buf_refs(n, bid) = 1;
		return;
	}
	uint32_t nl = o->namelen < UDP_NAMELEN ? o->namelen : UDP_NAMELEN;
	memcpy(&r->cur_peer.u, io_uring_recvmsg_name(o), nl);
	r->cur_peer.len = nl;
	char *pay = io_uring_recvmsg_payload(o, &r->msg);
	uint32_t room = used - (uint32_t)(pay - b);
	r->cur_off = (uint32_t)(pay - b);
	r->cur_full = o->payloadlen;
	r->cur_len = o->payloadlen < room ? o->payloadlen : room;
	r->cur_flags = (o->flags & MSG_TRUNC) ? PW_UDP_TRUNC : 0;
	r->cur_seg = gro_size(o, &r->msg);
	if (r->cur_seg && r->cur_seg < r->cur_full) {
		r->cur_left =
			(uint16_t)((r->cur_len + r->cur_seg - 1) / r->cur_seg);
		r->st.gro_bufs++;
		if (r->cur_flags) /* a burst cut short: whole ones lost */
			r->st.gro_lost +=
				(r->cur_full - r->cur_len) / r->cur_seg;
	} else {
		r->cur_seg = 0;
		r->cur_left = 1;
	}
	*buf_refs(n, bid) = 1; /* the leaf's, header read */
}

/* Lend the next datagram of the current buffer. */
static void udp_lend(struct pw__net *n, struct pw_udp_recv *r,
		     struct pw_udp_dgram *d)
{
	uint16_t bid = r->cur_bid;
	char *b = n->mem + (size_t)bid * n->cfg.buf_size;
	uint32_t len = r->cur_len;

	d->flags = 0;
	d->full_len = r->cur_full;
	if (r->cur_seg) {
		len = len < r->cur_seg ? len : r->cur_seg;
		d->full_len = r->cur_full < r->cur_seg ? r->cur_full :
							 r->cur_seg;
		r->cur_full -= d->full_len;
	}
	if (len < d->full_len)
		d->flags = PW_UDP_TRUNC;
	d->data = b + r->cur_off;
	d->len = len;
	d->bid = bid;
	memcpy(&d->peer.u, &r->cur_peer.u, r->cur_peer.len);
	d->peer.len = r->cur_peer.len;
	r->cur_off += len;
	r->cur_len -= len;
	r->st.datagrams++;
	r->st.truncated += d->flags ? 1 : 0;
	n->st.recv_bytes += len;
	++*buf_refs(n, bid);
	if (--r->cur_left == 0)
		buf_unref(n, bid); /* the leaf is done with it */
}

enum pw_poll pw_udp_recv_poll(struct pw_cx *cx, struct pw_udp_recv *r,
			      pw_time_t deadline, struct pw_udp_dgram *d,
			      int32_t *res)
{
	int err = 0;

	if (!res)
		return PW_READY;
	if (!cx || !r || !d || r->rx.fd < 0) {
		*res = -EINVAL;
		return PW_READY;
	}
	struct pw__net *n = pw__net_get(cx->shard, &err);
	if (!n || (err = pw__net_bufs_ready(cx->shard, n))) {
		*res = err;
		return PW_READY;
	}
	struct pw_net_op *op = &r->rx.op;
	op->flags &= (uint8_t)~PW__NF_DROPPED;
	op->task = cx->task; /* the starved list wakes this task */
	if (r->gro == GRO_UNTRIED)
		gro_try(n, r);
	if (r->cur_left || r->rx.count) {
		if (!pw__coop_proceed(cx))
			return PW_PENDING;
		if (!r->cur_left)
			cur_open(n, r);
		udp_lend(n, r, d);
		*res = (int32_t)d->len;
		if (op->state == PW__NS_IDLE && !r->sticky &&
		    r->rx.count <= share(n, r) / 2)
			udp_arm(cx, r, n);
		pw_sleep_cancel(&r->rx.timer);
		return PW_READY;
	}
	if (r->rx.err) {
		*res = r->rx.err;
		if (!r->sticky)
			r->rx.err = 0;
		pw_sleep_cancel(&r->rx.timer);
		return PW_READY;
	}
	if (op->state == PW__NS_IDLE)
		udp_arm(cx, r, n);
	if (pw__deadline_passed(cx, &r->rx.timer, deadline)) {
		*res = -ETIMEDOUT;
		return PW_READY;
	}
	return PW_PENDING;
}

int pw_udp_dgram_release(struct pw_udp_dgram *d)
{
	struct pw__shard *s = pw__cur_shard;
	struct pw__net *n = s ? s->net : NULL;

	if (!d || !n || !n->br || d->bid >= n->cfg.buf_count ||
	    n->where[d->bid] != PW__BUF_LENT)
		return -EINVAL;
	char *b = n->mem + (size_t)d->bid * n->cfg.buf_size;
	if ((char *)d->data < b + sizeof(struct io_uring_recvmsg_out) ||
	    (char *)d->data > b + n->cfg.buf_size || !*buf_refs(n, d->bid))
		return -EINVAL;
	buf_unref(n, d->bid);
	d->data = NULL;
	d->len = 0;
	d->bid = PW_NET_BUF_OWN;
	return 0;
}

void pw_udp_recv_cancel(struct pw_udp_recv *r)
{
	struct pw__shard *s = pw__cur_shard;
	struct pw__net *n = s ? s->net : NULL;

	if (!r || !s)
		return;
	r->rx.op.flags |= PW__NF_DROPPED;
	pw__recv_unstarve(&r->rx);
	pw__nop_cancel(s, &r->rx.op);
	while (r->rx.count && n) {
		uint16_t bid = r->rx.head;
		r->rx.head = n->next[bid];
		r->rx.count--;
		pw__net_buf_recycle(n, bid);
	}
	if (r->cur_left && n) {
		r->cur_left = 0;
		buf_unref(n, r->cur_bid);
	}
	if (!r->sticky)
		r->rx.err = 0;
	pw_sleep_cancel(&r->rx.timer);
}

bool pw_udp_recv_gro(const struct pw_udp_recv *r)
{
	return r && r->gro == GRO_ON;
}

bool pw_udp_recv_in_flight(const struct pw_udp_recv *r)
{
	return r && r->rx.op.state != PW__NS_IDLE;
}
