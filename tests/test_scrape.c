/* SPDX-License-Identifier: MIT */
/*
 * test_scrape.c - --metrics-listen and the reports of the commands: the
 * built pinwheel command runs as a child, a plain socket client drives
 * it and scrapes it, and every exposition is held to the strict checker
 * of tests/prom.h. After N requests the http counters say exactly N
 * requests, N answers 200 and the bytes each way the client counted;
 * /metrics.json parses and agrees; other paths get 404, other methods
 * 405 with Allow, HEAD the headers alone; the ninth connection waits
 * until one of eight ends; busy time is above 0 after work; every
 * command takes the flag; --metrics-format prometheus holds at exit.
 * With promtool installed, `promtool check metrics` checks a scrape too.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pinwheel/net.h"
#include "tests/common.h"
#include "tests/json.h"
#include "tests/net_fixtures.h"
#include "tests/prom.h"

#define REQ "GET / HTTP/1.1\r\nHost: t\r\n\r\n"

/* A command started as a child, its addresses and what it said. */
struct cmd {
	pid_t pid;
	int out;
	struct pw_net_addr a; /* its service ("listening on"), if any */
	struct pw_net_addr m; /* its scrape endpoint ("metrics on") */
	size_t len;
	char text[65536];
};

/* The address after @key in c->text (read until that line came). */
static void addr_after(struct cmd *c, const char *key, struct pw_net_addr *a)
{
	const char *at = pw_test_read_until(c->out, c->text, sizeof(c->text),
					    &c->len, key);
	char addr[PW_NET_ADDR_STRLEN + 1];
	size_t n;

	at += strlen(key);
	n = strcspn(at, " ,\n");
	cr_assert_lt(n, sizeof(addr), "%s", c->text);
	memcpy(addr, at, n);
	addr[n] = '\0';
	cr_assert_eq(pw_net_addr_parse(a, addr), 0, "%s", c->text);
}

/* Start `pinwheel @argv...` (argv[0] is only its name); with @service,
 * read its banner's address; then its scrape endpoint's. */
static void cmd_start(struct cmd *c, char *const argv[], bool service)
{
	c->len = 0;
	c->pid = pw_test_cmd_start(argv, &c->out);
	if (service)
		addr_after(c, "listening on ", &c->a);
	addr_after(c, "metrics on ", &c->m);
}

/* SIGTERM, then its exit status; the rest of its output in c->text. */
static int cmd_stop(struct cmd *c)
{
	cr_assert_eq(kill(c->pid, SIGTERM), 0);
	return pw_test_cmd_wait(c->pid, c->out, c->text + c->len,
				sizeof(c->text) - c->len);
}

/* A blocking client socket to @a that gives up a read after 10 s. */
static int dial(const struct pw_net_addr *a)
{
	struct timeval tv = { .tv_sec = 10 };
	int fd = pw_test_dial(a);

	cr_assert_geq(fd, 0, "connect: %s", strerror(-fd));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		cr_assert_gt(w, 0, "send: %s", strerror(errno));
		p += w;
		n -= (size_t)w;
	}
}

/* One response read whole from @fd: its head in @head, its body
 * (Content-Length bytes; none for @head_only) in malloc'd *@body.
 * Return: its status; the bytes read in *@got (may be NULL). */
static int read_resp(int fd, bool head_only, char *head, size_t hsize,
		     char **body, size_t *got)
{
	size_t n = 0, len = 0;
	char *end;
	int status = 0;

	for (;;) {
		cr_assert_lt(n + 1, hsize, "head too long");
		ssize_t r = recv(fd, head + n, 1, 0); /* never past the head */
		cr_assert_eq(r, 1, "no whole response head: '%.*s'", (int)n,
			     head);
		head[++n] = '\0';
		if ((end = strstr(head, "\r\n\r\n")))
			break;
	}
	cr_assert_eq(sscanf(head, "HTTP/1.1 %d", &status), 1, "%s", head);
	const char *cl = strstr(head, "Content-Length: ");
	cr_assert_not_null(cl, "%s", head);
	len = head_only ? 0 : strtoul(cl + 16, NULL, 10);
	*body = malloc(len + 1);
	for (size_t b = 0; b < len;) {
		ssize_t r = recv(fd, *body + b, len - b, 0);
		cr_assert_gt(r, 0, "body cut at %zu of %zu", b, len);
		b += (size_t)r;
	}
	(*body)[len] = '\0';
	if (got)
		*got = n + len;
	return status;
}

/* GET (or @method) @path of the endpoint @m on a new connection. */
static int scrape(const struct pw_net_addr *m, const char *method,
		  const char *path, char *head, size_t hsize, char **body)
{
	char req[256];
	int fd = dial(m);
	int n = snprintf(
		req, sizeof(req),
		"%s %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
		method, path);
	int st;

	send_all(fd, req, (size_t)n);
	st = read_resp(fd, !strcmp(method, "HEAD"), head, hsize, body, NULL);
	close(fd);
	return st;
}

