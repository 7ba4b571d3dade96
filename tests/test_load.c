/* SPDX-License-Identifier: MIT */
/*
 * test_load.c - the load generator on loopback: exact request counts in
 * closed loop against echo and HTTP responders, error counting (500s,
 * closes, refused connects), the open-loop rate and the coordinated
 * omission correction against a server that stalls once, early stops,
 * timeouts against a server that never answers, and the `pinwheel load`
 * command: its checks of flags before the run and its exit status (the
 * response parser it reads answers with is tested in test_http_parse.c).
 * Then what it sends: target URLs, the request built from method,
 * header lines and body (checked byte for byte on the server's side),
 * connections round robin over several addresses, HEAD answers, a name
 * resolved by the command, and the adaptive units of its table.
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
#include "apps/load_req.h"
#include "apps/units.h"

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
	/* HTTP modes: the answer to every request instead of ok_resp or
	 * err_resp; NULL: those. Set by the test before srv_start(). */
	const char *resp;
	atomic_long accepts, answers;
	atomic_long live; /* connection threads not yet ended */
	/* With record set before srv_start(): every byte received, over
	 * all connections, up to sizeof(rec), under rec_mu. */
	bool record;
	pthread_mutex_t rec_mu;
	size_t rec_len;
	char rec[65536];
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

static void srv_record(struct srv *s, const char *p, size_t n)
{
	pthread_mutex_lock(&s->rec_mu);
	if (n > sizeof(s->rec) - s->rec_len)
		n = sizeof(s->rec) - s->rec_len;
	memcpy(s->rec + s->rec_len, p, n);
	s->rec_len += n;
	pthread_mutex_unlock(&s->rec_mu);
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
		if (c.s->record)
			srv_record(c.s, buf + have, (size_t)r);
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
			const char *resp = c.s->resp ? c.s->resp :
					   ok	     ? ok_resp :
						       err_resp;
			if (!write_all(c.fd, resp, strlen(resp)))
				goto out;
			atomic_fetch_add(&c.s->answers, 1);
			memmove(buf, buf + used, have - used);
			have -= used;
		}
		if (have == sizeof(buf))
			break;
	}
out:
	close(c.fd);
	/* The last touch of *c.s: srv_wait_idle() may free it after. */
	atomic_fetch_sub(&c.s->live, 1);
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
		atomic_fetch_add(&s->accepts, 1);
		atomic_fetch_add(&s->live, 1);
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
			atomic_fetch_sub(&s->live, 1);
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
	atomic_init(&s->accepts, 0);
	atomic_init(&s->answers, 0);
	atomic_init(&s->live, 0);
	pthread_mutex_init(&s->rec_mu, NULL);
	s->rec_len = 0;
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

/* ---- targets, requests and units (issue 23) ---------------------------- */

/* @ns through pw_units_ns() is @want. */
static void expect_units(uint64_t ns, const char *want)
{
	char buf[PW_UNITS_LEN];

	cr_expect_str_eq(pw_units_ns(ns, buf, sizeof(buf)), want, "%llu ns",
			 (unsigned long long)ns);
}

/* Two decimals, the unit that keeps the rounded number under 1000, the
 * boundaries exact: 999.994 us is still us, 999.995 us is 1.00ms. */
Test(load, units_boundaries)
{
	expect_units(0, "0.00us");
	expect_units(4, "0.00us");
	expect_units(5, "0.01us");
	expect_units(999, "1.00us");
	expect_units(812450, "812.45us");
	expect_units(999990, "999.99us");
	expect_units(999994, "999.99us");
	expect_units(999995, "1.00ms");
	expect_units(1000000, "1.00ms");
	expect_units(12344999, "12.34ms");
	expect_units(12345000, "12.35ms");
	expect_units(999994999, "999.99ms");
	expect_units(999995000, "1.00s");
	expect_units(1000000000, "1.00s");
	expect_units(1030000000, "1.03s");
	expect_units(3600 * PW_NSEC_PER_SEC, "3600.00s");
	expect_units(UINT64_MAX, "18446744073.71s");
	/* A short buffer is cut, still terminated. */
	char small[5];
	cr_expect_str_eq(pw_units_ns(999990, small, sizeof(small)), "999.");
}

