/* SPDX-License-Identifier: MIT */
/*
 * test_net_park.c - a receive's bounded share of the buffer ring and its
 * own memory (pw_recv_unread, pw_recv_park), a send's visible progress,
 * a reset on close (pw_net_abort) and an accept paused at a cap
 * (pw_accept_pause): exact bytes, in order, exact counters.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tests/common.h"
#include "core/fault.h"
#include "tests/net_fixtures.h"

#define PARK_BUF  1024u /* the ring's buffer size in these tests */
#define PARK_BUFS 16u

/* Byte @i of the stream the peer writes. */
static char pattern(size_t i)
{
	return (char)('a' + (i * 7 + i / 251) % 26);
}

struct park {
	int fd, peer, step;
	size_t wrote, got; /* stream bytes written by the peer, consumed */
	uint64_t parked0;
	struct pw_net_buf buf;
	struct pw_recv rx;
};

/* Write @n stream bytes on the peer (non-blocking); the count written. */
static size_t peer_write(struct park *p, size_t n)
{
	char chunk[4096];
	size_t done = 0;

	while (done < n) {
		size_t k = n - done < sizeof(chunk) ? n - done : sizeof(chunk);
		for (size_t i = 0; i < k; i++)
			chunk[i] = pattern(p->wrote + i);
		ssize_t w = write(p->peer, chunk, k);
		if (w <= 0)
			break;
		p->wrote += (size_t)w;
		done += (size_t)w;
	}
	return done;
}

/* Check @len consumed bytes at @data against the stream. */
static void consume(struct park *p, const char *data, size_t len)
{
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(data[i], pattern(p->got + i), "byte %zu differs",
			     p->got + i);
	p->got += len;
}

static int unread_bytes(int fd)
{
	int n = -1;

	cr_assert_eq(ioctl(fd, FIONREAD, &n), 0);
	return n;
}

static struct pw_net_stats stats(void)
{
	struct pw_net_stats st;

	cr_assert_eq(pw_net_stats(&st), 0);
	return st;
}

/* Poll again next turn. */
static enum pw_poll again(struct pw_cx *cx)
{
	struct pw_waker w = pw_cx_waker(cx);

	pw_waker_wake_by_ref(&w);
	return PW_PENDING;
}

/* Steps 0-2: a buffer's tail given back comes first, from own memory. */
static bool park_unread(struct pw_cx *cx, struct park *p)
{
	int32_t res;

	if (p->step == 0) {
		struct pw_net_config c;
		pw_net_config_init(&c);
		c.buf_count = PARK_BUFS;
		c.buf_size = PARK_BUF;
		cr_assert_eq(pw_net_configure(&c), 0);
		pw_recv_init(&p->rx, p->fd);
		cr_assert_eq(peer_write(p, 5), 5);
		p->step = 1;
	}
	if (p->step == 1) {
		if (pw_recv_poll(cx, &p->rx, PW_TIME_NEVER, &p->buf, &res) ==
		    PW_PENDING)
			return false;
		cr_assert_eq(res, 5);
		cr_assert_neq(p->buf.bid, PW_NET_BUF_OWN);
		consume(p, p->buf.data, 2);
		cr_assert_eq(pw_recv_unread(&p->rx, &p->buf, 6), -EINVAL);
		cr_assert_eq(pw_recv_unread(&p->rx, &p->buf, 2), 0);
		cr_assert_eq(stats().bufs_borrowed, 0, "the buffer went back");
		cr_assert_eq(pw_net_buf_release(&p->buf), -EINVAL);
		p->step = 2;
	}
	cr_assert_eq(pw_recv_poll(cx, &p->rx, PW_TIME_NEVER, &p->buf, &res),
		     PW_READY);
	cr_assert_eq(res, 3);
	cr_assert_eq(p->buf.bid, PW_NET_BUF_OWN);
	consume(p, p->buf.data, 3);
	cr_assert_eq(pw_net_buf_release(&p->buf), 0);
	cr_assert_eq(peer_write(p, 3 * PARK_BUF), 3 * PARK_BUF);
	p->step = 3;
	return true;
}

/* Steps 3-5: parking moves the queue and later arrivals into own
 * memory; the ring holds nothing for the leaf; the next poll returns it
 * all in one chunk. */