/* GET /metrics, held to the checker; the malloc'd text. */
static char *scrape_prom(const struct pw_net_addr *m)
{
	char head[2048], why[512], *body;

	cr_assert_eq(scrape(m, "GET", "/metrics", head, sizeof(head), &body),
		     200);
	cr_assert(strstr(head, "Content-Type: text/plain; version=0.0.4; "
			       "charset=utf-8\r\n"),
		  "%s", head);
	cr_assert(pw_test_prom_check(body, why, sizeof(why)), "%s\n%s", why,
		  body);
	return body;
}

/* The sum of the JSON array of objects under @key, or the number there. */
static double json_sum(const char *text, const char *key)
{
	char k[256];
	const char *p;
	double sum = 0;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(text, k);
	cr_assert_not_null(p, "no %s in %s", key, text);
	p += strlen(k);
	if (*p != '[')
		return strtod(p, NULL);
	const char *end = strchr(p, ']');
	while ((p = strstr(p, "\"value\":")) && p < end) {
		p += 8;
		sum += strtod(p, NULL);
	}
	return sum;
}

/* With promtool installed, `promtool check metrics` on @text. */
static void promtool(const char *text)
{
	char path[] = "/tmp/pinwheel-scrape-XXXXXX", cmd[128];
	int fd, st;

	if (system("command -v promtool >/dev/null 2>&1"))
		return; /* not installed: the strict checker alone */
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
	st = system(cmd);
	unlink(path);
	cr_expect_eq(st, 0, "promtool check metrics failed");
}

#define N_REQ 10

/* The metrics once the one client connection is counted closed. */
static char *scrape_closed(const struct pw_net_addr *m)
{
	uint64_t dl = pw_test_now_ns() + PW_TEST_WAIT_SECS * PW_NSEC_PER_SEC;

	for (;;) {
		char *t = scrape_prom(m);
		if (pw_test_prom_sum(t,
				     "pinwheel_http_connections_closed_total",
				     NULL, NULL) == 1)
			return t;
		free(t);
		cr_assert(pw_test_wait_step(dl), "the connection never closed");
	}
}

Test(scrape, http_counters_exact)
{
	static struct cmd c;
	char *argv[] = { "pinwheel",	     "http",	    "--listen",
			 "127.0.0.1:0",	     "--shards",    "2",
			 "--metrics-listen", "127.0.0.1:0", NULL };
	char head[2048], *body;
	size_t sent = 0, got = 0, n;

	cmd_start(&c, argv, true);
	int fd = dial(&c.a);
	for (int i = 0; i < N_REQ; i++) {
		send_all(fd, REQ, strlen(REQ));
		sent += strlen(REQ);
		cr_assert_eq(read_resp(fd, false, head, sizeof(head), &body,
				       &n),
			     200);
		got += n;
		free(body);
	}
	close(fd);
	char *t = scrape_closed(&c.m);
	cr_expect_eq(pw_test_prom_sum(t, "pinwheel_http_requests_total", NULL,
				      NULL),
		     N_REQ, "%s", t);
	cr_expect_eq(pw_test_prom_sum(t, "pinwheel_http_responses_total",
				      "status=\"200\"", NULL),
		     N_REQ);
	cr_expect_eq(pw_test_prom_sum(t, "pinwheel_http_responses_total", NULL,
				      NULL),
		     N_REQ, "no other status");
	cr_expect_eq(pw_test_prom_sum(t, "pinwheel_http_received_bytes_total",
				      NULL, NULL),
		     (double)sent);
	cr_expect_eq(pw_test_prom_sum(t, "pinwheel_http_sent_bytes_total", NULL,
				      NULL),
		     (double)got);
	cr_expect_eq(
		pw_test_prom_sum(t, "pinwheel_http_connections_accepted_total",
				 NULL, NULL),
		1);
	cr_expect_eq(pw_test_prom_sum(t,
				      "pinwheel_http_connections_closed_total",
				      "cause=\"client\"", NULL),
		     1);
	cr_expect_eq(pw_test_prom_sum(t, "pinwheel_http_connections_active",
				      NULL, NULL),
		     0);
	/* The shard that served the requests was busy for some time. */
	cr_expect_gt(pw_test_prom_sum(t,
				      "pinwheel_worker_total_busy_duration_"
				      "seconds_total",
				      NULL, NULL),
		     0, "%s", t);
	promtool(t);

	/* The JSON: one object, the same counters. */
	cr_assert_eq(scrape(&c.m, "GET", "/metrics.json", head, sizeof(head),
			    &body),
		     200);
	cr_expect(strstr(head, "Content-Type: application/json\r\n"), "%s",
		  head);
	cr_expect(pw_test_json_valid(body), "%s", body);
	static const char *const same[] = {
		"pinwheel_http_requests_total",
		"pinwheel_http_responses_total",
		"pinwheel_http_received_bytes_total",
		"pinwheel_http_sent_bytes_total",
		"pinwheel_http_connections_accepted_total",
		"pinwheel_http_connections_closed_total",
	};
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		cr_expect_eq(json_sum(body, same[i]),
			     pw_test_prom_sum(t, same[i], NULL, NULL), "%s",
			     same[i]);
	/* Two scrapes before this one, each counting itself. */
	cr_expect_geq(json_sum(body, "pinwheel_scrapes_total"), 2);
	free(body);
	free(t);
	cr_expect_eq(cmd_stop(&c), 0, "%s", c.text);
}

