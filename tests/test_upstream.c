/* SPDX-License-Identifier: MIT */
/*
 * test_upstream.c - the proxy's upstream table (apps/proxy_upstream.c):
 * the exact smooth weighted round robin sequence, least connections,
 * the --upstream list and its messages, and in-process proxies whose
 * upstreams die and come back (active checks, passive marking) or whose
 * name gives two addresses and then one (an injected resolver).
 *
 * Where a client went: each client sends one byte through the proxy;
 * the test accepts on every upstream listener and reads, so the
 * listener that gets the byte is the one the proxy chose (a check's
 * connection ends without a byte and is skipped).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/common.h"
#include "tests/net_fixtures.h"
#include "tests/proxy_fixtures.h"
#include "pinwheel/net.h"
#include "apps/apps.h"
#include "apps/proxy.h"
#include "apps/proxy_upstream.h"

/* ---- the table alone -------------------------------------------------- */

/* A table of the servers in @list (never started). */
static struct pxu_table *table(const char *list, int balance)
{
	static struct pw_proxy_config cfg;

	pw_proxy_config_init(&cfg);
	cr_assert_eq(pw_proxy_upstreams_parse(&cfg, list), 0);
	cfg.balance = balance;
	struct pxu_table *t = pxu_create(&cfg, 1);
	cr_assert_not_null(t);
	return t;
}

Test(upstream, smooth_weighted_round_robin)
{
	struct pxu_table *t = table("127.0.0.1:1@3,127.0.0.1:2", 0);
	struct pxu_view *v = pxu_view(t, 0);
	const int want[] = { 0, 0, 1, 0, 0, 0, 1, 0 };
	for (unsigned i = 0; i < 8; i++)
		cr_assert_eq(pxu_pick(t, v, 0), want[i], "pick %u", i);
	pxu_destroy(t);

	/* nginx's own example: weights 5, 1, 1. */
	t = table("127.0.0.1:1@5,127.0.0.1:2@1,127.0.0.1:3@1", 0);
	v = pxu_view(t, 0);
	const int want2[] = { 0, 0, 1, 0, 2, 0, 0 };
	for (unsigned i = 0; i < 7; i++)
		cr_assert_eq(pxu_pick(t, v, 0), want2[i], "pick %u", i);
	pxu_destroy(t);
}

Test(upstream, leastconn_picks_the_least_loaded)
{
	struct pxu_table *t = table("127.0.0.1:1,127.0.0.1:2,127.0.0.1:3",
				    PW_PROXY_LEASTCONN);
	struct pxu_view *v = pxu_view(t, 0);
	/* One each, in table order. */
	cr_assert_eq(pxu_pick(t, v, 0), 0);
	cr_assert_eq(pxu_pick(t, v, 0), 1);
	cr_assert_eq(pxu_pick(t, v, 0), 2);
	/* 1 ends: it is the least loaded. */
	pxu_release(v, 1);
	cr_assert_eq(pxu_pick(t, v, 0), 1);
	/* 0 and 2 end: ties go round from after the last pick. */
	pxu_release(v, 0);
	pxu_release(v, 2);
	cr_assert_eq(pxu_pick(t, v, 0), 2);
	cr_assert_eq(pxu_pick(t, v, 0), 0);
	/* 1, 1, 1: round the table again. */
	cr_assert_eq(pxu_pick(t, v, 0), 1);
	pxu_destroy(t);

	/* Relative to the weight: 2 connections on weight 4 are less than
	 * 1 on weight 1. */
	t = table("127.0.0.1:1@4,127.0.0.1:2", PW_PROXY_LEASTCONN);
	v = pxu_view(t, 0);
	cr_assert_eq(pxu_pick(t, v, 0), 0);
	cr_assert_eq(pxu_pick(t, v, 0), 1);
	cr_assert_eq(pxu_pick(t, v, 0), 0);
	cr_assert_eq(pxu_pick(t, v, 0), 0);
	cr_assert_eq(pxu_pick(t, v, 0), 0);
	cr_assert_eq(pxu_pick(t, v, 0), 1, "4 of 4 against 1 of 1: a tie");
	pxu_destroy(t);
}