static bool park_moves(struct pw_cx *cx, struct park *p)
{
	struct pw_net_stats st;
	int32_t res;

	if (p->step == 3) {
		/* Everything written is in the leaf's queue. */
		if (unread_bytes(p->fd) || !p->rx.count)
			return false;
		st = stats();
		cr_assert_eq(st.bufs_borrowed, p->rx.count);
		p->parked0 = st.parked_bytes;
		pw_recv_park(&p->rx);
		st = stats();
		cr_assert_eq(st.parked_bytes - p->parked0, 3 * PARK_BUF);
		cr_assert_eq(st.bufs_borrowed, 0);
		cr_assert_eq(p->rx.count, 0);
		cr_assert_eq(peer_write(p, 1000), 1000);
		p->step = 4;
	}
	if (p->step == 4) {
		st = stats();
		if (st.parked_bytes - p->parked0 < 3 * PARK_BUF + 1000)
			return false;
		cr_assert_eq(st.parked_bytes - p->parked0, 3 * PARK_BUF + 1000);
		cr_assert_eq(st.bufs_borrowed, 0, "a parked leaf holds none");
		p->step = 5;
	}
	cr_assert_eq(pw_recv_poll(cx, &p->rx, PW_TIME_NEVER, &p->buf, &res),
		     PW_READY);
	cr_assert_eq(res, 3 * PARK_BUF + 1000, "one chunk: %d", res);
	cr_assert_eq(p->buf.bid, PW_NET_BUF_OWN);
	consume(p, p->buf.data, (size_t)res);
	cr_assert_eq(pw_net_buf_release(&p->buf), 0);
	p->parked0 = stats().parked_bytes;
	pw_recv_park(&p->rx);
	peer_write(p, 64 * PARK_BUF);
	p->step = 6;
	return true;
}

/* Step 6: a parked leaf stops the kernel's receive at its share; the
 * rest waits in the socket. Step 7: it all arrives, in order. */
static enum pw_poll park_poll(struct pw_cx *cx, void *state)
{
	struct park *p = state;
	int32_t res;

	if (p->step < 3 && !park_unread(cx, p))
		return PW_PENDING;
	if (p->step < 6 && !park_moves(cx, p))
		return again(cx);
	if (p->step == 6) {
		/* Stopped by a pause or by the kernel's byte limit. */
		if (p->rx.op.state || stats().parked_bytes == p->parked0)
			return again(cx);
		uint32_t own = p->rx.own_len - p->rx.own_off;
		int rest = unread_bytes(p->fd);
		cr_assert_gt(own, 0);
		cr_assert_leq(own, (PW_NET_RECV_SHARE + 1) * PARK_BUF,
			      "a parked leaf owns at most its share: %u", own);
		cr_assert_gt(rest, 0, "the socket holds the rest");
		cr_assert_eq(p->got + own + (size_t)rest, p->wrote);
		cr_assert_eq(stats().bufs_borrowed, 0);
		p->step = 7;
	}
	while (p->got < p->wrote) {
		if (pw_recv_poll(cx, &p->rx, PW_TIME_NEVER, &p->buf, &res) ==
		    PW_PENDING)
			return PW_PENDING;
		cr_assert_gt(res, 0);
		consume(p, p->buf.data, (size_t)res);
		cr_assert_eq(pw_net_buf_release(&p->buf), 0);
	}
	cr_assert_eq(stats().bufs_borrowed, 0);
	pw_recv_cancel(&p->rx);
	cr_assert_null(p->rx.own, "cancel frees the leaf's memory");
	return pw_ready(cx, 0);
}

Test(net_park, unread_and_park_keep_order_and_free_the_ring)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	struct pw_runtime *rt = pw_test_runtime(1);
	static struct park p;
	memset(&p, 0, sizeof(p));
	p.fd = sv[0];
	p.peer = sv[1];
	pw_test_block_on(rt, park_poll, &p);
	cr_assert_eq(p.got, p.wrote);
	cr_assert_gt(p.wrote, 64 * PARK_BUF);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(sv[0]);
	close(sv[1]);
}

/* ---- several streams at once ------------------------------------------ */

#define MAX_STREAMS 6

