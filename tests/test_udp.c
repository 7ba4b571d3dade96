/* SPDX-License-Identifier: MIT */
/*
 * test_udp.c - UDP over io_uring on loopback: datagram boundaries (0, 1,
 * 1472 and 65507 bytes) kept both ways, truncation reported with the
 * real length, segments sent with and without UDP_SEGMENT and received
 * with and without UDP_GRO giving the same datagrams, a flood whose loss
 * is counted exactly, IPv6 on per-shard sockets, connected sockets,
 * addresses exact, a fiber echo and a straight-line poll echo with
 * batched sends, cancellation of an armed multishot receive, bad input.
 */
#include <errno.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "tests/common.h"
#include "tests/net_fixtures.h"
#include "pinwheel/async.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

/* ---- fixtures ------------------------------------------------------------ */

/* A receive queue large enough that loopback never drops in a test. */
static void big_rcvbuf(int fd)
{
	int sz = 8 << 20;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz,
					sizeof(sz)),
			     0);
}

static bool addr_eq(const struct pw_net_addr *a, const struct pw_net_addr *b)
{
	return a->len == b->len && !memcmp(&a->u, &b->u, a->len);
}

/* Byte @i of the payload of datagram @k. */
static char pat(unsigned k, size_t i)
{
	return (char)(k * 131 + i * 7 + (i >> 8));
}

static void fill_pat(char *buf, unsigned k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = pat(k, i);
}

static bool is_pat(const char *buf, unsigned k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (buf[i] != pat(k, i))
			return false;
	return true;
}

/* Read one datagram within 10 s: its length, or -errno. */
static ssize_t recv_within(int fd, void *buf, size_t cap,
			   struct pw_net_addr *from)
{
	if (!pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000))
		return -ETIMEDOUT;
	struct pw_net_addr tmp;
	if (!from)
		from = &tmp;
	from->len = sizeof(from->u);
	ssize_t n = recvfrom(fd, buf, cap, MSG_TRUNC, &from->u.sa, &from->len);
	return n < 0 ? -errno : n;
}

/* Wait in a fiber until @r has no request in the kernel, so that it may
 * be initialised again or leave scope. */
static bool recv_settle(struct pw_udp_recv *r)
{
	for (int i = 0; pw_udp_recv_in_flight(r); i++) {
		if (i == 1000000)
			return false;
		pw_fiber_yield();
	}
	return true;
}

/* A fiber's verdict: 0, or a message naming the failed check. */
struct verdict {
	char why[200];
};

#define CHECK(v, cond, ...)                                                \
	do {                                                               \
		if (!(cond)) {                                             \
			snprintf((v)->why, sizeof((v)->why), __VA_ARGS__); \
			return -1;                                         \
		}                                                          \
	} while (0)

/* Buffers of @size bytes, 32 of them. */
static int buffers_of(uint32_t size)
{
	struct pw_net_config cfg;

	pw_net_config_init(&cfg);
	cfg.buf_count = 32;
	cfg.buf_size = size;
	return pw_net_configure(&cfg);
}

/* Buffers that hold a 64 KiB datagram (and a GRO burst). */
static int big_buffers(void)
{
	return buffers_of(PW_UDP_GRO_ROOM + PW_UDP_RECV_OVERHEAD);
}

static struct pw_runtime *run_fiber(unsigned shards, pw_fiber_fn fn, void *arg,
				    int64_t *res)
{
	struct pw_runtime *rt = pw_test_runtime(shards);
	int err = pw_fiber_block_on(rt, fn, arg, res);
	cr_assert_eq(err, 0, "pw_fiber_block_on: %d", err);
	return rt;
}

/* ---- boundaries --------------------------------------------------------- */