/* ---- the --upstream list ---------------------------------------------- */

/* A stand-in resolver: "two.test:P" gives 127.0.0.1:P and 127.0.0.2:P
 * (only the first once two_gone is set); any other name is unknown. */
static _Atomic bool two_gone;
static _Atomic int resolves;

static int fake_resolve(const char *text, int socktype, struct pw_net_addr *out,
			unsigned max)
{
	char host[64];
	uint16_t port;

	(void)socktype;
	atomic_fetch_add(&resolves, 1);
	if (pw_resolve_split(text, host, sizeof(host), &port) ||
	    strcmp(host, "two.test"))
		return -ENOENT;
	char a[64];
	snprintf(a, sizeof(a), "127.0.0.1:%u", port);
	cr_assert_eq(pw_net_addr_parse(&out[0], a), 0);
	if (atomic_load(&two_gone) || max < 2)
		return 1;
	snprintf(a, sizeof(a), "127.0.0.2:%u", port);
	cr_assert_eq(pw_net_addr_parse(&out[1], a), 0);
	return 2;
}

/* pw_proxy_upstreams_set() of @list fails with @err and the message
 * @msg. */
static void bad(const char *list, int err, const char *msg)
{
	struct pw_proxy_config cfg;
	char why[512];

	pw_proxy_config_init(&cfg);
	cfg.resolve = fake_resolve;
	cr_assert_eq(pw_proxy_upstreams_set(&cfg, list, why, sizeof(why)), err,
		     "%s", list);
	cr_assert_str_eq(why, msg);
	cr_assert_eq(cfg.nupstreams, 0, "%s: the config changed", list);
}

Test(upstream, list_items_and_messages)
{
	struct pw_proxy_config cfg;

	pw_proxy_config_init(&cfg);
	cfg.resolve = fake_resolve;
	cr_assert_eq(pw_proxy_upstreams_parse(
			     &cfg, "127.0.0.1:1@3,[::1]:2@256,two.test:7@2"),
		     0);
	cr_assert_eq(cfg.nitems, 3);
	cr_assert_eq(cfg.nupstreams, 4, "two.test gives 2 servers");
	cr_assert_eq(cfg.upstream_weight[0], 3);
	cr_assert_eq(cfg.upstream_weight[1], 256);
	cr_assert_eq(cfg.upstream_weight[2], 2);
	cr_assert_eq(cfg.upstream_weight[3], 2);
	cr_assert_eq(cfg.upstream_item[3], 2);
	cr_assert_str_eq(cfg.item[2].name, "two.test:7");
	cr_assert(cfg.item[0].numeric && !cfg.item[2].numeric);

	bad("127.0.0.1:1@0", -EINVAL,
	    "'127.0.0.1:1@0' has a weight out of 1..256");
	bad("127.0.0.1:1@257", -EINVAL,
	    "'127.0.0.1:1@257' has a weight out of 1..256");
	bad("127.0.0.1:1@", -EINVAL,
	    "'127.0.0.1:1@' has a weight out of 1..256");
	bad("127.0.0.1:1,localhost", -EINVAL,
	    "'localhost' is not an address (HOST:PORT, [IPv6]:PORT or unix:PATH)");
	bad("127.0.0.1:0", -EINVAL, "'127.0.0.1:0' has port 0");
	bad("nope.test:80", -ENOENT, "'nope.test:80': name not known");
	bad("two.test:0", -EINVAL, "'two.test:0' has port 0");
	bad("127.0.0.1:1,,127.0.0.1:2", -EINVAL,
	    "'' is not an address (HOST:PORT, [IPv6]:PORT or unix:PATH)");
	/* 64 servers fit, the 65th does not. */
	char big[64 * 20 + 32] = "";
	for (int i = 0; i < 64; i++)
		snprintf(big + strlen(big), sizeof(big) - strlen(big),
			 "%s127.0.0.1:%d", i ? "," : "", i + 1);
	cr_assert_eq(pw_proxy_upstreams_parse(&cfg, big), 0);
	cr_assert_eq(cfg.nupstreams, 64);
	strcat(big, ",two.test:9");
	bad(big, -E2BIG, "'two.test:9' is one item too many (at most 64)");
}

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

