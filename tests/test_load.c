/* SPDX-License-Identifier: MIT */
/*
 * test_load.c - the load generator on loopback: exact request counts in
 * closed loop against echo and HTTP responders, error counting (500s,
 * closes, refused connects), the open-loop rate and the coordinated
 * omission correction against a server that stalls once, early stops,
 * timeouts against a server that never answers, and the `pinwheel load`
 * command: its checks of flags before the run and its exit status (the
 * response parser it reads answers with is tested in test_http_parse.c).
 *
 * The servers are plain threads with blocking sockets (one thread per
 * connection), so what is measured is pinwheel's client side alone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/common.h"
#include "tests/json.h"
#include "apps/load.h"

/* ---- test servers ----------------------------------------------------- */

enum srv_mode {
	SRV_ECHO,      /* echo every byte */
	SRV_HTTP_200,  /* a fixed 200 per request */
	SRV_HTTP_500,  /* a fixed 500 per request */
	SRV_HTTP_SHUT, /* read a request, close without answering */
	SRV_SILENT,    /* read every request, never answer */
	SRV_HTTP_MIX,  /* a 500 for every 4th request of a connection, else
			  a 200 */
};

struct srv {
	int lfd;
	int port;
	enum srv_mode mode;
	/* the read, counted over all connections, before whose echo the
	 * server stalls stall_ms once; 0: never */
	long stall_at, stall_ms;
	atomic_long reads;
	pthread_t th;
};

struct srv_conn {
	struct srv *s;
	int fd;
};

static const char ok_resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
			      "Content-Type: text/plain\r\n\r\nhello";
static const char err_resp[] = "HTTP/1.1 500 Internal Server Error\r\n"
			       "Content-Length: 3\r\n\r\nerr";

static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static void *srv_conn_main(void *arg)
{
	struct srv_conn c = *(struct srv_conn *)arg;
	char buf[16384];
	size_t have = 0;
	unsigned long served = 0;
	ssize_t r;

	free(arg);
	while ((r = read(c.fd, buf + have, sizeof(buf) - have)) > 0) {
		long n = atomic_fetch_add(&c.s->reads, 1) + 1;
		if (c.s->mode == SRV_ECHO) {
			/* The stall is the workload under test. */
			if (n == c.s->stall_at)
				usleep((useconds_t)(c.s->stall_ms * 1000));
			if (!write_all(c.fd, buf, (size_t)r))
				break;
			continue;
		}
		if (c.s->mode == SRV_HTTP_SHUT)
			break;
		if (c.s->mode == SRV_SILENT)
			continue;
		have += (size_t)r;
		char *end;
		while ((end = memmem(buf, have, "\r\n\r\n", 4))) {
			size_t used = (size_t)(end + 4 - buf);
			bool ok = c.s->mode == SRV_HTTP_200 ||
				  (c.s->mode == SRV_HTTP_MIX && ++served % 4);
			const char *resp = ok ? ok_resp : err_resp;
			if (!write_all(c.fd, resp, strlen(resp)))
				goto out;
			memmove(buf, buf + used, have - used);
			have -= used;
		}
		if (have == sizeof(buf))
			break;
	}
out:
	close(c.fd);
	return NULL;
}

static void *srv_main(void *arg)
{
	struct srv *s = arg;

	for (;;) {
		int fd = accept(s->lfd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		struct srv_conn *c = malloc(sizeof(*c));
		cr_assert_not_null(c);
		c->s = s;
		c->fd = fd;
		pthread_t th;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &a, srv_conn_main, c)) {
			close(fd);
			free(c);
		}
		pthread_attr_destroy(&a);
	}
}