/* Streams received by one task, each from a socketpair whose peer wrote
 * its bytes before the task first polls. */
struct streams {
	int n, step;
	const struct pw_net_config *cfg; /* set on the shard first, or NULL */
	struct pw_net_stats st;		 /* at the end */
	struct park leaf[MAX_STREAMS];
};

/* @n socketpairs, each peer writing @bytes of its stream now. */
static void streams_open(struct streams *m, int n, size_t bytes)
{
	cr_assert_leq(n, MAX_STREAMS);
	m->n = n;
	for (int i = 0; i < n; i++) {
		int sv[2];
		cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
					sv),
			     0);
		cr_assert_eq(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
		m->leaf[i].fd = sv[0];
		m->leaf[i].peer = sv[1];
		cr_assert_eq(peer_write(&m->leaf[i], bytes), bytes);
	}
}

/* Every stream came whole (@bytes each, checked byte by byte on the
 * way); close them. */
static void streams_close(struct streams *m, size_t bytes)
{
	for (int i = 0; i < m->n; i++) {
		cr_assert_eq(m->leaf[i].got, bytes, "stream %d", i);
		close(m->leaf[i].fd);
		close(m->leaf[i].peer);
	}
}

/* Receive the rest of @p's stream; true once all of it came. */
static bool drain_leaf(struct pw_cx *cx, struct park *p)
{
	int32_t res;

	while (p->got < p->wrote) {
		if (pw_recv_poll(cx, &p->rx, PW_TIME_NEVER, &p->buf, &res) ==
		    PW_PENDING)
			return false;
		cr_assert_gt(res, 0, "a stream ended early: %d", res);
		consume(p, p->buf.data, (size_t)res);
		cr_assert_eq(pw_net_buf_release(&p->buf), 0);
	}
	return true;
}

/* Receive every stream to its end. The first pass arms all the receives
 * before any completion: the kernel issues them in one submit. */
static enum pw_poll streams_poll(struct pw_cx *cx, void *state)
{
	struct streams *m = state;
	bool done = true;

	if (m->step == 0) {
		if (m->cfg)
			cr_assert_eq(pw_net_configure(m->cfg), 0);
		for (int i = 0; i < m->n; i++)
			pw_recv_init(&m->leaf[i].rx, m->leaf[i].fd);
		m->step = 1;
	}
	for (int i = 0; i < m->n; i++)
		done &= drain_leaf(cx, &m->leaf[i]);
	if (!done)
		return PW_PENDING;
	for (int i = 0; i < m->n; i++)
		pw_recv_cancel(&m->leaf[i].rx);
	m->st = stats();
	return pw_ready(cx, 0);
}

/* ---- a kernel without the multishot byte limit ----------------------- */

#define OLD_BYTES (48u * 1024u)

/*
 * A kernel older than the byte limit refuses it (-EINVAL) on every
 * receive armed before the first refusal came back. Each re-arms without
 * it and loses nothing; later arms do not try again.
 */
