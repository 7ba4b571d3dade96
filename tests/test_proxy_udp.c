/* SPDX-License-Identifier: MIT */
/*
 * test_proxy_udp.c - `pinwheel proxy --udp` (apps/proxy_udp.c): datagrams
 * forwarded byte-exact with their boundaries, replies from the listen
 * address, round robin over new flows, a client kept on its flow, the
 * idle timeout, the flow cap, --udp-responses, the drain, a flood with
 * every loss counted, and the command's flags.
 *
 * The upstreams are plain threads on blocking sockets: each answers a
 * datagram with its tag byte and the datagram (or counts it and stays
 * silent, or answers "BIG" with a datagram too long for the proxy's
 * buffers), so the test knows which server answered.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/common.h"
#include "tests/net_fixtures.h"
#include "pinwheel/net.h"
#include "apps/proxy.h"
#include "apps/proxy_udp.h"

/* Largest payload the default 16 KiB buffers hold. */
#define MAXDG (16384 - PW_UDP_RECV_OVERHEAD)

/* ---- the upstreams ------------------------------------------------------- */

struct up_srv {
	int fd;
	char tag;	      /* first byte of each reply */
	_Atomic bool silent;  /* count, never answer */
	_Atomic int delay_ms; /* answer this late (the drain test) */
	struct pw_net_addr addr;
	_Atomic bool stop;
	_Atomic uint64_t got;
	pthread_t th;
};

static void up_answer(struct up_srv *s, const char *b, ssize_t n,
		      const struct sockaddr_storage *from, socklen_t flen)
{
	static _Thread_local char out[MAXDG + 8192];

	if (s->delay_ms)
		poll(NULL, 0, s->delay_ms);
	if (n == 3 && !memcmp(b, "BIG", 3)) {
		memset(out, 'b', MAXDG + 100);
		sendto(s->fd, out, MAXDG + 100, 0,
		       (const struct sockaddr *)from, flen);
		return;
	}
	out[0] = s->tag;
	memcpy(out + 1, b, (size_t)n);
	sendto(s->fd, out, (size_t)n + 1, 0, (const struct sockaddr *)from,
	       flen);
}

static void *up_main(void *arg)
{
	struct up_srv *s = arg;
	static _Thread_local char buf[65536];

	while (!atomic_load(&s->stop)) {
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);

		if (!pw_test_readable(s->fd, 20))
			continue;
		ssize_t n = recvfrom(s->fd, buf, sizeof(buf), MSG_DONTWAIT,
				     (struct sockaddr *)&from, &flen);
		if (n < 0)
			continue;
		atomic_fetch_add(&s->got, 1);
		if (!s->silent)
			up_answer(s, buf, n, &from, flen);
	}
	return NULL;
}

static void up_start(struct up_srv *s, char tag)
{
	s->tag = tag;
	s->fd = pw_test_bind(SOCK_DGRAM, "127.0.0.1:0", &s->addr);
	cr_assert_eq(pthread_create(&s->th, NULL, up_main, s), 0);
}

static void up_stop(struct up_srv *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->th, NULL);
	close(s->fd);
}

/* ---- the proxy and its clients ------------------------------------------ */

struct ux {
	int fds0;
	struct pw_proxy_config cfg;
	struct pw_proxy_udp_opts o;
	struct pw_proxy_udp *u;
	struct pw_net_addr pa;
	struct up_srv a, b;
};

/* Two upstreams a ('A') and b ('B'), a proxy of @shards shards to them
 * configured but not started. */
static void ux_config(struct ux *x, unsigned shards)
{
	memset(x, 0, sizeof(*x));
	pw_test_time_limit(30);
	x->fds0 = pw_test_open_fds();
	up_start(&x->a, 'A');
	up_start(&x->b, 'B');
	pw_proxy_config_init(&x->cfg);
	x->cfg.rt.sched = pw_test_sched();
	x->cfg.rt.shards = shards;
	x->cfg.rt.flags |= PW_CONFIG_OVERSUBSCRIBE;
	cr_assert_eq(pw_net_addr_parse(&x->cfg.listen, "127.0.0.1:0"), 0);
	x->cfg.upstream[0] = x->a.addr;
	x->cfg.upstream[1] = x->b.addr;
	x->cfg.nupstreams = 2;
	pw_proxy_udp_opts_init(&x->o);
}