/* @text splits into @resolve, @authority (the Host) and @target. */
static void expect_url(const char *text, const char *resolve,
		       const char *authority, const char *target, bool path)
{
	struct pw_load_url u;
	const char *why = NULL;

	cr_assert(pw_load_is_url(text), "%s", text);
	cr_assert_eq(pw_load_url_parse(text, &u, &why), 0, "%s: %s", text, why);
	cr_expect_str_eq(u.resolve, resolve, "%s", text);
	cr_expect_str_eq(u.authority, authority, "%s", text);
	cr_expect_str_eq(u.target, target, "%s", text);
	cr_expect_eq(u.has_path, path, "%s", text);
}

/* @text is refused with @err and a reason holding @says. */
static void expect_bad_url(const char *text, int err, const char *says)
{
	struct pw_load_url u;
	const char *why = NULL;

	cr_expect_eq(pw_load_url_parse(text, &u, &why), err, "%s", text);
	cr_expect(why && strstr(why, says), "%s: %s", text, why);
}

Test(load, url_parsing)
{
	char longp[1100];

	expect_url("http://localhost:8080/x?y=1", "localhost:8080",
		   "localhost:8080", "/x?y=1", true);
	expect_url("http://example.com", "example.com:80", "example.com", "/",
		   false);
	/* The default port is left out of Host even when written. */
	expect_url("HTTP://Example.com:80/a#frag", "Example.com:80",
		   "Example.com", "/a", true);
	expect_url("http://h?q=1", "h:80", "h", "/?q=1", true);
	expect_url("http://h#only-a-fragment", "h:80", "h", "/", false);
	expect_url("http://[::1]:9000/p", "[::1]:9000", "[::1]:9000", "/p",
		   true);
	expect_url("http://[::1]/", "[::1]:80", "[::1]", "/", true);
	expect_url("http://10.0.0.1:81", "10.0.0.1:81", "10.0.0.1:81", "/",
		   false);
	expect_url("http://a-b.c_d~e:1/%41?x=%20&y", "a-b.c_d~e:1",
		   "a-b.c_d~e:1", "/%41?x=%20&y", true);

	expect_bad_url("https://example.com/", -EPROTONOSUPPORT, "no TLS");
	expect_bad_url("HTTPS://example.com/", -EPROTONOSUPPORT, "no TLS");
	expect_bad_url("ftp://example.com/", -EINVAL, "not an http:// URL");
	expect_bad_url("localhost:80", -EINVAL, "not an http:// URL");
	expect_bad_url("http://", -EINVAL, "the host is empty");
	expect_bad_url("http://:80/", -EINVAL, "the host is empty");
	expect_bad_url("http://user@h/", -EINVAL, "user@");
	expect_bad_url("http://h:/", -EINVAL, "the port is not 1..65535");
	expect_bad_url("http://h:0/", -EINVAL, "the port is not 1..65535");
	expect_bad_url("http://h:65536/", -EINVAL, "the port is not 1..65535");
	expect_bad_url("http://h:8a/", -EINVAL, "the port is not 1..65535");
	expect_bad_url("http://h:123456/", -EINVAL, "the port is not");
	expect_bad_url("http://[::1/", -EINVAL, "not an [IPv6] address");
	expect_bad_url("http://[g::1]/", -EINVAL, "not an [IPv6] address");
	expect_bad_url("http://[::1]x/", -EINVAL, "the port is not");
	expect_bad_url("http://a b/", -EINVAL, "not a name or an address");
	expect_bad_url("http://a%41/", -EINVAL, "not a name or an address");
	expect_bad_url("http://h/a b", -EINVAL, "a blank or a control byte");
	expect_bad_url("http://h/a\tb", -EINVAL, "a blank or a control byte");
	expect_bad_url("http://h/a\x7f", -EINVAL, "a blank or a control byte");
	memset(longp, 'a', sizeof(longp));
	memcpy(longp, "http://h/", 9);
	longp[sizeof(longp) - 1] = '\0';
	expect_bad_url(longp, -EINVAL, "longer than 1024 bytes");

	cr_expect(pw_load_is_url("Http+x.y-z://h"));
	cr_expect(!pw_load_is_url("localhost:80"));
	cr_expect(!pw_load_is_url("unix:/tmp/s"));
	cr_expect(!pw_load_is_url("[::1]:80"));
	cr_expect(!pw_load_is_url("1http://h"));
	cr_expect(!pw_load_is_url(NULL));
}