static const size_t sizes[] = { 0, 1, 1472, 65507 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct bound_t {
	struct verdict v;
	int fd;
	struct pw_net_addr sender;
};

static int64_t boundaries_fiber(void *arg)
{
	struct bound_t *t = arg;
	struct pw_udp_recv r;
	struct pw_udp_send s;
	struct pw_udp_dgram d;

	/* The documented least size for any datagram, an odd number that
	 * pw_net_configure() rounds up so that every buffer is aligned (the
	 * sanitizer build catches a misaligned header). */
	CHECK(&t->v, buffers_of(65507 + PW_UDP_RECV_OVERHEAD) == 0,
	      "configure");
	pw_udp_recv_init(&r, t->fd, 0);
	pw_udp_send_init(&s, t->fd, 0);
	for (unsigned k = 0; k < NSIZES; k++) {
		int64_t n = pw_fiber_udp_recv(&r, &d);
		CHECK(&t->v, n == (int64_t)sizes[k], "dgram %u: %lld", k,
		      (long long)n);
		CHECK(&t->v,
		      d.len == sizes[k] && d.full_len == sizes[k] && !d.flags,
		      "dgram %u: len %u full %u flags %u", k, d.len, d.full_len,
		      d.flags);
		CHECK(&t->v, is_pat(d.data, k, d.len), "dgram %u bytes", k);
		CHECK(&t->v, addr_eq(&d.peer, &t->sender), "dgram %u peer", k);
		n = pw_fiber_udp_send_to(&s, d.data, d.len, &d.peer);
		CHECK(&t->v, n == (int64_t)sizes[k], "echo %u: %lld", k,
		      (long long)n);
		CHECK(&t->v, pw_udp_dgram_release(&d) == 0, "release");
		CHECK(&t->v, pw_udp_dgram_release(&d) == -EINVAL, "release 2");
	}
	pw_udp_recv_cancel(&r);
	return 0;
}

static void boundaries(const char *any)
{
	struct bound_t t = { 0 };
	struct pw_net_addr me, peer;
	int64_t res = -1;
	static char buf[65536], back[65536];

	int cli = pw_test_bind(SOCK_DGRAM, any, &t.sender);
	t.fd = pw_test_bind(SOCK_DGRAM, any, &me);
	big_rcvbuf(t.fd);
	big_rcvbuf(cli);
	for (unsigned k = 0; k < NSIZES; k++) {
		fill_pat(buf, k, sizes[k]);
		cr_assert_eq(sendto(cli, buf, sizes[k], 0, &me.u.sa, me.len),
			     (ssize_t)sizes[k], "sendto %zu: %d", sizes[k],
			     errno);
	}
	struct pw_runtime *rt = run_fiber(1, boundaries_fiber, &t, &res);
	cr_assert_eq(res, 0, "%s", t.v.why);
	for (unsigned k = 0; k < NSIZES; k++) {
		ssize_t n = recv_within(cli, back, sizeof(back), &peer);
		cr_assert_eq(n, (ssize_t)sizes[k], "echo %u: %zd", k, n);
		cr_assert(is_pat(back, k, sizes[k]), "echo %u bytes", k);
		cr_assert(addr_eq(&peer, &me), "echo %u comes from the server",
			  k);
	}
	pw_runtime_destroy(rt);
	close(cli);
	close(t.fd);
}

Test(udp, boundaries_ipv4)
{
	boundaries("127.0.0.1:0");
}

Test(udp, boundaries_ipv6)
{
	boundaries("[::1]:0");
}

/* ---- truncation ---------------------------------------------------------- */

struct trunc_t {
	struct verdict v;
	int fd;
};

static int64_t trunc_fiber(void *arg)
{
	struct trunc_t *t = arg;
	struct pw_udp_recv r;
	struct pw_udp_dgram d;
	uint32_t room = 4096 - PW_UDP_RECV_OVERHEAD, flags = 0;
	char small[10];

	pw_udp_recv_init(&r, t->fd, 0);
	int64_t n = pw_fiber_udp_recv(&r, &d);
	CHECK(&t->v, n == room, "cut: %lld", (long long)n);
	CHECK(&t->v,
	      d.len == room && d.full_len == 10000 && d.flags == PW_UDP_TRUNC,
	      "cut: len %u full %u flags %u", d.len, d.full_len, d.flags);
	CHECK(&t->v, is_pat(d.data, 0, d.len), "cut bytes");
	pw_udp_dgram_release(&d);
	n = pw_fiber_udp_recv(&r, &d);
	CHECK(&t->v, n == 100 && d.full_len == 100 && !d.flags, "next: %lld",
	      (long long)n);
	CHECK(&t->v, is_pat(d.data, 1, 100), "next bytes");
	pw_udp_dgram_release(&d);
	n = pw_fiber_udp_recv_from(&r, small, sizeof(small), NULL, &flags);
	CHECK(&t->v, n == 50 && flags == PW_UDP_TRUNC, "copied: %lld %u",
	      (long long)n, flags);
	CHECK(&t->v, is_pat(small, 2, sizeof(small)), "copied bytes");
	pw_udp_recv_cancel(&r);
	return 0;
}

Test(udp, truncation_reported_with_real_length)
{
	struct trunc_t t = { 0 };
	struct pw_net_addr me, cli_a;
	static char buf[10000];
	int64_t res = -1;

	int cli = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &cli_a);
	t.fd = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &me);
	const size_t len[] = { 10000, 100, 50 };
	for (unsigned k = 0; k < 3; k++) {
		fill_pat(buf, k, len[k]);
		cr_assert_eq(sendto(cli, buf, len[k], 0, &me.u.sa, me.len),
			     (ssize_t)len[k]);
	}
	struct pw_runtime *rt = run_fiber(1, trunc_fiber, &t, &res);
	cr_assert_eq(res, 0, "%s", t.v.why);
	pw_runtime_destroy(rt);
	close(cli);
	close(t.fd);
}

/* ---- segments: GSO on and off -------------------------------------------- */

#define SEG	 500
#define SEG_LEN	 (150 * SEG + 123) /* three requests with GSO */
#define SEG_DGMS 151

struct gso_t {
	struct verdict v;
	int fd;
	uint32_t flags;
	struct pw_net_addr to;
	int gso;
	char buf[SEG_LEN];
};