Test(scrape, paths_methods_and_bad_requests)
{
	static struct cmd c;
	char *argv[] = { "pinwheel",	     "echo",	    "--listen",
			 "127.0.0.1:0",	     "--shards",    "1",
			 "--metrics-listen", "127.0.0.1:0", NULL };
	char head[2048], *body, *t;

	cmd_start(&c, argv, true);
	cr_expect_eq(scrape(&c.m, "GET", "/nope", head, sizeof(head), &body),
		     404, "%s", head);
	free(body);
	cr_expect_eq(scrape(&c.m, "POST", "/metrics", head, sizeof(head),
			    &body),
		     405, "%s", head);
	cr_expect(strstr(head, "\r\nAllow: GET, HEAD\r\n"), "%s", head);
	free(body);

	/* HEAD then GET pipelined on one connection: the HEAD's answer has
	 * the headers alone, so the GET's follows right after them. */
	const char two[] = "HEAD /metrics HTTP/1.1\r\nHost: t\r\n\r\n"
			   "GET /metrics.json HTTP/1.1\r\nHost: t\r\n\r\n";
	int fd = dial(&c.m);
	send_all(fd, two, sizeof(two) - 1);
	cr_expect_eq(read_resp(fd, true, head, sizeof(head), &body, NULL), 200);
	cr_expect(strstr(head, "version=0.0.4"), "%s", head);
	free(body);
	cr_expect_eq(read_resp(fd, false, head, sizeof(head), &body, NULL),
		     200);
	cr_expect(pw_test_json_valid(body), "%s", body);
	free(body);
	/* A malformed request: 400, then the close. */
	send_all(fd, "BAD\r\n\r\n", 7);
	cr_expect_eq(read_resp(fd, false, head, sizeof(head), &body, NULL), 400,
		     "%s", head);
	free(body);
	char byte;
	cr_expect_eq(recv(fd, &byte, 1, 0), 0, "closed after the 400");
	close(fd);

	t = scrape_prom(&c.m);
	cr_expect_eq(pw_test_prom_sum(t, "pinwheel_scrape_errors_total",
				      "cause=\"not_found\"", NULL),
		     1, "%s", t);
	cr_expect_eq(pw_test_prom_sum(t, "pinwheel_scrape_errors_total",
				      "cause=\"bad_method\"", NULL),
		     1);
	cr_expect_eq(pw_test_prom_sum(t, "pinwheel_scrape_errors_total",
				      "cause=\"bad_request\"", NULL),
		     1);
	/* HEAD, GET and this one, which counts itself. */
	cr_expect_eq(pw_test_prom_sum(t, "pinwheel_scrapes_total", NULL, NULL),
		     3);
	cr_expect_eq(pw_test_prom_sum(t, "pinwheel_scrape_connections_total",
				      NULL, NULL),
		     4);
	/* The echo command's own counters are there. */
	cr_expect_eq(pw_test_prom_sum(t,
				      "pinwheel_echo_connections_accepted_"
				      "total",
				      NULL, NULL),
		     0);
	free(t);
	cr_expect_eq(cmd_stop(&c), 0, "%s", c.text);
}

/* Eight connections at once; a ninth waits in the backlog until one of
 * them ends, then is answered. */
Test(scrape, ninth_connection_waits)
{
	static struct cmd c;
	char *argv[] = { "pinwheel",	     "echo",	    "--listen",
			 "127.0.0.1:0",	     "--shards",    "1",
			 "--metrics-listen", "127.0.0.1:0", NULL };
	char head[2048], *body;
	int fds[8];

	cmd_start(&c, argv, true);
	for (int i = 0; i < 8; i++) {
		/* Each one answered once: all eight are taken. */
		fds[i] = dial(&c.m);
		send_all(fds[i], "GET /nope HTTP/1.1\r\nHost: t\r\n\r\n", 31);
		cr_assert_eq(read_resp(fds[i], false, head, sizeof(head), &body,
				       NULL),
			     404);
		free(body);
	}
	int ninth = dial(&c.m); /* the kernel's backlog takes it */
	send_all(ninth, "GET /nope HTTP/1.1\r\nHost: t\r\n\r\n", 31);
	cr_expect(!pw_test_readable(ninth, 300), "answered beyond the cap");
	close(fds[0]);
	cr_expect_eq(read_resp(ninth, false, head, sizeof(head), &body, NULL),
		     404);
	free(body);
	for (int i = 1; i < 8; i++)
		close(fds[i]);
	close(ninth);
	cr_expect_eq(cmd_stop(&c), 0, "%s", c.text);
}

