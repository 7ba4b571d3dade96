/* SPDX-License-Identifier: MIT */
/*
 * test_net.c - sockets over io_uring on loopback: byte-exact echo over
 * TCP (IPv4, IPv6) and Unix sockets with many connections, half-close,
 * peer reset, connect refused and timed out, accept under descriptor
 * exhaustion, buffer-ring starvation, SEND_ZC, deadlines, cancels (of a
 * connect, and by a close), settings and calls refused, bad input, a
 * port or Unix path another server holds, and the `pinwheel echo`
 * command.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/common.h"
#include "tests/net_fixtures.h"

/* ---- checksums and payloads -------------------------------------------- */

static void fill(uint64_t *seed, char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)(pw_test_rng(seed) >> 24);
}

/* ---- the server: an echo service in tasks ------------------------------ */

static struct pw_net_config *srv_cfg; /* applied on each shard first */
static _Atomic uint64_t srv_sum;      /* sum of per-connection checksums */
static _Atomic int srv_done, srv_errors, srv_eofs;
static _Atomic int srv_last_err;

enum { C_RECV, C_SEND, C_SHUT, C_CLOSE };

struct conn {
	int fd, step;
	bool have, counted;
	int32_t err;
	uint64_t sum;
	struct pw_net_buf buf;
	struct pw_recv rx;
	struct pw_send tx;
	struct pw_close cl;
};

static void conn_finish(struct conn *c)
{
	if (c->counted)
		return;
	c->counted = true;
	atomic_fetch_add(&srv_sum, c->sum);
	if (c->err < 0) {
		atomic_fetch_add(&srv_errors, 1);
		atomic_store(&srv_last_err, c->err);
	}
	atomic_fetch_add(&srv_done, 1);
}

static enum pw_poll conn_poll(struct pw_cx *cx, void *state)
{
	struct conn *c = state;
	int32_t res;

	for (;;) {
		switch (c->step) {
		case C_RECV:
			if (pw_recv_poll(cx, &c->rx, PW_TIME_NEVER, &c->buf,
					 &res) == PW_PENDING)
				return PW_PENDING;
			if (res < 0) {
				c->err = res;
				c->step = C_CLOSE;
				pw_close_init(&c->cl, c->fd);
			} else if (res == 0) {
				atomic_fetch_add(&srv_eofs, 1);
				c->step = C_SHUT;
				pw_shutdown_init(&c->cl, c->fd, SHUT_WR);
			} else {
				c->sum = pw_test_fnv(c->sum, c->buf.data,
						     c->buf.len);
				c->have = true;
				c->step = C_SEND;
			}
			break;
		case C_SEND:
			if (pw_send_poll(cx, &c->tx, c->buf.data, c->buf.len,
					 PW_TIME_NEVER, &res) == PW_PENDING)
				return PW_PENDING;
			cr_assert_eq(pw_net_buf_release(&c->buf), 0);
			cr_assert_eq(pw_net_buf_release(&c->buf), -EINVAL,
				     "a second release is refused");
			c->have = false;
			if (res < 0) {
				c->err = res;
				c->step = C_CLOSE;
				pw_close_init(&c->cl, c->fd);
			} else {
				c->step = C_RECV;
			}
			break;
		case C_SHUT:
			if (pw_close_poll(cx, &c->cl, &res) == PW_PENDING)
				return PW_PENDING;
			c->step = C_CLOSE;
			pw_close_init(&c->cl, c->fd);
			break;
		default:
			if (pw_close_poll(cx, &c->cl, &res) == PW_PENDING)
				return PW_PENDING;
			cr_assert_eq(res, 0, "close: %d", res);
			conn_finish(c);
			return pw_ready(cx, 0);
		}
	}
}

static void conn_drop(void *state)
{
	struct conn *c = state;

	if (c->have)
		pw_net_buf_release(&c->buf);
	pw_recv_cancel(&c->rx);
	pw_send_cancel(&c->tx);
	if (!pw_close_cancel(&c->cl))
		close(c->fd);
}

struct acceptor {
	struct pw_accept acc;
	bool configured;
};

static enum pw_poll acceptor_poll(struct pw_cx *cx, void *state)
{
	struct acceptor *a = state;
	int fd;

	if (!a->configured && srv_cfg)
		cr_assert_eq(pw_net_configure(srv_cfg), 0);
	a->configured = true;
	for (;;) {
		if (pw_accept_poll(cx, &a->acc, PW_TIME_NEVER, &fd) ==
		    PW_PENDING)
			return PW_PENDING;
		cr_assert_geq(fd, 0, "accept: %d", fd);
		struct conn c = { .fd = fd, .sum = PW_TEST_FNV_INIT };
		pw_recv_init(&c.rx, fd);
		pw_send_init(&c.tx, fd);
		pw_close_init(&c.cl, fd);
		cr_assert_eq(
			pw_spawn(NULL, conn_poll, &c, sizeof(c), conn_drop), 0);
	}
}

static void acceptor_drop(void *state)
{
	struct acceptor *a = state;
	pw_accept_cancel(&a->acc);
}

struct server {
	struct pw_runtime *rt;
	struct pw_net_listener *l;
	struct pw_net_addr addr; /* where clients connect */
	unsigned shards;
};

static void server_accept(struct server *s)
{
	for (unsigned i = 0; i < s->shards; i++) {
		struct acceptor ac = { 0 };
		pw_accept_init(&ac.acc, s->l, 2 * PW_NSEC_PER_MSEC);
		cr_assert_eq(pw_runtime_spawn(s->rt, i, acceptor_poll, &ac,
					      sizeof(ac), acceptor_drop),
			     0);
	}
}

/* Runtime and listener, no acceptor yet. */
static void server_init(struct server *s, unsigned shards, const char *at,
			uint32_t flags)
{
	struct pw_net_addr a;
	struct pw_net_listen_opts o = { .flags = flags };

	atomic_store(&srv_sum, 0);
	atomic_store(&srv_done, 0);
	atomic_store(&srv_errors, 0);
	atomic_store(&srv_eofs, 0);
	s->shards = shards;
	s->rt = pw_test_runtime(shards);
	cr_assert_eq(pw_net_addr_parse(&a, at), 0, "%s", at);
	int err = pw_net_listener_create(&s->l, s->rt, &a, &o);
	cr_assert_eq(err, 0, "listen on %s: %d", at, err);
	cr_assert_eq(pw_net_listener_addr(s->l, &s->addr), 0);
}

static void server_start(struct server *s, unsigned shards, const char *at,
			 uint32_t flags)
{
	server_init(s, shards, at, flags);
	server_accept(s);
}

/* Wait until @n connections finished on the server side. */
static void server_wait_done(int n)
{
	PW_TEST_WAIT_UNTIL(atomic_load(&srv_done) >= n, PW_TEST_WAIT_SECS,
			   "%d of %d server connections done",
			   atomic_load(&srv_done), n);
	cr_assert_eq(atomic_load(&srv_done), n, "server connections done");
}

static void server_stop(struct server *s)
{
	cr_assert_eq(pw_runtime_destroy(s->rt), 0);
	cr_assert_eq(pw_net_listener_destroy(s->l), 0);
}

/* ---- clients: blocking sockets on helper threads ----------------------- */

struct client {
	struct pw_net_addr addr;
	size_t len;
	uint64_t seed;
	uint64_t sent_sum, recv_sum;
	size_t got;
	int err;
	pthread_t th;
};

/* Send len pseudo-random bytes while reading the echo, then half-close
 * and read to the end. */