static int64_t gso_fiber(void *arg)
{
	struct gso_t *t = arg;
	struct pw_udp_send s;

	pw_udp_send_init(&s, t->fd, t->flags);
	int64_t n = pw_fiber_udp_send_segs(&s, t->buf, SEG_LEN, SEG, &t->to);
	CHECK(&t->v, n == SEG_LEN, "send: %lld", (long long)n);
	CHECK(&t->v, s.datagrams == SEG_DGMS, "datagrams %llu",
	      (unsigned long long)s.datagrams);
	t->gso = pw_udp_send_gso(&s);
	return 0;
}

static void segments(uint32_t flags, int gso)
{
	static struct gso_t t;
	static char back[2048];
	int64_t res = -1;

	memset(&t, 0, sizeof(t));
	t.flags = flags;
	int rx = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &t.to);
	big_rcvbuf(rx);
	struct pw_net_addr me;
	t.fd = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &me);
	for (size_t i = 0; i < SEG_LEN; i++)
		t.buf[i] = pat((unsigned)(i / SEG), i % SEG);
	struct pw_runtime *rt = run_fiber(1, gso_fiber, &t, &res);
	cr_assert_eq(res, 0, "%s", t.v.why);
	cr_assert_eq(t.gso, gso, "UDP_SEGMENT used: %d", t.gso);
	for (unsigned k = 0; k < SEG_DGMS; k++) {
		struct pw_net_addr from;
		size_t want = k < SEG_DGMS - 1 ? SEG : SEG_LEN % SEG;
		ssize_t n = recv_within(rx, back, sizeof(back), &from);
		cr_assert_eq(n, (ssize_t)want, "dgram %u: %zd", k, n);
		cr_assert(is_pat(back, k, want), "dgram %u bytes", k);
		cr_assert(addr_eq(&from, &me), "dgram %u source", k);
	}
	cr_assert_not(pw_test_readable(rx, 0), "nothing more");
	pw_runtime_destroy(rt);
	close(rx);
	close(t.fd);
}

Test(udp, segments_with_gso)
{
	segments(0, 1);
}

Test(udp, segments_without_gso)
{
	segments(PW_UDP_NO_GSO, 0);
}

/* ---- receive: GRO on and off ------------------------------------------- */

struct gro_t {
	struct verdict v;
	int fd, cli;
	struct pw_net_addr me;
	uint32_t flags;
	struct pw_net_addr sender;
	bool gro;
	uint64_t gro_bufs;
};

/* What the sender sends: a burst of 40 datagrams of 1000 bytes, one of
 * 300, a burst of 10 of 1000 ending with one of 200 (shorter than its
 * segments, as GSO allows); each burst is one UDP_SEGMENT send. */
#define GRO_DGMS 52

static size_t gro_len(unsigned k)
{
	return k < 40 ? 1000 : k == 40 ? 300 : k < 51 ? 1000 : 200;
}

/* Send datagrams @k0..@k1 as one send of segments of @seg bytes. */
static int gro_burst(int cli, const struct pw_net_addr *to, unsigned k0,
		     unsigned k1, int seg)
{
	static char buf[64 * 1024];
	size_t len = 0;

	for (unsigned k = k0; k < k1; k++) {
		fill_pat(buf + len, k, gro_len(k));
		len += gro_len(k);
	}
	if (setsockopt(cli, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof(seg)))
		return -errno;
	return sendto(cli, buf, len, 0, &to->u.sa, to->len) == (ssize_t)len ?
		       0 :
		       -errno;
}

static int64_t gro_fiber(void *arg)
{
	struct gro_t *t = arg;
	struct pw_udp_recv r;
	struct pw_udp_dgram d;
	int32_t res;

	CHECK(&t->v, big_buffers() == 0, "configure");
	pw_udp_recv_init(&r, t->fd, t->flags);
	/* One poll by hand, its deadline past: GRO decided, request armed,
	 * before anything is sent. */
	CHECK(&t->v,
	      pw_udp_recv_poll(pw_fiber_cx(), &r, 0, &d, &res) == PW_READY &&
		      res == -ETIMEDOUT,
	      "first poll: %d", res);
	CHECK(&t->v, pw_udp_recv_in_flight(&r), "armed");
	CHECK(&t->v,
	      !gro_burst(t->cli, &t->me, 0, 40, 1000) &&
		      !gro_burst(t->cli, &t->me, 40, 41, 300) &&
		      !gro_burst(t->cli, &t->me, 41, 52, 1000),
	      "sendto: %d", errno);
	for (unsigned k = 0; k < GRO_DGMS; k++) {
		int64_t n = pw_fiber_udp_recv(&r, &d);
		CHECK(&t->v,
		      n == (int64_t)gro_len(k) && !d.flags &&
			      d.full_len == gro_len(k),
		      "dgram %u: %lld (full %u, flags %u)", k, (long long)n,
		      d.full_len, d.flags);
		CHECK(&t->v, is_pat(d.data, k, d.len), "dgram %u bytes", k);
		CHECK(&t->v, addr_eq(&d.peer, &t->sender), "dgram %u peer", k);
		pw_udp_dgram_release(&d);
	}
	t->gro = pw_udp_recv_gro(&r);
	t->gro_bufs = r.st.gro_bufs;
	pw_udp_recv_cancel(&r);
	return 0;
}