/* Every command that runs a runtime takes the flag; a bad address is a
 * usage error, a port in use a start error. */
Test(scrape, every_command_takes_it)
{
	static struct cmd h, p, l;
	char *http[] = { "pinwheel",	     "http",	    "--listen",
			 "127.0.0.1:0",	     "--shards",    "1",
			 "--metrics-listen", "127.0.0.1:0", NULL };
	cmd_start(&h, http, true);
	char up[PW_NET_ADDR_STRLEN], maddr[PW_NET_ADDR_STRLEN];
	pw_net_addr_format(&h.a, up, sizeof(up));
	pw_net_addr_format(&h.m, maddr, sizeof(maddr));
	char *proxy[] = { "pinwheel",	 "proxy",      "--listen",
			  "127.0.0.1:0", "--upstream", up,
			  "--shards",	 "1",	       "--metrics-listen",
			  "127.0.0.1:0", NULL };
	cmd_start(&p, proxy, true);
	char *t = scrape_prom(&p.m);
	cr_expect(strstr(t, "\npinwheel_proxy_connections_accepted_total 0\n"),
		  "%s", t);
	free(t);
	char *load[] = { "pinwheel",	"load", "--target", up,
			 "--requests",	"5",	"--warmup", "0",
			 "--shards",	"1",	"--quiet",  "--metrics-listen",
			 "127.0.0.1:0", NULL };
	cmd_start(&l, load, false);
	cr_expect_eq(pw_test_cmd_wait(l.pid, l.out, l.text + l.len,
				      sizeof(l.text) - l.len),
		     0, "%s", l.text);
	cr_expect(strstr(l.text, "requests 5, errors 0"), "%s", l.text);

	static const struct pw_test_cmd_case cases[] = {
		{ { "pinwheel", "demo", "--tasks", "2", "--metrics-listen",
		    "127.0.0.1:0" },
		  0,
		  "pinwheel demo: metrics on 127.0.0.1:" },
		{ { "pinwheel", "echo", "--listen", "127.0.0.1:0",
		    "--metrics-listen", "nowhere" },
		  2,
		  "pinwheel echo: --metrics-listen: 'nowhere' is not an "
		  "address" },
	};
	pw_test_cmd_cases(cases, sizeof(cases) / sizeof(cases[0]));
	char *taken[] = { "pinwheel",	      "echo", "--listen", "127.0.0.1:0",
			  "--metrics-listen", maddr,  NULL };
	static char out[4096];
	cr_expect_eq(pw_test_run_cmd(out, sizeof(out), taken), 1, "%s", out);
	cr_expect(strstr(out, "pinwheel echo: cannot serve metrics on "), "%s",
		  out);
	cr_expect_eq(cmd_stop(&p), 0, "%s", p.text);
	cr_expect_eq(cmd_stop(&h), 0, "%s", h.text);
}

/* --metrics-format prometheus at exit: the whole report, the command's
 * counters included, passes the checker. */
Test(scrape, exit_report_in_prometheus)
{
	static struct cmd c;
	char *argv[] = { "pinwheel",	"http",
			 "--listen",	"127.0.0.1:0",
			 "--shards",	"2",
			 "--metrics",	"--metrics-format",
			 "prometheus",	"--metrics-listen",
			 "127.0.0.1:0", NULL };
	char head[2048], *body, why[512];

	cmd_start(&c, argv, true);
	int fd = dial(&c.a);
	send_all(fd, REQ, strlen(REQ));
	cr_assert_eq(read_resp(fd, false, head, sizeof(head), &body, NULL),
		     200);
	free(body);
	close(fd);
	cr_assert_eq(cmd_stop(&c), 0, "%s", c.text);
	char *from = strstr(c.text, "# HELP ");
	char *to = strstr(c.text, "pinwheel http: stopped;");
	cr_assert(from && to && from < to, "%s", c.text);
	*to = '\0';
	cr_expect(pw_test_prom_check(from, why, sizeof(why)), "%s\n%s", why,
		  from);
	cr_expect_eq(pw_test_prom_sum(from, "pinwheel_http_requests_total",
				      NULL, NULL),
		     1, "%s", from);
	cr_expect(strstr(from, "\npinwheel_scrapes_total 0\n"), "%s", from);
}
