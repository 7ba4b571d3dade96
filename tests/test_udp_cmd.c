/* SPDX-License-Identifier: MIT */
/*
 * test_udp_cmd.c - the UDP commands, run as the built binary on loopback:
 * `pinwheel udp-echo` echoes datagrams byte for byte with their
 * boundaries (1, 1472, 9000 and 65507 bytes with big buffers), counts a
 * datagram too long for its buffers as truncated instead of echoing it
 * cut, and counts a flood's loss exactly (datagrams in plus kernel drops
 * equal datagrams sent); `pinwheel load --proto udp` gets exactly N
 * answers for N requests from udp-echo, exactly N lost from a socket that
 * never answers, the requests in flight when the run ends reported as
 * such, an answer that comes after its timeout counted late (not
 * as the answer to the next request), exact accounting in a flood
 * against a server with a tiny receive queue; bad flags exit 2.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/common.h"
#include "tests/net_fixtures.h"

/* ---- fixtures ------------------------------------------------------------ */

/* A running `pinwheel udp-echo`: its pid, output pipe and address. */
struct ue {
	pid_t pid;
	int fd;
	size_t len;
	char out[32768];
	char at[64]; /* its address as text */
	struct pw_net_addr addr;
};

/* Start `pinwheel udp-echo --listen 127.0.0.1:0 --shards 1 --metrics`
 * with the flags @more (NULL-terminated) and wait for its banner. */
static void ue_start(struct ue *u, const char *const *more)
{
	char *argv[24] = { "pinwheel", "udp-echo", "--listen", "127.0.0.1:0",
			   "--shards", "1",	   "--metrics" };
	int n = 7;

	for (; more && *more && n < 23; more++)
		argv[n++] = (char *)*more;
	argv[n] = NULL;
	u->len = 0;
	u->pid = pw_test_cmd_start(argv, &u->fd);
	pw_test_banner_addr(u->fd, u->out, sizeof(u->out), &u->len, &u->addr);
	pw_net_addr_format(&u->addr, u->at, sizeof(u->at));
}

/* SIGTERM, then the rest of its output (the final JSON metrics and the
 * summary) into u->out; it must exit 0. */
static void ue_stop(struct ue *u)
{
	cr_assert_eq(kill(u->pid, SIGTERM), 0);
	int st = pw_test_cmd_wait(u->pid, u->fd, u->out + u->len,
				  sizeof(u->out) - u->len);
	cr_assert_eq(st, 0, "udp-echo: %s", u->out);
}

/* The number after "KEY": (a JSON member) in @text. */
static uint64_t num_of(const char *text, const char *key)
{
	char k[192];
	const char *at;
	unsigned long long v;

	snprintf(k, sizeof(k), "\"%s\":", key);
	at = strstr(text, k);
	cr_assert_not_null(at, "no %s in: %s", key, text);
	cr_assert_eq(sscanf(at + strlen(k), " %llu", &v), 1, "%s", text);
	return v;
}

/* A udp-echo counter from its final metrics. */
static uint64_t ue_ctr(const struct ue *u, const char *name)
{
	char k[128];

	snprintf(k, sizeof(k), "pinwheel_udp_echo_%s_total", name);
	return num_of(u->out, k);
}

/* A UDP client socket connected to @a, with a large receive queue. */
static int client(const struct pw_net_addr *a, int rcvbuf)
{
	int fd = pw_udp_open(NULL, a, NULL);

	cr_assert_geq(fd, 0, "pw_udp_open: %d", fd);
	if (rcvbuf &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
		cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
					sizeof(rcvbuf)),
			     0);
	return fd;
}

/* A UDP socket bound to a free loopback port that nobody reads unless
 * the test does; its address as text in @at. */
static int bound(char *at, size_t size)
{
	struct pw_net_addr a;

	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:0"), 0);
	int fd = pw_udp_open(&a, NULL, NULL);
	cr_assert_geq(fd, 0);
	pw_test_local_addr(fd, &a);
	pw_net_addr_format(&a, at, size);
	return fd;
}

static char pat(size_t i, size_t n)
{
	return (char)(i * 7 + n * 13 + (i >> 9));
}

/* The datagrams line of `pinwheel load --proto udp`. */
struct dg {
	unsigned long long sent, received, lost, in_flight, late, bad;
};

static struct dg dg_of(const char *out)
{
	struct dg d;
	const char *at = strstr(out, "datagrams: sent ");

	cr_assert_not_null(at, "%s", out);
	cr_assert_eq(sscanf(at,
			    "datagrams: sent %llu, received %llu, lost %llu, "
			    "in flight at the end %llu; late %llu, bad %llu",
			    &d.sent, &d.received, &d.lost, &d.in_flight,
			    &d.late, &d.bad),
		     6, "%s", out);
	return d;
}