static void gro(uint32_t flags, bool on)
{
	struct gro_t t = { .flags = flags };
	int64_t res = -1;

	t.cli = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &t.sender);
	t.fd = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &t.me);
	big_rcvbuf(t.fd);
	struct pw_runtime *rt = run_fiber(1, gro_fiber, &t, &res);
	cr_assert_eq(res, 0, "%s", t.v.why);
	cr_assert_eq(t.gro, on, "GRO on: %d", t.gro);
	if (on)
		cr_assert_eq(t.gro_bufs, 2, "both bursts coalesced: %llu",
			     (unsigned long long)t.gro_bufs);
	else
		cr_assert_eq(t.gro_bufs, 0);
	pw_runtime_destroy(rt);
	close(t.cli);
	close(t.fd);
}

Test(udp, receive_with_gro)
{
	gro(0, true);
}

Test(udp, receive_without_gro)
{
	gro(PW_UDP_NO_GRO, false);
}

/* ---- a flood, its loss counted ------------------------------------------- */

#define FLOOD 50000

struct flood_t {
	struct verdict v;
	int fd;
	struct pw_net_addr me;
	_Atomic int done;
	_Atomic unsigned sent;
	uint64_t received, drops, sum;
};

static void *flood_sender(void *arg)
{
	struct flood_t *t = arg;
	struct pw_net_addr a;
	char buf[32] = { 0 };
	unsigned sent = 0;

	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:0"), 0);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	for (uint32_t i = 0; i < FLOOD; i++) {
		memcpy(buf, &i, sizeof(i));
		if (sendto(fd, buf, sizeof(buf), 0, &t->me.u.sa, t->me.len) ==
		    (ssize_t)sizeof(buf))
			sent++;
	}
	close(fd);
	atomic_store(&t->sent, sent);
	atomic_store(&t->done, 1); /* after sent: read in that order */
	return NULL;
}

/* Whether every datagram sent is accounted for. */
static bool flood_settled(struct flood_t *t)
{
	if (!atomic_load(&t->done) || pw_udp_drops(t->fd, &t->drops))
		return false;
	return t->received + t->drops == atomic_load(&t->sent);
}

static int64_t flood_fiber(void *arg)
{
	struct flood_t *t = arg;
	struct pw_udp_recv r;
	struct pw_udp_dgram d;
	int64_t last = -1;
	unsigned idle = 0;

	pw_udp_recv_init(&r, t->fd, 0);
	while (!flood_settled(t)) {
		pw_fiber_timeout(20 * PW_NSEC_PER_MSEC);
		int64_t n = pw_fiber_udp_recv(&r, &d);
		pw_fiber_set_deadline(PW_TIME_NEVER);
		if (n == -ETIMEDOUT) {
			CHECK(&t->v, ++idle < 1000, "stuck: %llu received",
			      (unsigned long long)t->received);
			continue;
		}
		CHECK(&t->v, n == 32, "dgram: %lld", (long long)n);
		uint32_t seq;
		memcpy(&seq, d.data, sizeof(seq));
		CHECK(&t->v, (int64_t)seq > last, "seq %u after %lld", seq,
		      (long long)last);
		last = seq;
		t->received++;
		pw_udp_dgram_release(&d);
		/* The receiver is the slower side: work per datagram. */
		for (int i = 0; i < 2000; i++)
			t->sum = pw_test_fnv(t->sum, &i, sizeof(i));
	}
	pw_udp_recv_cancel(&r);
	return 0;
}

Test(udp, flood_loss_counted_exactly)
{
	struct flood_t t = { 0 };
	struct pw_udp_opts o = { .rcvbuf = 4096 };
	pthread_t th;
	int64_t res = -1;

	cr_assert_eq(pw_net_addr_parse(&t.me, "127.0.0.1:0"), 0);
	t.fd = pw_udp_open(&t.me, NULL, &o);
	cr_assert_geq(t.fd, 0, "open: %d", t.fd);
	pw_test_local_addr(t.fd, &t.me);
	cr_assert_eq(pthread_create(&th, NULL, flood_sender, &t), 0);
	struct pw_runtime *rt = run_fiber(1, flood_fiber, &t, &res);
	pthread_join(th, NULL);
	cr_assert_eq(res, 0, "%s", t.v.why);
	cr_assert_eq(t.received + t.drops, atomic_load(&t.sent));
	cr_assert_gt(t.drops, 0, "a slow receiver drops (%llu received)",
		     (unsigned long long)t.received);
	cr_assert_gt(t.received, 0);
	cr_log_info("flood: %u sent, %llu received, %llu dropped",
		    atomic_load(&t.sent), (unsigned long long)t.received,
		    (unsigned long long)t.drops);
	pw_runtime_destroy(rt);
	close(t.fd);
}

/* ---- a fiber echo on per-shard IPv6 sockets ------------------------------ */

static struct pw_udp_socket *echo_sock;
static _Atomic uint64_t echoed[2];