Test(upstream, command_refuses_bad_items)
{
	cr_assert_eq(app("--listen", "127.0.0.1:0", "--upstream",
			 "127.0.0.1:1@0", NULL),
		     2);
	cr_assert_eq(app("--listen", "127.0.0.1:0", "--upstream", "localhost",
			 NULL),
		     2);
	cr_assert_eq(app("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1",
			 "--balance=random"),
		     2);
	cr_assert_eq(app("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1",
			 "--rise=0"),
		     2);
}

/* ---- proxies in process ----------------------------------------------- */

/* A listening socket on @a (SO_REUSEADDR: a port just closed). */
static int listen_at(const struct pw_net_addr *a)
{
	int one = 1;
	int fd = socket(a->u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	cr_assert_eq(bind(fd, &a->u.sa, a->len), 0, "bind: %s",
		     strerror(errno));
	cr_assert_eq(listen(fd, 128), 0);
	return fd;
}

/* listen_at() a free loopback port, its address into *@a. */
static int listen_new(struct pw_net_addr *a)
{
	cr_assert_eq(pw_net_addr_parse(a, "127.0.0.1:0"), 0);
	int fd = listen_at(a);

	pw_test_local_addr(fd, a);
	return fd;
}

/*
 * One client through the proxy at @pa: it sends a byte; the index of the
 * listener of @lfd (@n of them, -1 ones skipped) whose connection gets
 * it, or -1 when the proxy closed the client. With @keep the client and
 * upstream sockets stay open (keep[0], keep[1]).
 */
static int route(const struct pw_net_addr *pa, const int *lfd, int n, int *keep)
{
	int c = pw_test_dial(pa);
	uint64_t dl = pw_test_mono_ms() + 5000;

	cr_assert_geq(c, 0);
	cr_assert_eq(send(c, "x", 1, MSG_NOSIGNAL), 1);
	while (pw_test_mono_ms() < dl) {
		struct pollfd pf[4];
		char b;

		for (int i = 0; i < n; i++)
			pf[i] = (struct pollfd){ lfd[i], POLLIN, 0 };
		pf[n] = (struct pollfd){ c, POLLIN, 0 };
		if (poll(pf, (nfds_t)n + 1, 1000) <= 0)
			continue;
		if (pf[n].revents) {
			close(c);
			return -1;
		}
		for (int i = 0; i < n; i++) {
			if (lfd[i] < 0 || !pf[i].revents)
				continue;
			int u = accept(lfd[i], NULL, NULL);
			if (u < 0)
				continue;
			/* A check's connection ends without a byte. */
			if (pw_test_readable(u, 5000) &&
			    recv(u, &b, 1, 0) == 1) {
				cr_assert_eq(b, 'x');
				if (keep) {
					keep[0] = c;
					keep[1] = u;
				} else {
					close(u);
					close(c);
				}
				return i;
			}
			close(u);
		}
	}
	cr_assert_fail("no upstream got the client's byte in 5 s");
	return -2;
}

static struct pw_proxy_stats stats(struct pw_proxy *p)
{
	struct pw_proxy_stats st;

	cr_assert_eq(pw_proxy_stats(p, &st), 0);
	return st;
}

/* Server @i's state and counters. */
static struct pw_proxy_upstream_stats server(struct pw_proxy *p, int i)
{
	struct pw_proxy_upstream_stats u[PW_PROXY_MAX_UPSTREAMS];
	int n = pw_proxy_upstreams(p, u, PW_PROXY_MAX_UPSTREAMS);

	cr_assert_gt(n, i);
	return u[i];
}

/* Wait until @up servers of @total are up and every shard knows. */
#define WAIT_UP(p, up, total)                                            \
	PW_TEST_WAIT_UNTIL(stats(p).upstreams_up == (up) &&              \
				   stats(p).upstreams == (total) &&      \
				   stats(p).upstreams_behind == 0,       \
			   3, "servers up: %llu of %llu, not %d of %d",  \
			   (unsigned long long)stats(p).upstreams_up,    \
			   (unsigned long long)stats(p).upstreams, (up), \
			   (total))

Test(upstream, checks_take_a_dead_server_out_and_back)
{
	pw_test_time_limit(30);
	signal(SIGPIPE, SIG_IGN);
	struct pw_net_addr a[2], pa;
	/* SO_REUSEADDR: server 0 listens again on its port. */
	int lfd[2] = { listen_new(&a[0]), listen_new(&a[1]) };
	struct pw_proxy_config cfg;
	pw_test_proxy_cfg(&cfg, 2);
	cfg.upstream[0] = a[0];
	cfg.upstream[1] = a[1];
	cfg.nupstreams = 2;
	cfg.check_interval_ns = 50 * PW_NSEC_PER_MSEC;
	cfg.check_timeout_ns = 50 * PW_NSEC_PER_MSEC;
	cfg.rise = 2;
	cfg.fall = 2;
	cfg.max_fails = 0; /* only the checks mark */
	struct pw_proxy *p = pw_test_proxy_up(&cfg, &pa);
	WAIT_UP(p, 2, 2);
	for (int i = 0; i < 4; i++)
		cr_assert_geq(route(&pa, lfd, 2, NULL), 0);

	/* Server 0 dies: down after 2 failed checks, then never used. */
	close(lfd[0]);
	lfd[0] = -1;
	WAIT_UP(p, 1, 2);
	struct pw_proxy_upstream_stats u = server(p, 0);
	cr_assert_eq(u.state, PW_PROXY_UPSTREAM_DOWN);
	cr_assert_eq(u.transitions, 1);
	cr_assert_geq(u.checks_failed, 2);
	cr_assert_str_eq(u.last_error, "connect: Connection refused");
	for (int i = 0; i < 8; i++)
		cr_assert_eq(route(&pa, lfd, 2, NULL), 1, "client %d", i);
	struct pw_proxy_stats st = stats(p);
	cr_assert_eq(st.connect_errors, 0);
	cr_assert_eq(st.upstream_failed, 0);
	cr_assert_eq(st.no_upstream_up, 0);
	cr_assert_eq(server(p, 1).connects, 12 - server(p, 0).connects);

	/* Back: up after 2 good checks, and used again. */
	lfd[0] = listen_at(&a[0]);
	WAIT_UP(p, 2, 2);
	u = server(p, 0);
	cr_assert_eq(u.state, PW_PROXY_UPSTREAM_UP);
	cr_assert_eq(u.transitions, 2);
	cr_assert_geq(u.checks_ok, 2);
	int got[2] = { 0, 0 };
	for (int i = 0; i < 8; i++) {
		int r = route(&pa, lfd, 2, NULL);
		cr_assert_geq(r, 0);
		got[r]++;
	}
	cr_assert_geq(got[0], 1, "server 0 not used again: %d and %d", got[0],
		      got[1]);

	/* Both down: the client is closed at once, counted. */
	close(lfd[0]);
	close(lfd[1]);
	lfd[0] = lfd[1] = -1;
	WAIT_UP(p, 0, 2);
	cr_assert_eq(route(&pa, lfd, 2, NULL), -1);
	PW_TEST_WAIT_UNTIL(stats(p).conns_open == 0, 3, "open");
	st = stats(p);
	cr_assert_eq(st.no_upstream_up, 1);
	cr_assert_eq(st.connect_errors, 0);
	cr_assert_eq(st.conns_total, 21);
	cr_assert_eq(pw_proxy_stop(p, 0, NULL), 0);
}

Test(upstream, passive_marking_without_checks)
{
	pw_test_time_limit(30);
	signal(SIGPIPE, SIG_IGN);
	struct pw_net_addr a[2], pa;
	int lfd[2] = { pw_test_refusing_port(&a[0]),
		       pw_test_listen_any(&a[1], 128) };
	int only1[2] = { -1, lfd[1] };
	struct pw_proxy_config cfg;
	pw_test_proxy_cfg(&cfg, 1);
	cfg.upstream[0] = a[0];
	cfg.upstream[1] = a[1];
	cfg.nupstreams = 2;
	cfg.max_fails = 2;
	cfg.fail_timeout_ns = 300 * PW_NSEC_PER_MSEC;
	struct pw_proxy *p = pw_test_proxy_up(&cfg, &pa);
	/* Round robin: 0 (refused, failover to 1), 1, 0 (refused: the
	 * second in a row marks it down), then only 1. */
	for (int i = 0; i < 8; i++)
		cr_assert_eq(route(&pa, only1, 2, NULL), 1, "client %d", i);
	uint64_t marked = pw_test_mono_ms();
	struct pw_proxy_stats st = stats(p);
	cr_assert_eq(st.connect_errors, 2);
	cr_assert_eq(st.upstream_failed, 0);
	cr_assert_eq(server(p, 0).connect_failures, 2);
	cr_assert_eq(server(p, 1).connects, 8);

	/* It listens now; tried again after the fail timeout. */
	cr_assert_eq(listen(lfd[0], 128), 0);
	int r, n = 0;
	while ((r = route(&pa, lfd, 2, NULL)) == 1) {
		n++;
		cr_assert_lt(n, 500, "server 0 never tried again");
		struct pollfd none = { -1, 0, 0 };
		poll(&none, 1, 10); /* pacing the clients, not a wait */
	}
	cr_assert_eq(r, 0);
	cr_assert_geq(pw_test_mono_ms() - marked, 250,
		      "tried again after %llu ms",
		      (unsigned long long)(pw_test_mono_ms() - marked));
	cr_assert_eq(stats(p).connect_errors, 2);
	cr_assert_eq(pw_proxy_stop(p, 0, NULL), 0);
	close(lfd[0]);
	close(lfd[1]);
}

/* The state of the server whose address is @addr, or -1 if none. */
static int state_of(struct pw_proxy *p, const char *addr)
{
	struct pw_proxy_upstream_stats u[PW_PROXY_MAX_UPSTREAMS];
	int n = pw_proxy_upstreams(p, u, PW_PROXY_MAX_UPSTREAMS);

	for (int i = 0; i < n; i++)
		if (!strcmp(u[i].addr, addr))
			return u[i].state;
	return -1;
}

Test(upstream, name_gives_two_then_one_address)
{
	pw_test_time_limit(30);
	signal(SIGPIPE, SIG_IGN);
	struct pw_net_addr a[2], pa;
	int lfd[2];
	lfd[0] = pw_test_listen_any(&a[0], 128);
	uint16_t port = ntohs(a[0].u.in4.sin_port);
	char text[64];
	snprintf(text, sizeof(text), "127.0.0.2:%u", port);
	cr_assert_eq(pw_net_addr_parse(&a[1], text), 0);
	lfd[1] = listen_at(&a[1]);

	struct pw_proxy_config cfg;
	pw_test_proxy_cfg(&cfg, 2);
	cfg.resolve = fake_resolve;
	cfg.resolve_interval_ns = 50 * PW_NSEC_PER_MSEC;
	cfg.max_fails = 0;
	atomic_store(&two_gone, false);
	snprintf(text, sizeof(text), "two.test:%u", port);
	cr_assert_eq(pw_proxy_upstreams_parse(&cfg, text), 0);
	cr_assert_eq(cfg.nupstreams, 2);
	struct pw_proxy *p = pw_test_proxy_up(&cfg, &pa);
	WAIT_UP(p, 2, 2);
	cr_assert_str_eq(server(p, 1).name, text);

	/* A connection to 127.0.0.2 stays open across the change. */
	int keep[2], r;
	while ((r = route(&pa, lfd, 2, keep)) != 1) {
		cr_assert_eq(r, 0);
		close(keep[0]);
		close(keep[1]);
	}
	char two[64];
	snprintf(two, sizeof(two), "127.0.0.2:%u", port);
	atomic_store(&two_gone, true);
	PW_TEST_WAIT_UNTIL(state_of(p, two) == PW_PROXY_UPSTREAM_DRAINING &&
				   stats(p).upstreams_behind == 0,
			   3, "127.0.0.2 not draining: %d", state_of(p, two));
	cr_assert_eq(stats(p).upstreams_up, 1);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(route(&pa, lfd, 2, NULL), 0, "client %d", i);
	/* The open one still works both ways. */
	char b[8] = "";
	cr_assert_eq(send(keep[0], "hello", 5, MSG_NOSIGNAL), 5);
	cr_assert(pw_test_readable(keep[1], 5000));
	cr_assert_eq(recv(keep[1], b, sizeof(b), 0), 5);
	cr_assert_eq(send(keep[1], "world", 5, MSG_NOSIGNAL), 5);
	cr_assert(pw_test_readable(keep[0], 5000));
	cr_assert_eq(recv(keep[0], b, sizeof(b), 0), 5);
	cr_assert_eq(memcmp(b, "world", 5), 0);
	cr_assert_eq(server(p, 1).active, 1);
	/* Once it ends, the drained server goes. */
	close(keep[0]);
	close(keep[1]);
	PW_TEST_WAIT_UNTIL(state_of(p, two) == -1, 3, "not removed");
	WAIT_UP(p, 1, 1);

	/* The name gives it again: added back, and used. */
	atomic_store(&two_gone, false);
	WAIT_UP(p, 2, 2);
	int got[2] = { 0, 0 };
	for (int i = 0; i < 8; i++) {
		r = route(&pa, lfd, 2, NULL);
		cr_assert_geq(r, 0);
		got[r]++;
	}
	cr_assert_geq(got[1], 1, "127.0.0.2 not used again");
	cr_assert_eq(pw_proxy_stop(p, 0, NULL), 0);
	close(lfd[0]);
	close(lfd[1]);
}

Test(upstream, passive_mark_with_checks_needs_rise)
{
	pw_test_time_limit(30);
	signal(SIGPIPE, SIG_IGN);
	struct pw_net_addr a[2], pa;
	int lfd[2] = { pw_test_refusing_port(&a[0]), listen_new(&a[1]) };
	int only1[2] = { -1, lfd[1] };
	struct pw_proxy_config cfg;
	pw_test_proxy_cfg(&cfg, 2);
	cfg.upstream[0] = a[0];
	cfg.upstream[1] = a[1];
	cfg.nupstreams = 2;
	cfg.check_interval_ns = 50 * PW_NSEC_PER_MSEC;
	cfg.check_timeout_ns = 50 * PW_NSEC_PER_MSEC;
	cfg.rise = 2;
	cfg.fall = 1000; /* the checks alone never take it down */
	cfg.max_fails = 1;
	struct pw_proxy *p = pw_test_proxy_up(&cfg, &pa);
	/* Clients until one fails on server 0: down on every shard. */
	while (stats(p).connect_errors == 0)
		cr_assert_eq(route(&pa, only1, 2, NULL), 1);
	WAIT_UP(p, 1, 2);
	cr_assert_eq(stats(p).connect_errors, 1);
	cr_assert_eq(server(p, 0).transitions, 1);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(route(&pa, only1, 2, NULL), 1, "client %d", i);
	cr_assert_eq(stats(p).connect_errors, 1);
	/* It listens: rise good checks bring it back. */
	cr_assert_eq(listen(lfd[0], 128), 0);
	WAIT_UP(p, 2, 2);
	struct pw_proxy_upstream_stats u = server(p, 0);
	cr_assert_eq(u.transitions, 2);
	cr_assert_geq(u.checks_ok, 2);
	cr_assert_eq(pw_proxy_stop(p, 0, NULL), 0);
	close(lfd[0]);
	close(lfd[1]);
}