static void ux_up(struct ux *x)
{
	int err = pw_proxy_udp_start(&x->u, &x->cfg, &x->o);

	cr_assert_eq(err, 0, "pw_proxy_udp_start: %d", err);
	cr_assert_eq(pw_proxy_udp_addr(x->u, &x->pa), 0);
}

static struct pw_proxy_udp_stats ux_stats(const struct ux *x)
{
	struct pw_proxy_udp_stats st;

	cr_assert_eq(pw_proxy_udp_stats(x->u, &st), 0);
	return st;
}

/* Read the stats into @st until @pred holds (or PW_TEST_WAIT_SECS). */
#define UX_WAIT(x, st, pred)                                        \
	do {                                                        \
		uint64_t dl_ = pw_test_now_ns() +                   \
			       PW_TEST_WAIT_SECS * PW_NSEC_PER_SEC; \
		while (((st) = ux_stats(x)),                        \
		       !(pred) && pw_test_wait_step(dl_))           \
			;                                           \
	} while (0)

static void ux_finish(struct ux *x)
{
	cr_assert_eq(pw_proxy_udp_destroy(x->u, NULL), 0);
	up_stop(&x->a);
	up_stop(&x->b);
	cr_assert_eq(pw_test_open_fds(), x->fds0, "fds leaked");
}

static int client(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in lo = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&lo, sizeof(lo)), 0);
	return fd;
}

static void send_to(int fd, const struct pw_net_addr *pa, const void *b,
		    size_t n)
{
	cr_assert_eq(sendto(fd, b, n, 0, &pa->u.sa, pa->len), (ssize_t)n);
}

/* The next datagram on @fd into @b (its length), which must come from
 * @pa, the proxy's listen address. */
static ssize_t recv_from_proxy(int fd, const struct pw_net_addr *pa, char *b,
			       size_t cap)
{
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);

	cr_assert(pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000), "no reply");
	ssize_t n = recvfrom(fd, b, cap, 0, (struct sockaddr *)&from, &flen);
	cr_assert_geq(n, 0);
	cr_assert_eq(from.sin_port, pa->u.in4.sin_port, "reply's port");
	cr_assert_eq(from.sin_addr.s_addr, pa->u.in4.sin_addr.s_addr);
	return n;
}

/* Send @m and expect the reply @tag + @m; return the tag. */
static char ask(int fd, const struct pw_net_addr *pa, const char *m)
{
	char b[256];
	size_t n = strlen(m);

	send_to(fd, pa, m, n);
	ssize_t got = recv_from_proxy(fd, pa, b, sizeof(b));
	cr_assert_eq(got, (ssize_t)n + 1);
	cr_assert_eq(memcmp(b + 1, m, n), 0);
	return b[0];
}