/* The request @lc builds (Host from @host when none is set) is @want. */
static void expect_request(const struct pw_load_config *lc, const char *host,
			   const char *want, size_t want_len)
{
	char *p = NULL;
	size_t n = 0;

	cr_assert_eq(pw_load_req_build(lc, host, &p, &n), 0);
	cr_expect_eq(n, want_len, "%zu bytes: %s", n, p);
	cr_expect(n == want_len && !memcmp(p, want, n), "%s", p);
	free(p);
}

Test(load, request_bytes)
{
	static const char *hdrs[] = { "X-One: 1", "Accept:  */*",
				      "host: example.test", "x-empty:" };
	static const char want1[] = "POST /submit?x=1 HTTP/1.1\r\n"
				    "host: example.test\r\n"
				    "X-One: 1\r\nAccept:  */*\r\nx-empty:\r\n"
				    "Content-Length: 11\r\n\r\nhello=world";
	static const char want2[] = "GET / HTTP/1.1\r\nHost: 10.0.0.1:80\r\n"
				    "\r\n";
	static const char want3[] = "PUT / HTTP/1.1\r\nHost: h\r\n"
				    "content-length: 3\r\n\r\na\0b";
	static const char want4[] = "DELETE / HTTP/1.1\r\nHost: given\r\n"
				    "Content-Length: 0\r\n\r\n";
	struct pw_load_config lc;

	pw_load_config_init(&lc);
	expect_request(&lc, "10.0.0.1:80", want2, sizeof(want2) - 1);
	lc.method = "POST";
	lc.path = "/submit?x=1";
	lc.headers = hdrs;
	lc.nheaders = 4;
	lc.body = "hello=world";
	lc.body_len = 11;
	expect_request(&lc, "10.0.0.1:80", want1, sizeof(want1) - 1);
	/* A Content-Length of the user's that agrees is kept, not doubled;
	 * the body's bytes go as they are, NUL included. */
	static const char *cl[] = { "content-length: 3" };
	pw_load_config_init(&lc);
	lc.method = "PUT";
	lc.headers = cl;
	lc.nheaders = 1;
	lc.body = "a\0b";
	lc.body_len = 3;
	expect_request(&lc, "h", want3, sizeof(want3) - 1);
	/* An empty body still says its length; the host setting wins over
	 * the address. */
	pw_load_config_init(&lc);
	lc.method = "DELETE";
	lc.host = "given";
	lc.body = "";
	expect_request(&lc, "10.0.0.1:80", want4, sizeof(want4) - 1);
	cr_expect(!pw_load_req_head_only(&lc));
	lc.method = "HEAD";
	cr_expect(pw_load_req_head_only(&lc));
	lc.method = "head"; /* methods are case-sensitive */
	cr_expect(!pw_load_req_head_only(&lc));
}

/* @lc with the one header line @line is refused, saying @says. */
static void expect_bad_header(struct pw_load_config *lc, const char *line,
			      const char *says)
{
	const char *one[] = { line };
	char why[160];

	lc->headers = one;
	lc->nheaders = 1;
	cr_expect_eq(pw_load_req_check(lc, why, sizeof(why)), -EINVAL, "%s",
		     line);
	cr_expect(strstr(why, says), "%s: %s", line, why);
	lc->headers = NULL;
	lc->nheaders = 0;
}