static int64_t echo_fiber(void *arg)
{
	unsigned shard = (unsigned)(uintptr_t)arg;
	int fd = pw_udp_socket_fd(echo_sock, shard);
	struct pw_udp_recv r;
	struct pw_udp_send s;
	struct pw_udp_dgram d;
	int64_t n;

	pw_udp_recv_init(&r, fd, 0);
	pw_udp_send_init(&s, fd, 0);
	while ((n = pw_fiber_udp_recv(&r, &d)) >= 0) {
		/* Counted before the answer leaves: the client reads the
		 * count once it has every answer. */
		atomic_fetch_add(&echoed[shard], 1);
		n = pw_fiber_udp_send_to(&s, d.data, d.len, &d.peer);
		pw_udp_dgram_release(&d);
		if (n < 0)
			break;
	}
	pw_udp_recv_cancel(&r);
	return n;
}

Test(udp, fiber_echo_ipv6_per_shard)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_net_addr any, srv, bound[2];
	enum { CLIENTS = 8, ROUNDS = 20 };
	int cli[CLIENTS];
	char buf[1400], back[2048];

	atomic_store(&echoed[0], 0);
	atomic_store(&echoed[1], 0);
	cr_assert_eq(pw_net_addr_parse(&any, "[::1]:0"), 0);
	cr_assert_eq(pw_udp_socket_create(&echo_sock, rt, &any, NULL), 0);
	cr_assert_eq(pw_udp_socket_addr(echo_sock, &srv), 0);
	cr_assert_neq(srv.u.in6.sin6_port, 0, "a port was chosen");
	for (unsigned i = 0; i < 2; i++) {
		int fd = pw_udp_socket_fd(echo_sock, i);
		pw_test_local_addr(fd, &bound[i]);
		cr_assert(addr_eq(&bound[i], &srv), "shard %u on the port", i);
	}
	cr_assert_neq(pw_udp_socket_fd(echo_sock, 0),
		      pw_udp_socket_fd(echo_sock, 1), "a socket per shard");
	cr_assert_eq(pw_udp_socket_fd(echo_sock, 2), -EINVAL);
	for (unsigned i = 0; i < 2; i++)
		cr_assert_eq(pw_fiber_spawn_on(rt, i, echo_fiber,
					       (void *)(uintptr_t)i, NULL),
			     0);
	for (int c = 0; c < CLIENTS; c++) {
		struct pw_net_addr a;
		cli[c] = pw_test_bind(SOCK_DGRAM, "[::1]:0", &a);
	}
	for (unsigned k = 0; k < ROUNDS; k++) {
		for (int c = 0; c < CLIENTS; c++) {
			size_t len = 1 + (k * 97 + (unsigned)c * 31) % 1400;
			struct pw_net_addr from;
			fill_pat(buf, k * CLIENTS + (unsigned)c, len);
			cr_assert_eq(sendto(cli[c], buf, len, 0, &srv.u.sa,
					    srv.len),
				     (ssize_t)len);
			ssize_t n =
				recv_within(cli[c], back, sizeof(back), &from);
			cr_assert_eq(n, (ssize_t)len, "client %d round %u: %zd",
				     c, k, n);
			cr_assert(is_pat(back, k * CLIENTS + (unsigned)c, len));
			cr_assert(addr_eq(&from, &srv), "answered from the "
							"server's address");
		}
	}
	cr_assert_eq(atomic_load(&echoed[0]) + atomic_load(&echoed[1]),
		     CLIENTS * ROUNDS);
	pw_runtime_destroy(rt); /* the fibers' receives: -ECANCELED */
	cr_assert_eq(pw_udp_socket_destroy(echo_sock), 0);
	for (int c = 0; c < CLIENTS; c++)
		close(cli[c]);
}

Test(udp, port_in_use_refused_unless_shared)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_udp_socket *a, *b;
	struct pw_net_addr any, at;
	struct pw_udp_opts share = { .flags = PW_UDP_SHARE_PORT };

	cr_assert_eq(pw_net_addr_parse(&any, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_udp_socket_create(&a, rt, &any, NULL), 0);
	cr_assert_eq(pw_udp_socket_addr(a, &at), 0);
	cr_assert_eq(pw_udp_socket_create(&b, rt, &at, NULL), -EADDRINUSE);
	cr_assert_null(b);
	cr_assert_eq(pw_udp_socket_create(&b, rt, &at, &share), 0);
	cr_assert_eq(pw_udp_socket_destroy(b), 0);
	cr_assert_eq(pw_udp_socket_destroy(a), 0);
	struct pw_udp_opts shared = { .flags = PW_UDP_SHARED };
	cr_assert_eq(pw_udp_socket_create(&a, rt, &any, &shared), 0);
	cr_assert_eq(pw_udp_socket_fd(a, 0), pw_udp_socket_fd(a, 1));
	cr_assert_eq(pw_udp_socket_destroy(a), 0);
	pw_runtime_destroy(rt);
}

/* ---- a straight-line poll echo with batched sends ------------------------ */

#define MECHO 100
#define BATCH 16

struct mecho {
	pw_async_t at;
	int fd;
	int32_t res;
	unsigned k, got, batches;
	struct pw_udp_recv r;
	struct pw_udp_batch b;
	struct pw_udp_dgram d[BATCH];
	struct pw_udp_out out[BATCH];
	struct iovec iov[BATCH];
};