static void srv_start(struct srv *s, enum srv_mode mode)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int one = 1;

	s->mode = mode;
	atomic_init(&s->reads, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(s->lfd, 0);
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	cr_assert_eq(bind(s->lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(listen(s->lfd, 128), 0);
	cr_assert_eq(getsockname(s->lfd, (struct sockaddr *)&sin, &len), 0);
	s->port = ntohs(sin.sin_port);
	cr_assert_eq(pthread_create(&s->th, NULL, srv_main, s), 0);
}

/* Stop accepting; connection threads end when their clients close.
 * A second call does nothing. */
static void srv_stop(struct srv *s)
{
	if (s->lfd < 0)
		return;
	shutdown(s->lfd, SHUT_RDWR);
	pthread_join(s->th, NULL);
	close(s->lfd);
	s->lfd = -1;
}

static void target(struct pw_load_config *lc, int port)
{
	char text[64];

	snprintf(text, sizeof(text), "127.0.0.1:%d", port);
	cr_assert_eq(pw_net_addr_parse(&lc->target, text), 0);
}

/* A runtime with a 10 us tick, as `pinwheel load` uses. */
static struct pw_runtime *load_runtime(unsigned shards)
{
	struct pw_config cfg;
	struct pw_runtime *rt = NULL;

	pw_test_config_init(&cfg);
	cfg.shards = shards;
	cfg.flags = PW_CONFIG_OVERSUBSCRIBE;
	cfg.tick_ns = 10 * PW_NSEC_PER_USEC;
	int err = pw_runtime_create(&rt, &cfg);
	cr_assert_eq(err, 0, "pw_runtime_create: %d (%s)", err,
		     pw_strerror_setup(err));
	return rt;
}

static void run_load(struct pw_runtime *rt, struct pw_load_config *lc,
		     struct pw_load_result *res)
{
	int err = pw_load_run(rt, lc, res);
	cr_assert_eq(err, 0, "pw_load_run: %d", err);
}

/* One load against a test server: what load_start() sets up. */
struct load_test {
	struct srv s; /* stall_at and stall_ms set by the test, if any */
	struct pw_runtime *rt;
	struct pw_load_config lc;
};

/*
 * Start a test server of @mode and a runtime of @shards shards, and aim
 * t->lc at the server with @conns connections and no warm-up, speaking
 * echo to an echo server and HTTP otherwise. The test then sets what is
 * its own (requests, or rate and duration) and calls load_go().
 */
static void load_start(struct load_test *t, enum srv_mode mode, unsigned shards,
		       unsigned conns)
{
	srv_start(&t->s, mode);
	t->rt = load_runtime(shards);
	pw_load_config_init(&t->lc);
	target(&t->lc, t->s.port);
	if (mode == SRV_ECHO)
		t->lc.proto = PW_LOAD_ECHO;
	t->lc.conns = conns;
	t->lc.warmup_ns = 0;
}

static void load_go(struct load_test *t, struct pw_load_result *res)
{
	run_load(t->rt, &t->lc, res);
}

/* Free @res, the runtime and the server of @t. */
static void load_end(struct load_test *t, struct pw_load_result *res)
{
	pw_load_result_destroy(res);
	pw_runtime_destroy(t->rt);
	srv_stop(&t->s);
}

/* ---- closed loop -------------------------------------------------------- */

Test(load, echo_closed_loop_exact_count)
{
	struct load_test t = { 0 };
	struct pw_load_result res;

	load_start(&t, SRV_ECHO, 2, 5);
	t.lc.size = 300;
	t.lc.requests = 2003;
	load_go(&t, &res);
	cr_expect_eq(res.requests, 2003);
	cr_expect_eq(res.errors, 0);
	cr_expect_eq(pw_hist_count(&res.latency), 2003);
	cr_expect_eq(pw_hist_count(&res.service), 2003);
	cr_expect_eq(res.bytes_sent, 2003ull * 300);
	cr_expect_eq(res.bytes_received, 2003ull * 300);
	cr_expect_eq(res.connects, 5);
	cr_expect_eq(res.shards, 2);
	/* The run ended at its last answer: throughput is over that time. */
	cr_expect_gt(res.elapsed_ns, 0);
	cr_expect_eq(res.throughput,
		     (double)res.requests * 1e9 / (double)res.elapsed_ns);
	cr_expect_gt(pw_hist_min(&res.latency), 0);
	cr_expect(!res.stopped);
	load_end(&t, &res);
}

Test(load, http_closed_loop_exact_count)
{
	struct load_test t = { 0 };
	struct pw_load_result res;

	load_start(&t, SRV_HTTP_200, 2, 4);
	t.lc.requests = 1001;
	t.lc.path = "/index.html";
	load_go(&t, &res);
	cr_expect_eq(res.requests, 1001);
	cr_expect_eq(res.errors, 0);
	cr_expect_eq(pw_hist_count(&res.latency), 1001);
	cr_expect_eq(res.bytes_received, 1001 * (sizeof(ok_resp) - 1));
	cr_expect_eq(res.connects, 4);
	load_end(&t, &res);
}

Test(load, http_500_counts_bad_responses)
{
	struct load_test t = { 0 };
	struct pw_load_result res;

	load_start(&t, SRV_HTTP_500, 2, 2);
	t.lc.requests = 200;
	load_go(&t, &res);
	cr_expect_eq(res.requests, 0);
	cr_expect_eq(res.errors, 200);
	cr_expect_eq(res.err.bad, 200);
	cr_expect_eq(res.bad_status, 200);
	cr_expect_eq(res.err.reset + res.err.connect + res.err.timeout, 0);
	cr_expect_eq(pw_hist_count(&res.latency), 0);
	/* A 500 keeps the connection: no reconnects. */
	cr_expect_eq(res.connects, 2);
	load_end(&t, &res);
}

Test(load, http_server_closes_counts_errors_no_hang)
{
	struct load_test t = { 0 };
	struct pw_load_result res;

	load_start(&t, SRV_HTTP_SHUT, 2, 3);
	t.lc.requests = 60;
	load_go(&t, &res);
	cr_expect_eq(res.requests, 0);
	cr_expect_eq(res.errors, 60);
	cr_expect_eq(res.err.reset, 60, "reset %llu other %llu",
		     (unsigned long long)res.err.reset,
		     (unsigned long long)res.err.other);
	/* Each request has a connection of its own: every failed one
	 * reconnects, and no connection is opened once the requests are
	 * used up. */
	cr_expect_eq(res.connects, 60);
	load_end(&t, &res);
}

Test(load, refused_connects_are_counted)
{
	/* Every connect refused: each uses up one request, as a connect
	 * error, and no connection is counted as opened. The port is bound
	 * by this test and never listened on, so connects to it are refused
	 * and no other process can take it meanwhile. */
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	struct pw_load_result res;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	struct pw_runtime *rt = load_runtime(1);
	struct pw_load_config lc;
	pw_load_config_init(&lc);
	target(&lc, ntohs(sin.sin_port));
	lc.proto = PW_LOAD_ECHO;
	lc.conns = 2;
	lc.warmup_ns = 0;
	lc.requests = 6;
	run_load(rt, &lc, &res);
	cr_expect_eq(res.requests, 0);
	cr_expect_eq(res.errors, 6);
	cr_expect_eq(res.err.connect, 6);
	cr_expect_eq(res.connects, 0);
	cr_expect_eq(pw_hist_count(&res.latency), 0);
	pw_load_result_destroy(&res);
	pw_runtime_destroy(rt);
	close(fd);
}

/* ---- open loop ----------------------------------------------------------- */

/*
 * An open-loop run of N requests at R per second over 4 connections sends
 * exactly N, each answered and recorded in both histograms, on one
 * schedule: the last is due (N - 1) / R seconds after the first and none
 * is sent before it is due, so the run lasts at least that long. (How
 * closely a loaded machine keeps the rate is measured in
 * bench/bench_load.c, not asserted here.)
 */
Test(load, open_loop_keeps_the_schedule)
{
	struct load_test t = { 0 };
	struct pw_load_result res;
	const uint64_t n = 1000, rate = 2000;

	load_start(&t, SRV_HTTP_200, 2, 4);
	t.lc.rate = rate;
	t.lc.requests = n;
	load_go(&t, &res);
	cr_expect_eq(res.requests, n);
	cr_expect_eq(res.errors, 0);
	cr_expect_eq(pw_hist_count(&res.latency), n);
	cr_expect_eq(pw_hist_count(&res.service), n);
	cr_expect_eq(res.bytes_received, n * (sizeof(ok_resp) - 1));
	cr_expect_eq(res.connects, 4);
	cr_expect(!res.stopped);
	uint64_t span = (n - 1) * (PW_NSEC_PER_SEC / rate);
	cr_expect_geq(res.elapsed_ns, span, "%llu requests in %llu ns",
		      (unsigned long long)n,
		      (unsigned long long)res.elapsed_ns);
	/* Latency counts from the due time, service from the send. */
	cr_expect_geq(pw_hist_mean(&res.latency), pw_hist_mean(&res.service));
	load_end(&t, &res);
}

/*
 * One connection at 500 requests/s (one due every 2 ms), 300 requests; the
 * echo server stalls 200 ms before answering the 150th (due at 298 ms).
 * The requests due during the stall are sent only after it: request j
 * (due at 2j ms, 150 <= j < 249) waits at least 498 - 2j ms before its
 * send. That wait is in its latency (from the due time) and not in its
 * service time (from the send): over the 300 requests, at least 9.9 s
 * more latency than service, 33 ms in the mean; and at least 51
 * requests (the stalled one, 150..199) took 100 ms or more. These are
 * bounds that a slower machine only widens.
 */
Test(load, open_loop_corrects_coordinated_omission)
{
	struct load_test t = { .s = { .stall_at = 150, .stall_ms = 200 } };
	struct pw_load_result res;
	const uint64_t ms = PW_NSEC_PER_MSEC;

	load_start(&t, SRV_ECHO, 1, 1);
	t.lc.rate = 500;
	t.lc.requests = 300;
	load_go(&t, &res);
	cr_expect_eq(res.requests, 300);
	cr_expect_eq(res.errors, 0);
	cr_expect_eq(pw_hist_count(&res.latency), 300);
	cr_expect_eq(pw_hist_count(&res.service), 300);
	/* The stalled request itself, in both. */
	cr_expect_geq(pw_hist_max(&res.latency), 200 * ms);
	cr_expect_geq(pw_hist_max(&res.service), 200 * ms);
	double lat = pw_hist_mean(&res.latency);
	double svc = pw_hist_mean(&res.service);
	cr_expect_geq(lat - svc, 32.0 * (double)ms,
		      "mean latency %.0f ns, service %.0f ns", lat, svc);
	/* Rank 252 of 300 (p84) is among the 51 slowest. */
	uint64_t p84 = pw_hist_percentile(&res.latency, 84);
	cr_expect_geq(p84, 100 * ms, "p84 latency %llu ns",
		      (unsigned long long)p84);
	load_end(&t, &res);
}

/* ---- stopping, bad settings ------------------------------------------- */

struct stopper {
	struct srv *s;
	uint64_t calls;
	atomic_int progress;
};

/* The wait hook: waits as asked (its contract), and stops the run once
 * the server has read STOP_READS requests. */
#define STOP_READS 10

static bool stop_after_reads(void *arg, uint64_t ns)
{
	struct stopper *st = arg;
	struct timespec ts = { 0, (long)ns };

	nanosleep(&ts, NULL); /* the wait the hook is asked for */
	st->calls++;
	return atomic_load(&st->s->reads) >= STOP_READS;
}

static void count_progress(void *arg, const struct pw_load_progress *p)
{
	struct stopper *st = arg;

	(void)p;
	atomic_fetch_add(&st->progress, 1);
}

/*
 * A 30 s run stopped by its wait hook once the echo server has read 10
 * requests: the run ends stopped, before its duration, with what was
 * answered. Each of the 4 connections has one request in flight, so the
 * server reading 10 means at least 10 - 4 were answered and counted.
 */
Test(load, wait_hook_stops_early_with_results)
{
	struct load_test t = { 0 };
	struct pw_load_result res;
	struct stopper st = { .s = &t.s };

	load_start(&t, SRV_ECHO, 2, 4);
	t.lc.duration_ns = 30 * PW_NSEC_PER_SEC;
	t.lc.wait = stop_after_reads;
	t.lc.progress = count_progress;
	t.lc.arg = &st;
	load_go(&t, &res);
	cr_expect(res.stopped);
	cr_expect_geq(atomic_load(&t.s.reads), STOP_READS);
	cr_expect_geq(res.requests, STOP_READS - 4, "requests %llu",
		      (unsigned long long)res.requests);
	cr_expect_eq(res.errors, 0);
	cr_expect_eq(pw_hist_count(&res.latency), res.requests);
	cr_expect_eq(pw_hist_count(&res.service), res.requests);
	cr_expect_lt(res.elapsed_ns, t.lc.duration_ns);
	load_end(&t, &res);
}

Test(load, bad_settings)
{
	struct pw_runtime *rt = load_runtime(1);
	struct pw_load_config lc;
	struct pw_load_result res;

	pw_load_config_init(&lc);
	cr_expect_eq(pw_load_run(rt, &lc, &res), -EINVAL); /* no target */
	target(&lc, 9);
	lc.conns = 0;
	cr_expect_eq(pw_load_run(rt, &lc, &res), -EINVAL);
	lc.conns = 1;
	lc.path = "nope";
	cr_expect_eq(pw_load_run(rt, &lc, &res), -EINVAL);
	lc.path = "/a b";
	cr_expect_eq(pw_load_run(rt, &lc, &res), -EINVAL);
	lc.path = "/";
	lc.host = "a\r\nb";
	cr_expect_eq(pw_load_run(rt, &lc, &res), -EINVAL);
	lc.host = NULL;
	lc.proto = PW_LOAD_ECHO;
	lc.size = 0;
	cr_expect_eq(pw_load_run(rt, &lc, &res), -EINVAL);
	cr_expect_eq(pw_load_run(NULL, &lc, &res), -EINVAL);
	cr_expect_eq(pw_load_run(rt, NULL, &res), -EINVAL);
	cr_expect_eq(pw_load_run(rt, &lc, NULL), -EINVAL);
	pw_load_result_destroy(NULL);
	pw_runtime_destroy(rt);
}

/* ---- the pinwheel load command ---------------------------------------- */

Test(load, command_help_and_bad_flags)
{
	static const struct pw_test_cmd_case cases[] = {
		{ { "pinwheel", "load", "--help" }, 0, "--rate R" },
		{ { "pinwheel", "load" }, 2, "--target" },
		{ { "pinwheel", "load", "--target", "nowhere" }, 2, "--target" },
		{ { "pinwheel", "load", "--target", "127.0.0.1:1", "--proto",
		    "ftp" },
		  2,
		  "--proto" },
		{ { "pinwheel", "load", "--target", "127.0.0.1:1", "--conns",
		    "0" },
		  2,
		  "--conns" },
		{ { "pinwheel", "load", "--target", "127.0.0.1:1", "--rate",
		    "1x" },
		  2,
		  "--rate" },
		{ { "pinwheel", "load", "--target", "127.0.0.1:1", "--path",
		    "x" },
		  2,
		  "--path" },
		{ { "pinwheel", "load", "--bogus" }, 2, "'--bogus'" },
		{ { "pinwheel", "load", "--target", "127.0.0.1:1", "--duration",
		    "soon" },
		  2,
		  "--duration" },
	};

	pw_test_cmd_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

Test(load, command_runs_and_writes_json)
{
	static char out[16384], json[8192];
	struct srv s = { 0 };
	char at[64], path[64];

	srv_start(&s, SRV_HTTP_200);
	snprintf(at, sizeof(at), "127.0.0.1:%d", s.port);
	snprintf(path, sizeof(path), "/tmp/pw-load-test-%d.json", getpid());
	char *argv[] = { "pinwheel", "load",  "--target",   at,
			 "--conns",  "2",     "--requests", "500",
			 "--warmup", "100ms", "--shards",   "1",
			 "--json",   path,    NULL };
	int st = pw_test_run_cmd(out, sizeof(out), argv);
	cr_expect_eq(st, 0, "%s", out);
	cr_expect(strstr(out, "p99.99"), "%s", out);
	cr_expect(strstr(out, "max"), "%s", out);
	cr_expect(strstr(out, "requests 500, errors 0"), "%s", out);
	cr_expect(strstr(out, "throughput"), "%s", out);

	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	size_t n = fread(json, 1, sizeof(json) - 1, f);
	json[n] = '\0';
	fclose(f);
	unlink(path);
	cr_expect(pw_test_json_valid(json), "invalid JSON: %s", json);
	static const char *keys[] = {
		"\"proto\": \"http\"",
		"\"requests\": 500",
		"\"errors\": 0",
		"\"throughput_rps\"",
		"\"latency\": {",
		"\"service\": {",
		"\"99.99\"",
		"\"error_causes\"",
		"\"mode\": \"closed\"",
		"\"elapsed_s\"",
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cr_expect(strstr(json, keys[i]), "no %s in %s", keys[i], json);
	srv_stop(&s);
}

/*
 * `pinwheel load` with a 60 s duration, interrupted once its first
 * progress line is out: it stops early, exits 0 and still reports.
 */
Test(load, command_stops_on_sigint_and_reports)
{
	static char out[16384];
	struct srv s = { 0 };
	char at[64];
	int fd;

	srv_start(&s, SRV_ECHO);
	snprintf(at, sizeof(at), "127.0.0.1:%d", s.port);
	char *argv[] = { "pinwheel", "load", "--proto",	   "echo",
			 "--target", at,     "--duration", "60s",
			 "--warmup", "0",    "--shards",   "1",
			 NULL };
	pid_t pid = pw_test_cmd_start(argv, &fd);
	/* SIGINT once the first progress line (after a second) is whole. */
	size_t len = 0;
	out[0] = '\0';
	const char *line =
		pw_test_read_until(fd, out, sizeof(out), &len, "s rate ");
	cr_assert_not_null(strstr(line, ", requests "), "%s", out);
	cr_assert_eq(kill(pid, SIGINT), 0);
	int st = pw_test_cmd_wait(pid, fd, out + len, sizeof(out) - len);
	cr_expect_eq(st, 0, "%s", out);
	cr_expect(strstr(out, "stopped early"), "%s", out);
	cr_expect(strstr(out, "p99.9"), "%s", out);
	cr_expect(strstr(out, "requests "), "%s", out);
	srv_stop(&s);
}

/* ---- timeouts, the exit status, checks before the run ------------------ */

/*
 * A server that reads and never answers: each request ends as a timeout
 * once the timeout has passed, with a connection of its own (the one that
 * timed out is closed), and the run ends when its requests are used up.
 */
Test(load, timeout_counts_unanswered_requests)
{
	struct load_test t = { 0 };
	struct pw_load_result res;

	load_start(&t, SRV_SILENT, 1, 1);
	t.lc.timeout_ns = 30 * PW_NSEC_PER_MSEC;
	t.lc.requests = 3;
	uint64_t t0 = pw_test_now_ns();
	load_go(&t, &res);
	cr_expect_eq(res.requests, 0);
	cr_expect_eq(res.errors, 3);
	cr_expect_eq(res.err.timeout, 3, "timeout %llu reset %llu other %llu",
		     (unsigned long long)res.err.timeout,
		     (unsigned long long)res.err.reset,
		     (unsigned long long)res.err.other);
	cr_expect_eq(res.connects, 3);
	cr_expect_eq(pw_hist_count(&res.latency), 0);
	/* Three requests, none ended before its timeout. */
	cr_expect_geq(pw_test_now_ns() - t0, 3 * t.lc.timeout_ns);
	load_end(&t, &res);
}

/* `pinwheel load --timeout` takes a value and counts the requests slower
 * than it; as every request failed, it exits 1 and says so. */
Test(load, command_timeout_and_all_failed)
{
	static char out[16384];
	struct srv s = { 0 };
	char at[64];

	srv_start(&s, SRV_SILENT);
	snprintf(at, sizeof(at), "127.0.0.1:%d", s.port);
	char *argv[] = { "pinwheel",  "load", "--target",   at,
			 "--timeout", "50ms", "--requests", "2",
			 "--warmup",  "0",    "--shards",   "1",
			 "--quiet",   NULL };
	int st = pw_test_run_cmd(out, sizeof(out), argv);
	cr_expect_eq(st, 1, "%s", out);
	cr_expect(strstr(out, "requests 0, errors 2 (connect 0, reset 0, "
			      "timeout 2,"),
		  "%s", out);
	cr_expect(strstr(out, "pinwheel load: every request failed (2 "
			      "errors)\n"),
		  "%s", out);
	srv_stop(&s);
}

/* Every connect refused: exit 1, and the JSON is still written. */
Test(load, command_all_refused_exits_1)
{
	static char out[16384];
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	char at[64], path[64];

	/* Bound and never listened on: connects to it are refused. */
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	snprintf(at, sizeof(at), "127.0.0.1:%d", ntohs(sin.sin_port));
	snprintf(path, sizeof(path), "/tmp/pw-load-refused-%d.json", getpid());
	char *argv[] = { "pinwheel",   "load", "--target", at,
			 "--requests", "3",    "--warmup", "0",
			 "--shards",   "1",    "--quiet",  "--json",
			 path,	       NULL };
	int st = pw_test_run_cmd(out, sizeof(out), argv);
	cr_expect_eq(st, 1, "%s", out);
	cr_expect(strstr(out, "requests 0, errors 3 (connect 3,"), "%s", out);
	cr_expect(strstr(out, "every request failed (3 errors)"), "%s", out);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", out);
	static char json[8192];
	size_t n = fread(json, 1, sizeof(json) - 1, f);
	json[n] = '\0';
	fclose(f);
	unlink(path);
	cr_expect(pw_test_json_valid(json), "invalid JSON: %s", json);
	cr_expect(strstr(json, "\"errors\": 3"), "%s", json);
	close(fd);
}

/* One `pinwheel load` of 100 requests on one connection to a server that
 * fails every 4th: 25% failed. Return its exit status, its output in
 * @out. */
static int mixed_run(struct srv *s, const char *max, char *out, size_t len)
{
	char at[64];
	char *argv[] = { "pinwheel",   "load",
			 "--target",   at,
			 "--requests", "100",
			 "--warmup",   "0",
			 "--shards",   "1",
			 "--quiet",    max ? "--max-error-rate" : NULL,
			 (char *)max,  NULL };

	snprintf(at, sizeof(at), "127.0.0.1:%d", s->port);
	return pw_test_run_cmd(out, len, argv);
}

Test(load, command_max_error_rate)
{
	static char out[16384];
	struct srv s = { 0 };
	int st;

	srv_start(&s, SRV_HTTP_MIX);
	/* The default fails a run only when no request succeeded. */
	st = mixed_run(&s, NULL, out, sizeof(out));
	cr_expect_eq(st, 0, "%s", out);
	cr_expect(strstr(out, "requests 75, errors 25 ("), "%s", out);
	cr_expect(!strstr(out, "failed"), "%s", out);
	/* At or under the threshold: 0. */
	st = mixed_run(&s, "30%", out, sizeof(out));
	cr_expect_eq(st, 0, "%s", out);
	st = mixed_run(&s, "0.25", out, sizeof(out));
	cr_expect_eq(st, 0, "25%% is not above 0.25: %s", out);
	/* Above it: 1, with a line saying so after the report. */
	st = mixed_run(&s, "0.2", out, sizeof(out));
	cr_expect_eq(st, 1, "%s", out);
	cr_expect(strstr(out, "requests 75, errors 25 ("), "%s", out);
	cr_expect(strstr(out, "pinwheel load: 25.00% of requests failed (25 "
			      "of 100), more than --max-error-rate 20%\n"),
		  "%s", out);
	st = mixed_run(&s, "0%", out, sizeof(out));
	cr_expect_eq(st, 1, "%s", out);
	cr_expect(strstr(out, "more than --max-error-rate 0%"), "%s", out);
	srv_stop(&s);
}

/*
 * Flags refused before anything runs, each with one line and exit 2:
 * --duration 0 and --requests 0 (0 used to mean forever and 10 s), a
 * --json FILE that cannot be opened (checked before the run, not after
 * it), a bad --max-error-rate or --timeout. The target refuses connects,
 * so a run that did start would say more than one line.
 */
Test(load, command_refuses_before_the_run)
{
	static const struct pw_test_cmd_case cases[] = {
		{ { "pinwheel", "load", "--target", "127.0.0.1:1", "--duration",
		    "0" },
		  2,
		  "pinwheel load: --duration: '0' is out of range 1ms.." },
		{ { "pinwheel", "load", "--target", "127.0.0.1:1", "--requests",
		    "0" },
		  2,
		  "pinwheel load: --requests: '0' is out of range (at least "
		  "1)" },
		{ { "pinwheel", "load", "--target", "127.0.0.1:1", "--json",
		    "/nonexistent-pw-dir/out.json" },
		  2,
		  "pinwheel load: --json: cannot open "
		  "'/nonexistent-pw-dir/out.json': No such file or "
		  "directory" },
		{ { "pinwheel", "load", "--target", "127.0.0.1:1", "--json",
		    "/tmp" },
		  2,
		  "pinwheel load: --json: cannot open '/tmp': Is a "
		  "directory" },
		{ { "pinwheel", "load", "--target", "127.0.0.1:1",
		    "--max-error-rate", "150%" },
		  2,
		  "--max-error-rate: '150%' is out of range 0%..100%" },
		{ { "pinwheel", "load", "--target", "127.0.0.1:1",
		    "--max-error-rate", "+1%" },
		  2,
		  "--max-error-rate: '+1%' is not a fraction" },
		{ { "pinwheel", "load", "--target", "127.0.0.1:1", "--timeout",
		    "0" },
		  2,
		  "--timeout: '0' is out of range 1ms..1h" },
		{ { "pinwheel", "load", "--target", "127.0.0.1:1", "--timeout",
		    "2h" },
		  2,
		  "--timeout: '2h' is out of range 1ms..1h" },
	};

	pw_test_cmd_cases(cases, sizeof(cases) / sizeof(cases[0]));
}
