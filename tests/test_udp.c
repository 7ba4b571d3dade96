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

/* A plain UDP socket bound to @text's address, its address in *@a. */
static int plain_bind(const char *text, struct pw_net_addr *a)
{
	cr_assert_eq(pw_net_addr_parse(a, text), 0);
	int fd = socket(a->u.sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, &a->u.sa, a->len), 0, "bind: %d", errno);
	socklen_t len = sizeof(a->u);
	cr_assert_eq(getsockname(fd, &a->u.sa, &len), 0);
	a->len = len;
	return fd;
}

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

/* Buffers that hold a 64 KiB datagram (and a GRO burst). */
static int big_buffers(void)
{
	struct pw_net_config cfg;

	pw_net_config_init(&cfg);
	cfg.buf_count = 32;
	cfg.buf_size = PW_UDP_GRO_ROOM + PW_UDP_RECV_OVERHEAD;
	return pw_net_configure(&cfg);
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

	CHECK(&t->v, big_buffers() == 0, "configure");
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

	int cli = plain_bind(any, &t.sender);
	t.fd = plain_bind(any, &me);
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

	int cli = plain_bind("127.0.0.1:0", &cli_a);
	t.fd = plain_bind("127.0.0.1:0", &me);
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
	int rx = plain_bind("127.0.0.1:0", &t.to);
	big_rcvbuf(rx);
	struct pw_net_addr me;
	t.fd = plain_bind("127.0.0.1:0", &me);
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

	t.cli = plain_bind("127.0.0.1:0", &t.sender);
	t.fd = plain_bind("127.0.0.1:0", &t.me);
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