/* Take what is already queued, up to a batch, without waiting. */
static void mecho_more(struct pw_cx *cx, struct mecho *m)
{
	while (m->k < BATCH &&
	       pw_udp_recv_poll(cx, &m->r, 0, &m->d[m->k], &m->res) ==
		       PW_READY &&
	       m->res >= 0)
		m->k++;
	for (unsigned i = 0; i < m->k; i++) {
		m->iov[i].iov_base = m->d[i].data;
		m->iov[i].iov_len = m->d[i].len;
		m->out[i].iov = &m->iov[i];
		m->out[i].iovcnt = 1;
		m->out[i].to = &m->d[i].peer;
	}
}

static enum pw_poll mecho_poll(struct pw_cx *cx, void *state)
{
	struct mecho *m = state;

	PW_ASYNC_BEGIN(cx, &m->at);
	pw_udp_recv_init(&m->r, m->fd, 0);
	pw_udp_batch_init(&m->b, m->fd);
	while (m->got < MECHO) {
		PW_AWAIT(pw_udp_recv_poll(cx, &m->r, PW_TIME_NEVER, &m->d[0],
					  &m->res));
		if (m->res < 0)
			PW_RETURN(m->res);
		m->k = 1;
		mecho_more(cx, m);
		PW_AWAIT(pw_udp_batch_poll(cx, &m->b, m->out, m->k,
					   PW_TIME_NEVER, &m->res));
		if (m->res != (int32_t)m->k)
			PW_RETURN(-EIO);
		for (unsigned i = 0; i < m->k; i++)
			if (m->out[i].res != (int32_t)m->d[i].len ||
			    pw_udp_dgram_release(&m->d[i]))
				PW_RETURN(-EPROTO);
		m->got += m->k;
		m->batches++;
	}
	pw_udp_recv_cancel(&m->r);
	PW_RETURN(m->got);
	PW_ASYNC_END();
}

Test(udp, poll_echo_with_batches)
{
	static struct mecho m;
	struct pw_net_addr me, ca, from;
	char buf[1500], back[2048];
	int64_t res = -1;

	memset(&m, 0, sizeof(m));
	int cli = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &ca);
	m.fd = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &me);
	big_rcvbuf(m.fd);
	big_rcvbuf(cli);
	for (unsigned k = 0; k < MECHO; k++) {
		size_t len = (k * 53) % 1472;
		fill_pat(buf, k, len);
		cr_assert_eq(sendto(cli, buf, len, 0, &me.u.sa, me.len),
			     (ssize_t)len);
	}
	struct pw_runtime *rt = pw_test_runtime(1);
	cr_assert_eq(pw_block_on(rt, mecho_poll, &m, &res), 0);
	cr_assert_eq(res, MECHO, "echoed: %lld", (long long)res);
	cr_assert_lt(m.batches, MECHO, "several datagrams per batch");
	for (unsigned k = 0; k < MECHO; k++) {
		size_t len = (k * 53) % 1472;
		ssize_t n = recv_within(cli, back, sizeof(back), &from);
		cr_assert_eq(n, (ssize_t)len, "echo %u: %zd", k, n);
		cr_assert(is_pat(back, k, len), "echo %u bytes", k);
		cr_assert(addr_eq(&from, &me));
	}
	pw_runtime_destroy(rt);
	close(cli);
	close(m.fd);
}

/* ---- connected sockets --------------------------------------------------- */

struct conn_t {
	struct verdict v;
	struct pw_net_addr srv, stranger, refusing;
	int srv_fd, stranger_fd;
	struct pw_net_addr c_addr;
};