static void *client_main(void *arg)
{
	struct client *c = arg;
	static _Thread_local char out[16384], in[65536];
	size_t sent = 0, olen = 0, ooff = 0;
	bool shut = false;
	uint64_t seed = c->seed;

	c->sent_sum = c->recv_sum = PW_TEST_FNV_INIT;
	int fd = pw_test_dial(&c->addr);
	if (fd < 0) {
		c->err = fd;
		return NULL;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (;;) {
		if (sent == c->len && ooff == olen && !shut) {
			shutdown(fd, SHUT_WR);
			shut = true;
		}
		struct pollfd p = { fd, POLLIN, 0 };
		if (!shut)
			p.events |= POLLOUT;
		int n = poll(&p, 1, PW_TEST_WAIT_SECS * 1000);
		if (n <= 0) {
			c->err = -ETIMEDOUT;
			break;
		}
		if (p.revents & POLLOUT) {
			if (ooff == olen) {
				olen = c->len - sent < sizeof(out) ?
					       c->len - sent :
					       sizeof(out);
				olen = 1 + pw_test_rng(&seed) % olen;
				fill(&seed, out, olen);
				c->sent_sum =
					pw_test_fnv(c->sent_sum, out, olen);
				sent += olen;
				ooff = 0;
			}
			ssize_t w =
				send(fd, out + ooff, olen - ooff, MSG_NOSIGNAL);
			if (w > 0)
				ooff += (size_t)w;
			else if (errno != EAGAIN) {
				c->err = -errno;
				break;
			}
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t r = recv(fd, in, sizeof(in), 0);
			if (r == 0)
				break;
			if (r < 0 && errno != EAGAIN) {
				c->err = -errno;
				break;
			}
			if (r > 0) {
				c->recv_sum =
					pw_test_fnv(c->recv_sum, in, (size_t)r);
				c->got += (size_t)r;
			}
		}
	}
	close(fd);
	return NULL;
}

/* Run @n clients against @s concurrently and check every byte. */
static void run_clients(struct server *s, int n, size_t max_len, uint64_t seed)
{
	struct client *cl = calloc((size_t)n, sizeof(*cl));
	uint64_t sum = 0;

	cr_assert_not_null(cl);
	for (int i = 0; i < n; i++) {
		cl[i].addr = s->addr;
		cl[i].seed = seed * 7919 + (uint64_t)i + 1;
		uint64_t r = cl[i].seed;
		cl[i].len = 1 + pw_test_rng(&r) % max_len;
		if (i == 0)
			cl[i].len = max_len;
		cr_assert_eq(pthread_create(&cl[i].th, NULL, client_main,
					    &cl[i]),
			     0);
	}
	for (int i = 0; i < n; i++) {
		pthread_join(cl[i].th, NULL);
		cr_assert_eq(cl[i].err, 0, "client %d: %d", i, cl[i].err);
		cr_assert_eq(cl[i].got, cl[i].len, "client %d: %zu of %zu", i,
			     cl[i].got, cl[i].len);
		cr_assert_eq(cl[i].recv_sum, cl[i].sent_sum,
			     "client %d: checksum", i);
		sum += cl[i].sent_sum;
	}
	server_wait_done(n);
	cr_assert_eq(atomic_load(&srv_sum), sum, "server-side checksums");
	cr_assert_eq(atomic_load(&srv_errors), 0);
	cr_assert_eq(atomic_load(&srv_eofs), n, "every half-close was seen");
	free(cl);
}

static size_t scaled(size_t bytes)
{
	size_t v = (size_t)((double)bytes * pw_test_scale());
	return v < 4096 ? 4096 : v;
}

/* Every shard's acceptor remains, nothing else: no task leaked. In
 * stealing mode the acceptors, spawned from this thread, are not in a
 * shard's slab. */
static void check_idle(struct server *s)
{
	uint64_t want = pw_test_steal() ? 0 : 1;

	for (unsigned i = 0; i < s->shards; i++) {
		struct pw_shard_stats st = pw_test_wait_live(s->rt, i, want);
		cr_assert_eq(st.live_tasks, want, "shard %u live tasks", i);
	}
}

/* ---- echo tests -------------------------------------------------------- */

Test(net, echo_ipv4_many_connections_byte_exact)
{
	pw_test_time_limit(120);
	int fds0 = pw_test_open_fds();
	struct server s;
	server_start(&s, 2, "127.0.0.1:0", 0);
	run_clients(&s, 24, scaled(3u << 20), 1);
	check_idle(&s);
	struct pw_net_listener_stats ls;
	cr_assert_eq(pw_net_listener_stats(s.l, &ls), 0);
	cr_assert_eq(ls.accepted, 24);
	cr_assert_eq(ls.accept_errors, 0);
	server_stop(&s);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/* 400 connections land before the acceptor runs: the multishot accept
 * delivers more than its queue holds, and not one is lost. */
Test(net, accept_burst_loses_nothing)
{
	enum { N = 400 };
	int fds0 = pw_test_open_fds();
	struct server s;
	static int c[N];
	server_init(&s, 1, "127.0.0.1:0", 0);
	for (int i = 0; i < N; i++)
		c[i] = pw_test_dial(&s.addr);
	server_accept(&s);
	for (int i = 0; i < N; i++) {
		char b = (char)i, r = 0;
		cr_assert_eq(send(c[i], &b, 1, 0), 1);
		cr_assert_eq(recv(c[i], &r, 1, MSG_WAITALL), 1, "client %d", i);
		cr_assert_eq(r, b);
		close(c[i]);
	}
	server_wait_done(N);
	struct pw_net_listener_stats ls;
	cr_assert_eq(pw_net_listener_stats(s.l, &ls), 0);
	cr_assert_eq(ls.accepted, N);
	cr_assert_eq(ls.dropped, 0);
	check_idle(&s);
	server_stop(&s);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

Test(net, echo_shared_listener)
{
	int fds0 = pw_test_open_fds();
	struct server s;
	server_start(&s, 2, "127.0.0.1:0", PW_NET_LISTEN_SHARED);
	run_clients(&s, 12, scaled(1u << 20), 2);
	check_idle(&s);
	server_stop(&s);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

Test(net, echo_unix_socket)
{
	char at[64];
	snprintf(at, sizeof(at), "unix:/tmp/pw-test-net-%d.sock", getpid());
	unlink(at + 5);
	int fds0 = pw_test_open_fds();
	struct server s;
	server_start(&s, 2, at, 0);
	run_clients(&s, 8, scaled(1u << 20), 3);
	check_idle(&s);
	server_stop(&s);
	cr_assert_eq(access(at + 5, F_OK), -1, "the socket file is removed");
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

static bool ipv6_loopback(void)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
				  .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

Test(net, echo_ipv6)
{
	if (!ipv6_loopback())
		cr_skip_test("IPv6 loopback ::1 is unavailable on this host");
	int fds0 = pw_test_open_fds();
	struct server s;
	server_start(&s, 2, "[::1]:0", 0);
	char text[PW_NET_ADDR_STRLEN];
	cr_assert_gt(pw_net_addr_format(&s.addr, text, sizeof(text)), 0);
	cr_assert_eq(strncmp(text, "[::1]:", 6), 0, "%s", text);
	run_clients(&s, 8, scaled(1u << 20), 4);
	check_idle(&s);
	server_stop(&s);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/* SEND_ZC above a small threshold: same bytes, and ZC was used. */
static enum pw_poll stats_poll(struct pw_cx *cx, void *state)
{
	cr_assert_eq(pw_net_stats(state), 0);
	return pw_ready(cx, 0);
}

Test(net, echo_send_zc)
{
	struct pw_net_config cfg;
	pw_net_config_init(&cfg);
	cfg.zc_threshold = 1024;
	srv_cfg = &cfg;
	struct server s;
	server_start(&s, 1, "127.0.0.1:0", 0);
	run_clients(&s, 4, scaled(1u << 20), 5);
	struct pw_net_stats st;
	pw_test_block_on(s.rt, stats_poll, &st);
	cr_assert_gt(st.zc_sends, 0);
	cr_assert_eq(st.bufs_borrowed, 0);
	server_stop(&s);
	srv_cfg = NULL;
}

/* A ring of 4 buffers for 6 echoing connections: every byte still
 * arrives, whether or not the ring runs dry on the way (a receive that
 * finds it dry is made certain in net_park/a_dry_ring_starves_and_recovers). */
Test(net, tiny_ring_echoes_every_byte)
{
	int fds0 = pw_test_open_fds();
	struct pw_net_config cfg;
	pw_net_config_init(&cfg);
	cfg.buf_count = 4;
	cfg.buf_size = 256;
	srv_cfg = &cfg;
	struct server s;
	server_start(&s, 1, "127.0.0.1:0", 0);
	run_clients(&s, 6, scaled(256u << 10), 6);
	struct pw_net_stats st;
	pw_test_block_on(s.rt, stats_poll, &st);
	cr_assert_eq(st.bufs_total, 4);
	cr_assert_eq(st.bufs_borrowed, 0);
	check_idle(&s);
	server_stop(&s);
	srv_cfg = NULL;
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/* ---- faults ------------------------------------------------------------ */

/* Half-close: the client's FIN reaches the server as end of stream; the
 * server's own half-close reaches the client after all echoed data, while
 * the client can still read. */
Test(net, half_close_propagates)
{
	struct server s;
	server_start(&s, 1, "127.0.0.1:0", 0);
	int fd = pw_test_dial(&s.addr);
	cr_assert_geq(fd, 0);
	cr_assert_eq(send(fd, "ping", 4, 0), 4);
	char buf[8];
	cr_assert_eq(recv(fd, buf, 4, MSG_WAITALL), 4);
	cr_assert_eq(shutdown(fd, SHUT_WR), 0);
	cr_assert_eq(recv(fd, buf, sizeof(buf), 0), 0, "EOF after FIN");
	server_wait_done(1);
	cr_assert_eq(atomic_load(&srv_eofs), 1);
	close(fd);
	server_stop(&s);
}

/* The peer resets the connection mid-stream: the server task sees an
 * error, finishes, and leaves no task, buffer or fd behind. */
Test(net, peer_reset_mid_stream)
{
	int fds0 = pw_test_open_fds();
	struct server s;
	server_start(&s, 1, "127.0.0.1:0", 0);
	int fd = pw_test_dial(&s.addr);
	cr_assert_geq(fd, 0);
	/* Send without reading until the client's send buffer is full: the
	 * echo has backed up, bytes are in flight on the server's side. */
	char *blk = calloc(1, 65536);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	size_t total = 0;
	for (;;) {
		ssize_t w = send(fd, blk, 65536, MSG_NOSIGNAL);
		if (w <= 0) {
			cr_assert_eq(errno, EAGAIN, "send: %s",
				     strerror(errno));
			break;
		}
		total += (size_t)w;
	}
	free(blk);
	cr_assert_gt(total, 0);
	struct linger lg = { 1, 0 };
	cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	close(fd); /* RST */
	server_wait_done(1);
	cr_assert_eq(atomic_load(&srv_errors), 1, "the reset was reported");
	int e = atomic_load(&srv_last_err);
	cr_assert(e == -ECONNRESET || e == -EPIPE, "error %d", e);
	check_idle(&s);
	struct pw_net_stats st;
	pw_test_block_on(s.rt, stats_poll, &st);
	cr_assert_eq(st.bufs_borrowed, 0, "every buffer returned");
	server_stop(&s);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/* A client task: connect, send a message, read the echo. */
struct dial {
	struct pw_net_addr addr;
	uint64_t timeout_ns;
	int step, fd;
	int32_t res;
	uint64_t start, deadline;
	uint64_t connected; /* runtime time the connect ended */
	char in[64];
	size_t got;
	struct pw_net_buf buf;
	struct pw_connect c;
	struct pw_send tx;
	struct pw_recv rx;
	struct pw_close cl;
};

static enum pw_poll dial_poll(struct pw_cx *cx, void *state)
{
	struct dial *d = state;
	int32_t res;

	switch (d->step) {
	case 0:
		pw_connect_init(&d->c, &d->addr);
		d->start = pw_time_now();
		d->deadline = d->timeout_ns ? d->start + d->timeout_ns :
					      PW_TIME_NEVER;
		d->step = 1;
		/* fall through */
	case 1:
		if (pw_connect_poll(cx, &d->c, d->deadline, &d->fd) ==
		    PW_PENDING)
			return PW_PENDING;
		d->connected = pw_time_now();
		if (d->fd < 0)
			return pw_ready(cx, d->fd);
		pw_send_init(&d->tx, d->fd);
		pw_recv_init(&d->rx, d->fd);
		d->step = 2;
		/* fall through */
	case 2:
		if (pw_send_poll(cx, &d->tx, "hello", 5, PW_TIME_NEVER, &res) ==
		    PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, 5);
		d->step = 3;
		/* fall through */
	case 3:
		while (d->got < 5) {
			if (pw_recv_poll(cx, &d->rx, PW_TIME_NEVER, &d->buf,
					 &res) == PW_PENDING)
				return PW_PENDING;
			cr_assert_gt(res, 0);
			memcpy(d->in + d->got, d->buf.data, d->buf.len);
			d->got += d->buf.len;
			cr_assert_eq(pw_net_buf_release(&d->buf), 0);
		}
		pw_recv_cancel(&d->rx);
		pw_close_init(&d->cl, d->fd);
		d->step = 4;
		/* fall through */
	default:
		if (pw_close_poll(cx, &d->cl, &res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, 0);
		return pw_ready(cx, (int64_t)d->got);
	}
}

Test(net, connect_with_tasks_and_exchange)
{
	int fds0 = pw_test_open_fds();
	struct server s;
	server_start(&s, 2, "127.0.0.1:0", 0);
	static struct dial d;
	memset(&d, 0, sizeof(d));
	d.addr = s.addr;
	d.timeout_ns = 5 * PW_NSEC_PER_SEC;
	cr_assert_eq(pw_test_block_on(s.rt, dial_poll, &d), 5);
	cr_assert_eq(memcmp(d.in, "hello", 5), 0);
	server_wait_done(1);
	server_stop(&s);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/* A port bound by this test but not listening: the connect is refused,
 * and the socket the connect opened is closed. */
Test(net, connect_refused)
{
	int fds0 = pw_test_open_fds();
	struct pw_runtime *rt = pw_test_runtime(1);
	static struct dial d;
	memset(&d, 0, sizeof(d));
	int pfd = pw_test_refusing_port(&d.addr);
	cr_assert_eq(pw_test_block_on(rt, dial_poll, &d), -ECONNREFUSED);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(pfd);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/* A listener with backlog 0 whose accept queue is full drops SYNs, so a
 * connect hangs: the deadline cancels it and -ETIMEDOUT comes back at
 * exactly the deadline of the paused clock, its socket closed. */
Test(net, connect_timeout)
{
	struct pw_net_addr a;
	int fill[16], nfill;
	int lfd = pw_test_blackhole(&a, fill, &nfill);
	int fds0 = pw_test_open_fds();
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static struct dial d;
	memset(&d, 0, sizeof(d));
	d.addr = a;
	d.timeout_ns = 300 * PW_NSEC_PER_MSEC;
	cr_assert_eq(pw_test_block_on(rt, dial_poll, &d), -ETIMEDOUT);
	cr_assert_eq(d.connected - d.start, 300 * PW_NSEC_PER_MSEC,
		     "ended %llu ns after the start",
		     (unsigned long long)(d.connected - d.start));
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
	pw_test_blackhole_close(lfd, fill, nfill);
}

/* Descriptors run out: accepts fail with EMFILE, are counted and retried
 * after a backoff; once descriptors are freed every waiting connection is
 * accepted and served. Runs in a child process of its own: the test
 * runner's threads open and close descriptors, which would leave holes
 * below the limit. */
static int fd_exhaustion_scenario(void)
{
	/* The limit is lowered before the accept is armed: the kernel reads
	 * RLIMIT_NOFILE when an accept request is submitted. */
	struct rlimit old;
	EXPECT(pw_test_nofile_lower(&old, 64) == 0);
	struct server s;
	server_init(&s, 1, "127.0.0.1:0", 0);
	enum { N = 4 };
	int cfd[N], hog[64];
	/* Take every descriptor left. */
	int nhog = pw_test_fds_exhaust(cfd, N, hog, 64);
	EXPECT(nhog >= 0);
	server_accept(&s); /* armed with the table full */
	for (int i = 0; i < N; i++)
		EXPECT(connect(cfd[i], &s.addr.u.sa, s.addr.len) == 0);
	struct pw_net_listener_stats ls = { 0 };
	uint64_t dl = pw_test_now_ns() + PW_TEST_WAIT_SECS * PW_NSEC_PER_SEC;
	while (pw_net_listener_stats(s.l, &ls) == 0 && ls.accept_errors < 3 &&
	       pw_test_wait_step(dl))
		;
	EXPECT(ls.accept_errors >= 3); /* counted, retried after backoff */
	EXPECT(ls.accepted == 0);
	EXPECT(pw_test_fds_restore(hog, nhog, &old) == 0);
	for (int i = 0; i < N; i++) {
		char b[4];
		EXPECT(send(cfd[i], "abc", 3, 0) == 3);
		EXPECT(recv(cfd[i], b, 3, MSG_WAITALL) == 3);
		EXPECT(memcmp(b, "abc", 3) == 0);
		close(cfd[i]);
	}
	dl = pw_test_now_ns() + PW_TEST_WAIT_SECS * PW_NSEC_PER_SEC;
	while (atomic_load(&srv_done) < N && pw_test_wait_step(dl))
		;
	EXPECT(atomic_load(&srv_done) == N);
	pw_net_listener_stats(s.l, &ls);
	EXPECT(ls.accepted == N);
	server_stop(&s);
	return 0;
}

Test(net, accept_survives_fd_exhaustion)
{
	pw_test_scenario(fd_exhaustion_scenario);
}

/* ---- deadlines ------------------------------------------------------- */

struct timed_recv {
	int fd, step;
	uint64_t deadline;
	int32_t first, second;
	struct pw_net_buf buf;
	struct pw_recv rx;
	struct pw_accept acc;
};

static enum pw_poll timed_recv_poll(struct pw_cx *cx, void *state)
{
	struct timed_recv *t = state;

	if (!t->deadline)
		t->deadline = pw_time_now() + 50 * PW_NSEC_PER_MSEC;
	if (t->step == 0) {
		if (pw_recv_poll(cx, &t->rx, t->deadline, &t->buf, &t->first) ==
		    PW_PENDING)
			return PW_PENDING;
		t->step = 1;
		/* The peer writes now; the armed recv keeps it. */
		cr_assert_eq(write(t->fd, "late", 4), 4);
	}
	if (pw_recv_poll(cx, &t->rx, PW_TIME_NEVER, &t->buf, &t->second) ==
	    PW_PENDING)
		return PW_PENDING;
	cr_assert_eq(pw_net_buf_release(&t->buf), 0);
	pw_recv_cancel(&t->rx);
	return pw_ready(cx, 0);
}

Test(net, recv_deadline_then_data)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct pw_runtime *rt = pw_test_runtime(1);
	static struct timed_recv t;
	memset(&t, 0, sizeof(t));
	t.fd = sv[1];
	pw_recv_init(&t.rx, sv[0]);
	pw_test_block_on(rt, timed_recv_poll, &t);
	cr_assert_eq(t.first, -ETIMEDOUT);
	cr_assert_eq(t.second, 4);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(sv[0]);
	close(sv[1]);
}

/* An accept with a deadline and no client: -ETIMEDOUT. */
static enum pw_poll timed_accept_poll(struct pw_cx *cx, void *state)
{
	struct timed_recv *t = state;
	int fd;
	if (!t->deadline)
		t->deadline = pw_time_now() + 20 * PW_NSEC_PER_MSEC;
	if (pw_accept_poll(cx, &t->acc, t->deadline, &fd) == PW_PENDING)
		return PW_PENDING;
	pw_accept_cancel(&t->acc);
	return pw_ready(cx, fd);
}

Test(net, accept_deadline)
{
	int fds0 = pw_test_open_fds();
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_net_addr a;
	struct pw_net_listener *l;
	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_net_listener_create(&l, rt, &a, NULL), 0);
	static struct timed_recv t;
	memset(&t, 0, sizeof(t));
	pw_accept_init(&t.acc, l, 0);
	cr_assert_eq(pw_test_block_on(rt, timed_accept_poll, &t), -ETIMEDOUT);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_net_listener_destroy(l), 0);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/* ---- addresses and bad input ------------------------------------------ */

Test(net, address_parsing)
{
	struct pw_net_addr a, keep;
	char text[PW_NET_ADDR_STRLEN];

	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:8080"), 0);
	cr_assert_eq(a.u.sa.sa_family, AF_INET);
	cr_assert_eq(ntohs(a.u.in4.sin_port), 8080);
	cr_assert_eq(pw_net_addr_format(&a, text, sizeof(text)), 14);
	cr_assert_str_eq(text, "127.0.0.1:8080");
	cr_assert_eq(pw_net_addr_parse(&a, "[::1]:65535"), 0);
	cr_assert_eq(a.u.sa.sa_family, AF_INET6);
	pw_net_addr_format(&a, text, sizeof(text));
	cr_assert_str_eq(text, "[::1]:65535");
	cr_assert_eq(pw_net_addr_parse(&a, "unix:/tmp/x.sock"), 0);
	cr_assert_eq(a.u.sa.sa_family, AF_UNIX);
	pw_net_addr_format(&a, text, sizeof(text));
	cr_assert_str_eq(text, "unix:/tmp/x.sock");
	cr_assert_eq(pw_net_addr_parse(&a, "unix:@abstract"), 0);
	pw_net_addr_format(&a, text, sizeof(text));
	cr_assert_str_eq(text, "unix:@abstract");
	cr_assert_eq(pw_net_addr_format(&a, text, 4), -ENOSPC);

	cr_assert_eq(pw_net_addr_parse(&keep, "10.0.0.1:1"), 0);
	const char *bad[] = { "",
			      "127.0.0.1",
			      "127.0.0.1:",
			      "127.0.0.1:65536",
			      "127.0.0.1:-1",
			      "127.0.0.1:80x",
			      "127.0.0.1:0000080",
			      "1.2.3:80",
			      "localhost:80",
			      ":80",
			      "[::1]",
			      "[::1]80",
			      "[::1:80",
			      "[zz]:80",
			      "::1:80",
			      "unix:",
			      "unix:@",
			      "256.1.1.1:1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = keep;
		cr_assert_eq(pw_net_addr_parse(&a, bad[i]), -EINVAL, "'%s'",
			     bad[i]);
		cr_assert_eq(memcmp(&a, &keep, sizeof(a)), 0,
			     "'%s' left the address alone", bad[i]);
	}
	char longpath[200] = "unix:/";
	memset(longpath + 6, 'a', 150);
	cr_assert_eq(pw_net_addr_parse(&a, longpath), -EINVAL);
	cr_assert_eq(pw_net_addr_parse(NULL, "1.2.3.4:5"), -EINVAL);
	cr_assert_eq(pw_net_addr_parse(&a, NULL), -EINVAL);
	cr_assert_eq(pw_net_addr_format(NULL, text, 10), -EINVAL);
}

static enum pw_poll bad_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	struct pw_net_config cfg;
	struct pw_net_buf b = { 0 };
	struct pw_recv r;
	struct pw_send s;
	struct pw_close c;
	struct pw_connect k;
	int32_t res = 0;
	int fd = 0;

	pw_net_config_init(&cfg);
	cfg.buf_count = 3;
	cr_assert_eq(pw_net_configure(&cfg), -EINVAL);
	cfg.buf_count = 16;
	cfg.buf_size = 8;
	cr_assert_eq(pw_net_configure(&cfg), -EINVAL);
	cr_assert_eq(pw_net_configure(NULL), -EINVAL);
	cr_assert_eq(pw_net_stats(NULL), -EINVAL);
	cr_assert_eq(pw_net_buf_release(&b), -EINVAL);
	cr_assert_eq(pw_net_buf_release(NULL), -EINVAL);
	pw_recv_init(&r, -1);
	cr_assert_eq(pw_recv_poll(cx, &r, PW_TIME_NEVER, &b, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	pw_send_init(&s, 0);
	cr_assert_eq(pw_send_poll(cx, &s, NULL, 5, PW_TIME_NEVER, &res),
		     PW_READY);
	cr_assert_eq(res, -EINVAL);
	pw_shutdown_init(&c, 0, 42);
	cr_assert_eq(pw_close_poll(cx, &c, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	pw_connect_init(&k, NULL);
	cr_assert_eq(pw_connect_poll(cx, &k, PW_TIME_NEVER, &fd), PW_READY);
	cr_assert_eq(fd, -EINVAL);
	struct pw_accept a;
	pw_accept_init(&a, NULL, 0);
	cr_assert_eq(pw_accept_poll(cx, &a, PW_TIME_NEVER, &fd), PW_READY);
	cr_assert_eq(fd, -EINVAL);
	return pw_ready(cx, 0);
}

Test(net, bad_arguments)
{
	struct pw_net_config cfg;
	pw_net_config_init(&cfg);
	cr_assert_eq(pw_net_configure(&cfg), -EPERM, "off a shard");
	struct pw_runtime *rt = pw_test_runtime(1);
	pw_test_block_on(rt, bad_poll, NULL);
	struct pw_net_listener *l = (void *)1;
	struct pw_net_addr a;
	memset(&a, 0, sizeof(a));
	cr_assert_eq(pw_net_listener_create(&l, rt, &a, NULL), -EINVAL);
	cr_assert_null(l);
	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_net_listener_create(&l, NULL, &a, NULL), -EINVAL);
	cr_assert_eq(pw_net_listener_create(NULL, rt, &a, NULL), -EINVAL);
	struct pw_net_listen_opts o = { .backlog = -1 };
	cr_assert_eq(pw_net_listener_create(&l, rt, &a, &o), -EINVAL);
	o = (struct pw_net_listen_opts){ .sndbuf = -1 };
	cr_assert_eq(pw_net_listener_create(&l, rt, &a, &o), -EINVAL);
	cr_assert_eq(pw_net_listener_destroy(NULL), -EINVAL);
	cr_assert_eq(pw_net_listener_stats(NULL, NULL), -EINVAL);
	/* A port in use without SO_REUSEPORT: a clean -EADDRINUSE. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(bind(fd, &a.u.sa, a.len), 0);
	socklen_t len = sizeof(a.u);
	getsockname(fd, &a.u.sa, &len);
	listen(fd, 1);
	cr_assert_eq(pw_net_listener_create(&l, rt, &a, NULL), -EADDRINUSE);
	close(fd);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- a port or path another server holds ------------------------------ */

/* A listener on @text with @flags on @rt, or the error; *@l set on 0. */
static int listen_on(struct pw_runtime *rt, const struct pw_net_addr *a,
		     uint32_t flags, struct pw_net_listener **l)
{
	struct pw_net_listen_opts o = { .flags = flags };

	return pw_net_listener_create(l, rt, a, &o);
}

/*
 * A second listener on a TCP port a first one serves (SO_REUSEPORT per
 * shard, as a second server process would open it) is refused with
 * -EADDRINUSE, leaving nothing open, unless it asks to share the port;
 * sharing needs the first to have SO_REUSEPORT too (a shared socket
 * without PW_NET_LISTEN_SHARE_PORT cannot be joined). The first keeps
 * serving throughout.
 */
Test(net, port_in_use_is_refused_unless_shared)
{
	int fds0 = pw_test_open_fds();
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_net_listener *l1, *l2 = (void *)1;
	struct pw_net_addr a;
	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:0"), 0);
	cr_assert_eq(listen_on(rt, &a, 0, &l1), 0);
	cr_assert_eq(pw_net_listener_addr(l1, &a), 0);
	int fds1 = pw_test_open_fds();
	cr_assert_eq(listen_on(rt, &a, 0, &l2), -EADDRINUSE);
	cr_assert_null(l2);
	cr_assert_eq(listen_on(rt, &a, PW_NET_LISTEN_SHARED, &l2), -EADDRINUSE);
	cr_assert_eq(pw_test_open_fds(), fds1, "a refused listener left fds");
	cr_assert_eq(listen_on(rt, &a, PW_NET_LISTEN_SHARE_PORT, &l2), 0);
	cr_assert_eq(pw_net_listener_destroy(l2), 0);
	cr_assert_eq(listen_on(rt, &a,
			       PW_NET_LISTEN_SHARED | PW_NET_LISTEN_SHARE_PORT,
			       &l2),
		     0);
	cr_assert_eq(pw_net_listener_destroy(l2), 0);
	int fd = pw_test_dial(&a);
	cr_assert_geq(fd, 0, "the first listener: %d", fd);
	close(fd);
	cr_assert_eq(pw_net_listener_destroy(l1), 0);

	/* A shared socket (no SO_REUSEPORT) refuses to be joined. */
	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:0"), 0);
	cr_assert_eq(listen_on(rt, &a, PW_NET_LISTEN_SHARED, &l1), 0);
	cr_assert_eq(pw_net_listener_addr(l1, &a), 0);
	cr_assert_eq(listen_on(rt, &a, PW_NET_LISTEN_SHARE_PORT, &l2),
		     -EADDRINUSE);
	cr_assert_eq(pw_net_listener_destroy(l1), 0);
	/* The port is free again: taken without sharing. */
	cr_assert_eq(listen_on(rt, &a, 0, &l1), 0);
	cr_assert_eq(pw_net_listener_destroy(l1), 0);
	cr_assert_eq(listen_on(rt, &a, 7u << 4, &l1), -EINVAL);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/*
 * A server restarted on its port while the connections the old one
 * closed first linger in TIME_WAIT starts: only listeners count as a
 * port in use.
 */
Test(net, port_with_time_wait_sockets_is_free)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_net_listener *l;
	struct pw_net_addr a;
	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:0"), 0);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	cr_assert_eq(setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one,
				sizeof(one)),
		     0);
	cr_assert_eq(bind(lfd, &a.u.sa, a.len), 0);
	pw_test_local_addr(lfd, &a);
	cr_assert_eq(listen(lfd, 8), 0);
	int cfd = pw_test_dial(&a);
	cr_assert_geq(cfd, 0);
	int sfd = accept(lfd, NULL, NULL);
	cr_assert_geq(sfd, 0);
	close(sfd); /* the server side closes first: TIME_WAIT on the port */
	char c;
	cr_assert_eq(recv(cfd, &c, 1, 0), 0);
	close(cfd);
	close(lfd);
	cr_assert_eq(listen_on(rt, &a, 0, &l), 0);
	cr_assert_eq(pw_net_listener_destroy(l), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/*
 * A Unix path in use: a socket file whose server died without removing
 * it is replaced; a live listener's path is refused with -EADDRINUSE and
 * left alone, and so is a path that is not a socket (a regular file is
 * neither removed nor changed).
 */
Test(net, unix_path_in_use)
{
	int fds0 = pw_test_open_fds();
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_net_listener *l, *l2 = (void *)1;
	struct pw_net_addr a;
	char at[64];
	snprintf(at, sizeof(at), "unix:/tmp/pw-test-stale-%d.sock", getpid());
	cr_assert_eq(pw_net_addr_parse(&a, at), 0);
	const char *path = a.u.un.sun_path;
	unlink(path);

	/* Stale: bound and listened on, then closed without unlink. */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(bind(fd, &a.u.sa, a.len), 0);
	cr_assert_eq(listen(fd, 1), 0);
	close(fd);
	cr_assert_eq(access(path, F_OK), 0);
	cr_assert_eq(listen_on(rt, &a, 0, &l), 0, "the stale socket stays");
	int cfd = pw_test_dial(&a);
	cr_assert_geq(cfd, 0, "the new listener: %d", cfd);
	close(cfd);

	/* Live: ours, then another socket's. */
	cr_assert_eq(listen_on(rt, &a, 0, &l2), -EADDRINUSE);
	cr_assert_null(l2);
	cr_assert_eq(pw_net_listener_destroy(l), 0);
	cr_assert_neq(access(path, F_OK), 0, "destroy removes the path");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(bind(fd, &a.u.sa, a.len), 0);
	cr_assert_eq(listen(fd, 1), 0);
	cr_assert_eq(listen_on(rt, &a, 0, &l2), -EADDRINUSE);
	cr_assert_eq(access(path, F_OK), 0, "a live socket's path removed");
	cfd = pw_test_dial(&a);
	cr_assert_geq(cfd, 0, "the live listener stopped serving: %d", cfd);
	close(cfd);
	close(fd);
	unlink(path);

	/* Not a socket: a regular file is refused and kept. */
	int ffd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_geq(ffd, 0);
	cr_assert_eq(write(ffd, "keep", 4), 4);
	close(ffd);
	cr_assert_eq(listen_on(rt, &a, 0, &l2), -EADDRINUSE);
	char b[8];
	ffd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(ffd, 0, "the regular file was removed");
	cr_assert_eq(read(ffd, b, sizeof(b)), 4);
	cr_assert_eq(memcmp(b, "keep", 4), 0);
	close(ffd);
	unlink(path);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/*
 * `pinwheel echo` on a port another `pinwheel echo` serves exits with
 * status 1 and says the address is in use; with --reuse-port it starts
 * and serves beside the first.
 */
Test(net, echo_command_port_in_use)
{
	char bin[512];
	snprintf(bin, sizeof(bin), "%s/pinwheel", PW_BUILDDIR);
	if (access(bin, X_OK))
		cr_skip_test("%s is not built", bin);
	char *first[] = { bin,	      "echo", "--listen", "127.0.0.1:0",
			  "--shards", "2",    NULL };
	int out, out2;
	pid_t pid = pw_test_cmd_start(first, &out);
	char line[512], said[1024];
	size_t got = 0;
	struct pw_net_addr a;
	pw_test_banner_addr(out, line, sizeof(line), &got, &a);
	char addr[PW_NET_ADDR_STRLEN];
	cr_assert_gt(pw_net_addr_format(&a, addr, sizeof(addr)), 0);

	char *second[] = { bin, "echo", "--listen", addr, NULL };
	cr_assert_eq(pw_test_run_cmd(said, sizeof(said), second), 1, "%s",
		     said);
	cr_assert(strstr(said, "Address already in use"), "%s", said);
	cr_assert(strstr(said, addr), "%s", said);

	char *shared[] = { bin, "echo", "--listen", addr, "--reuse-port", NULL };
	pid_t pid2 = pw_test_cmd_start(shared, &out2);
	char line2[512];
	size_t got2 = 0;
	struct pw_net_addr a2;
	pw_test_banner_addr(out2, line2, sizeof(line2), &got2, &a2);
	cr_assert_eq(memcmp(&a, &a2, sizeof(a)), 0, "%s", line2);
	int fd = pw_test_dial(&a);
	cr_assert_geq(fd, 0);
	char b[4];
	cr_assert_eq(send(fd, "pwpw", 4, 0), 4);
	cr_assert_eq(recv(fd, b, 4, MSG_WAITALL), 4);
	close(fd);
	kill(pid2, SIGTERM);
	cr_assert_eq(pw_test_cmd_wait(pid2, out2, line2, sizeof(line2)), 0,
		     "%s", line2);
	kill(pid, SIGTERM);
	cr_assert_eq(pw_test_cmd_wait(pid, out, line, sizeof(line)), 0, "%s",
		     line);
}

/* ---- the pinwheel echo command ---------------------------------------- */

Test(net, echo_command)
{
	char bin[512];
	snprintf(bin, sizeof(bin), "%s/pinwheel", PW_BUILDDIR);
	if (access(bin, X_OK))
		cr_skip_test("%s is not built", bin);
	char *help[] = { bin, "echo", "--help", NULL };
	cr_assert_eq(pw_test_run_cmd(NULL, 0, help), 0);
	char *bad1[] = { bin, "echo", "--bogus", NULL };
	cr_assert_eq(pw_test_run_cmd(NULL, 0, bad1), 2);
	char *bad2[] = { bin, "echo", "--listen", "nowhere", NULL };
	cr_assert_eq(pw_test_run_cmd(NULL, 0, bad2), 2);
	char *bad3[] = { bin,	     "echo", "--listen", "127.0.0.1:0",
			 "--shards", "0",    NULL };
	cr_assert_eq(pw_test_run_cmd(NULL, 0, bad3), 2);
	char *bad4[] = { bin, "echo", NULL };
	cr_assert_eq(pw_test_run_cmd(NULL, 0, bad4), 2);

	/* Serve on a port the command picks (port 0) and reports, echo,
	 * then stop on SIGTERM with status 0. */
	int out[2];
	cr_assert_eq(pipe(out), 0);
	pid_t pid = pw_test_fork();
	if (pid == 0) {
		dup2(out[1], 1);
		close(out[0]);
		execl(bin, bin, "echo", "--listen", "127.0.0.1:0", "--shards",
		      "2", NULL);
		_exit(127);
	}
	close(out[1]);
	char line[256];
	size_t got = 0;
	struct pw_net_addr a;
	pw_test_banner_addr(out[0], line, sizeof(line), &got, &a);
	int fd = pw_test_dial(&a);
	cr_assert_geq(fd, 0);
	char b[6];
	cr_assert_eq(send(fd, "pinwhl", 6, 0), 6);
	cr_assert_eq(recv(fd, b, 6, MSG_WAITALL), 6);
	cr_assert_eq(memcmp(b, "pinwhl", 6), 0);
	close(fd);
	kill(pid, SIGTERM);
	int st;
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	close(out[0]);
}

/* ---- contract clauses: cancel, deadlines, closes, settings ------------- */

/* A connect in flight to a port that never answers, cancelled. */
struct cancel_dial {
	struct pw_net_addr addr;
	int step, fd;
	struct pw_connect c;
	struct pw_sleep nap;
};

static enum pw_poll cancel_dial_poll(struct pw_cx *cx, void *state)
{
	struct cancel_dial *d = state;

	if (d->step == 0) {
		pw_connect_init(&d->c, &d->addr);
		cr_assert_eq(pw_connect_poll(cx, &d->c, PW_TIME_NEVER, &d->fd),
			     PW_PENDING);
		/* The paused clock reaches this sleep only once the shard
		 * is idle: the connect has been submitted by then. */
		pw_sleep_init(&d->nap, 10 * PW_NSEC_PER_MSEC);
		d->step = 1;
	}
	if (pw_sleep_poll(cx, &d->nap) == PW_PENDING)
		return PW_PENDING;
	cr_assert_eq(pw_connect_poll(cx, &d->c, PW_TIME_NEVER, &d->fd),
		     PW_PENDING, "the connect ended: %d", d->fd);
	pw_connect_cancel(&d->c);
	return pw_ready(cx, 0);
}

/* pw_connect_cancel() of a connect in flight closes its socket (once
 * the kernel's final completion comes back), and the runtime goes on
 * connecting. */
Test(net, connect_cancel_closes_its_socket)
{
	struct pw_net_addr hole;
	int fill[16], nfill;
	int lfd = pw_test_blackhole(&hole, fill, &nfill);
	int fds0 = pw_test_open_fds();
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	int fds_rt = pw_test_open_fds();
	static struct cancel_dial d;
	memset(&d, 0, sizeof(d));
	d.addr = hole;
	cr_assert_eq(pw_test_block_on(rt, cancel_dial_poll, &d), 0);
	PW_TEST_WAIT_UNTIL(pw_test_open_fds() == fds_rt, PW_TEST_WAIT_SECS,
			   "the cancelled connect's socket is still open "
			   "(%d fds, %d expected)",
			   pw_test_open_fds(), fds_rt);
	static struct dial again;
	memset(&again, 0, sizeof(again));
	int pfd = pw_test_refusing_port(&again.addr);
	cr_assert_eq(pw_test_block_on(rt, dial_poll, &again), -ECONNREFUSED);
	close(pfd);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
	pw_test_blackhole_close(lfd, fill, nfill);
}

/* A send larger than the socket buffers to a peer that never reads. */
enum { BIG_SEND = 4 << 20 };
static char big_send[BIG_SEND];

struct timed_send {
	int fd, step;
	uint64_t start, ended, sent;
	int32_t res;
	const char *data;
	size_t len;
	uint64_t deadline;
	struct pw_send tx;
};

static enum pw_poll timed_send_poll(struct pw_cx *cx, void *state)
{
	struct timed_send *t = state;
	struct pw_net_stats st;

	if (t->step == 0) {
		t->start = pw_time_now();
		t->step = 1;
	}
	if (pw_send_poll(cx, &t->tx, t->data, t->len, t->deadline, &t->res) ==
	    PW_PENDING)
		return PW_PENDING;
	t->ended = pw_time_now();
	cr_assert_eq(pw_net_stats(&st), 0);
	t->sent = st.send_bytes;
	t->step = 0;
	return pw_ready(cx, 0);
}

/* Read what @fd holds now (non-blocking) into @out; the count. */
static size_t drain_now(int fd, char *out, size_t max)
{
	size_t got = 0;
	ssize_t r;

	while (got < max &&
	       (r = recv(fd, out + got, max - got, MSG_DONTWAIT)) > 0)
		got += (size_t)r;
	return got;
}

/*
 * pw_send_poll() to a peer that never reads returns -ETIMEDOUT exactly
 * at its deadline (paused clock); the bytes that went out are exactly
 * those counted, in order, and the leaf is idle for the next send.
 */
Test(net, send_deadline_with_a_peer_that_never_reads)
{
	int fds0 = pw_test_open_fds();
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	uint64_t seed = 11;
	fill(&seed, big_send, sizeof(big_send));
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static struct timed_send t;
	memset(&t, 0, sizeof(t));
	pw_send_init(&t.tx, sv[0]);
	t.data = big_send;
	t.len = sizeof(big_send);
	t.deadline = 100 * PW_NSEC_PER_MSEC;
	pw_test_block_on(rt, timed_send_poll, &t);
	cr_assert_eq(t.res, -ETIMEDOUT);
	cr_assert_eq(t.ended, 100 * PW_NSEC_PER_MSEC, "ended at %llu ns",
		     (unsigned long long)t.ended);
	static char got[BIG_SEND];
	size_t n = drain_now(sv[1], got, sizeof(got));
	cr_assert_gt(n, 0, "nothing was sent");
	cr_assert_lt(n, sizeof(big_send), "all was sent to a full socket");
	cr_assert_eq(n, t.sent, "%zu bytes arrived, %llu counted", n,
		     (unsigned long long)t.sent);
	cr_assert_eq(memcmp(got, big_send, n), 0, "the bytes differ");
	/* The same leaf sends again, and only its bytes follow. */
	t.data = "end";
	t.len = 3;
	t.deadline = PW_TIME_NEVER;
	pw_test_block_on(rt, timed_send_poll, &t);
	cr_assert_eq(t.res, 3);
	cr_assert_eq(t.sent, n + 3);
	char tail[8];
	cr_assert(pw_test_readable(sv[1], PW_TEST_WAIT_SECS * 1000));
	cr_assert_eq(recv(sv[1], tail, sizeof(tail), MSG_DONTWAIT), 3);
	cr_assert_eq(memcmp(tail, "end", 3), 0);
	cr_assert_eq(recv(sv[1], tail, sizeof(tail), MSG_DONTWAIT), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(sv[0]);
	close(sv[1]);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/* A send and a receive in flight on one socket when a close runs. */
struct close_pending {
	int fd, step;
	int32_t sres, rres, cres;
	struct pw_net_buf buf;
	struct pw_send tx;
	struct pw_recv rx;
	struct pw_close cl;
	struct pw_sleep nap;
};

static enum pw_poll close_pending_poll(struct pw_cx *cx, void *state)
{
	struct close_pending *c = state;

	switch (c->step) {
	case 0:
		pw_send_init(&c->tx, c->fd);
		pw_recv_init(&c->rx, c->fd);
		cr_assert_eq(pw_send_poll(cx, &c->tx, "more", 4, PW_TIME_NEVER,
					  &c->sres),
			     PW_PENDING);
		cr_assert_eq(pw_recv_poll(cx, &c->rx, PW_TIME_NEVER, &c->buf,
					  &c->rres),
			     PW_PENDING);
		/* Reached once the shard was idle: both are submitted. */
		pw_sleep_init(&c->nap, 10 * PW_NSEC_PER_MSEC);
		c->step = 1;
		/* fall through */
	case 1:
		if (pw_sleep_poll(cx, &c->nap) == PW_PENDING)
			return PW_PENDING;
		pw_close_init(&c->cl, c->fd);
		c->step = 2;
		/* fall through */
	case 2:
		if (pw_close_poll(cx, &c->cl, &c->cres) == PW_PENDING)
			return PW_PENDING;
		c->step = 3;
		/* fall through */
	case 3:
		if (pw_send_poll(cx, &c->tx, "more", 4, PW_TIME_NEVER,
				 &c->sres) == PW_PENDING)
			return PW_PENDING;
		c->step = 4;
		/* fall through */
	default:
		if (pw_recv_poll(cx, &c->rx, PW_TIME_NEVER, &c->buf,
				 &c->rres) == PW_PENDING)
			return PW_PENDING;
		if (c->rres > 0)
			pw_net_buf_release(&c->buf);
		pw_recv_cancel(&c->rx);
		return pw_ready(cx, 0);
	}
}

/*
 * pw_close_poll() on a socket with a send (to a full socket buffer, so
 * no byte of it goes) and a receive in flight cancels both: each leaf's
 * next poll delivers -ECANCELED, no buffer is left borrowed, the socket
 * is closed and the peer got no byte of the cancelled send.
 */
Test(net, close_cancels_pending_send_and_recv)
{
	int fds0 = pw_test_open_fds();
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	/* Fill the socket's send buffer: the peer never reads. */
	size_t filled = 0;
	ssize_t w;
	while ((w = send(sv[0], big_send, 65536, MSG_DONTWAIT)) > 0)
		filled += (size_t)w;
	cr_assert_eq(errno, EAGAIN);
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static struct close_pending c;
	memset(&c, 0, sizeof(c));
	c.fd = sv[0];
	pw_test_block_on(rt, close_pending_poll, &c);
	cr_assert_eq(c.cres, 0, "close: %d", c.cres);
	cr_assert_eq(c.sres, -ECANCELED, "send: %d", c.sres);
	cr_assert_eq(c.rres, -ECANCELED, "recv: %d", c.rres);
	struct pw_net_stats st;
	pw_test_block_on(rt, stats_poll, &st);
	cr_assert_eq(st.bufs_borrowed, 0);
	cr_assert_eq(st.send_bytes, 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	static char got[BIG_SEND];
	cr_assert_eq(drain_now(sv[1], got, sizeof(got)), filled,
		     "the peer got bytes of the cancelled send");
	close(sv[1]);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/* Settings changed around the buffer ring's creation. */
struct busy_cfg {
	int fd, step;
	int32_t res;
	uint64_t zc_before;
	struct pw_net_buf buf;
	struct pw_recv rx;
	struct pw_send tx;
};

static void net_cfg(struct pw_net_config *c, uint32_t count, uint32_t size,
		    uint32_t zc)
{
	pw_net_config_init(c);
	c->buf_count = count;
	c->buf_size = size;
	c->zc_threshold = zc;
}

static enum pw_poll busy_cfg_poll(struct pw_cx *cx, void *state)
{
	struct busy_cfg *b = state;
	struct pw_net_config c;
	struct pw_net_stats st;

	switch (b->step) {
	case 0:
		net_cfg(&c, 16, 256, 0);
		cr_assert_eq(pw_net_configure(&c), 0, "before the ring");
		pw_recv_init(&b->rx, b->fd);
		pw_send_init(&b->tx, b->fd);
		b->step = 1;
		/* fall through */
	case 1:
		if (pw_recv_poll(cx, &b->rx, PW_TIME_NEVER, &b->buf, &b->res) ==
		    PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(b->res, 1);
		cr_assert_eq(pw_net_buf_release(&b->buf), 0);
		/* The ring exists: its geometry is fixed. */
		cr_assert_eq(pw_net_stats(&st), 0);
		cr_assert_eq(st.bufs_total, 16);
		net_cfg(&c, 32, 256, 0);
		cr_assert_eq(pw_net_configure(&c), -EBUSY);
		net_cfg(&c, 16, 512, 0);
		cr_assert_eq(pw_net_configure(&c), -EBUSY);
		/* The ZC threshold is updated all the same. */
		net_cfg(&c, 32, 256, 64);
		cr_assert_eq(pw_net_configure(&c), -EBUSY);
		cr_assert_eq(pw_net_stats(&st), 0);
		cr_assert_eq(st.bufs_total, 16);
		b->zc_before = st.zc_sends;
		b->step = 2;
		/* fall through */
	case 2:
		if (pw_send_poll(cx, &b->tx, big_send, 100, PW_TIME_NEVER,
				 &b->res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(b->res, 100);
		cr_assert_eq(pw_net_stats(&st), 0);
		cr_assert_eq(st.zc_sends, b->zc_before + 1,
			     "a send above the new threshold used SEND_ZC");
		/* The same geometry is accepted, and turns ZC off. */
		net_cfg(&c, 16, 256, 0);
		cr_assert_eq(pw_net_configure(&c), 0);
		b->step = 3;
		/* fall through */
	default:
		if (pw_send_poll(cx, &b->tx, big_send + 100, 10, PW_TIME_NEVER,
				 &b->res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(b->res, 10);
		cr_assert_eq(pw_net_stats(&st), 0);
		cr_assert_eq(st.zc_sends, b->zc_before + 1);
		cr_assert_eq(st.bufs_borrowed, 0);
		pw_recv_cancel(&b->rx);
		return pw_ready(cx, 0);
	}
}

/*
 * pw_net_configure() once the shard's buffer ring exists: a new geometry
 * is refused with -EBUSY and the ring keeps its own, yet the ZC
 * threshold it carries is applied; the bytes sent arrive intact.
 */
Test(net, configure_busy_once_the_ring_exists)
{
	int fds0 = pw_test_open_fds();
	struct pw_net_addr a;
	int lfd = pw_test_listen_any(&a, 1);
	int cfd = pw_test_dial(&a);
	cr_assert_geq(cfd, 0);
	int sfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(sfd, 0);
	close(lfd);
	uint64_t seed = 12;
	fill(&seed, big_send, 110);
	cr_assert_eq(send(cfd, "x", 1, 0), 1);
	struct pw_runtime *rt = pw_test_runtime(1);
	static struct busy_cfg b;
	memset(&b, 0, sizeof(b));
	b.fd = sfd;
	pw_test_block_on(rt, busy_cfg_poll, &b);
	char got[110];
	cr_assert(pw_test_readable(cfd, PW_TEST_WAIT_SECS * 1000));
	cr_assert_eq(recv(cfd, got, sizeof(got), MSG_WAITALL), 110);
	cr_assert_eq(memcmp(got, big_send, sizeof(got)), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(sfd);
	close(cfd);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/* Take one connection from @state's accept. */
static enum pw_poll accept_one_poll(struct pw_cx *cx, void *state)
{
	struct pw_accept *a = state;
	int fd;

	if (pw_accept_poll(cx, a, PW_TIME_NEVER, &fd) == PW_PENDING)
		return PW_PENDING;
	pw_accept_cancel(a);
	return pw_ready(cx, fd);
}

/*
 * Calls off a shard and empty or unsupported arguments: pw_net_stats()
 * gives -EPERM off a shard (-EINVAL for NULL first),
 * pw_net_listener_addr() and pw_net_addr_format() -EINVAL, writing
 * nothing; the listener and the runtime work on afterwards.
 */
Test(net, off_shard_and_bad_address_calls)
{
	int fds0 = pw_test_open_fds();
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_net_listener *l;
	struct pw_net_addr a, keep;
	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_net_listener_create(&l, rt, &a, NULL), 0);

	struct pw_net_stats st, zero;
	memset(&st, 0xa5, sizeof(st));
	zero = st;
	cr_assert_eq(pw_net_stats(&st), -EPERM);
	cr_assert_eq(memcmp(&st, &zero, sizeof(st)), 0, "written off a shard");
	cr_assert_eq(pw_net_stats(NULL), -EINVAL);
	struct pw_net_buf nb = { 0 };
	cr_assert_eq(pw_net_buf_release(&nb), -EINVAL, "off a shard");

	cr_assert_eq(pw_net_addr_parse(&keep, "10.0.0.1:1"), 0);
	a = keep;
	cr_assert_eq(pw_net_listener_addr(NULL, &a), -EINVAL);
	cr_assert_eq(memcmp(&a, &keep, sizeof(a)), 0);
	cr_assert_eq(pw_net_listener_addr(l, NULL), -EINVAL);

	char text[PW_NET_ADDR_STRLEN], before[PW_NET_ADDR_STRLEN];
	const sa_family_t bad[] = { AF_UNSPEC, AF_PACKET, AF_NETLINK };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pw_net_addr b;
		memset(&b, 0, sizeof(b));
		b.u.sa.sa_family = bad[i];
		b.len = sizeof(b.u.sa);
		memset(text, 'z', sizeof(text));
		memcpy(before, text, sizeof(text));
		cr_assert_eq(pw_net_addr_format(&b, text, sizeof(text)),
			     -EINVAL, "family %d", bad[i]);
		cr_assert_eq(memcmp(text, before, sizeof(text)), 0,
			     "family %d: the buffer was written", bad[i]);
	}
	cr_assert_eq(pw_net_addr_format(&keep, NULL, 10), -EINVAL);

	/* The listener still serves, at the port it reports. */
	cr_assert_eq(pw_net_listener_addr(l, &a), 0);
	cr_assert_neq(ntohs(a.u.in4.sin_port), 0);
	int cfd = pw_test_dial(&a);
	cr_assert_geq(cfd, 0);
	static struct pw_accept acc;
	pw_accept_init(&acc, l, 0);
	int64_t sfd = pw_test_block_on(rt, accept_one_poll, &acc);
	cr_assert_geq(sfd, 0, "accept: %lld", (long long)sfd);
	cr_assert_eq(send(cfd, "ok", 2, 0), 2);
	char b2[2];
	cr_assert_eq(recv((int)sfd, b2, 2, MSG_WAITALL), 2);
	cr_assert_eq(memcmp(b2, "ok", 2), 0);
	close((int)sfd);
	close(cfd);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_net_listener_destroy(l), 0);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/* Each shard's task takes one buffer from its own ring and keeps it. */
static struct pw_net_buf lent[2];
static _Atomic int lent_ready, cross_done;

struct lend {
	int fd, shard;
	int32_t res;
	struct pw_recv rx;
};

static enum pw_poll lend_poll(struct pw_cx *cx, void *state)
{
	struct lend *t = state;

	cr_assert_eq(pw_shard_id(), t->shard);
	if (pw_recv_poll(cx, &t->rx, PW_TIME_NEVER, &lent[t->shard], &t->res) ==
	    PW_PENDING)
		return PW_PENDING;
	cr_assert_eq(t->res, 1);
	pw_recv_cancel(&t->rx);
	atomic_fetch_add(&lent_ready, 1);
	return pw_ready(cx, 0);
}

/* On shard @state: the other shard's buffer is refused, its own taken. */
static enum pw_poll cross_release_poll(struct pw_cx *cx, void *state)
{
	int me = *(int *)state, other = !me;
	struct pw_net_stats st;
	struct pw_net_buf theirs = lent[other];

	cr_assert_eq(pw_shard_id(), me);
	cr_assert_eq(pw_net_buf_release(&lent[other]), -EINVAL);
	cr_assert_eq(memcmp(&lent[other], &theirs, sizeof(theirs)), 0,
		     "the refused buffer was changed");
	cr_assert_eq(pw_net_stats(&st), 0);
	cr_assert_eq(st.bufs_borrowed, 1, "shard %d lends its own only", me);
	cr_assert_eq(pw_net_buf_release(&lent[me]), 0);
	cr_assert_eq(pw_net_stats(&st), 0);
	cr_assert_eq(st.bufs_borrowed, 0);
	atomic_fetch_add(&cross_done, 1);
	return pw_ready(cx, 0);
}

/*
 * pw_net_buf_release() of a buffer another shard lent (same index in
 * each shard's ring) is refused with -EINVAL and changes nothing on
 * either shard; each shard then takes its own back.
 */
Test(net, buf_release_refuses_another_shards_buffer)
{
	PW_TEST_SHARD_ONLY();
	int fds0 = pw_test_open_fds();
	int sv[2][2];
	struct pw_runtime *rt = pw_test_runtime(2);
	atomic_store(&lent_ready, 0);
	atomic_store(&cross_done, 0);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
					sv[i]),
			     0);
		cr_assert_eq(write(sv[i][1], i ? "b" : "a", 1), 1);
		struct lend t = { .fd = sv[i][0], .shard = i };
		pw_recv_init(&t.rx, t.fd);
		cr_assert_eq(pw_runtime_spawn(rt, (unsigned)i, lend_poll, &t,
					      sizeof(t), NULL),
			     0);
	}
	PW_TEST_WAIT_UNTIL(atomic_load(&lent_ready) == 2, PW_TEST_WAIT_SECS,
			   "%d of 2 shards lent a buffer",
			   atomic_load(&lent_ready));
	cr_assert_eq(lent[0].bid, lent[1].bid, "the same index in both rings");
	cr_assert_neq(lent[0].data, lent[1].data);
	cr_assert_eq(*(char *)lent[0].data, 'a');
	cr_assert_eq(*(char *)lent[1].data, 'b');
	for (int i = 1; i >= 0; i--) {
		cr_assert_eq(pw_runtime_spawn(rt, (unsigned)i,
					      cross_release_poll, &i, sizeof(i),
					      NULL),
			     0);
		PW_TEST_WAIT_UNTIL(atomic_load(&cross_done) == 2 - i,
				   PW_TEST_WAIT_SECS,
				   "shard %d did not release", i);
	}
	for (int i = 0; i < 2; i++)
		pw_test_wait_live(rt, (unsigned)i, 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	for (int i = 0; i < 2; i++) {
		close(sv[i][0]);
		close(sv[i][1]);
	}
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}