/* Run `pinwheel load --proto udp TARGET --warmup 0 --shards 1 --quiet`
 * and the flags @more; its exit status, and its output in @out. */
static int load(char *out, size_t len, const char *target,
		const char *const *more)
{
	char *argv[32] = { "pinwheel", "load",	       "--proto",
			   "udp",      (char *)target, "--warmup",
			   "0",	       "--shards",     "1",
			   "--quiet" };
	int n = 10;

	for (; more && *more && n < 31; more++)
		argv[n++] = (char *)*more;
	argv[n] = NULL;
	return pw_test_run_cmd(out, len, argv);
}

/* ---- udp-echo ------------------------------------------------------------ */

/* Each size comes back whole, the same bytes, from the server's address;
 * one datagram each way, so boundaries are kept. */
Test(udp_cmd, echo_keeps_datagrams_whole)
{
	static const size_t sizes[] = { 1, 1472, 9000, 65507 };
	static char buf[65536], back[65536 + 16];
	static struct ue u;
	const char *more[] = { "--buffer-size", "65619", "--rcvbuf", "4m",
			       NULL };

	pw_test_time_limit(10);
	ue_start(&u, more);
	cr_expect(strstr(u.out, "datagrams up to 65507 bytes"), "%s", u.out);
	int fd = client(&u.addr, 4 << 20);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		for (size_t i = 0; i < n; i++)
			buf[i] = pat(i, n);
		cr_assert_eq(send(fd, buf, n, 0), (ssize_t)n, "%d", errno);
		cr_assert(pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000),
			  "no echo of %zu bytes", n);
		ssize_t r = recv(fd, back, sizeof(back), MSG_TRUNC);
		cr_assert_eq(r, (ssize_t)n, "%zu bytes came back as %zd", n, r);
		cr_assert_eq(memcmp(back, buf, n), 0, "%zu bytes differ", n);
	}
	close(fd);
	ue_stop(&u);
	cr_expect_eq(ue_ctr(&u, "received_datagrams"), 4);
	cr_expect_eq(ue_ctr(&u, "sent_datagrams"), 4);
	cr_expect_eq(ue_ctr(&u, "sent_bytes"), 1 + 1472 + 9000 + 65507);
	cr_expect_eq(ue_ctr(&u, "truncated_datagrams"), 0);
	cr_expect(strstr(u.out, "4 datagrams in, 4 sent back"), "%s", u.out);
}

/* With 4 KiB buffers (3984 bytes of payload), a datagram of 3985 bytes is
 * counted as truncated and not echoed; those before and after it are. */
Test(udp_cmd, echo_counts_truncated_instead_of_cutting)
{
	static char buf[4096], back[8192];
	static struct ue u;
	const size_t sizes[] = { 3984, 3985, 1 };

	pw_test_time_limit(10);
	ue_start(&u, NULL);
	int fd = client(&u.addr, 1 << 20);
	memset(buf, 'u', sizeof(buf));
	for (size_t k = 0; k < 3; k++)
		cr_assert_eq(send(fd, buf, sizes[k], 0), (ssize_t)sizes[k]);
	/* One socket, one shard: the echoes come in order, 3985 skipped. */
	for (size_t k = 0; k < 3; k += 2) {
		cr_assert(pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000));
		ssize_t r = recv(fd, back, sizeof(back), MSG_TRUNC);
		cr_assert_eq(r, (ssize_t)sizes[k], "got %zd", r);
	}
	cr_assert(!pw_test_readable(fd, 0), "nothing else came back");
	close(fd);
	ue_stop(&u);
	cr_expect_eq(ue_ctr(&u, "received_datagrams"), 3);
	cr_expect_eq(ue_ctr(&u, "truncated_datagrams"), 1);
	cr_expect_eq(ue_ctr(&u, "sent_datagrams"), 2);
	cr_expect_eq(ue_ctr(&u, "received_bytes"), 3984 + 3985 + 1);
	cr_expect_eq(ue_ctr(&u, "sent_bytes"), 3984 + 1);
}

/*
 * A flood far faster than a tiny receive queue takes: every datagram is
 * either received by the server or dropped by its kernel, counted, and
 * nothing hangs. A marker sent (again) after the flood until its echo
 * comes tells that the server has taken everything before it.
 */
