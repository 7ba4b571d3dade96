/* SPDX-License-Identifier: MIT */
/*
 * test_proxy.c - the L4 proxy of apps/proxy.c, in-process, on loopback:
 * byte-exact forwarding (large and many connections, both schedulers),
 * half-close, resets both ways, upstream failover and connect timeout,
 * a client that does not read (bounded memory, upstream blocked, nothing
 * lost), stalled uploaders and downloaders beside a good client (bounded
 * ring use, no starvation), idle timeout (a slow steady reader is not
 * cut; a cut with bytes undelivered is a reset), send timeout,
 * connection limit (the excess waits in the backlog), graceful drain,
 * descriptor exhaustion and ten thousand connections (forked children),
 * and the command's flag errors. Upstreams are a pinwheel echo service or plain
 * threads scripted per test.
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
#include "tests/proxy_fixtures.h"
#include "pinwheel/net.h"
#include "apps/apps.h"
#include "apps/echo.h"
#include "apps/proxy.h"

/* ---- helpers ------------------------------------------------------------ */

static size_t scaled(size_t n, size_t min)
{
	size_t v = (size_t)((double)n * pw_test_scale());
	return v < min ? min : v;
}

/* ---- an echo upstream (apps/echo.c's service, one shard) ------------ */

struct echo_srv {
	struct pw_runtime *rt;
	struct pw_net_listener *l;
	struct pw_net_addr addr;
};

static void echo_start(struct echo_srv *e)
{
	struct pw_net_addr a;

	e->rt = pw_test_runtime(1);
	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_net_listener_create(&e->l, e->rt, &a, NULL), 0);
	pw_net_listener_addr(e->l, &e->addr);
	cr_assert_eq(pw_echo_serve(e->rt, 0, e->l), 0);
}

static void echo_stop(struct echo_srv *e)
{
	cr_assert_eq(pw_runtime_destroy(e->rt), 0);
	cr_assert_eq(pw_net_listener_destroy(e->l), 0);
}

/* ---- the proxy under test ------------------------------------------- */

/* Read the proxy's stats into @st until @pred holds, for at most
 * PW_TEST_WAIT_SECS; the caller then checks @pred (usable in a forked
 * scenario, where Criterion's asserts do not reach the runner). */
#define WAIT_STATS(p, st, pred)                                      \
	do {                                                         \
		uint64_t dl_ = pw_test_now_ns() +                    \
			       PW_TEST_WAIT_SECS * PW_NSEC_PER_SEC;  \
		while (pw_proxy_stats((p), &(st)) == 0 && !(pred) && \
		       pw_test_wait_step(dl_))                       \
			;                                            \
	} while (0)

/* ---- a proxy test's fixture ------------------------------------------- */

struct px {
	int fds0; /* descriptors open before the test */
	struct pw_proxy_config cfg;
	struct pw_net_addr pa; /* where clients connect */
	struct pw_proxy *p;
};

/* Begin a proxy test bounded to @seconds: SIGPIPE ignored, the open
 * descriptors counted. */
static void px_begin(struct px *x, unsigned seconds)
{
	pw_test_time_limit(seconds);
	signal(SIGPIPE, SIG_IGN);
	x->fds0 = pw_test_open_fds();
}

/* px_begin(), then an echo upstream @e. */
static void px_begin_echo(struct px *x, unsigned seconds, struct echo_srv *e)
{
	px_begin(x, seconds);
	echo_start(e);
}

/* Configure @shards shards and the one upstream @up. */
static void px_config(struct px *x, unsigned shards, struct pw_net_addr up)
{
	pw_test_proxy_cfg(&x->cfg, shards);
	x->cfg.upstream[0] = up;
	x->cfg.nupstreams = 1;
}

/* Start the proxy configured in x->cfg. */
static void px_up(struct px *x)
{
	x->p = pw_test_proxy_up(&x->cfg, &x->pa);
}

/* px_config() then px_up(). */
static void px_start(struct px *x, unsigned shards, struct pw_net_addr up)
{
	px_config(x, shards, up);
	px_up(x);
}

/* Stats once no connection is open; fails the test if one stays open. */
static struct pw_proxy_stats px_idle(const struct px *x)
{
	struct pw_proxy_stats st;
	WAIT_STATS(x->p, st, st.conns_open == 0);
	cr_assert_eq(st.conns_open, 0, "%llu connections still open",
		     (unsigned long long)st.conns_open);
	return st;
}

static void px_stop(const struct px *x)
{
	cr_assert_eq(pw_proxy_stop(x->p, 0, NULL), 0);
}

/* End a test whose proxy is gone: stop the echo upstream @e (if any),
 * and no descriptor may be left open. */
static void px_end(const struct px *x, struct echo_srv *e)
{
	if (e)
		echo_stop(e);
	cr_assert_eq(pw_test_open_fds(), x->fds0, "fds leaked");
}

/* Stop the proxy, then px_end(). */
static void px_finish(const struct px *x, struct echo_srv *e)
{
	px_stop(x);
	px_end(x, e);
}

/* A client connected to @pa. */
static int dial_ok(const struct pw_net_addr *pa)
{
	int fd = pw_test_dial(pa);
	cr_assert_geq(fd, 0);
	return fd;
}

/* Send the four bytes of @m on @fd and read them back. */
static void echo4(int fd, const char *m)
{
	char b[4];
	cr_assert_eq(send(fd, m, 4, 0), 4);
	cr_assert(pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000),
		  "no echo of %.4s", m);
	cr_assert_eq(recv(fd, b, 4, MSG_WAITALL), 4);
	cr_assert_eq(memcmp(b, m, 4), 0);
}

/* ---- byte-exact transfers ---------------------------------------------- */

struct xfer {
	struct pw_net_addr addr;
	size_t size;
	uint64_t seed;
	int fd;
	uint64_t sent_sum, got_sum;
	size_t got;
	int err;
};

static void *xfer_writer(void *arg)
{
	struct xfer *x = arg;
	char buf[65536];
	uint64_t s = x->seed, h = PW_TEST_FNV_INIT;
	size_t left = x->size;

	while (left) {
		size_t n = left < sizeof(buf) ? left : sizeof(buf);
		n = 1 + (size_t)(pw_test_rng(&s) % n); /* vary the writes */
		for (size_t i = 0; i < n; i++)
			buf[i] = (char)(pw_test_rng(&s) >> 24);
		h = pw_test_fnv(h, buf, n);
		size_t off = 0;
		while (off < n) {
			ssize_t w =
				send(x->fd, buf + off, n - off, MSG_NOSIGNAL);
			if (w <= 0) {
				x->err = errno ? errno : EPIPE;
				return NULL;
			}
			off += (size_t)w;
		}
		left -= n;
	}
	x->sent_sum = h;
	shutdown(x->fd, SHUT_WR);
	return NULL;
}

/* Send x->size random bytes through the echo path while reading them
 * back; fills the checksums. */