Test(load, request_checks)
{
	static const char *many[PW_LOAD_HEADERS_MAX + 1];
	static char big[2][5000];
	const char *two[] = { big[0], big[1] };
	const char *hosts[] = { "Host: a", "HOST: b" };
	struct pw_load_config lc;
	char why[160];

	pw_load_config_init(&lc);
	expect_bad_header(&lc, "NoColon", "not 'Name: value'");
	expect_bad_header(&lc, ": v", "the name is not a token");
	expect_bad_header(&lc, "Bad Name: v", "the name is not a token");
	expect_bad_header(&lc, "X : v", "the name is not a token");
	expect_bad_header(&lc, "X: a\r\nY: b",
			  "'X: a\\r\\nY: b': the value "
			  "holds CR or LF");
	expect_bad_header(&lc, "X: a\nb", "CR or LF");
	expect_bad_header(&lc, "X: a\x01",
			  "'X: a\\x01': the value holds a "
			  "control byte");
	expect_bad_header(&lc, "X: \x7f", "control byte");
	expect_bad_header(&lc, "Transfer-Encoding: chunked", "not supported");
	expect_bad_header(&lc, "Content-Length: 1", "but there is no body");
	expect_bad_header(&lc, "Content-Length: x", "not a number");
	lc.body = "abc";
	lc.body_len = 3;
	expect_bad_header(&lc, "Content-Length: 4", "disagrees with the body");
	expect_bad_header(&lc, "Content-Length: 3 3", "not a number");
	/* Agreeing, blanks around it: fine. */
	const char *cl[] = { "Content-Length:  3 " };
	lc.headers = cl;
	lc.nheaders = 1;
	cr_expect_eq(pw_load_req_check(&lc, why, sizeof(why)), 0, "%s", why);
	lc.body = NULL;
	lc.body_len = 0;
	lc.headers = NULL;
	lc.nheaders = 0;
	cr_expect_eq(pw_load_req_check(&lc, why, sizeof(why)), 0);
	/* Two Host lines, 65 lines, more than 8 KiB of them. */
	lc.headers = hosts;
	lc.nheaders = 2;
	cr_expect_eq(pw_load_req_check(&lc, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "'HOST: b': a second Host"), "%s", why);
	for (int i = 0; i <= PW_LOAD_HEADERS_MAX; i++)
		many[i] = "X: y";
	lc.headers = many;
	lc.nheaders = PW_LOAD_HEADERS_MAX;
	cr_expect_eq(pw_load_req_check(&lc, why, sizeof(why)), 0, "%s", why);
	lc.nheaders = PW_LOAD_HEADERS_MAX + 1;
	cr_expect_eq(pw_load_req_check(&lc, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "more than 64 headers"), "%s", why);
	for (int i = 0; i < 2; i++) {
		memset(big[i], 'v', sizeof(big[i]) - 1);
		memcpy(big[i], "X: ", 3);
	}
	lc.headers = two;
	lc.nheaders = 2;
	cr_expect_eq(pw_load_req_check(&lc, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "the headers take 10002 bytes, more than 8192"),
		  "%s", why);
	lc.nheaders = 1;
	cr_expect_eq(pw_load_req_check(&lc, why, sizeof(why)), 0, "%s", why);
	lc.nheaders = 0;
	/* Methods are tokens; the body needs its bytes. */
	lc.method = "G T";
	cr_expect_eq(pw_load_req_check(&lc, why, sizeof(why)), -EINVAL);
	lc.method = "";
	cr_expect_eq(pw_load_req_check(&lc, why, sizeof(why)), -EINVAL);
	lc.method = "M-SEARCH";
	cr_expect_eq(pw_load_req_check(&lc, why, sizeof(why)), 0);
	lc.body_len = 1;
	cr_expect_eq(pw_load_req_check(&lc, why, sizeof(why)), -EINVAL);
}

/* pw_load_run() refuses what pw_load_req_check() refuses, HTTP settings
 * with the echo protocol, and addresses it cannot use. */
Test(load, request_bad_settings)
{
	struct pw_runtime *rt = load_runtime(1);
	const char *bad[] = { "X Y: z" };
	struct pw_net_addr none[1] = { 0 };
	struct pw_load_config lc;
	struct pw_load_result res;

	pw_load_config_init(&lc);
	target(&lc, 9);
	lc.headers = bad;
	lc.nheaders = 1;
	cr_expect_eq(pw_load_run(rt, &lc, &res), -EINVAL);
	lc.nheaders = 0;
	lc.method = "A B";
	cr_expect_eq(pw_load_run(rt, &lc, &res), -EINVAL);
	lc.method = "GET";
	lc.proto = PW_LOAD_ECHO;
	cr_expect_eq(pw_load_run(rt, &lc, &res), -EINVAL);
	lc.method = NULL;
	lc.body = "";
	cr_expect_eq(pw_load_run(rt, &lc, &res), -EINVAL);
	lc.body = NULL;
	lc.proto = PW_LOAD_HTTP;
	lc.naddrs = 1; /* and no addrs */
	cr_expect_eq(pw_load_run(rt, &lc, &res), -EINVAL);
	lc.addrs = none; /* an empty one */
	cr_expect_eq(pw_load_run(rt, &lc, &res), -EINVAL);
	pw_runtime_destroy(rt);
}