Test(udp_cmd, echo_flood_loss_counted_exactly)
{
	static char buf[1472], back[2048];
	static struct ue u;
	const char *more[] = { "--rcvbuf", "4k", NULL };
	const unsigned flood = 3000;
	unsigned markers = 0;
	bool echoed = false;

	pw_test_time_limit(10);
	ue_start(&u, more);
	int fd = client(&u.addr, 0);
	memset(buf, 'f', sizeof(buf));
	for (unsigned i = 0; i < flood; i++)
		cr_assert_eq(send(fd, buf, sizeof(buf), 0),
			     (ssize_t)sizeof(buf));
	uint64_t dl = pw_test_mono_ms() + PW_TEST_WAIT_SECS * 1000;
	while (!echoed) {
		cr_assert_lt(pw_test_mono_ms(), dl,
			     "the marker never came back");
		cr_assert_eq(send(fd, "m", 1, 0), 1);
		markers++;
		while (!echoed && pw_test_readable(fd, 20))
			echoed = recv(fd, back, sizeof(back), 0) == 1;
	}
	close(fd);
	ue_stop(&u);
	uint64_t in = ue_ctr(&u, "received_datagrams");
	uint64_t drops = ue_ctr(&u, "kernel_drops");
	cr_expect_eq(in + drops, flood + markers,
		     "%" PRIu64 " in + %" PRIu64 " dropped != %u sent", in,
		     drops, flood + markers);
	cr_expect_gt(drops, 0, "a 4k queue drops some of %u datagrams", flood);
	cr_expect_eq(ue_ctr(&u, "sent_datagrams"), in, "each one sent back");
	cr_log_info("flood: %u sent, %" PRIu64 " in, %" PRIu64 " dropped",
		    flood + markers, in, drops);
}

/* ---- load --proto udp ------------------------------------------------------ */

/* N requests against udp-echo: exactly N answers, nothing lost. */
Test(udp_cmd, load_gets_every_answer)
{
	static char out[16384];
	static struct ue u;

	pw_test_time_limit(10);
	ue_start(&u, NULL);
	const char *more[] = { "--requests", "1000", "--conns", "4",
			       "--size",     "512",  NULL };
	int st = load(out, sizeof(out), u.at, more);
	cr_assert_eq(st, 0, "%s", out);
	struct dg d = dg_of(out);
	cr_expect_eq(d.sent, 1000, "%s", out);
	cr_expect_eq(d.received, 1000, "%s", out);
	cr_expect_eq(d.lost + d.in_flight + d.late + d.bad, 0, "%s", out);
	cr_expect(strstr(out, "requests 1000, errors 0"), "%s", out);
	cr_expect(strstr(out, "512000 bytes sent, 512000 received"), "%s", out);
	ue_stop(&u);
	cr_expect_eq(ue_ctr(&u, "received_datagrams"), 1000);
	cr_expect_eq(ue_ctr(&u, "sent_datagrams"), 1000);
}

/* A bound socket that never answers: every request is lost after its
 * --timeout, the run ends when they are used up, and it exits 1 (no
 * request answered). */
Test(udp_cmd, load_counts_unanswered_as_lost)
{
	static char out[16384];
	char at[64];

	pw_test_time_limit(10);
	int sink = bound(at, sizeof(at));
	const char *more[] = { "--requests", "6",    "--conns", "2",
			       "--timeout",  "30ms", NULL };
	uint64_t t0 = pw_test_mono_ms();
	int st = load(out, sizeof(out), at, more);
	uint64_t took = pw_test_mono_ms() - t0;
	cr_expect_eq(st, 1, "%s", out);
	struct dg d = dg_of(out);
	cr_expect_eq(d.sent, 6, "%s", out);
	cr_expect_eq(d.lost, 6, "%s", out);
	cr_expect_eq(d.received + d.in_flight + d.late + d.bad, 0, "%s", out);
	cr_expect(strstr(out, "timeout 6"), "%s", out);
	cr_expect_geq(took, 90, "3 timeouts of 30 ms in turn: %" PRIu64, took);
	close(sink);
}

/* The run ends (--duration) with every connection's request unanswered
 * and not yet timed out: each is reported in flight, none lost. */
Test(udp_cmd, load_reports_in_flight_at_the_end)
{
	static char out[16384];
	char at[64];

	pw_test_time_limit(10);
	int sink = bound(at, sizeof(at));
	const char *more[] = { "--duration", "100ms", "--conns", "3",
			       "--timeout",  "10s",   NULL };
	int st = load(out, sizeof(out), at, more);
	cr_expect_eq(st, 1, "nothing answered: %s", out);
	struct dg d = dg_of(out);
	cr_expect_eq(d.sent, 3, "%s", out);
	cr_expect_eq(d.in_flight, 3, "%s", out);
	cr_expect_eq(d.received + d.lost + d.late + d.bad, 0, "%s", out);
	close(sink);
}