Test(net_park, a_kernel_without_the_byte_limit_loses_nothing)
{
	static struct streams m;

	memset(&m, 0, sizeof(m));
	streams_open(&m, 2, OLD_BYTES);
	struct pw_runtime *rt = pw_test_runtime(1);
	pw__fault_arm(PW__FAULT_RECV_LIMIT, 0, ULONG_MAX);
	pw_test_block_on(rt, streams_poll, &m);
	pw__fault_disarm();
	cr_assert_eq(pw__fault_failed(PW__FAULT_RECV_LIMIT), 2,
		     "refused once per receive armed before the answer");
	cr_assert_eq(pw__fault_seen(PW__FAULT_RECV_LIMIT), 2,
		     "not asked again once refused");
	streams_close(&m, OLD_BYTES);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- a ring that runs dry --------------------------------------------- */

#define DRY_BYTES 4096u

/*
 * Six receives with data waiting and a ring of four buffers: four find
 * a buffer, the two that find it dry (-ENOBUFS) wait on the shard's
 * starved list, re-arm as buffers come back, and every byte of every
 * stream arrives in order.
 */
Test(net_park, a_dry_ring_starves_and_recovers)
{
	static struct streams m;
	static struct pw_net_config c;

	memset(&m, 0, sizeof(m));
	pw_net_config_init(&c);
	c.buf_count = 4;
	c.buf_size = 256;
	m.cfg = &c;
	streams_open(&m, 6, DRY_BYTES);
	struct pw_runtime *rt = pw_test_runtime(1);
	pw_test_block_on(rt, streams_poll, &m);
	cr_assert_geq(m.st.enobufs, 6 - 4, "%llu receives found the ring dry",
		      (unsigned long long)m.st.enobufs);
	cr_assert_eq(m.st.bufs_total, 4);
	cr_assert_eq(m.st.bufs_borrowed, 0);
	streams_close(&m, DRY_BYTES);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- a send's progress ------------------------------------------------ */

static char big[4 << 20];

struct progress {
	int32_t res;
	uint64_t at_timeout;
	struct pw_send tx;
};

static enum pw_poll progress_poll(struct pw_cx *cx, void *state)
{
	struct progress *p = state;

	if (pw_send_poll(cx, &p->tx, big, sizeof(big), 50 * PW_NSEC_PER_MSEC,
			 &p->res) == PW_PENDING)
		return PW_PENDING;
	p->at_timeout = pw_send_progress(&p->tx);
	return pw_ready(cx, 0);
}

/*
 * A send to a peer that never reads stops moving: its progress is what
 * the socket took, a partial send counted, and it is exactly the bytes
 * the peer can read.
 */
Test(net_park, send_progress_counts_partial_sends)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static struct progress p;
	memset(&p, 0, sizeof(p));
	memset(big, 'x', sizeof(big));
	pw_send_init(&p.tx, sv[0]);
	cr_assert_eq(pw_send_progress(&p.tx), 0);
	cr_assert_eq(pw_send_progress(NULL), 0);
	pw_test_block_on(rt, progress_poll, &p);
	cr_assert_eq(p.res, -ETIMEDOUT);
	cr_assert_gt(p.at_timeout, 0, "the partial send was counted");
	cr_assert_lt(p.at_timeout, sizeof(big));
	cr_assert_eq(unread_bytes(sv[1]), (int)p.at_timeout);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(sv[0]);
	close(sv[1]);
}

/* ---- a send that never waits ------------------------------------------ */

struct try_send {
	int step, peer;
	size_t drained; /* bytes the peer read between the tries */
	int32_t took[3];
	struct pw_send tx;
};

static enum pw_poll try_poll(struct pw_cx *cx, void *state)
{
	struct try_send *t = state;
	static char sink[8192];

	while (t->step < 3) {
		int32_t res;
		if (pw_send_try_poll(cx, &t->tx, big, sizeof(big), &res) ==
		    PW_PENDING)
			return PW_PENDING;
		t->took[t->step++] = res;
		while (t->step == 2 && unread_bytes(t->peer) > 0) {
			/* the peer reads it all: room again */
			ssize_t k = read(t->peer, sink, sizeof(sink));
			cr_assert_gt(k, 0);
			t->drained += (size_t)k;
		}
	}
	return pw_ready(cx, 0);
}

/*
 * A try takes what fits and ends: part of 4 MiB into an empty socket, 0
 * bytes into a full one (it does not wait for the peer), and some again
 * once the peer read it all. The peer can read exactly what the tries took.
 */
Test(net_park, send_try_takes_what_fits_and_never_waits)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct pw_runtime *rt = pw_test_runtime(1);
	static struct try_send t;
	memset(&t, 0, sizeof(t));
	memset(big, 'y', sizeof(big));
	t.peer = sv[1];
	pw_send_init(&t.tx, sv[0]);
	pw_test_block_on(rt, try_poll, &t);
	cr_assert_gt(t.took[0], 0);
	cr_assert_lt(t.took[0], (int32_t)sizeof(big), "a partial take");
	cr_assert_eq(t.took[1], 0, "a full socket: nothing, and no wait");
	cr_assert_gt(t.took[2], 0, "room after the peer read");
	uint64_t took = (uint64_t)t.took[0] + (uint64_t)t.took[2];
	cr_assert_eq(pw_send_progress(&t.tx), took);
	cr_assert_eq(t.drained, (size_t)t.took[0]);
	cr_assert_eq((uint64_t)unread_bytes(sv[1]) + t.drained, took);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(sv[0]);
	close(sv[1]);
}