/* Once its clients have closed: wait for the connection threads of the
 * stopped server @s to end, so that @s may go (or be used again). */
static void srv_wait_idle(struct srv *s)
{
	uint64_t dl = pw_test_now_ns() + PW_TEST_WAIT_SECS * PW_NSEC_PER_SEC;

	while (atomic_load(&s->live)) {
		cr_assert_lt(pw_test_now_ns(), dl, "%ld connections left",
			     atomic_load(&s->live));
		usleep(1000);
	}
}

/* The server's recorded bytes are @n copies of @req. */
static void expect_recorded(struct srv *s, const char *req, size_t len,
			    unsigned n)
{
	pthread_mutex_lock(&s->rec_mu);
	cr_expect_eq(s->rec_len, len * n, "recorded %zu bytes: %.*s",
		     s->rec_len, (int)s->rec_len, s->rec);
	for (unsigned i = 0; i < n && s->rec_len == len * n; i++)
		cr_expect(!memcmp(s->rec + i * len, req, len),
			  "request %u: %.*s", i, (int)len, s->rec + i * len);
	pthread_mutex_unlock(&s->rec_mu);
}

/* Method, headers and body arrive byte for byte, the same for every
 * request, with the Host the user gave. */
Test(load, request_on_the_wire)
{
	static const char *hdrs[] = { "X-Trace: abc", "Host: svc.test:81" };
	static const char want[] = "PATCH /a/b?c=d HTTP/1.1\r\n"
				   "Host: svc.test:81\r\nX-Trace: abc\r\n"
				   "Content-Length: 9\r\n\r\n{\"k\": 1}\n";
	struct load_test t = { .s = { .record = true } };
	struct pw_load_result res;

	load_start(&t, SRV_HTTP_200, 1, 1);
	t.lc.requests = 3;
	t.lc.method = "PATCH";
	t.lc.path = "/a/b?c=d";
	t.lc.headers = hdrs;
	t.lc.nheaders = 2;
	t.lc.body = "{\"k\": 1}\n";
	t.lc.body_len = 9;
	load_go(&t, &res);
	cr_expect_eq(res.requests, 3);
	cr_expect_eq(res.errors, 0);
	cr_expect_eq(res.bytes_sent, 3 * (sizeof(want) - 1));
	expect_recorded(&t.s, want, sizeof(want) - 1, 3);
	load_end(&t, &res);
}

/* Connections spread over the addresses round robin: connection i to
 * address i % 2, exactly half the requests each. */
Test(load, addresses_round_robin)
{
	struct load_test t = { 0 };
	struct srv b = { 0 };
	struct pw_net_addr addrs[2];
	struct pw_load_result res;
	char text[64];

	load_start(&t, SRV_HTTP_200, 2, 4);
	srv_start(&b, SRV_HTTP_200);
	addrs[0] = t.lc.target;
	snprintf(text, sizeof(text), "127.0.0.1:%d", b.port);
	cr_assert_eq(pw_net_addr_parse(&addrs[1], text), 0);
	memset(&t.lc.target, 0, sizeof(t.lc.target)); /* addrs alone */
	t.lc.addrs = addrs;
	t.lc.naddrs = 2;
	t.lc.requests = 400;
	load_go(&t, &res);
	cr_expect_eq(res.requests, 400);
	cr_expect_eq(res.errors, 0);
	cr_expect_eq(res.connects, 4);
	cr_expect_eq(atomic_load(&t.s.accepts), 2);
	cr_expect_eq(atomic_load(&b.accepts), 2);
	cr_expect_eq(atomic_load(&t.s.answers), 200);
	cr_expect_eq(atomic_load(&b.answers), 200);
	/* The JSON names both. */
	char *json = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&json, &len);
	cr_assert_not_null(f);
	cr_expect_eq(pw_load_write_json(&t.lc, &res, NULL, f), 0);
	fclose(f);
	snprintf(text, sizeof(text), "\"127.0.0.1:%d\", \"127.0.0.1:%d\"]",
		 t.s.port, b.port);
	cr_expect(strstr(json, text), "%s", json);
	cr_expect(strstr(json, "\"url\": null"), "%s", json);
	cr_expect(strstr(json, "\"method\": \"GET\""), "%s", json);
	cr_expect(pw_test_json_valid(json), "%s", json);
	free(json);
	load_end(&t, &res);
	srv_stop(&b);
}