static bool nothing_waiting(int fd)
{
	char b[8];

	return recv(fd, b, sizeof(b), MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

/* ---- forwarding ------------------------------------------------------------ */

Test(proxy_udp, byte_exact_boundaries_from_the_listen_address)
{
	static const size_t sizes[] = { 0, 1, 2, 100, 1400, 8000, MAXDG - 1 };
	static char out[MAXDG + 16], in[MAXDG + 16];
	struct pw_proxy_udp_stats st;
	struct ux x;

	ux_config(&x, 1);
	x.cfg.nupstreams = 1;
	ux_up(&x);
	int c = client();
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (size_t k = 0; k < sizes[i]; k++)
			out[k] = (char)(k * 7 + i);
		send_to(c, &x.pa, out, sizes[i]);
		ssize_t n = recv_from_proxy(c, &x.pa, in, sizeof(in));
		cr_assert_eq(n, (ssize_t)sizes[i] + 1, "size %zu", sizes[i]);
		cr_assert_eq(in[0], 'A');
		cr_assert_eq(memcmp(in + 1, out, sizes[i]), 0);
	}
	/* Too long for a buffer: counted, never forwarded cut; the reply
	 * too long for one likewise. */
	send_to(c, &x.pa, out, MAXDG + 1);
	send_to(c, &x.pa, "BIG", 3);
	cr_assert_eq(ask(c, &x.pa, "after"), 'A');
	UX_WAIT(&x, st, st.trunc_down == 1 && st.dgrams_down == 8);
	cr_assert_eq(st.trunc_up, 1);
	cr_assert_eq(st.trunc_down, 1);
	cr_assert(nothing_waiting(c));
	cr_assert_eq(st.flows_created, 1);
	cr_assert_eq(st.dgrams_in, 10);
	cr_assert_eq(st.dgrams_up, 9);
	cr_assert_eq(st.dgrams_down, 8);
	close(c);
	ux_finish(&x);
}

Test(proxy_udp, round_robin_over_new_flows_and_sticky_clients)
{
	struct pw_proxy_udp_stats st;
	struct ux x;
	int c[4];

	ux_config(&x, 1);
	ux_up(&x);
	for (int i = 0; i < 4; i++) {
		c[i] = client();
		cr_assert_eq(ask(c[i], &x.pa, "hello"), i % 2 ? 'B' : 'A',
			     "client %d", i);
	}
	for (int r = 0; r < 3; r++)
		for (int i = 3; i >= 0; i--)
			cr_assert_eq(ask(c[i], &x.pa, "again"),
				     i % 2 ? 'B' : 'A', "client %d", i);
	UX_WAIT(&x, st, st.dgrams_down == 16);
	cr_assert_eq(st.flows_created, 4);
	cr_assert_eq(st.flows_active, 4);
	cr_assert_eq(st.dgrams_up, 16);
	cr_assert_eq(st.dgrams_down, 16);
	cr_assert_eq(atomic_load(&x.a.got), 8);
	cr_assert_eq(atomic_load(&x.b.got), 8);
	for (int i = 0; i < 4; i++)
		close(c[i]);
	ux_finish(&x);
}

Test(proxy_udp, weights_of_the_upstream_table)
{
	static const char want[] = "ABAABA";
	struct ux x;
	int c[6];

	ux_config(&x, 1);
	x.cfg.upstream_weight[0] = 2; /* --upstream A@2,B */
	ux_up(&x);
	for (int i = 0; i < 6; i++) {
		c[i] = client();
		cr_assert_eq(ask(c[i], &x.pa, "w"), want[i], "client %d", i);
	}
	for (int i = 0; i < 6; i++)
		close(c[i]);
	ux_finish(&x);
}

Test(proxy_udp, many_clients_on_two_shards)
{
	struct pw_proxy_udp_stats st;
	struct ux x;
	int c[32];

	ux_config(&x, 2);
	ux_up(&x);
	for (int i = 0; i < 32; i++)
		c[i] = client();
	char first[32];
	for (int i = 0; i < 32; i++)
		first[i] = ask(c[i], &x.pa, "one");
	for (int i = 0; i < 32; i++)
		cr_assert_eq(ask(c[i], &x.pa, "two"), first[i]);
	UX_WAIT(&x, st, st.dgrams_down == 64);
	cr_assert_eq(st.flows_created, 32);
	cr_assert_eq(st.dgrams_down, 64);
	for (int i = 0; i < 32; i++)
		close(c[i]);
	ux_finish(&x);
}

/* ---- flows ------------------------------------------------------------------ */

Test(proxy_udp, idle_timeout_closes_the_flow)
{
	struct pw_proxy_udp_stats st;
	struct ux x;

	ux_config(&x, 1);
	/* Long enough for the answer to come back before it on a loaded
	 * machine; the test waits for it to pass, never sleeps. */
	x.o.idle_ns = PW_NSEC_PER_SEC;
	ux_up(&x);
	int c = client();
	cr_assert_eq(ask(c, &x.pa, "q1"), 'A');
	st = ux_stats(&x);
	cr_assert_eq(st.flows_created, 1);
	UX_WAIT(&x, st, st.flows_active == 0);
	cr_assert_eq(st.flows_active, 0);
	cr_assert_eq(st.flows_expired, 1);
	/* The same client again: a new flow, on the next upstream. */
	cr_assert_eq(ask(c, &x.pa, "q2"), 'B');
	st = ux_stats(&x);
	cr_assert_eq(st.flows_created, 2);
	cr_assert_eq(st.flows_expired + st.flows_active, 2);
	close(c);
	ux_finish(&x);
}

Test(proxy_udp, flow_cap_refuses_and_counts)
{
	struct pw_proxy_udp_stats st;
	struct ux x;
	int c[3];

	ux_config(&x, 1);
	x.o.max_flows = 2;
	ux_up(&x);
	for (int i = 0; i < 3; i++)
		c[i] = client();
	cr_assert_eq(ask(c[0], &x.pa, "a"), 'A');
	cr_assert_eq(ask(c[1], &x.pa, "b"), 'B');
	send_to(c[2], &x.pa, "c", 1);
	send_to(c[2], &x.pa, "c", 1);
	UX_WAIT(&x, st, st.flows_refused == 2);
	cr_assert_eq(st.flows_refused, 2);
	cr_assert_eq(st.flows_created, 2);
	/* Its flows still work; the third client got nothing. */
	cr_assert_eq(ask(c[0], &x.pa, "a2"), 'A');
	cr_assert(nothing_waiting(c[2]));
	cr_assert_eq(atomic_load(&x.a.got) + atomic_load(&x.b.got), 3);
	for (int i = 0; i < 3; i++)
		close(c[i]);
	ux_finish(&x);
}

Test(proxy_udp, responses_close_an_answered_flow)
{
	struct pw_proxy_udp_stats st;
	struct ux x;

	ux_config(&x, 1);
	x.o.responses = 1;
	ux_up(&x);
	int c = client();
	cr_assert_eq(ask(c, &x.pa, "dns?"), 'A');
	UX_WAIT(&x, st, st.flows_active == 0);
	cr_assert_eq(st.flows_answered, 1);
	cr_assert_eq(st.flows_expired, 0);
	cr_assert_eq(ask(c, &x.pa, "dns2?"), 'B');
	close(c);
	ux_finish(&x);
}

Test(proxy_udp, drain_lets_replies_in_flight_arrive)
{
	struct pw_proxy_udp_stats st;
	char b[64];
	struct ux x;

	ux_config(&x, 1);
	x.a.delay_ms = 200; /* set before its first datagram */
	ux_up(&x);
	int c = client();
	send_to(c, &x.pa, "late", 4);
	UX_WAIT(&x, st, st.dgrams_up == 1);
	cr_assert_eq(pw_proxy_udp_drain(x.u), 0);
	/* The answer comes through; then the flow is answered and closes. */
	cr_assert_eq(recv_from_proxy(c, &x.pa, b, sizeof(b)), 5);
	cr_assert_eq(memcmp(b, "Alate", 5), 0);
	UX_WAIT(&x, st, st.flows_active == 0);
	cr_assert_eq(st.flows_answered, 1);
	/* Clients are no longer read. */
	send_to(c, &x.pa, "more", 4);
	st = ux_stats(&x);
	cr_assert_eq(st.dgrams_in, 1);
	close(c);
	ux_finish(&x);
}

/* ---- a flood ------------------------------------------------------------------ */

Test(proxy_udp, flood_loss_is_counted)
{
	size_t n = (size_t)(20000 * pw_test_scale());
	struct pw_proxy_udp_stats st;
	uint64_t kd = 0, fw, out;
	char m[64];
	struct ux x;

	ux_config(&x, 1);
	x.cfg.nupstreams = 1;
	x.a.silent = true; /* set before its first datagram */
	ux_up(&x);
	int c = client();
	memset(m, 'f', sizeof(m));
	for (size_t i = 0; i < n; i++)
		send_to(c, &x.pa, m, sizeof(m));
	/* Every datagram sent is somewhere: at the upstream, or counted
	 * dropped by the proxy or by a kernel on the way. */
	uint64_t dl = pw_test_now_ns() + PW_TEST_WAIT_SECS * PW_NSEC_PER_SEC;
	for (;;) {
		st = ux_stats(&x);
		cr_assert_eq(pw_udp_drops(x.a.fd, &kd), 0);
		fw = atomic_load(&x.a.got) + kd;
		out = st.dgrams_up + st.trunc_up + st.send_err_up +
		      st.backlog_dropped + st.closed_dropped +
		      st.flows_refused + st.flow_errors;
		if ((st.dgrams_in + st.kernel_drops == n &&
		     st.dgrams_in == out && fw == st.dgrams_up) ||
		    !pw_test_wait_step(dl))
			break;
	}
	cr_assert_eq(st.dgrams_in + st.kernel_drops, n, "in %llu kernel %llu",
		     (unsigned long long)st.dgrams_in,
		     (unsigned long long)st.kernel_drops);
	cr_assert_eq(st.dgrams_in, out);
	cr_assert_eq(fw, st.dgrams_up);
	cr_assert_eq(atomic_load(&x.a.got) + kd + st.kernel_drops +
			     st.dgrams_in - st.dgrams_up,
		     n);
	close(c);
	ux_finish(&x);
}

/* ---- the command ------------------------------------------------------------ */

Test(proxy_udp, bad_flags)
{
	static const struct pw_test_cmd_case cases[] = {
		{ { "pinwheel", "proxy", "--udp", "--upstream", "127.0.0.1:9",
		    "--send-proxy" },
		  2,
		  "--send-proxy is for TCP, not --udp" },
		{ { "pinwheel", "proxy", "--udp", "--upstream", "127.0.0.1:9",
		    "--accept-proxy" },
		  2,
		  "--accept-proxy is for TCP, not --udp" },
		{ { "pinwheel", "proxy", "--udp", "--idle-timeout=5s",
		    "--upstream", "127.0.0.1:9" },
		  2,
		  "--idle-timeout is for TCP, not --udp" },
		{ { "pinwheel", "proxy", "--upstream", "127.0.0.1:9",
		    "--udp-idle", "1s" },
		  2,
		  "--udp-idle needs --udp" },
		{ { "pinwheel", "proxy", "--udp", "--listen",
		    "unix:/tmp/pw-udp-x", "--upstream", "127.0.0.1:9" },
		  2,
		  "--udp needs an IPv4 or IPv6 address" },
		{ { "pinwheel", "proxy", "--udp", "--listen", "127.0.0.1:0",
		    "--upstream", "unix:/tmp/pw-udp-y" },
		  2,
		  "--udp needs IPv4 or IPv6 servers" },
		{ { "pinwheel", "proxy", "--udp", "--udp-max-flows=0" },
		  2,
		  "--udp-max-flows" },
		{ { "pinwheel", "proxy", "--udp", "--udp-idle=0" },
		  2,
		  "--udp-idle" },
	};

	pw_test_cmd_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

Test(proxy_udp, command_forwards_reports_and_drains_on_sigterm)
{
	static char text[65536];
	struct pw_net_addr pa;
	char up[64], b[64];
	struct up_srv a;
	size_t len = 0;
	int fd;

	pw_test_time_limit(30);
	memset(&a, 0, sizeof(a));
	up_start(&a, 'A');
	pw_net_addr_format(&a.addr, up, sizeof(up));
	char *argv[] = { "pinwheel",
			 "proxy",
			 "--udp",
			 "--listen",
			 "127.0.0.1:0",
			 "--upstream",
			 up,
			 "--shards",
			 "1",
			 "--metrics",
			 "--metrics-format",
			 "prometheus",
			 NULL };
	pid_t pid = pw_test_cmd_start(argv, &fd);
	pw_test_banner_addr(fd, text, sizeof(text), &len, &pa);
	cr_assert(strstr(text, "(udp)"), "%s", text);
	int c = client();
	send_to(c, &pa, "cmd", 3);
	cr_assert_eq(recv_from_proxy(c, &pa, b, sizeof(b)), 4);
	cr_assert_eq(memcmp(b, "Acmd", 4), 0);
	kill(pid, SIGTERM);
	int st = pw_test_cmd_wait(pid, fd, text + len, sizeof(text) - len);
	cr_assert_eq(st, 0, "%s", text);
	cr_assert(strstr(text, "pinwheel_proxy_udp_flows_created_total 1"),
		  "%s", text);
	cr_assert(strstr(text, "pinwheel_proxy_udp_upstream_datagrams_total{"),
		  "%s", text);
	cr_assert(strstr(text, "stopped (0 flows closed"), "%s", text);
	close(c);
	up_stop(&a);
}