/* ---- a reset on close ------------------------------------------------- */

/* pw_net_abort() turns the close into a reset the peer reads. */
Test(net_park, abort_sends_a_reset)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(l, 4), 0);
	cr_assert_eq(getsockname(l, (struct sockaddr *)&a, &len), 0);
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	int s = accept(l, NULL, NULL);
	cr_assert_geq(s, 0);
	cr_assert_eq(pw_net_abort(s), 0);
	cr_assert_eq(close(s), 0);
	char b;
	cr_assert(pw_test_readable(c, PW_TEST_WAIT_SECS * 1000));
	cr_assert_eq(recv(c, &b, 1, 0), -1);
	cr_assert_eq(errno, ECONNRESET);
	cr_assert_eq(pw_net_abort(-1), -EBADF);
	close(c);
	close(l);
}

/* ---- an accept paused at a cap ---------------------------------------- */

struct paused {
	int step, taken[3], clients[3];
	struct pw_net_addr at;
	struct pw_net_listener *l;
	struct pw_accept acc;
};

static uint64_t accepted(struct pw_net_listener *l)
{
	struct pw_net_listener_stats st;

	cr_assert_eq(pw_net_listener_stats(l, &st), 0);
	return st.accepted;
}

static int dial(const struct pw_net_addr *at)
{
	int fd = socket(at->u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_eq(connect(fd, &at->u.sa, at->len), 0);
	return fd;
}

static enum pw_poll paused_poll(struct pw_cx *cx, void *state)
{
	struct paused *p = state;
	int fd;

	switch (p->step) {
	case 0: /* arm, then two clients */
		cr_assert_eq(pw_accept_poll(cx, &p->acc, PW_TIME_NEVER, &fd),
			     PW_PENDING);
		p->clients[0] = dial(&p->at);
		p->clients[1] = dial(&p->at);
		p->step = 1;
		/* fall through */
	case 1: /* both accepted: take one, pause with one queued */
		if (accepted(p->l) < 2)
			return again(cx);
		cr_assert_eq(pw_accept_poll(cx, &p->acc, PW_TIME_NEVER,
					    &p->taken[0]),
			     PW_READY);
		cr_assert_geq(p->taken[0], 0);
		pw_accept_pause(&p->acc);
		p->step = 2;
		return again(cx);
	case 2: /* the pause landed: a third client is not accepted */
		if (p->acc.op.state)
			return again(cx);
		p->clients[2] = dial(&p->at);
		p->step = 3;
		return again(cx);
	case 3:
		cr_assert_eq(accepted(p->l), 2, "accepted while paused");
		/* The queued one was kept; polling re-arms for the third. */
		cr_assert_eq(pw_accept_poll(cx, &p->acc, PW_TIME_NEVER,
					    &p->taken[1]),
			     PW_READY);
		cr_assert_geq(p->taken[1], 0);
		p->step = 4;
		/* fall through */
	default:
		if (pw_accept_poll(cx, &p->acc, PW_TIME_NEVER, &p->taken[2]) ==
		    PW_PENDING)
			return PW_PENDING;
		cr_assert_geq(p->taken[2], 0);
		cr_assert_eq(accepted(p->l), 3);
		pw_accept_cancel(&p->acc);
		return pw_ready(cx, 0);
	}
}

Test(net_park, accept_pause_keeps_the_queue_and_leaves_the_backlog)
{
	int fds0 = pw_test_open_fds();
	struct pw_runtime *rt = pw_test_runtime(1);
	static struct paused p;
	struct pw_net_addr any;
	memset(&p, 0, sizeof(p));
	cr_assert_eq(pw_net_addr_parse(&any, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_net_listener_create(&p.l, rt, &any, NULL), 0);
	cr_assert_eq(pw_net_listener_addr(p.l, &p.at), 0);
	pw_accept_init(&p.acc, p.l, 0);
	pw_test_block_on(rt, paused_poll, &p);
	for (int i = 0; i < 3; i++) {
		close(p.taken[i]);
		close(p.clients[i]);
	}
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	pw_net_listener_destroy(p.l);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}