/* HEAD against a server answering @resp to each request: @ok requests
 * of 20 succeed (the rest fail as bad answers). */
static void head_run(const char *resp, uint64_t ok, uint64_t connects)
{
	static const char want[] = "HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n";
	struct load_test t = { .s = { .resp = resp, .record = true } };
	struct pw_load_result res;

	load_start(&t, SRV_HTTP_200, 1, 1);
	t.lc.requests = 20;
	t.lc.method = "HEAD";
	t.lc.path = "/h";
	t.lc.host = "x";
	load_go(&t, &res);
	cr_expect_eq(res.requests, ok,
		     "%s: ok %llu bad %llu reset %llu conn %llu rx %llu", resp,
		     (unsigned long long)res.requests,
		     (unsigned long long)res.err.bad,
		     (unsigned long long)res.err.reset,
		     (unsigned long long)res.connects,
		     (unsigned long long)res.bytes_received);
	cr_expect_eq(res.errors, 20 - ok, "%s", resp);
	cr_expect_eq(res.err.bad, 20 - ok, "%s", resp);
	cr_expect_eq(res.connects, connects, "%s", resp);
	cr_expect_eq(res.bytes_received, 20 * strlen(resp), "%s", resp);
	expect_recorded(&t.s, want, sizeof(want) - 1, 20);
	load_end(&t, &res);
	srv_wait_idle(&t.s); /* the next run reuses this stack */
}

/* A HEAD answer ends with its head: with a Content-Length and no body,
 * with Transfer-Encoding, with no length at all, as a 204; on one
 * connection throughout. A server that sends a body anyway sent bytes
 * nobody asked for: each such answer is bad and its connection closed. */