static int64_t connected_fiber(void *arg)
{
	struct conn_t *t = arg;
	struct pw_udp_recv r;
	struct pw_udp_send s;
	char buf[64];
	struct pw_net_addr from;
	uint32_t flags;

	int c = pw_udp_open(NULL, &t->srv, NULL);
	CHECK(&t->v, c >= 0, "open: %d", c);
	socklen_t len = sizeof(t->c_addr.u);
	CHECK(&t->v, !getsockname(c, &t->c_addr.u.sa, &len), "name");
	t->c_addr.len = len;
	/* The stranger first: a connected socket never sees it. */
	CHECK(&t->v,
	      sendto(t->stranger_fd, "stranger", 8, 0, &t->c_addr.u.sa,
		     t->c_addr.len) == 8 &&
		      sendto(t->srv_fd, "peer", 4, 0, &t->c_addr.u.sa,
			     t->c_addr.len) == 4,
	      "sendto: %d", errno);
	pw_udp_recv_init(&r, c, 0);
	pw_udp_send_init(&s, c, 0);
	CHECK(&t->v, pw_fiber_udp_send_to(&s, "hello", 5, NULL) == 5, "send");
	int64_t n = pw_fiber_udp_recv_from(&r, buf, sizeof(buf), &from, &flags);
	CHECK(&t->v, n == 4 && !memcmp(buf, "peer", 4) && !flags, "recv: %lld",
	      (long long)n);
	CHECK(&t->v, addr_eq(&from, &t->srv), "from the peer");
	pw_fiber_timeout(30 * PW_NSEC_PER_MSEC);
	n = pw_fiber_udp_recv_from(&r, buf, sizeof(buf), NULL, NULL);
	pw_fiber_set_deadline(PW_TIME_NEVER);
	CHECK(&t->v, n == -ETIMEDOUT, "the stranger's is filtered: %lld",
	      (long long)n);
	/* Dissolved: no default destination any more. */
	CHECK(&t->v, pw_udp_connect(c, NULL) == 0, "disconnect");
	n = pw_fiber_udp_send_to(&s, "x", 1, NULL);
	CHECK(&t->v, n == -EDESTADDRREQ, "send unconnected: %lld",
	      (long long)n);
	pw_udp_recv_cancel(&r);
	CHECK(&t->v, recv_settle(&r), "the cancel never ended");
	close(c);

	/* An ICMP error is returned once; the socket goes on. */
	c = pw_udp_open(NULL, &t->refusing, NULL);
	CHECK(&t->v, c >= 0, "open: %d", c);
	pw_udp_recv_init(&r, c, 0);
	pw_udp_send_init(&s, c, 0);
	CHECK(&t->v, pw_fiber_udp_send_to(&s, "x", 1, NULL) == 1, "send x");
	n = pw_fiber_udp_recv_from(&r, buf, sizeof(buf), NULL, NULL);
	CHECK(&t->v, n == -ECONNREFUSED, "refused: %lld", (long long)n);
	pw_fiber_timeout(30 * PW_NSEC_PER_MSEC);
	n = pw_fiber_udp_recv_from(&r, buf, sizeof(buf), NULL, NULL);
	pw_fiber_set_deadline(PW_TIME_NEVER);
	CHECK(&t->v, n == -ETIMEDOUT, "then armed again: %lld", (long long)n);
	pw_udp_recv_cancel(&r);
	close(c);
	return 0;
}

Test(udp, connected_sockets)
{
	struct conn_t t = { 0 };
	char buf[64];
	struct pw_net_addr from;
	int64_t res = -1;

	t.srv_fd = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &t.srv);
	t.stranger_fd = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &t.stranger);
	/* A port bound by nobody: the socket holding it closed. */
	int gone = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &t.refusing);
	close(gone);
	struct pw_runtime *rt = run_fiber(1, connected_fiber, &t, &res);
	cr_assert_eq(res, 0, "%s", t.v.why);
	ssize_t n = recv_within(t.srv_fd, buf, sizeof(buf), &from);
	cr_assert_eq(n, 5);
	cr_assert_eq(memcmp(buf, "hello", 5), 0);
	cr_assert(addr_eq(&from, &t.c_addr), "from the connected socket");
	pw_runtime_destroy(rt);
	close(t.srv_fd);
	close(t.stranger_fd);
}

/* ---- cancellation ---------------------------------------------------------- */

struct cancel_t {
	struct verdict v;
	int fd, cli;
	struct pw_net_addr me;
};

static int64_t cancel_fiber(void *arg)
{
	struct cancel_t *t = arg;
	struct pw_udp_recv r;
	struct pw_udp_dgram d;
	struct pw_net_stats st;
	int32_t res;
	char buf[8];

	pw_udp_recv_init(&r, t->fd, 0);
	CHECK(&t->v,
	      pw_udp_recv_poll(pw_fiber_cx(), &r, 0, &d, &res) == PW_READY &&
		      res == -ETIMEDOUT,
	      "first poll: %d", res);
	CHECK(&t->v, pw_udp_recv_in_flight(&r), "armed");
	pw_udp_recv_cancel(&r);
	CHECK(&t->v, pw_udp_recv_in_flight(&r), "until its final completion");
	CHECK(&t->v, recv_settle(&r), "the cancel never ended");
	/* Polled again: re-armed, and nothing sent meanwhile is lost. */
	for (unsigned k = 0; k < 3; k++) {
		fill_pat(buf, k, sizeof(buf));
		CHECK(&t->v,
		      sendto(t->cli, buf, sizeof(buf), 0, &t->me.u.sa,
			     t->me.len) == sizeof(buf),
		      "sendto");
	}
	CHECK(&t->v, pw_fiber_udp_recv(&r, &d) == sizeof(buf), "after");
	CHECK(&t->v, is_pat(d.data, 0, sizeof(buf)), "its bytes");
	/* Cancelled with datagrams queued: their buffers go back, the one
	 * lent stays valid until released. */
	pw_udp_recv_cancel(&r);
	CHECK(&t->v, recv_settle(&r), "the cancel never ended");
	CHECK(&t->v, pw_net_stats(&st) == 0 && st.bufs_borrowed == 1,
	      "borrowed: %u", st.bufs_borrowed);
	CHECK(&t->v, is_pat(d.data, 0, sizeof(buf)), "still valid");
	CHECK(&t->v, pw_udp_dgram_release(&d) == 0, "release");
	CHECK(&t->v, pw_net_stats(&st) == 0 && st.bufs_borrowed == 0,
	      "borrowed: %u", st.bufs_borrowed);
	return 0;
}