/* A server that answers request 1 only after request 2 came (that is,
 * after request 1 timed out), then answers both: 1 is lost and its
 * answer late, 2 answered; 1's answer is not taken for 2's. */
struct slow {
	int fd;
	int err;
};

static void *slow_main(void *arg)
{
	struct slow *s = arg;
	static char b[2][256];
	struct pw_net_addr from[2];
	ssize_t n[2];

	for (int i = 0; i < 2; i++) {
		if (!pw_test_readable(s->fd, PW_TEST_WAIT_SECS * 1000)) {
			s->err = ETIMEDOUT;
			return NULL;
		}
		from[i].len = sizeof(from[i].u);
		n[i] = recvfrom(s->fd, b[i], sizeof(b[i]), 0, &from[i].u.sa,
				&from[i].len);
	}
	for (int i = 0; i < 2; i++)
		if (sendto(s->fd, b[i], (size_t)n[i], 0, &from[i].u.sa,
			   from[i].len) != n[i])
			s->err = errno;
	return NULL;
}

Test(udp_cmd, load_late_answer_not_taken_for_the_next)
{
	static char out[16384];
	struct slow s = { 0 };
	pthread_t th;
	char at[64];

	pw_test_time_limit(10);
	s.fd = bound(at, sizeof(at));
	cr_assert_eq(pthread_create(&th, NULL, slow_main, &s), 0);
	const char *more[] = { "--requests", "2", "--timeout", "50ms", NULL };
	int st = load(out, sizeof(out), at, more);
	pthread_join(th, NULL);
	cr_assert_eq(s.err, 0);
	cr_expect_eq(st, 0, "one of two answered: %s", out);
	struct dg d = dg_of(out);
	cr_expect_eq(d.sent, 2, "%s", out);
	cr_expect_eq(d.received, 1, "%s", out);
	cr_expect_eq(d.lost, 1, "%s", out);
	cr_expect_eq(d.late, 1, "%s", out);
	cr_expect_eq(d.bad, 0, "%s", out);
	close(s.fd);
}

/* Many datagrams in flight against a server with a tiny receive queue:
 * loss is counted, every request sent ends once, nothing hangs. */
Test(udp_cmd, load_flood_accounted_exactly)
{
	static char out[16384];
	static struct ue u;
	const char *srv[] = { "--rcvbuf", "4k", NULL };

	pw_test_time_limit(20);
	ue_start(&u, srv);
	const char *more[] = { "--requests",	   "3000", "--conns",	"64",
			       "--size",	   "1472", "--timeout", "20ms",
			       "--max-error-rate", "100%", NULL };
	int st = load(out, sizeof(out), u.at, more);
	cr_expect(st == 0 || st == 1, "status %d: %s", st, out);
	struct dg d = dg_of(out);
	cr_expect_eq(d.sent, 3000, "%s", out);
	cr_expect_eq(d.received + d.lost, d.sent, "%s", out);
	cr_expect_eq(d.in_flight, 0, "%s", out);
	ue_stop(&u);
	cr_log_info("load flood: %llu sent, %llu lost, %llu late; server "
		    "dropped %" PRIu64,
		    d.sent, d.lost, d.late, ue_ctr(&u, "kernel_drops"));
}

/* ---- flags ------------------------------------------------------------- */

Test(udp_cmd, bad_flags_exit_2)
{
	static const struct pw_test_cmd_case cases[] = {
		{ { "pinwheel", "udp-echo", NULL }, 2, "--listen" },
		{ { "pinwheel", "udp-echo", "--listen", "unix:/tmp/x", NULL },
		  2,
		  "not an IPv4 or IPv6" },
		{ { "pinwheel", "udp-echo", "--listen", "127.0.0.1:0",
		    "--buffers", "100", NULL },
		  2,
		  "power of two" },
		{ { "pinwheel", "udp-echo", "--listen", "127.0.0.1:0",
		    "--buffer-size", "10", NULL },
		  2,
		  "--buffer-size" },
		{ { "pinwheel", "load", "--proto", "udp", "127.0.0.1:9",
		    "--size", "4", NULL },
		  2,
		  "8..65507" },
		{ { "pinwheel", "load", "--proto", "udp", "127.0.0.1:9",
		    "--size", "65508", NULL },
		  2,
		  "8..65507" },
		{ { "pinwheel", "load", "--proto", "quic", "127.0.0.1:9",
		    NULL },
		  2,
		  "http, echo or udp" },
		{ { "pinwheel", "load", "--proto", "udp", "127.0.0.1:9",
		    "--method", "POST", NULL },
		  2,
		  "--proto http" },
	};

	pw_test_cmd_cases(cases, sizeof(cases) / sizeof(cases[0]));
}