static void *xfer_run(void *arg)
{
	struct xfer *x = arg;
	char buf[65536];
	pthread_t w;

	x->fd = pw_test_dial(&x->addr);
	if (x->fd < 0) {
		x->err = -x->fd;
		return NULL;
	}
	x->got_sum = PW_TEST_FNV_INIT;
	pthread_create(&w, NULL, xfer_writer, x);
	for (;;) {
		ssize_t r = recv(x->fd, buf, sizeof(buf), 0);
		if (r <= 0) {
			if (r < 0)
				x->err = errno;
			break;
		}
		x->got_sum = pw_test_fnv(x->got_sum, buf, (size_t)r);
		x->got += (size_t)r;
	}
	pthread_join(w, NULL);
	close(x->fd);
	return NULL;
}

static void check_xfer(const struct xfer *x)
{
	cr_assert_eq(x->err, 0, "transfer error %d (%s)", x->err,
		     strerror(x->err));
	cr_assert_eq(x->got, x->size, "got %zu of %zu bytes", x->got, x->size);
	cr_assert_eq(x->got_sum, x->sent_sum, "checksums differ");
}

static void byte_exact(enum pw_sched sched)
{
	struct px px;
	struct echo_srv e;
	px_begin_echo(&px, 120, &e);
	px_config(&px, 2, e.addr);
	px.cfg.rt.sched = sched;
	px_up(&px);

	enum { N = 33 };
	static struct xfer x[N];
	pthread_t t[N];
	size_t total = 0;
	for (int i = 0; i < N; i++) {
		memset(&x[i], 0, sizeof(x[i]));
		x[i].addr = px.pa;
		x[i].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		x[i].size = i == 0 ? scaled(64u << 20, 1u << 20) :
				     scaled(1u << 20, 64u << 10);
		if (sched == PW_SCHED_STEAL)
			x[i].size /= 4;
		total += x[i].size;
		cr_assert_eq(pthread_create(&t[i], NULL, xfer_run, &x[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		check_xfer(&x[i]);
	}
	struct pw_proxy_stats st = px_idle(&px);
	cr_assert_eq(st.conns_open, 0);
	cr_assert_eq(st.conns_total, N);
	cr_assert_eq(st.bytes_up, total);
	cr_assert_eq(st.bytes_down, total);
	cr_assert_eq(st.resets, 0);
	cr_assert_eq(st.release_errors, 0,
		     "buffers released on the wrong "
		     "shard");
	/* Each end of stream passed on once: the client's to the upstream,
	 * the upstream's to the client. */
	cr_assert_eq(st.half_closes, 2 * N);
	cr_assert_eq(pw_proxy_stop(px.p, 0, &st), 0);
	cr_assert_eq(st.drain_closed, 0);
	px_end(&px, &e);
}

Test(proxy, byte_exact_large_and_concurrent)
{
	byte_exact(PW_SCHED_SHARD);
}

Test(proxy, byte_exact_under_stealing)
{
	byte_exact(PW_SCHED_STEAL);
}

/* ---- scripted upstreams -------------------------------------------- */

struct script {
	int lfd;
	int go[2]; /* a pipe: the test tells the upstream to go on */
	struct pw_net_addr addr;
	void (*fn)(struct script *s, int fd);
	pthread_t t;
	_Atomic int stage;
	_Atomic uint64_t count;
	_Atomic int result;
	_Atomic bool stop;
};

static void *script_main(void *arg)
{
	struct script *s = arg;
	int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		s->fn(s, fd);
		close(fd);
	}
	return NULL;
}

static void script_start(struct script *s, void (*fn)(struct script *, int))
{
	memset(s, 0, sizeof(*s));
	cr_assert_eq(pipe2(s->go, O_CLOEXEC), 0);
	s->lfd = pw_test_listen_any(&s->addr, 16);
	s->fn = fn;
	cr_assert_eq(pthread_create(&s->t, NULL, script_main, s), 0);
}

static void script_join(struct script *s)
{
	pthread_join(s->t, NULL);
	close(s->lfd);
	close(s->go[0]);
	close(s->go[1]);
}

/* Reads until end of stream, then answers and closes. */
static void half_close_upstream(struct script *s, int fd)
{
	char buf[256];
	size_t n = 0;
	for (;;) {
		ssize_t r = recv(fd, buf + n, sizeof(buf) - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	s->count = n;
	s->result = (n == 5 && !memcmp(buf, "hello", 5)) ? 1 : -1;
	send(fd, "after-eof", 9, MSG_NOSIGNAL);
}

Test(proxy, half_close_both_ways)
{
	struct px px;
	px_begin(&px, 30);
	static struct script s;
	script_start(&s, half_close_upstream);
	px_start(&px, 1, s.addr);

	int fd = dial_ok(&px.pa);
	cr_assert_eq(send(fd, "hello", 5, 0), 5);
	cr_assert_eq(shutdown(fd, SHUT_WR), 0);
	/* The upstream sees the end of stream, then answers through the
	 * direction still open; its close ends ours. */
	char buf[64];
	size_t n = 0;
	for (;;) {
		cr_assert(pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000),
			  "no answer after half-close");
		ssize_t r = recv(fd, buf + n, sizeof(buf) - n, 0);
		cr_assert_geq(r, 0);
		if (!r)
			break;
		n += (size_t)r;
	}
	cr_assert_eq(n, 9);
	cr_assert_eq(memcmp(buf, "after-eof", 9), 0);
	script_join(&s);
	cr_assert_eq(s.result, 1, "the upstream got %llu bytes",
		     (unsigned long long)s.count);
	close(fd);
	struct pw_proxy_stats st = px_idle(&px);
	cr_assert_eq(st.conns_open, 0);
	cr_assert_eq(st.half_closes, 2);
	cr_assert_eq(st.resets, 0);
	px_finish(&px, NULL);
}

/* Reads until an error or end of stream; result: -errno or 0. */
static void sink_upstream(struct script *s, int fd)
{
	char buf[65536];
	for (;;) {
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		if (r < 0) {
			s->result = -errno;
			return;
		}
		if (r == 0) {
			s->result = 1;
			return;
		}
		s->count += (uint64_t)r;
	}
}

static void set_rst(int fd)
{
	struct linger lg = { 1, 0 };
	cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
}

Test(proxy, client_reset_resets_upstream)
{
	struct px px;
	px_begin(&px, 30);
	static struct script s;
	script_start(&s, sink_upstream);
	px_start(&px, 1, s.addr);

	int fd = dial_ok(&px.pa);
	static char buf[256 << 10];
	memset(buf, 'x', sizeof(buf));
	cr_assert_eq(send(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	PW_TEST_WAIT_UNTIL(s.count >= sizeof(buf), PW_TEST_WAIT_SECS,
			   "the upstream got %llu of %zu bytes",
			   (unsigned long long)s.count, sizeof(buf));
	cr_assert_eq(s.count, sizeof(buf));
	set_rst(fd);
	close(fd);
	script_join(&s);
	cr_assert_eq(s.result, -ECONNRESET, "the upstream saw %d", s.result);
	struct pw_proxy_stats st = px_idle(&px);
	cr_assert_eq(st.conns_open, 0);
	cr_assert_eq(st.resets, 1);
	px_finish(&px, NULL);
}

/* Sends a little, waits until the test says the client has it, then
 * resets the connection. */
static void resetting_upstream(struct script *s, int fd)
{
	char c;
	struct pollfd pf = { s->go[0], POLLIN, 0 };

	send(fd, "partial", 7, MSG_NOSIGNAL);
	if (poll(&pf, 1, PW_TEST_WAIT_SECS * 1000) != 1 ||
	    read(s->go[0], &c, 1) != 1)
		s->result = -ETIMEDOUT; /* reset anyway: the test fails */
	struct linger lg = { 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

Test(proxy, upstream_reset_resets_client)
{
	struct px px;
	px_begin(&px, 30);
	static struct script s;
	script_start(&s, resetting_upstream);
	px_start(&px, 1, s.addr);

	int fd = dial_ok(&px.pa);
	char buf[64];
	size_t n = 0;
	int err = 0;
	/* The bytes sent before the reset arrive; then the reset. */
	cr_assert(pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000));
	cr_assert_eq(recv(fd, buf, 7, MSG_WAITALL), 7);
	cr_assert_eq(memcmp(buf, "partial", 7), 0);
	n = 7;
	cr_assert_eq(write(s.go[1], "", 1), 1);
	for (;;) {
		cr_assert(pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000));
		ssize_t r = recv(fd, buf + n, sizeof(buf) - n, 0);
		if (r < 0) {
			err = errno;
			break;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	cr_assert_eq(n, 7, "the bytes before the reset arrive");
	cr_assert_eq(err, ECONNRESET, "the client sees a reset, not %d", err);
	script_join(&s);
	cr_assert_eq(s.result, 0, "the upstream was never told to reset");
	close(fd);
	struct pw_proxy_stats st = px_idle(&px);
	cr_assert_eq(st.resets, 1);
	px_finish(&px, NULL);
}

/* ---- upstream failures --------------------------------------------- */

static void ping(const struct pw_net_addr *pa)
{
	int fd = dial_ok(pa);
	echo4(fd, "ping");
	close(fd);
}

/* The client is closed without a byte. */
static void expect_closed(const struct pw_net_addr *pa)
{
	int fd = dial_ok(pa);
	cr_assert(pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000),
		  "not closed in %d s", PW_TEST_WAIT_SECS);
	char b[4];
	ssize_t r = recv(fd, b, sizeof(b), 0);
	cr_assert(r == 0 || (r < 0 && errno == ECONNRESET), "recv %zd", r);
	close(fd);
}

Test(proxy, failover_and_all_refusing)
{
	struct px px;
	struct echo_srv e;
	px_begin_echo(&px, 30, &e);
	/* Two ports bound here, not listening: connects to them are
	 * refused while the test holds them. */
	struct pw_net_addr dead0, dead1;
	int dfd0 = pw_test_refusing_port(&dead0);
	int dfd1 = pw_test_refusing_port(&dead1);
	px_config(&px, 1, dead0);
	px.cfg.upstream[1] = e.addr;
	px.cfg.nupstreams = 2;
	px_up(&px);
	for (int i = 0; i < 4; i++)
		ping(&px.pa);
	struct pw_proxy_stats st = px_idle(&px);
	/* Round robin starts half the connections on the dead upstream. */
	cr_assert_eq(st.connect_errors, 2);
	cr_assert_eq(st.upstream_failed, 0);
	px_stop(&px);

	px.cfg.upstream[1] = dead1;
	px_up(&px);
	expect_closed(&px.pa);
	expect_closed(&px.pa);
	st = px_idle(&px);
	cr_assert_eq(st.connect_errors, 4);
	cr_assert_eq(st.upstream_failed, 2);
	cr_assert_eq(st.conns_open, 0);
	close(dfd0);
	close(dfd1);
	px_finish(&px, &e);
}

Test(proxy, connect_timeout_then_failover)
{
	signal(SIGPIPE, SIG_IGN);
	int fill[16], nfill;
	struct pw_net_addr hole;
	int lfd = pw_test_blackhole(&hole, fill, &nfill);
	struct px px = { .fds0 = pw_test_open_fds() };
	struct echo_srv e;
	echo_start(&e);
	px_config(&px, 1, hole);
	px.cfg.connect_timeout_ns = 200 * PW_NSEC_PER_MSEC;
	px_up(&px);
	uint64_t t0 = pw_test_mono_ms();
	expect_closed(&px.pa);
	uint64_t took = pw_test_mono_ms() - t0;
	cr_assert_geq(took, 190, "closed after %llu ms",
		      (unsigned long long)took);
	struct pw_proxy_stats st = px_idle(&px);
	cr_assert_eq(st.connect_timeouts, 1);
	cr_assert_eq(st.upstream_failed, 1);
	px_stop(&px);

	px.cfg.upstream[1] = e.addr;
	px.cfg.nupstreams = 2;
	px_up(&px);
	t0 = pw_test_mono_ms();
	ping(&px.pa); /* first upstream: times out, fails over */
	cr_assert_geq(pw_test_mono_ms() - t0, 190);
	st = px_idle(&px);
	cr_assert_eq(st.connect_timeouts, 1);
	cr_assert_eq(st.upstream_failed, 0);
	px_finish(&px, &e);
	pw_test_blackhole_close(lfd, fill, nfill);
}

/* ---- a client that does not read --------------------------------------- */

/*
 * The most one direction's FIFO may hold under @cfg: the high-water mark,
 * plus the bytes a parked receive gathered, which the direction takes in
 * one piece when it resumes (at most one ring's worth: the receive is
 * stopped before the kernel hands it more).
 */
static uint64_t px_fifo_max(const struct pw_proxy_config *cfg)
{
	return cfg->high_water +
	       (uint64_t)cfg->net.buf_count * cfg->net.buf_size;
}

/* Writes as fast as the socket takes it until told to stop; s->count is
 * the bytes written, s->stage the number of 300 ms waits for room in a
 * row in which the socket took nothing: this workload's measure of being
 * blocked (a byte written sets it back to 0). */
static void firehose_upstream(struct script *s, int fd)
{
	static char buf[65536];
	uint64_t seed = 42;
	uint64_t h = PW_TEST_FNV_INIT;

	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (!s->stop) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (char)(pw_test_rng(&seed) >> 24);
		size_t off = 0;
		while (off < sizeof(buf) && !s->stop) {
			ssize_t w = send(fd, buf + off, sizeof(buf) - off,
					 MSG_NOSIGNAL);
			if (w > 0) {
				h = pw_test_fnv(h, buf + off, (size_t)w);
				off += (size_t)w;
				s->count += (uint64_t)w;
				s->stage = 0;
				continue;
			}
			if (errno != EAGAIN)
				return;
			struct pollfd pf = { fd, POLLOUT, 0 };
			if (poll(&pf, 1, 300) == 0)
				s->stage++; /* blocked 300 ms more */
		}
		if (off < sizeof(buf)) {
			/* Stopped mid-buffer: the checksum covers what went. */
			break;
		}
	}
	s->result = (int)(h & 0x7fffffff);
	shutdown(fd, SHUT_WR);
}

Test(proxy, slow_reader_bounded_memory)
{
	struct px px;
	px_begin(&px, 60);
	static struct script s;
	script_start(&s, firehose_upstream);
	px_config(&px, 1, s.addr);
	px.cfg.high_water = 64 << 10;
	px.cfg.net.buf_count = 256;
	px.cfg.net.buf_size = 4096;
	px_up(&px);
	int fd = dial_ok(&px.pa);
	/* The client reads nothing: the upstream must end up blocked, and
	 * stay blocked for another of its periods. */
	PW_TEST_WAIT_UNTIL(s.stage >= 1, PW_TEST_WAIT_SECS,
			   "the upstream never blocked (%llu bytes written)",
			   (unsigned long long)s.count);
	uint64_t w1 = s.count;
	PW_TEST_WAIT_UNTIL(s.stage >= 2, PW_TEST_WAIT_SECS,
			   "the upstream did not stay blocked (%llu bytes "
			   "written)",
			   (unsigned long long)s.count);
	struct pw_proxy_stats st;
	pw_proxy_stats(px.p, &st);
	uint64_t w2 = s.count;
	/* Held by the proxy: the socket buffers, and in a direction's FIFO
	 * at most the high-water mark plus what its parked receive gathered
	 * (px_fifo_max()). */
	cr_assert_eq(st.bufs_total, 256);
	cr_assert_leq(st.buffered_peak, px_fifo_max(&px.cfg),
		      "a direction held %llu bytes",
		      (unsigned long long)st.buffered_peak);
	cr_assert_lt(w2 - w1, 4u << 20, "the upstream kept writing");
	cr_assert_leq(st.bytes_down, w2);
	/* Now read everything: nothing was lost. */
	s.stop = true;
	uint64_t got = 0, h = PW_TEST_FNV_INIT;
	static char buf[65536];
	for (;;) {
		cr_assert(pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000),
			  "stalled after %llu bytes", (unsigned long long)got);
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		cr_assert_geq(r, 0);
		if (!r)
			break;
		h = pw_test_fnv(h, buf, (size_t)r);
		got += (uint64_t)r;
	}
	script_join(&s);
	cr_assert_eq(got, s.count);
	cr_assert_eq((int)(h & 0x7fffffff), s.result, "bytes differ");
	close(fd);
	st = px_idle(&px);
	cr_assert_eq(st.conns_open, 0);
	px_finish(&px, NULL);
}

/* ---- idle timeout, limits, drain ------------------------------------ */

/* The client of @fd sees the proxy's orderly close (end of stream). */
static void expect_eof(int fd, const char *who)
{
	char b[4];
	cr_assert(pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000),
		  "%s never closed", who);
	cr_assert_eq(recv(fd, b, sizeof(b), 0), 0, "%s: not an end of stream",
		     who);
}

/*
 * Under the paused clock (time moves only when the test advances it): a
 * connection that moves bytes every 100 ms outlives an idle timeout of
 * 300 ms many times over, while a silent one opened after it is closed
 * by the proxy; once silent, the active one is closed too.
 */
Test(proxy, idle_timeout_closes)
{
	struct px px;
	struct echo_srv e;
	px_begin_echo(&px, 30, &e);
	px_config(&px, 1, e.addr);
	px.cfg.idle_timeout_ns = 300 * PW_NSEC_PER_MSEC;
	px.cfg.rt.flags |= PW_CONFIG_PAUSED_CLOCK;
	px_up(&px);
	int active = dial_ok(&px.pa);
	echo4(active, "ping");
	int silent = dial_ok(&px.pa);
	echo4(silent, "pong");
	/* 1 s of virtual time; without the activity the active connection,
	 * the older one, would be closed first. */
	for (int i = 0; i < 10; i++) {
		pw_test_advance(pw_proxy_runtime(px.p), 100 * PW_NSEC_PER_MSEC);
		echo4(active, "ping");
	}
	expect_eof(silent, "the silent connection");
	close(silent);
	struct pw_proxy_stats st;
	WAIT_STATS(px.p, st, st.conns_open == 1);
	cr_assert_eq(st.conns_open, 1);
	cr_assert_eq(st.idle_closed, 1);
	echo4(active, "more");
	/* Silent from now on: every byte it moved has been seen by the
	 * proxy's first turn after this advance, so its last activity is at
	 * most 300 ms before the end of the second. */
	pw_test_advance(pw_proxy_runtime(px.p), 300 * PW_NSEC_PER_MSEC);
	pw_test_advance(pw_proxy_runtime(px.p), 300 * PW_NSEC_PER_MSEC);
	expect_eof(active, "the active connection once silent");
	close(active);
	st = px_idle(&px);
	cr_assert_eq(st.idle_closed, 2);
	cr_assert_eq(st.resets, 0);
	px_finish(&px, &e);
}

/* ---- hostile clients and upstreams ----------------------------------- */

/* A client whose receive buffer is about @rcvbuf bytes (set before the
 * connect, so the window is scaled to it), connected to @a. */
static int dial_rcvbuf(const struct pw_net_addr *a, int rcvbuf)
{
	int fd = socket(a->u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
				sizeof(rcvbuf)),
		     0);
	cr_assert_eq(connect(fd, &a->u.sa, a->len), 0);
	return fd;
}

/* Read from @fd until end of stream or an error: the bytes read go to
 * *@got, and the result is 0 for end of stream or the errno. */
static int drain_fd(int fd, uint64_t *got)
{
	static char buf[65536];

	*got = 0;
	for (;;) {
		cr_assert(pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000),
			  "stalled after %llu bytes", (unsigned long long)*got);
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		if (r < 0)
			return errno;
		if (!r)
			return 0;
		*got += (uint64_t)r;
	}
}

/*
 * An upstream serving each connection (a thread each) by the first byte
 * it reads: 'E' echoes, 'U' never reads again, 'D' writes until the
 * connection fails or the test stops it. Each connection's last socket
 * error is kept.
 */
enum { MULTI_MAX = 32 };

struct multi;

struct multi_conn {
	struct multi *u;
	int fd;
	pthread_t t;
	_Atomic int err;
};

struct multi {
	int lfd;
	struct pw_net_addr addr;
	pthread_t t;
	_Atomic bool stop;
	_Atomic int blocked; /* 'D' writers blocked for 300 ms */
	_Atomic int n;	     /* connections accepted */
	struct multi_conn c[MULTI_MAX];
};

/* Wait up to @ms for @ev on @fd: 1 when ready, 0 when not. */
static int wait_fd(int fd, short ev, int ms)
{
	struct pollfd pf = { fd, ev, 0 };
	return poll(&pf, 1, ms) == 1;
}

static void multi_echo(struct multi_conn *m)
{
	char buf[16384];

	while (!m->u->stop) {
		if (!wait_fd(m->fd, POLLIN, 100))
			continue;
		ssize_t r = recv(m->fd, buf, sizeof(buf), 0);
		if (r <= 0)
			return;
		if (send(m->fd, buf, (size_t)r, MSG_NOSIGNAL) != r)
			return;
	}
}

static void multi_download(struct multi_conn *m)
{
	static char buf[65536];
	bool counted = false;

	fcntl(m->fd, F_SETFL, O_NONBLOCK);
	while (!m->u->stop) {
		if (send(m->fd, buf, sizeof(buf), MSG_NOSIGNAL) > 0)
			continue;
		if (errno != EAGAIN) {
			m->err = errno;
			return;
		}
		if (!wait_fd(m->fd, POLLOUT, 300) && !counted) {
			counted = true;
			atomic_fetch_add(&m->u->blocked, 1);
		}
	}
}

static void *multi_conn_main(void *arg)
{
	struct multi_conn *m = arg;
	char mode = 0;

	if (wait_fd(m->fd, POLLIN, PW_TEST_WAIT_SECS * 1000) &&
	    recv(m->fd, &mode, 1, 0) == 1) {
		if (mode == 'E')
			multi_echo(m);
		else if (mode == 'D')
			multi_download(m);
		while (mode == 'U' && !m->u->stop)
			usleep(10000);
	}
	return NULL;
}

static void *multi_main(void *arg)
{
	struct multi *u = arg;

	while (!u->stop && u->n < MULTI_MAX) {
		if (!wait_fd(u->lfd, POLLIN, 100))
			continue;
		int fd = accept4(u->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		struct multi_conn *m = &u->c[u->n];
		m->u = u;
		m->fd = fd;
		if (pthread_create(&m->t, NULL, multi_conn_main, m)) {
			close(fd);
			continue;
		}
		u->n++;
	}
	return NULL;
}

static void multi_start(struct multi *u)
{
	memset(u, 0, sizeof(*u));
	u->lfd = pw_test_listen_any(&u->addr, 64);
	cr_assert_eq(pthread_create(&u->t, NULL, multi_main, u), 0);
}

static void multi_stop(struct multi *u)
{
	u->stop = true;
	pthread_join(u->t, NULL);
	for (int i = 0; i < u->n; i++) {
		pthread_join(u->c[i].t, NULL);
		close(u->c[i].fd);
	}
	close(u->lfd);
}

/* A client of mode @mode (see struct multi) through @pa. */
static int dial_mode(const struct pw_net_addr *pa, char mode)
{
	int fd = dial_ok(pa);
	cr_assert_eq(send(fd, &mode, 1, 0), 1);
	return fd;
}

/* Write to @fd until it has taken nothing for 300 ms. */
static void upload_until_blocked(int fd)
{
	static char buf[65536];

	fcntl(fd, F_SETFL, O_NONBLOCK);
	for (;;) {
		if (send(fd, buf, sizeof(buf), MSG_NOSIGNAL) > 0)
			continue;
		cr_assert_eq(errno, EAGAIN, "upload: %s", strerror(errno));
		if (!wait_fd(fd, POLLOUT, 300))
			return;
	}
}

/*
 * One shard with a ring of 16 buffers: four clients upload to an
 * upstream that never reads and ten download from upstreams that write
 * without end while the clients never read. Each of them keeps its bytes
 * in its own memory and its receives parked: a good client beside them
 * has its bytes echoed intact and promptly, and the ring stays nearly
 * all in the ring.
 */
Test(proxy, stalled_peers_beside_a_good_client)
{
	struct px px;
	px_begin(&px, 120);
	static struct multi u;
	multi_start(&u);
	px_config(&px, 1, u.addr);
	px.cfg.net.buf_count = 16;
	px_up(&px);
	int good = dial_mode(&px.pa, 'E');
	echo4(good, "ping");
	enum { UP = 4, DOWN = 10 };
	int up[UP], down[DOWN];
	for (int i = 0; i < UP; i++) {
		up[i] = dial_mode(&px.pa, 'U');
		upload_until_blocked(up[i]);
	}
	for (int i = 0; i < DOWN; i++)
		down[i] = dial_mode(&px.pa, 'D');
	PW_TEST_WAIT_UNTIL(u.blocked == DOWN, PW_TEST_WAIT_SECS,
			   "%d of %d downloads blocked", u.blocked, DOWN);
	/* Rounds of 4 KiB each way, each answered within 3 s (the idle
	 * timeout, 60 s, is what would end a starvation). */
	static char out[4096], in[4096];
	uint64_t seed = 7, most = 0;
	for (int round = 0; round < 20; round++) {
		for (size_t i = 0; i < sizeof(out); i++)
			out[i] = (char)(pw_test_rng(&seed) >> 24);
		uint64_t t0 = pw_test_mono_ms();
		cr_assert_eq(send(good, out, sizeof(out), 0),
			     (ssize_t)sizeof(out));
		size_t n = 0;
		while (n < sizeof(in)) {
			cr_assert(pw_test_readable(good, 3000),
				  "round %d: %zu of %zu bytes in 3 s", round, n,
				  sizeof(in));
			ssize_t r = recv(good, in + n, sizeof(in) - n, 0);
			cr_assert_gt(r, 0);
			n += (size_t)r;
		}
		cr_assert_eq(memcmp(in, out, sizeof(out)), 0, "round %d",
			     round);
		cr_assert_lt(pw_test_mono_ms() - t0, 3000);
		struct pw_proxy_stats st;
		pw_proxy_stats(px.p, &st);
		most = st.bufs_borrowed > most ? st.bufs_borrowed : most;
		usleep(20000); /* a ring sample every 50 ms */
	}
	/* Parked receives hold no ring buffer; a few may be in flight, and
	 * a download whose client's kernel still takes bytes resumes now
	 * and then (a slow machine samples those moments): the ring comes
	 * back to nearly all free, as it never does while the attackers
	 * hold it. */
	struct pw_proxy_stats st;
	WAIT_STATS(px.p, st, st.bufs_borrowed <= 4);
	cr_assert_eq(st.bufs_total, 16);
	cr_assert_leq(st.bufs_borrowed, 4,
		      "%llu ring buffers held (at most %llu in the rounds)",
		      (unsigned long long)st.bufs_borrowed,
		      (unsigned long long)most);
	cr_assert_leq(st.buffered_peak, px_fifo_max(&px.cfg),
		      "a direction held %llu bytes",
		      (unsigned long long)st.buffered_peak);
	cr_assert_eq(st.release_errors, 0);
	multi_stop(&u);
	close(good);
	for (int i = 0; i < UP; i++)
		close(up[i]);
	for (int i = 0; i < DOWN; i++)
		close(down[i]);
	px_idle(&px);
	px_finish(&px, NULL);
}

/* Sends s->count bytes of a seeded stream, then ends its side and waits
 * for the client's end; s->result is the stream's checksum. */
enum { STREAM_BYTES = 16 << 20 };

static void stream_upstream(struct script *s, int fd)
{
	static char buf[65536];
	uint64_t seed = 99, h = PW_TEST_FNV_INIT, left = STREAM_BYTES;

	while (left) {
		size_t n = left < sizeof(buf) ? (size_t)left : sizeof(buf);
		for (size_t i = 0; i < n; i++)
			buf[i] = (char)(pw_test_rng(&seed) >> 24);
		h = pw_test_fnv(h, buf, n);
		if (send(fd, buf, n, MSG_NOSIGNAL) != (ssize_t)n)
			return;
		left -= n;
		s->count += n;
	}
	s->result = (int)(h & 0x7fffffff);
	shutdown(fd, SHUT_WR);
	while (recv(fd, buf, sizeof(buf), 0) > 0)
		;
}

/*
 * Under the paused clock, a client that reads 64 KiB every 100 ms of
 * virtual time through an idle timeout of 300 ms gets all 16 MiB (more
 * than the socket buffers on the way hold) and the end of stream: its
 * reads show as progress (partial sends, the kernel's send queue
 * draining) although the proxy's sends complete seldom while its socket
 * buffer is full. Counting only completed sends, the proxy cut it after
 * about 4 MiB with a clean end of stream.
 */
Test(proxy, slow_steady_reader_not_cut)
{
	struct px px;
	px_begin(&px, 120);
	static struct script s;
	script_start(&s, stream_upstream);
	px_config(&px, 1, s.addr);
	px.cfg.idle_timeout_ns = 300 * PW_NSEC_PER_MSEC;
	px.cfg.rt.flags |= PW_CONFIG_PAUSED_CLOCK;
	px_up(&px);
	int fd = dial_rcvbuf(&px.pa, 64 << 10);
	static char buf[65536];
	uint64_t got = 0, h = PW_TEST_FNV_INIT;
	int err = 0;
	for (bool eof = false; !eof;) {
		size_t n = 0;
		while (n < sizeof(buf)) {
			cr_assert(pw_test_readable(fd,
						   PW_TEST_WAIT_SECS * 1000),
				  "stalled after %llu bytes",
				  (unsigned long long)got);
			ssize_t r = recv(fd, buf + n, sizeof(buf) - n, 0);
			if (r <= 0) {
				err = r < 0 ? errno : 0;
				eof = true;
				break;
			}
			n += (size_t)r;
		}
		h = pw_test_fnv(h, buf, n);
		got += n;
		/* Not after the end: the stream is whole, and the idle
		 * timeout may then close a client that lingers. */
		if (!eof)
			pw_test_advance(pw_proxy_runtime(px.p),
					100 * PW_NSEC_PER_MSEC);
	}
	cr_assert_eq(err, 0, "the reader saw %s", strerror(err));
	cr_assert_eq(got, STREAM_BYTES, "got %llu of %d bytes",
		     (unsigned long long)got, STREAM_BYTES);
	cr_assert_eq((int)(h & 0x7fffffff), s.result, "bytes differ");
	close(fd);
	script_join(&s);
	struct pw_proxy_stats st = px_idle(&px);
	cr_assert_eq(st.idle_closed, 0);
	cr_assert_eq(st.aborts, 0);
	px_finish(&px, NULL);
}

/* Advance @x's paused clock by @ns until @pred holds (looked at for
 * 500 ms after each advance), at most 10 times. */
#define ADVANCE_UNTIL(x, ns, st, pred)                                     \
	do {                                                               \
		for (int k_ = 0; k_ < 10; k_++) {                          \
			pw_test_advance(pw_proxy_runtime((x)->p), (ns));   \
			uint64_t dl_ =                                     \
				pw_test_now_ns() + 500 * PW_NSEC_PER_MSEC; \
			while (pw_proxy_stats((x)->p, &(st)) == 0 &&       \
			       !(pred) && pw_test_wait_step(dl_))          \
				;                                          \
			if (pred)                                          \
				break;                                     \
		}                                                          \
		cr_assert(pred, "not after 10 advances: " #pred);          \
	} while (0)

/* Start a download that the client never reads, the upstream's writes
 * blocked; returns the client. */
static int stalled_download(struct px *x, struct multi *u)
{
	int fd = dial_mode(&x->pa, 'D');
	PW_TEST_WAIT_UNTIL(u->blocked == 1, PW_TEST_WAIT_SECS,
			   "the upstream never blocked");
	return fd;
}

/*
 * The idle timeout cuts a client that stopped reading while the proxy
 * still holds bytes for it: the client reads what reached it, then a
 * reset, not an end of stream that would pass for the whole response.
 */
Test(proxy, idle_cut_with_bytes_undelivered_resets)
{
	struct px px;
	px_begin(&px, 60);
	static struct multi u;
	multi_start(&u);
	px_config(&px, 1, u.addr);
	px.cfg.idle_timeout_ns = 300 * PW_NSEC_PER_MSEC;
	px.cfg.send_timeout_ns = 0;
	px.cfg.rt.flags |= PW_CONFIG_PAUSED_CLOCK;
	px_up(&px);
	int fd = stalled_download(&px, &u);
	struct pw_proxy_stats st;
	ADVANCE_UNTIL(&px, 300 * PW_NSEC_PER_MSEC, st, st.idle_closed == 1);
	uint64_t got;
	int err = drain_fd(fd, &got);
	cr_assert_eq(err, ECONNRESET, "after %llu bytes: %s",
		     (unsigned long long)got, err ? strerror(err) : "EOF");
	close(fd);
	st = px_idle(&px);
	cr_assert_eq(st.aborts, 1);
	cr_assert_eq(st.send_timeouts, 0);
	multi_stop(&u);
	px_finish(&px, NULL);
}

/*
 * --send-timeout: a send that makes no progress (the client never reads)
 * resets both sides, whatever the idle timeout says.
 */
Test(proxy, send_timeout_resets_both_sides)
{
	struct px px;
	px_begin(&px, 60);
	static struct multi u;
	multi_start(&u);
	px_config(&px, 1, u.addr);
	px.cfg.idle_timeout_ns = 0;
	px.cfg.send_timeout_ns = PW_NSEC_PER_SEC;
	px.cfg.rt.flags |= PW_CONFIG_PAUSED_CLOCK;
	px_up(&px);
	int fd = stalled_download(&px, &u);
	struct pw_proxy_stats st;
	/* Not before the timeout. */
	pw_test_advance(pw_proxy_runtime(px.p), 900 * PW_NSEC_PER_MSEC);
	pw_proxy_stats(px.p, &st);
	cr_assert_eq(st.send_timeouts, 0);
	ADVANCE_UNTIL(&px, PW_NSEC_PER_SEC, st, st.send_timeouts == 1);
	uint64_t got;
	int err = drain_fd(fd, &got);
	cr_assert_eq(err, ECONNRESET, "client, after %llu bytes: %s",
		     (unsigned long long)got, err ? strerror(err) : "EOF");
	PW_TEST_WAIT_UNTIL(u.c[0].err != 0, PW_TEST_WAIT_SECS,
			   "the upstream's writes never failed");
	cr_assert(u.c[0].err == ECONNRESET || u.c[0].err == EPIPE,
		  "upstream: %s", strerror(u.c[0].err));
	close(fd);
	st = px_idle(&px);
	cr_assert_eq(st.send_timeouts, 1);
	cr_assert_eq(st.aborts, 1);
	cr_assert_eq(st.idle_closed, 0);
	multi_stop(&u);
	px_finish(&px, NULL);
}

/*
 * --max-conns 2: the third client waits in the backlog, not served and
 * not closed, until one of the first two ends; then it is served.
 */
Test(proxy, max_conns_pauses_accept)
{
	struct px px;
	struct echo_srv e;
	px_begin_echo(&px, 30, &e);
	px_config(&px, 1, e.addr);
	px.cfg.max_conns = 2;
	px_up(&px);
	int fd[2];
	for (int i = 0; i < 2; i++) {
		fd[i] = dial_ok(&px.pa);
		echo4(fd[i], "ping");
	}
	int third = dial_ok(&px.pa); /* the kernel completes it */
	cr_assert_eq(send(third, "wait", 4, 0), 4);
	cr_assert(!pw_test_readable(third, 300), "served beyond the cap");
	struct pw_proxy_stats st;
	pw_proxy_stats(px.p, &st);
	cr_assert_eq(st.conns_total, 2);
	cr_assert_eq(st.conns_open, 2);
	cr_assert_eq(st.accept_pauses, 1);
	close(fd[0]);
	/* Its end wakes the acceptor: the third is served. */
	char b[4];
	cr_assert(pw_test_readable(third, PW_TEST_WAIT_SECS * 1000),
		  "not served once below the cap");
	cr_assert_eq(recv(third, b, 4, MSG_WAITALL), 4);
	cr_assert_eq(memcmp(b, "wait", 4), 0);
	echo4(third, "more");
	pw_proxy_stats(px.p, &st);
	cr_assert_eq(st.conns_total, 3);
	cr_assert_eq(st.conns_open, 2);
	cr_assert_eq(st.accept_pauses, 2, "paused again at the cap");
	close(fd[1]);
	close(third);
	st = px_idle(&px);
	cr_assert_eq(st.conns_total, 3);
	cr_assert_eq(st.accept_errors, 0);
	px_finish(&px, &e);
}

Test(proxy, drain_waits_then_closes)
{
	struct px px;
	struct echo_srv e;
	px_begin_echo(&px, 30, &e);
	px_start(&px, 2, e.addr);
	int fd = dial_ok(&px.pa);
	echo4(fd, "ping");
	/* One listener per shard; one shared by all in stealing mode. */
	cr_assert_eq(pw_test_listening(&px.pa), pw_test_steal() ? 1 : 2);
	uint64_t t0 = pw_test_mono_ms();
	cr_assert_eq(pw_proxy_drain(px.p, 300 * PW_NSEC_PER_MSEC), 1);
	cr_assert_geq(pw_test_mono_ms() - t0, 290);
	/* Not accepting any more (its listeners are closed: the port is not
	 * dialled, it may be someone else's now), still serving. */
	cr_assert_eq(pw_test_listening(&px.pa), 0, "a listener is left open");
	echo4(fd, "pong");
	struct pw_proxy_stats st;
	cr_assert_eq(pw_proxy_destroy(px.p, &st), 0);
	cr_assert_eq(st.drain_closed, 1);
	char b[4];
	cr_assert(pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000));
	cr_assert_leq(recv(fd, b, 4, 0), 0);
	close(fd);
	px_end(&px, &e);
}

/* ---- descriptor limits (forked children) --------------------------- */

static int fd_exhaustion_scenario(void)
{
	signal(SIGPIPE, SIG_IGN);
	struct rlimit old;
	EXPECT(pw_test_nofile_lower(&old, 128) == 0);
	struct echo_srv e;
	echo_start(&e);
	struct px px;
	px_start(&px, 1, e.addr);
	enum { N = 4 };
	int cfd[N], hog[128];
	int nhog = pw_test_fds_exhaust(cfd, N, hog, 128);
	EXPECT(nhog >= 0);
	for (int i = 0; i < N; i++)
		EXPECT(connect(cfd[i], &px.pa.u.sa, px.pa.len) == 0);
	struct pw_proxy_stats st;
	WAIT_STATS(px.p, st, st.accept_errors >= 2);
	EXPECT(st.accept_errors >= 2); /* counted, retried after backoff */
	/* Everything back: every waiting client is served, or (if its
	 * upstream socket could not be made while descriptors were short)
	 * closed and counted. */
	EXPECT(pw_test_fds_restore(hog, nhog, &old) == 0);
	int served = 0, closed = 0;
	for (int i = 0; i < N; i++) {
		char b[3];
		if (send(cfd[i], "abc", 3, MSG_NOSIGNAL) != 3) {
			closed++;
			close(cfd[i]);
			continue;
		}
		struct pollfd pf = { cfd[i], POLLIN, 0 };
		EXPECT(poll(&pf, 1, PW_TEST_WAIT_SECS * 1000) == 1);
		ssize_t r = recv(cfd[i], b, 3, MSG_WAITALL);
		if (r == 3 && !memcmp(b, "abc", 3))
			served++;
		else
			closed++;
		close(cfd[i]);
	}
	EXPECT(served + closed == N);
	WAIT_STATS(px.p, st, st.conns_open == 0);
	EXPECT(st.upstream_failed + st.resets == (uint64_t)closed);
	/* And new clients too. */
	for (int i = 0; i < 4; i++) {
		int fd = pw_test_dial(&px.pa);
		char b[3];
		EXPECT(fd >= 0);
		EXPECT(send(fd, "xyz", 3, 0) == 3);
		EXPECT(recv(fd, b, 3, MSG_WAITALL) == 3);
		close(fd);
	}
	WAIT_STATS(px.p, st, st.conns_open == 0);
	EXPECT(st.conns_open == 0);
	EXPECT(pw_proxy_stop(px.p, 0, NULL) == 0);
	echo_stop(&e);
	return 0;
}

Test(proxy, fd_exhaustion_counted_and_recovers)
{
	pw_test_scenario(fd_exhaustion_scenario);
}

/* Raise the descriptor limit to @want, or to the hard limit when that is
 * lower (raising the hard limit needs CAP_SYS_RESOURCE). Returns the
 * limit now in force. */
static long raise_nofile(long want)
{
	struct rlimit lim;

	if (getrlimit(RLIMIT_NOFILE, &lim))
		return -1;
	if ((rlim_t)want > lim.rlim_max) {
		struct rlimit up = { (rlim_t)want, (rlim_t)want };
		if (!setrlimit(RLIMIT_NOFILE, &up))
			return want;
		want = (long)lim.rlim_max;
	}
	lim.rlim_cur = (rlim_t)want;
	return setrlimit(RLIMIT_NOFILE, &lim) ? -1 : want;
}

/* A child serving until its end of @ctl reads end of file; it first
 * writes the address it listens on to @ctl. The proxy child then writes
 * its final verdict (a byte, 0 for success). */
static int many_echo_child(int ctl, long nofile, int n)
{
	struct echo_srv e;
	char c;

	EXPECT(raise_nofile(nofile) > 0);
	echo_start(&e);
	EXPECT(write(ctl, &e.addr, sizeof(e.addr)) == sizeof(e.addr));
	while (read(ctl, &c, 1) > 0)
		;
	struct pw_net_listener_stats ls;
	pw_net_listener_stats(e.l, &ls);
	/* A burst of connects must not lose any (the accept spill). */
	EXPECT(ls.accepted == (uint64_t)n && ls.dropped == 0);
	echo_stop(&e);
	return 0;
}

static int many_proxy_child(int ctl, long nofile, int n,
			    const struct pw_net_addr *up)
{
	struct pw_proxy_stats st;
	struct px px;
	char c = 1;

	EXPECT(raise_nofile(nofile) > 0);
	px_start(&px, 2, *up);
	EXPECT(write(ctl, &px.pa, sizeof(px.pa)) == sizeof(px.pa));
	/* The client says when every connection is open and waits for our
	 * answer before it closes any, then says when every connection is
	 * closed. */
	if (read(ctl, &c, 1) != 1) {
		pw_proxy_stats(px.p, &st);
		char line[512];
		pw_proxy_stats_line(&st, line, sizeof(line));
		fprintf(stderr, "proxy: %s\n", line);
		return 1;
	}
	/* Each connection has echoed, so its task has run; with stealing,
	 * the acceptor counts it just after the spawn, so a reader may be
	 * a moment ahead of that count. Nothing closes before our answer:
	 * the count can only rise to n. */
	WAIT_STATS(px.p, st, st.conns_open == (uint64_t)n);
	if (st.conns_open != (uint64_t)n) {
		char line[512];
		pw_proxy_stats_line(&st, line, sizeof(line));
		fprintf(stderr, "open %llu of %d: %s\n",
			(unsigned long long)st.conns_open, n, line);
	}
	EXPECT(st.conns_open == (uint64_t)n);
	EXPECT(write(ctl, &c, 1) == 1);
	EXPECT(read(ctl, &c, 1) == 1);
	WAIT_STATS(px.p, st, st.conns_open == 0);
	EXPECT(st.conns_open == 0);
	EXPECT(st.conns_total == (uint64_t)n);
	EXPECT(st.resets + st.connect_errors + st.accept_errors == 0);
	EXPECT(pw_proxy_stop(px.p, 0, NULL) == 0);
	c = 0;
	EXPECT(write(ctl, &c, 1) == 1);
	return 0;
}

/* As many concurrent connections as the descriptor limit allows, up to
 * 10000 (scaled): the proxy, the echo upstream and the clients each run
 * in a process of their own, so the proxy's two descriptors per
 * connection fit under a hard limit it may not raise. */
static int many_scenario(void)
{
	struct rlimit lim;
	EXPECT(getrlimit(RLIMIT_NOFILE, &lim) == 0);
	long want = (long)scaled(10000, 200);
	long cap =
		(lim.rlim_max == RLIM_INFINITY ? 1 << 20 : (long)lim.rlim_max);
	long hard = cap > 2 * want + 512 ? 2 * want + 512 : cap;
	int n = (int)(want < (hard - 512) / 2 ? want : (hard - 512) / 2);
	if (n < want)
		fprintf(stderr,
			"ten_thousand_connections: %d connections (hard "
			"RLIMIT_NOFILE %ld)\n",
			n, cap);
	int ectl[2], pctl[2];
	EXPECT(socketpair(AF_UNIX, SOCK_STREAM, 0, ectl) == 0);
	EXPECT(socketpair(AF_UNIX, SOCK_STREAM, 0, pctl) == 0);
	pid_t epid = pw_test_fork();
	EXPECT(epid >= 0);
	if (epid == 0) {
		close(ectl[0]);
		close(pctl[0]);
		close(pctl[1]);
		_exit(many_echo_child(ectl[1], n + 512, n));
	}
	close(ectl[1]);
	struct pw_net_addr ea, pa;
	EXPECT(read(ectl[0], &ea, sizeof(ea)) == sizeof(ea));
	pid_t ppid = pw_test_fork();
	EXPECT(ppid >= 0);
	if (ppid == 0) {
		close(ectl[0]);
		close(pctl[0]);
		_exit(many_proxy_child(pctl[1], hard, n, &ea));
	}
	close(pctl[1]);
	EXPECT(read(pctl[0], &pa, sizeof(pa)) == sizeof(pa));
	EXPECT(raise_nofile(n + 512) > 0);
	signal(SIGPIPE, SIG_IGN);
	int *fd = calloc((size_t)n, sizeof(int));
	EXPECT(fd);
	for (int i = 0; i < n; i++) {
		fd[i] = pw_test_dial(&pa);
		if (fd[i] < 0)
			fprintf(stderr, "connect %d: %s\n", i,
				strerror(-fd[i]));
		EXPECT(fd[i] >= 0);
		EXPECT(send(fd[i], &i, sizeof(i), 0) == sizeof(i));
	}
	for (int i = 0; i < n; i++) {
		int v = -1;
		struct pollfd pf = { fd[i], POLLIN, 0 };
		EXPECT(poll(&pf, 1, PW_TEST_WAIT_SECS * 1000) == 1);
		ssize_t r = recv(fd[i], &v, sizeof(v), MSG_WAITALL);
		if (r != sizeof(v))
			fprintf(stderr, "connection %d: recv %zd (%s)\n", i, r,
				r < 0 ? strerror(errno) : "closed");
		EXPECT(r == sizeof(v));
		EXPECT(v == i);
	}
	/* The proxy reads its open count before any connection closes. */
	char c = 1;
	EXPECT(write(pctl[0], &c, 1) == 1);
	EXPECT(read(pctl[0], &c, 1) == 1 && c == 1);
	for (int i = 0; i < n; i++)
		close(fd[i]);
	free(fd);
	EXPECT(write(pctl[0], &c, 1) == 1);
	EXPECT(read(pctl[0], &c, 1) == 1 && c == 0);
	close(ectl[0]);
	int st = 0;
	EXPECT(waitpid(ppid, &st, 0) == ppid);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	EXPECT(waitpid(epid, &st, 0) == epid);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(pctl[0]);
	return 0;
}

Test(proxy, ten_thousand_connections)
{
	pw_test_time_limit(120);
	pw_test_scenario(many_scenario);
}

/* ---- the command ------------------------------------------------------- */

static int app(const char *a1, const char *a2, const char *a3, const char *a4,
	       const char *a5)
{
	char *argv[] = { "proxy",    (char *)a1, (char *)a2, (char *)a3,
			 (char *)a4, (char *)a5, NULL };
	int argc = 1;
	while (argv[argc])
		argc++;
	return pw_app_proxy(argc, argv);
}

Test(proxy, command_flag_errors)
{
	cr_assert_eq(app("--bogus", NULL, NULL, NULL, NULL), 2);
	cr_assert_eq(app("--listen", "127.0.0.1:0", NULL, NULL, NULL), 2);
	cr_assert_eq(app("--listen", "nowhere", "--upstream", "127.0.0.1:1",
			 NULL),
		     2);
	cr_assert_eq(app("--listen", "127.0.0.1:0", "--upstream",
			 "127.0.0.1:1,", NULL),
		     2);
	cr_assert_eq(app("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1",
			 "--high-water"),
		     2);
	cr_assert_eq(app("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1",
			 "--buffers=3"),
		     2);
	cr_assert_eq(app("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1",
			 "--idle-timeout=soon"),
		     2);
	cr_assert_eq(app("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1",
			 "--send-timeout=soon"),
		     2);
	cr_assert_eq(app("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1",
			 "--sndbuf=2g"),
		     2);
	struct pw_proxy_config cfg;
	pw_proxy_config_init(&cfg);
	cr_assert_eq(pw_proxy_upstreams_parse(&cfg, "127.0.0.1:1,[::1]:2"), 0);
	cr_assert_eq(cfg.nupstreams, 2);
	cr_assert_eq(pw_proxy_upstreams_parse(&cfg, ""), -EINVAL);
	cr_assert_eq(cfg.nupstreams, 2, "a bad list leaves the old one");
	struct pw_proxy *p;
	cfg.sndbuf = 2ull << 30;
	cr_assert_eq(pw_proxy_start(&p, &cfg), -EINVAL);
	cfg.sndbuf = 0;
	cfg.nupstreams = 0;
	cr_assert_eq(pw_proxy_start(&p, &cfg), -EINVAL);
	cr_assert_eq(pw_proxy_stop(NULL, 0, NULL), -EINVAL);
}