Test(udp, cancel_armed_multishot)
{
	struct cancel_t t = { 0 };
	struct pw_net_addr ca;
	int64_t res = -1;

	t.cli = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &ca);
	t.fd = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &t.me);
	struct pw_runtime *rt = run_fiber(1, cancel_fiber, &t, &res);
	cr_assert_eq(res, 0, "%s", t.v.why);
	pw_runtime_destroy(rt);
	close(t.cli);
	close(t.fd);
}

/* A task dropped with its receive armed: the drop hook cancels it and the
 * task's memory waits for the final completion. */
struct armed {
	struct pw_udp_recv r;
	struct pw_udp_dgram d;
	_Atomic int *dropped;
};

static enum pw_poll armed_poll(struct pw_cx *cx, void *state)
{
	struct armed *a = state;
	int32_t res;

	if (pw_udp_recv_poll(cx, &a->r, PW_TIME_NEVER, &a->d, &res) == PW_READY)
		pw_udp_dgram_release(&a->d); /* nothing comes */
	return PW_PENDING;
}

static void armed_drop(void *state)
{
	struct armed *a = state;

	pw_udp_recv_cancel(&a->r);
	atomic_store(a->dropped, 1);
}

Test(udp, task_dropped_with_receive_armed)
{
	static _Atomic int dropped;
	struct pw_net_addr me;
	struct armed a;

	atomic_store(&dropped, 0);
	int fd = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &me);
	struct pw_runtime *rt = pw_test_runtime(1);
	pw_udp_recv_init(&a.r, fd, 0);
	a.dropped = &dropped;
	cr_assert_eq(pw_runtime_spawn(rt, 0, armed_poll, &a, sizeof(a),
				      armed_drop),
		     0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(atomic_load(&dropped), 1);
	close(fd);
}

/* ---- bad input ------------------------------------------------------------- */

static int64_t bad_fiber(void *arg)
{
	struct verdict *v = arg;
	struct pw_udp_send s;
	struct pw_udp_recv r;
	struct pw_udp_dgram d = { 0 };
	struct pw_net_addr un;
	int32_t res = 0;
	struct pw_cx *cx = pw_fiber_cx();

	pw_udp_send_init(&s, 0, 0);
	CHECK(v, pw_fiber_udp_send_segs(&s, "ab", 2, 0, NULL) == -EINVAL,
	      "segment size 0");
	CHECK(v, pw_net_addr_parse(&un, "unix:/tmp/x") == 0, "parse");
	CHECK(v, pw_fiber_udp_send_to(&s, "ab", 2, &un) == -EINVAL,
	      "unix destination");
	CHECK(v,
	      pw_udp_send_poll(cx, &s, NULL, 1, NULL, 0, &res) == PW_READY &&
		      res == -EINVAL,
	      "NULL vector");
	pw_udp_recv_init(&r, -1, 0);
	CHECK(v, pw_fiber_udp_recv(&r, &d) == -EINVAL, "bad descriptor");
	CHECK(v, pw_udp_dgram_release(&d) == -EINVAL, "never lent");
	CHECK(v, pw_udp_dgram_release(NULL) == -EINVAL, "NULL");
	return 0;
}

Test(udp, bad_input)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_udp_socket *u = (void *)1;
	struct pw_net_addr un, v4;
	struct pw_udp_opts bad = { .flags = 0x80 };
	struct verdict v = { { 0 } };
	int64_t res = -1;
	uint64_t drops;

	cr_assert_eq(pw_net_addr_parse(&un, "unix:/tmp/pw-udp-x"), 0);
	cr_assert_eq(pw_net_addr_parse(&v4, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_udp_socket_create(&u, rt, &un, NULL), -EINVAL);
	cr_assert_null(u);
	cr_assert_eq(pw_udp_socket_create(NULL, rt, &v4, NULL), -EINVAL);
	cr_assert_eq(pw_udp_socket_create(&u, rt, NULL, NULL), -EINVAL);
	cr_assert_eq(pw_udp_socket_create(&u, rt, &v4, &bad), -EINVAL);
	cr_assert_eq(pw_udp_socket_destroy(NULL), -EINVAL);
	cr_assert_eq(pw_udp_socket_fd(NULL, 0), -EINVAL);
	cr_assert_eq(pw_udp_socket_addr(NULL, &v4), -EINVAL);
	cr_assert_eq(pw_udp_open(NULL, NULL, NULL), -EINVAL);
	cr_assert_eq(pw_udp_open(&un, NULL, NULL), -EINVAL);
	cr_assert_eq(pw_udp_drops(-1, &drops), -EBADF);
	cr_assert_eq(pw_udp_drops(0, NULL), -EINVAL);
	cr_assert_eq(pw_fiber_udp_recv(NULL, NULL), -EPERM, "not a fiber");
	cr_assert_eq(pw_fiber_block_on(rt, bad_fiber, &v, &res), 0);
	cr_assert_eq(res, 0, "%s", v.why);
	pw_runtime_destroy(rt);
}