Test(load, head_answers_end_with_their_head)
{
	head_run("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", 20, 1);
	head_run("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 20,
		 1);
	head_run("HTTP/1.1 200 OK\r\nServer: t\r\n\r\n", 20, 1);
	head_run("HTTP/1.1 204 No Content\r\n\r\n", 20, 1);
	head_run("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 0, 20);
}

/* Skip the test unless "localhost" is 127.0.0.1 alone here (an
 * /etc/hosts with ::1 too would send every other connection to an
 * address the test servers do not listen on). */
static void need_localhost_v4(void)
{
	struct pw_net_addr a[PW_RESOLVE_MAX], want;
	int n = pw_resolve("localhost:80", SOCK_STREAM, a, PW_RESOLVE_MAX);

	cr_assert_eq(pw_net_addr_parse(&want, "127.0.0.1:80"), 0);
	if (n != 1 || a[0].len != want.len ||
	    memcmp(&a[0].u, &want.u, want.len))
		cr_skip_test("localhost is not 127.0.0.1 alone here (%d "
			     "addresses)",
			     n);
}

/* `pinwheel load http://localhost:PORT/...`: the name resolved (said on
 * stderr and in the report), the URL's path, query and Host, the flags'
 * method, headers and body from a file, byte for byte; the table in
 * adaptive units; the URL and method in the JSON. */
Test(load, command_url_with_a_name)
{
	static char out[16384], want[512];
	struct srv s = { .record = true };
	char url[96], line[256], body[64], json[64];

	need_localhost_v4();
	srv_start(&s, SRV_HTTP_200);
	snprintf(url, sizeof(url), "http://localhost:%d/x?y=1", s.port);
	snprintf(body, sizeof(body), "/tmp/pw-load-body-%d", getpid());
	snprintf(json, sizeof(json), "/tmp/pw-load-url-%d.json", getpid());
	FILE *f = fopen(body, "w");
	cr_assert_not_null(f);
	fputs("a=1&b=2", f);
	fclose(f);
	char *argv[] = { "pinwheel", "load",   url,	      "-H", "X-A: b",
			 "--method", "PUT",    "--body-file", body, "-HX-C:d",
			 "--shards", "1",      "--requests",  "2",  "--warmup",
			 "0",	     "--json", json,	      NULL };
	int st = pw_test_run_cmd(out, sizeof(out), argv);
	unlink(body);
	cr_expect_eq(st, 0, "%s", out);
	snprintf(line, sizeof(line), "pinwheel load: %s is 127.0.0.1:%d\n", url,
		 s.port);
	cr_expect(strstr(out, line), "%s", out);
	snprintf(line, sizeof(line),
		 "http load of %s (127.0.0.1:%d): 1 "
		 "connection on 1 shard, closed loop\n",
		 url, s.port);
	cr_expect(strstr(out, line), "%s", out);
	cr_expect(strstr(out, "\n  percentile      latency      service\n"),
		  "%s", out);
	const char *p50 = strstr(out, "\n  p50 ");
	cr_assert_not_null(p50, "%s", out);
	const char *end = p50 + 1 + strcspn(p50 + 1, "\n");
	cr_expect(end[-1] == 's' && (end[-2] == 'u' || end[-2] == 'm'), "%s",
		  out);
	cr_expect(strstr(out, "requests 2, errors 0"), "%s", out);
	snprintf(want, sizeof(want),
		 "PUT /x?y=1 HTTP/1.1\r\nHost: localhost:%d\r\nX-A: b\r\n"
		 "X-C:d\r\nContent-Length: 7\r\n\r\na=1&b=2",
		 s.port);
	expect_recorded(&s, want, strlen(want), 2);
	char *text = pw_test_slurp(json, NULL);
	unlink(json);
	cr_assert_not_null(text);
	cr_expect(pw_test_json_valid(text), "%s", text);
	snprintf(line, sizeof(line), "\"url\": \"%s\"", url);
	cr_expect(strstr(text, line), "%s", text);
	cr_expect(strstr(text, "\"method\": \"PUT\""), "%s", text);
	free(text);
	srv_stop(&s);
}

/* The old forms stay: a bare HOST:PORT name is resolved and is its own
 * Host; a numeric --target sends what it always sent. */
Test(load, command_name_and_numeric_targets)
{
	static char out[16384], want[256];
	struct srv s = { .record = true };
	char at[64];

	need_localhost_v4();
	srv_start(&s, SRV_HTTP_200);
	snprintf(at, sizeof(at), "localhost:%d", s.port);
	char *argv[] = { "pinwheel", "load",	   "--target", at,
			 "--quiet",  "--requests", "1",	       "--warmup",
			 "0",	     "--shards",   "1",	       NULL };
	int st = pw_test_run_cmd(out, sizeof(out), argv);
	cr_expect_eq(st, 0, "%s", out);
	snprintf(want, sizeof(want), "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", at);
	expect_recorded(&s, want, strlen(want), 1);
	snprintf(want, sizeof(want), "http load of %s (127.0.0.1:%d): ", at,
		 s.port);
	cr_expect(strstr(out, want), "%s", out);
	/* --quiet: no banner line. */
	cr_expect(!strstr(out, "pinwheel load: "), "%s", out);

	pthread_mutex_lock(&s.rec_mu);
	s.rec_len = 0;
	pthread_mutex_unlock(&s.rec_mu);
	snprintf(at, sizeof(at), "127.0.0.1:%d", s.port);
	st = pw_test_run_cmd(out, sizeof(out), argv);
	cr_expect_eq(st, 0, "%s", out);
	snprintf(want, sizeof(want), "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", at);
	expect_recorded(&s, want, strlen(want), 1);
	snprintf(want, sizeof(want), "http load of %s: ", at);
	cr_expect(strstr(out, want), "%s", out);
	srv_stop(&s);
}

/* The new flags in --help, and each refused with one line, exit 2. */
Test(load, command_request_flags_refused)
{
	static const struct pw_test_cmd_case cases[] = {
		{ { "pinwheel", "load", "--help" }, 0, "--header 'N: V'" },
		{ { "pinwheel", "load", "--help" }, 0, "--body-file FILE" },
		{ { "pinwheel", "load", "https://localhost/" },
		  2,
		  "pinwheel load: --target: 'https://localhost/': https is "
		  "not supported (no TLS)" },
		{ { "pinwheel", "load", "http://127.0.0.1:1/", "-H",
		    "Bad Name: x" },
		  2,
		  "pinwheel load: header 'Bad Name: x': the name is not a "
		  "token" },
		{ { "pinwheel", "load", "http://127.0.0.1:1/", "--header",
		    "X: a\r\nY: b" },
		  2,
		  "header 'X: a\\r\\nY: b': the value holds CR or LF" },
		{ { "pinwheel", "load", "http://127.0.0.1:1/", "--method",
		    "G T" },
		  2,
		  "pinwheel load: --method: 'G T' is not a token" },
		{ { "pinwheel", "load", "http://127.0.0.1:1/", "--body", "abc",
		    "-HContent-Length: 4" },
		  2,
		  "'Content-Length: 4': disagrees with the body's length" },
		{ { "pinwheel", "load", "127.0.0.1:1", "--body", "a",
		    "--body-file", "/dev/null" },
		  2,
		  "--body and --body-file: give one" },
		{ { "pinwheel", "load", "http://127.0.0.1:1/a", "--path",
		    "/b" },
		  2,
		  "--path: the URL 'http://127.0.0.1:1/a' gives the path "
		  "already" },
		{ { "pinwheel", "load", "--target", "127.0.0.1:1",
		    "127.0.0.1:2" },
		  2,
		  "--target '127.0.0.1:1' and a bare target '127.0.0.1:2': "
		  "give one" },
		{ { "pinwheel", "load", "127.0.0.1:1", "127.0.0.1:2" },
		  2,
		  "unexpected argument '127.0.0.1:2'" },
		{ { "pinwheel", "load", "127.0.0.1:1", "-H" },
		  2,
		  "-H needs a value" },
		{ { "pinwheel", "load", "127.0.0.1:1", "--proto", "echo",
		    "--method", "POST" },
		  2,
		  "--method, -H and --body are for --proto http" },
		{ { "pinwheel", "load", "127.0.0.1:1", "--host", "a", "-H",
		    "host: b" },
		  2,
		  "--host and -H 'Host: ...' both set the Host header" },
		{ { "pinwheel", "load", "localhost:0" },
		  2,
		  "pinwheel load: --target: 'localhost:0' has port 0" },
		{ { "pinwheel", "load", "http://name.invalid:80/" },
		  2,
		  "pinwheel load: --target: 'http://name.invalid:80/': name "
		  "not known" },
		{ { "pinwheel", "load", "127.0.0.1:1", "--body-file",
		    "/nonexistent-pw-dir/b" },
		  2,
		  "--body-file: cannot read '/nonexistent-pw-dir/b': No such "
		  "file" },
	};

	pw_test_cmd_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

/* 65 -H lines: refused, one line, before the run. */
Test(load, command_too_many_headers)
{
	static char out[16384];
	char *argv[4 + 2 * (PW_LOAD_HEADERS_MAX + 1)];
	int n = 0;

	argv[n++] = "pinwheel";
	argv[n++] = "load";
	argv[n++] = "127.0.0.1:1";
	for (int i = 0; i <= PW_LOAD_HEADERS_MAX; i++) {
		argv[n++] = "-H";
		argv[n++] = "X: y";
	}
	argv[n] = NULL;
	int st = pw_test_run_cmd(out, sizeof(out), argv);
	cr_expect_eq(st, 2, "%s", out);
	cr_expect_str_eq(out, "pinwheel load: more than 64 headers\n");
}

/* --body-file's reader: empty, exactly the cap, one byte over it, and
 * files that cannot be read. */
Test(load, body_file_bounds)
{
	char path[64], *p = NULL;
	size_t n = 1;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/pw-load-bodyf-%d", getpid());
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_expect_eq(pw_load_body_read(path, &p, &n), 0);
	cr_expect(p != NULL && n == 0);
	free(p);
	cr_assert_eq(truncate(path, PW_LOAD_BODY_MAX), 0);
	cr_expect_eq(pw_load_body_read(path, &p, &n), 0);
	cr_expect_eq(n, PW_LOAD_BODY_MAX);
	free(p);
	cr_assert_eq(truncate(path, PW_LOAD_BODY_MAX + 1), 0);
	cr_expect_eq(pw_load_body_read(path, &p, &n), -EFBIG);
	cr_expect(p == NULL && n == 0);
	unlink(path);
	cr_expect_eq(pw_load_body_read(path, &p, &n), -ENOENT);
	cr_expect_eq(pw_load_body_read("/tmp", &p, &n), -EISDIR);
	cr_expect_eq(pw_load_body_read(NULL, &p, &n), -EINVAL);
}
