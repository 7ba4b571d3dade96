/* SPDX-License-Identifier: MIT */
/*
 * test_http_parse.c - the HTTP/1.1 parser of the pinwheel command.
 * Requests (`pinwheel http`): pipelining, arrival a byte at a time and
 * split at every offset, bodies across reads, keep-alive rules, caps,
 * malformed input; the responses built. The fast path for whole heads is
 * checked against the byte state machine on generated requests and on
 * every byte value at each place the grammar has a rule for. Responses
 * (`pinwheel load`): status lines, Content-Length, refused bodies,
 * bad input, pipelining and splits across reads anywhere.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common.h"
#include "apps/http_parse.h"

#define MAXREQ 256

/* What the tests keep of each request. */
struct seen {
	char method[PW_HTTP_METHOD_MAX];
	char target[PW_HTTP_TARGET_MAX];
	int minor;
	bool keep_alive;
	uint64_t content_length;
};

struct run {
	struct pw_http_parser p;
	struct seen req[MAXREQ];
	unsigned n;
	int err;
};

static void run_init(struct run *r, size_t head_max)
{
	memset(r, 0, sizeof(*r));
	cr_assert_eq(pw_http_parser_init(&r->p, head_max), 0);
}

/* Feed one read's worth; collect every request it completes. */
static void feed(struct run *r, const char *buf, size_t len)
{
	while (!r->err) {
		size_t used = 99999;
		int ret = pw_http_parse(&r->p, buf, len, &used);

		cr_assert_leq(used, len);
		if (ret < 0) {
			r->err = ret;
			return;
		}
		buf += used;
		len -= used;
		if (ret == 0) {
			cr_assert_eq(len, 0, "0 means all consumed");
			return;
		}
		cr_assert_eq(ret, 1);
		cr_assert_lt(r->n, MAXREQ);
		struct seen *s = &r->req[r->n++];
		strcpy(s->method, r->p.req.method);
		strcpy(s->target, r->p.req.target);
		s->minor = r->p.req.minor;
		s->keep_alive = r->p.req.keep_alive;
		s->content_length = r->p.req.content_length;
		cr_assert_eq(strlen(s->method), r->p.req.method_len);
		cr_assert_eq(strlen(s->target), r->p.req.target_len);
		if (!len)
			return;
	}
}

static void feed_str(struct run *r, const char *s)
{
	feed(r, s, strlen(s));
}

/* Parse @s whole with the default cap; return the error or 0. */
static int parse_one(const char *s, struct run *r)
{
	run_init(r, 0);
	feed_str(r, s);
	return r->err;
}

static void expect_req(const struct seen *s, const char *method,
		       const char *target, int minor, bool keep, uint64_t body)
{
	cr_expect_str_eq(s->method, method);
	cr_expect_str_eq(s->target, target);
	cr_expect_eq(s->minor, minor);
	cr_expect_eq(s->keep_alive, keep, "%s %s keep-alive", method, target);
	cr_expect_eq(s->content_length, body);
}

static struct run r; /* big: keep it off the stack */

Test(http_parse, simple_get)
{
	static const char req[] = "GET /index.html?q=1 HTTP/1.1\r\nHost: a\r\n"
				  "User-Agent: t\r\nAccept: */*\r\n\r\n";

	cr_assert_eq(parse_one(req, &r), 0);
	cr_assert_eq(r.n, 1);
	expect_req(&r.req[0], "GET", "/index.html?q=1", 1, true, 0);
	cr_expect_eq(r.p.req.headers, 3);
	cr_expect_eq(r.p.req.head_len, sizeof(req) - 1);
}

Test(http_parse, hundred_pipelined)
{
	static char buf[100 * 128];
	size_t len = 0;

	for (int i = 0; i < 100; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
					"GET /%d HTTP/1.1\r\nHost: h\r\n%s\r\n",
					i,
					i == 99 ? "Connection: close\r\n" : "");
	run_init(&r, 0);
	feed(&r, buf, len);
	cr_assert_eq(r.err, 0);
	cr_assert_eq(r.n, 100);
	for (int i = 0; i < 100; i++) {
		char t[16];
		snprintf(t, sizeof(t), "/%d", i);
		expect_req(&r.req[i], "GET", t, 1, i != 99, 0);
	}
}

/* Three requests, one with a body, fed a byte at a time. */
static const char three[] = "POST /upload HTTP/1.1\r\nHost: a\r\n"
			    "Content-Length: 11\r\n\r\nhello world"
			    "GET /a HTTP/1.0\r\n\r\n"
			    "GET /b HTTP/1.1\r\nHost: b\r\n\r\n";

static void expect_three(void)
{
	cr_assert_eq(r.err, 0);
	cr_assert_eq(r.n, 3);
	expect_req(&r.req[0], "POST", "/upload", 1, true, 11);
	expect_req(&r.req[1], "GET", "/a", 0, false, 0);
	expect_req(&r.req[2], "GET", "/b", 1, true, 0);
}

Test(http_parse, byte_by_byte)
{
	run_init(&r, 0);
	for (size_t i = 0; i < sizeof(three) - 1; i++)
		feed(&r, three + i, 1);
	expect_three();
}

Test(http_parse, body_across_reads)
{
	for (size_t chunk = 2; chunk < 20; chunk++) {
		run_init(&r, 0);
		for (size_t i = 0; i < sizeof(three) - 1; i += chunk) {
			size_t n = sizeof(three) - 1 - i;
			feed(&r, three + i, n < chunk ? n : chunk);
		}
		expect_three();
	}
	/* A body whose first bytes look like a request is still body. */
	run_init(&r, 0);
	feed_str(&r,
		 "PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 19\r\n\r\n");
	cr_expect_eq(r.n, 0);
	feed_str(&r, "GET /no HTTP/1.1\r\n\r");
	cr_expect_eq(r.n, 1);
	feed_str(&r, "GET /yes HTTP/1.1\r\nHost: a\r\n\r\n");
	cr_assert_eq(r.err, 0);
	cr_assert_eq(r.n, 2);
	expect_req(&r.req[0], "PUT", "/x", 1, true, 19);
	expect_req(&r.req[1], "GET", "/yes", 1, true, 0);
	/* Content-Length: 0 ends at the head. */
	cr_assert_eq(parse_one("POST / HTTP/1.1\r\nHost: a\r\n"
			       "Content-Length: 0\r\n\r\n",
			       &r),
		     0);
	cr_expect_eq(r.n, 1);
}

Test(http_parse, split_at_every_offset)
{
	static const char two[] = "GET /first HTTP/1.1\r\nHost: x\r\n"
				  "Connection: keep-alive\r\n\r\n"
				  "HEAD /second HTTP/1.1\r\nHost: x\r\n"
				  "Connection: close\r\n\r\n";
	const size_t len = sizeof(two) - 1;

	for (size_t k = 0; k <= len; k++) {
		run_init(&r, 0);
		feed(&r, two, k);
		feed(&r, two + k, len - k);
		cr_assert_eq(r.err, 0, "split at %zu", k);
		cr_assert_eq(r.n, 2, "split at %zu", k);
		expect_req(&r.req[0], "GET", "/first", 1, true, 0);
		expect_req(&r.req[1], "HEAD", "/second", 1, false, 0);
	}
}

Test(http_parse, keep_alive_rules)
{
	static const struct {
		const char *req;
		bool keep;
	} cases[] = {
		{ "GET / HTTP/1.1\r\nHost: a\r\n\r\n", true },
		{ "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
		  false },
		{ "GET / HTTP/1.1\r\nHost: a\r\nConnection: CLOSE\r\n\r\n",
		  false },
		{ "GET / HTTP/1.1\r\nHost: a\r\nconnection: Upgrade, close\r\n"
		  "\r\n",
		  false },
		{ "GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive, "
		  "Upgrade\r\n\r\n",
		  true },
		{ "GET / HTTP/1.1\r\nHost: a\r\nConnection: closed\r\n\r\n",
		  true },
		{ "GET / HTTP/1.0\r\n\r\n", false },
		{ "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true },
		{ "GET / HTTP/1.0\r\nConnection:keep-alive  \r\n\r\n", true },
		{ "GET / HTTP/1.0\r\nConnection: keep-alive\r\n"
		  "Connection: close\r\n\r\n",
		  false },
		{ "GET / HTTP/1.2\r\nHost: a\r\n\r\n", true },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(parse_one(cases[i].req, &r), 0, "case %zu", i);
		cr_assert_eq(r.n, 1, "case %zu", i);
		cr_expect_eq(r.req[0].keep_alive, cases[i].keep, "case %zu: %s",
			     i, cases[i].req);
	}
}

Test(http_parse, line_endings)
{
	/* Bare LF ends lines too; empty lines before a request are skipped. */
	cr_assert_eq(parse_one("\r\n\nGET /lf HTTP/1.1\nHost: a\n\n", &r), 0);
	cr_assert_eq(r.n, 1);
	expect_req(&r.req[0], "GET", "/lf", 1, true, 0);
	cr_assert_eq(parse_one("GET / HTTP/1.1\r\nHost: a\n\r\n", &r), 0);
	cr_expect_eq(r.n, 1);
	/* No blank line yet: not complete, and no error. */
	cr_assert_eq(parse_one("GET / HTTP/1.1\r\nHost: a\r\n", &r), 0);
	cr_expect_eq(r.n, 0);
	feed_str(&r, "\r\n");
	cr_expect_eq(r.n, 1);
	/* A CR must be followed by LF. */
	cr_expect_eq(parse_one("GET / HTTP/1.1\rHost: a\r\n\r\n", &r),
		     -EBADMSG);
	cr_expect_eq(parse_one("GET / HTTP/1.1\r\nHost: a\r\r\n\r\n", &r),
		     -EBADMSG);
	cr_expect_eq(parse_one("GET / HTTP/1.1\r\nHost: a\r\n\rX", &r),
		     -EBADMSG);
}

Test(http_parse, malformed)
{
	static const char *bad[] = {
		"\x01\x02\x03",
		"GET\r\n\r\n",
		"GET /\r\n\r\n",
		"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
		"GET / HTTX/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.x\r\nHost: a\r\n\r\n",
		"GET / HTTP/11\r\nHost: a\r\n\r\n",
		"G(T / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nBad Name: x\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
		"GET / HTTP/1.1\r\n: empty\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: a\x01z\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n", /* no Host */
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: "
		"99999999999999999999999\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
		"Content-Length: 2\r\n\r\n",
		"VERYLONGMETHODNAME / HTTP/1.1\r\nHost: a\r\n\r\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(parse_one(bad[i], &r), -EBADMSG, "case %zu: %d", i,
			     r.err);
		cr_expect_eq(r.n, 0, "case %zu", i);
		cr_expect_eq(pw_http_error_status(r.err), 400);
	}
	/* The same Content-Length twice is fine. */
	cr_assert_eq(parse_one("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: "
			       "2\r\nContent-Length: 2\r\n\r\nok",
			       &r),
		     0);
	cr_expect_eq(r.n, 1);

	/* Errors stick, and nothing past the bad byte is consumed. */
	run_init(&r, 0);
	size_t used;
	cr_expect_eq(pw_http_parse(&r.p, "GET / HTTP/1.1\r\nA B", 19, &used),
		     -EBADMSG);
	cr_expect_eq(used, 17);
	cr_expect_eq(pw_http_parse(&r.p, "\r\n", 2, &used), -EBADMSG);
	cr_expect_eq(used, 0);
	cr_expect_eq(pw_http_parse(NULL, "x", 1, &used), -EINVAL);
	cr_expect_eq(pw_http_parse(&r.p, NULL, 1, &used), -EINVAL);
	cr_expect_eq(pw_http_parser_init(&r.p, 10), -EINVAL);
	/* Another major version: 505. */
	cr_expect_eq(parse_one("GET / HTTP/2.0\r\n\r\n", &r), -EPROTONOSUPPORT);
	cr_expect_eq(pw_http_error_status(r.err), 505);
	/* Chunked request bodies are refused. */
	cr_expect_eq(
		parse_one("POST / HTTP/1.1\r\nHost: a\r\nTransfer-"
			  "Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
			  &r),
		-ENOTSUP);
	cr_expect_eq(pw_http_error_status(r.err), 400);
}

Test(http_parse, caps)
{
	static char buf[20000];
	const char *start = "GET / HTTP/1.1\r\nHost: a\r\nX-Big: ";
	size_t n;

	/* A head of exactly the cap passes; one byte more does not. */
	for (int extra = 0; extra <= 1; extra++) {
		n = (size_t)sprintf(buf, "%s", start);
		size_t fill = 8192 - n - 4 + (size_t)extra;
		memset(buf + n, 'v', fill);
		n += fill;
		memcpy(buf + n, "\r\n\r\n", 4);
		n += 4;
		run_init(&r, 0);
		feed(&r, buf, n);
		if (!extra) {
			cr_expect_eq(r.err, 0);
			cr_expect_eq(r.n, 1);
			cr_expect_eq(r.p.req.head_len, 8192);
		} else {
			cr_expect_eq(r.err, -EMSGSIZE);
			cr_expect_eq(pw_http_error_status(r.err), 431);
		}
	}
	/* An endless header fails at the cap, however it arrives. */
	run_init(&r, 0);
	feed_str(&r, start);
	memset(buf, 'v', sizeof(buf));
	for (size_t i = 0; i < sizeof(buf) && !r.err; i += 1000)
		feed(&r, buf, 1000);
	cr_expect_eq(r.err, -EMSGSIZE);
	/* A configured cap. */
	run_init(&r, 64);
	feed_str(&r, "GET / HTTP/1.1\r\nHost: a\r\nCookie: 0123456789012345678"
		     "901234567890123456789\r\n\r\n");
	cr_expect_eq(r.err, -EMSGSIZE);
	/* Each pipelined request gets the whole cap. */
	run_init(&r, 64);
	for (int i = 0; i < 10; i++)
		feed_str(&r, "GET /0123456789 HTTP/1.1\r\nHost: a\r\n\r\n");
	cr_expect_eq(r.err, 0);
	cr_expect_eq(r.n, 10);
	/* A long target: 414. */
	n = (size_t)sprintf(buf, "GET /");
	memset(buf + n, 'a', PW_HTTP_TARGET_MAX);
	n += PW_HTTP_TARGET_MAX;
	n += (size_t)sprintf(buf + n, " HTTP/1.1\r\nHost: a\r\n\r\n");
	run_init(&r, 0);
	feed(&r, buf, n);
	cr_expect_eq(r.err, -ENAMETOOLONG);
	cr_expect_eq(pw_http_error_status(r.err), 414);
	/* The longest target kept. */
	n = (size_t)sprintf(buf, "GET /");
	memset(buf + n, 'a', PW_HTTP_TARGET_MAX - 2);
	n += PW_HTTP_TARGET_MAX - 2;
	n += (size_t)sprintf(buf + n, " HTTP/1.1\r\nHost: a\r\n\r\n");
	run_init(&r, 0);
	feed(&r, buf, n);
	cr_expect_eq(r.err, 0);
	cr_expect_eq(strlen(r.req[0].target), PW_HTTP_TARGET_MAX - 1);
}

Test(http_parse, responses)
{
	char date[PW_HTTP_DATE_LEN + 1];
	char buf[512];

	pw_http_date(date, 784111777);
	cr_expect_str_eq(date, "Sun, 06 Nov 1994 08:49:37 GMT");
	pw_http_date(date, 0);
	cr_expect_str_eq(date, "Thu, 01 Jan 1970 00:00:00 GMT");
	cr_expect_eq(strlen(date), PW_HTTP_DATE_LEN);

	int n = pw_http_build(buf, sizeof(buf), 200, true,
			      "Sun, 06 Nov 1994 08:49:37 GMT", "Hello, world!",
			      13);
	const char *want = "HTTP/1.1 200 OK\r\nServer: pinwheel\r\n"
			   "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
			   "Content-Type: text/plain\r\nContent-Length: 13\r\n"
			   "Connection: keep-alive\r\n\r\nHello, world!";
	cr_assert_eq(n, (int)strlen(want));
	cr_expect_eq(memcmp(buf, want, (size_t)n), 0);
	cr_expect_eq(pw_http_build(buf, (size_t)n, 200, true, date,
				   "Hello, world!", 13),
		     -ENOSPC);
	cr_expect_eq(pw_http_build(buf, (size_t)n + 1, 200, true,
				   "Sun, 06 Nov 1994 08:49:37 GMT",
				   "Hello, world!", 13),
		     n);
	n = pw_http_build(buf, sizeof(buf), 431, false, date, NULL, 0);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	cr_expect(strstr(buf,
			 "HTTP/1.1 431 Request Header Fields Too Large\r\n"));
	cr_expect(strstr(buf, "Content-Length: 0\r\n"));
	cr_expect(strstr(buf, "Connection: close\r\n\r\n"));
	cr_expect_eq(pw_http_build(buf, sizeof(buf), 99, true, date, NULL, 0),
		     -EINVAL);

	struct pw_http_canned c;
	size_t len;
	cr_assert_eq(pw_http_canned_init(&c, "Hello, world!", 13, 784111777),
		     0);
	const char *keep = pw_http_canned_get(&c, true, &len);
	cr_expect_eq(len, strlen(want));
	cr_expect_eq(memcmp(keep, want, len), 0);
	const char *close = pw_http_canned_get(&c, false, &len);
	cr_expect_eq(memcmp(close + len - 13, "Hello, world!", 13), 0);
	cr_expect(memmem(close, len, "Connection: close\r\n", 19));
	cr_expect_eq(pw_http_canned_tick(&c, 784111777), 0);
	cr_expect_eq(pw_http_canned_tick(&c, 784111778), 1);
	keep = pw_http_canned_get(&c, true, &len);
	cr_expect(memmem(keep, len, "08:49:38 GMT", 12));
	cr_expect_eq(pw_http_canned_tick(&c, 784111778), 0);
	static char big[300];
	cr_expect_eq(pw_http_canned_init(&c, big, sizeof(big), 0), -EMSGSIZE);
}

/* ---- the fast path against the state machine ---- */

/*
 * A whole buffer given at once goes through the fast path wherever it
 * can; the same buffer given a byte at a time never can (a head does not
 * fit in one byte), so it is parsed by the state machine alone. Both
 * must see the same requests, errors and byte counts.
 */

#define MAXEV  64
#define GENMAX 65536

/* One call outcome: a request (1), the end of the input (0), an error. */
struct event {
	int ret;
	size_t used; /* bytes since the previous event */
	struct pw_http_req req;
};

struct drive {
	struct pw_http_parser p;
	struct event ev[MAXEV];
	unsigned n;
};

static struct drive whole, bytes;

static void drive_push(struct drive *d, int ret, size_t used)
{
	cr_assert_lt(d->n, MAXEV);
	d->ev[d->n].ret = ret;
	d->ev[d->n].used = used;
	d->ev[d->n].req = d->p.req;
	d->n++;
}

/* Parse @buf as one read, then each rest after a request, to the end. */
static void drive_whole(struct drive *d, size_t head_max, const char *buf,
			size_t len)
{
	size_t off = 0;

	d->n = 0;
	cr_assert_eq(pw_http_parser_init(&d->p, head_max), 0);
	for (;;) {
		size_t used = 99999;
		int ret = pw_http_parse(&d->p, buf + off, len - off, &used);

		cr_assert_leq(used, len - off);
		drive_push(d, ret, used);
		off += used;
		if (ret != 1)
			break;
	}
}

/* Parse @buf a byte per call. */
static void drive_bytes(struct drive *d, size_t head_max, const char *buf,
			size_t len)
{
	size_t acc = 0;

	d->n = 0;
	cr_assert_eq(pw_http_parser_init(&d->p, head_max), 0);
	for (size_t k = 0; k < len; k++) {
		size_t used = 99999;
		int ret = pw_http_parse(&d->p, buf + k, 1, &used);

		if (ret < 0) {
			cr_assert_eq(used, 0);
			drive_push(d, ret, acc);
			return;
		}
		cr_assert_eq(used, 1);
		acc++;
		if (ret == 1) {
			drive_push(d, 1, acc);
			acc = 0;
		}
	}
	drive_push(d, 0, acc);
}

/* Compare the two runs; on a difference, say which into @why. */
static bool same_events(char *why, size_t n)
{
	if (whole.n != bytes.n) {
		snprintf(why, n, "%u events whole, %u a byte at a time",
			 whole.n, bytes.n);
		return false;
	}
	for (unsigned i = 0; i < whole.n; i++) {
		const struct event *a = &whole.ev[i], *b = &bytes.ev[i];
		const struct pw_http_req *x = &a->req, *y = &b->req;

		if (a->ret != b->ret || a->used != b->used) {
			snprintf(why, n,
				 "event %u: returned %d after %zu bytes whole, "
				 "%d after %zu a byte at a time",
				 i, a->ret, a->used, b->ret, b->used);
			return false;
		}
		if (a->ret != 1)
			continue;
		if (x->method_len != y->method_len ||
		    x->target_len != y->target_len ||
		    memcmp(x->method, y->method, x->method_len + 1) ||
		    memcmp(x->target, y->target, x->target_len + 1) ||
		    x->minor != y->minor || x->keep_alive != y->keep_alive ||
		    x->content_length != y->content_length ||
		    x->head_len != y->head_len || x->headers != y->headers) {
			snprintf(why, n,
				 "request %u: whole \"%s\" \"%.40s\" %zu/%zu "
				 "1.%d keep %d len %llu head %zu headers %u; "
				 "bytes \"%s\" \"%.40s\" %zu/%zu 1.%d keep %d "
				 "len %llu head %zu headers %u",
				 i, x->method, x->target, x->method_len,
				 x->target_len, x->minor, x->keep_alive,
				 (unsigned long long)x->content_length,
				 x->head_len, x->headers, y->method, y->target,
				 y->method_len, y->target_len, y->minor,
				 y->keep_alive,
				 (unsigned long long)y->content_length,
				 y->head_len, y->headers);
			return false;
		}
	}
	return true;
}

/* @buf[0..@len) as a C literal (cut at 400 bytes), for failure reports. */
static const char *escaped(const char *buf, size_t len)
{
	static char out[4 * 400 + 16];
	size_t o = 0;

	for (size_t i = 0; i < len && i < 400; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '\r')
			o += (size_t)sprintf(out + o, "\\r");
		else if (c == '\n')
			o += (size_t)sprintf(out + o, "\\n");
		else if (c < ' ' || c >= 0x7f || c == '\\' || c == '"')
			o += (size_t)sprintf(out + o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	strcpy(out + o, len > 400 ? "..." : "");
	return out;
}

/* Parse @buf both ways and require the same outcome. */
static void differ(const char *buf, size_t len, size_t head_max,
		   const char *what)
{
	char why[1024];

	drive_whole(&whole, head_max, buf, len);
	drive_bytes(&bytes, head_max, buf, len);
	cr_assert(same_events(why, sizeof(why)),
		  "%s (head cap %zu): %s\nrequest (%zu bytes): \"%s\"", what,
		  head_max, why, len, escaped(buf, len));
	cr_assert_eq(bytes.p.fast_heads, 0, "%s: a byte took the fast path",
		     what);
}

/* ---- the request generator ---- */

struct gen {
	uint64_t s;
	char buf[GENMAX];
	size_t len;
	size_t head_max;
};

static uint64_t pick(struct gen *g, uint64_t n)
{
	return pw_test_rng(&g->s) % n;
}

static bool chance(struct gen *g, unsigned pct)
{
	return pick(g, 100) < pct;
}

static void put(struct gen *g, const char *s, size_t n)
{
	if (g->len + n > sizeof(g->buf))
		n = sizeof(g->buf) - g->len;
	memcpy(g->buf + g->len, s, n);
	g->len += n;
}

static void puts_(struct gen *g, const char *s)
{
	put(g, s, strlen(s));
}

static void putc_(struct gen *g, int c)
{
	char b = (char)c;

	put(g, &b, 1);
}

static const char *one_of(struct gen *g, const char *const *v, size_t n)
{
	return v[pick(g, n)];
}

#define ONE_OF(g, arr) one_of(g, arr, sizeof(arr) / sizeof((arr)[0]))

/* A line end: mostly CRLF or LF, now and then a broken one. */
static void gen_eol(struct gen *g)
{
	static const char *const bad[] = { "\r", "\r\r\n", "\n\r", "\r " };
	unsigned r = (unsigned)pick(g, 100);

	if (r < 50)
		puts_(g, "\r\n");
	else if (r < 99)
		puts_(g, "\n");
	else if (chance(g, 20))
		put(g, "\r", 2); /* CR NUL */
	else
		puts_(g, ONE_OF(g, bad));
}

/*
 * @n bytes of a field value (@lo ' ') or target (@lo '!'): printable;
 * with @spice, one of them any byte (a control, DEL, obs-text, or fine)
 * and, in a value, some tabs.
 */
static void gen_text(struct gen *g, size_t n, int lo, bool spice)
{
	size_t odd = spice && n ? pick(g, n) : n;

	for (size_t i = 0; i < n; i++) {
		int c = lo + (int)pick(g, (uint64_t)(0x7f - lo));

		if (i == odd)
			c = (int)pick(g, 256);
		else if (spice && lo == ' ' && chance(g, 5))
			c = '\t';
		putc_(g, c);
	}
}

static void gen_case(struct gen *g, const char *name)
{
	for (const char *c = name; *c; c++) {
		int ch = (unsigned char)*c;

		if (chance(g, 30))
			ch = ch >= 'a' && ch <= 'z' ? ch - 32 :
			     ch >= 'A' && ch <= 'Z' ? ch + 32 :
						      ch;
		putc_(g, ch);
	}
}

static void gen_method(struct gen *g)
{
	static const char *const m[] = {
		"GET",
		"GET",
		"GET",
		"GET",
		"POST",
		"HEAD",
		"PUT",
		"DELETE",
		"OPTIONS",
		"M-SEARCH",
		"!#$%&'*+-.^_`|~",
		"ABCDEFGHIJKLMNO",
		"x",
		"get",
		"ABCDEFGHIJKLMNOP",
		"G(T",
		"G T",
		"",
		"GET\t",
	};

	if (chance(g, 85))
		puts_(g, "GET");
	else
		puts_(g, ONE_OF(g, m));
}

static void gen_target(struct gen *g)
{
	static const size_t lens[] = { 1,    2,	   7,	 8,    9,   15,
				       16,   17,   63,	 64,   500, 1021,
				       1022, 1023, 1024, 1025, 2000 };
	static const char *const t[] = { "/", "/", "/index.html?q=1", "*",
					 "/a/b/c?d=e&f=g#h" };
	size_t n;

	if (chance(g, 1))
		return; /* none: two spaces in a row */
	if (chance(g, 70)) {
		puts_(g, ONE_OF(g, t));
		return;
	}
	n = lens[pick(g, sizeof(lens) / sizeof(lens[0]))];
	putc_(g, '/');
	gen_text(g, n - 1, '!', chance(g, 20));
}

static void gen_version(struct gen *g)
{
	static const char *const v[] = {
		"HTTP/1.2",   "HTTP/1.9", "HTTP/2.0", "HTTP/0.9",  "HTTP/1.x",
		"HTTX/1.1",   "HTTP/11",  "http/1.1", "HTTP/1.10", "HTTP/1.1 ",
		"HTTP/1.1\t", "HTTP/1.",  "HTTP/",    "",
	};
	unsigned r = (unsigned)pick(g, 100);

	if (r < 75)
		puts_(g, "HTTP/1.1");
	else if (r < 93)
		puts_(g, "HTTP/1.0");
	else
		puts_(g, ONE_OF(g, v));
}

/* A Content-Length value; *@len receives the body it asks for, or -1. */
static void gen_length(struct gen *g, long *len, long first)
{
	static const char *const bad[] = {
		"1x", "", "-1", "99999999999999999999999", "+5", "0x10", "5 5",
	};
	char num[32];
	long v = first >= 0 && chance(g, 90) ? first : (long)pick(g, 40);

	if (chance(g, 5)) {
		puts_(g, ONE_OF(g, bad));
		*len = -1;
		return;
	}
	if (chance(g, 5))
		puts_(g, chance(g, 50) ? "000" : "  ");
	snprintf(num, sizeof(num), "%ld", v);
	puts_(g, num);
	if (chance(g, 10))
		puts_(g, chance(g, 50) ? "  " : "\t");
	*len = v;
}

/* Field value of @name's kind. */
static void gen_value(struct gen *g, int kind, long *cl, long first_cl)
{
	static const char *const conn[] = {
		"close",
		"keep-alive",
		"Keep-Alive, Upgrade",
		"Upgrade, close",
		"closed",
		"CLOSE",
		"",
		"  close  ",
		"\tkeep-alive\t",
		"close,keep-alive",
		"keep-alive ,, close",
		"upgrade",
	};
	static const char *const host[] = { "127.0.0.1:18481", "a", "",
					    "example.com", "[::1]:80" };
	static const char *const te[] = { "chunked", "gzip, chunked", "" };
	static const size_t lens[] = { 0,  1,  5,  7,	8,   9,	  15,
				       16, 17, 40, 127, 128, 129, 200 };

	for (uint64_t n = chance(g, 20) ? 1 + pick(g, 3) : 0; n; n--)
		putc_(g, chance(g, 70) ? ' ' : '\t'); /* OWS */
	switch (kind) {
	case 1:
		puts_(g, ONE_OF(g, host));
		break;
	case 2:
		if (chance(g, 10)) {
			/* Around the 128 bytes kept of a value. */
			size_t n = 118 + pick(g, 13);

			for (size_t i = 0; i < n; i++)
				putc_(g, i == n - 5 ? 'c' : ',');
			puts_(g, "close");
		} else {
			puts_(g, ONE_OF(g, conn));
		}
		break;
	case 3:
		gen_length(g, cl, first_cl);
		break;
	case 4:
		puts_(g, ONE_OF(g, te));
		break;
	default:
		gen_text(g, lens[pick(g, sizeof(lens) / sizeof(lens[0]))], ' ',
			 chance(g, 10));
	}
	if (chance(g, 5))
		puts_(g, chance(g, 50) ? " \t " : " ");
}

/* One request, its body included. */
static void gen_request(struct gen *g)
{
	static const char *const names[] = {
		"Connection",
		"Content-Length",
		"Transfer-Encoding",
		"User-Agent",
		"Accept",
		"Accept-Encoding",
		"Cookie",
		"X-Forwarded-For",
		"Hostname",
		"Hos",
		"Connectio",
		"Content-Lengthy",
		"Transfer-Encodings",
		"X-A-Rather-Long-Header-Name-Over-24",
		"a",
		"!#$%&'*+-.^_`|~09",
	};
	static const char *const bad_names[] = {
		"Bad Name", "Host ",	"",    "X\x01Y",
		" folded",  "\tfolded", "X(Y", "X\x80",
	};
	size_t start = g->len, nh = pick(g, 7);
	long cl = -1, first_cl = -1;
	unsigned hosts = 1, host_at;
	bool http10;

	if (chance(g, 3))
		puts_(g, chance(g, 50) ? "\r\n" : "\n\r\n");
	gen_method(g);
	putc_(g, ' ');
	gen_target(g);
	putc_(g, ' ');
	http10 = chance(g, 15);
	if (http10)
		puts_(g, "HTTP/1.0");
	else
		gen_version(g);
	gen_eol(g);
	if (chance(g, 8))
		hosts = (unsigned)pick(g, 3); /* none, one or two */
	else if (http10)
		hosts = (unsigned)pick(g, 2);
	host_at = (unsigned)pick(g, nh + 1);
	for (size_t h = 0; h <= nh; h++) {
		int kind = 0;

		if (h == host_at) {
			for (unsigned k = 0; k < hosts; k++) {
				gen_case(g, "Host");
				puts_(g, ":");
				gen_value(g, 1, &cl, first_cl);
				gen_eol(g);
			}
		}
		if (h == nh)
			break;
		if (chance(g, 2)) {
			puts_(g, ONE_OF(g, bad_names));
			if (chance(g, 80))
				puts_(g, ": x");
			gen_eol(g);
			continue;
		}
		const char *name = chance(g, 2)	 ? "Host" :
				   chance(g, 25) ? names[pick(g, 3)] :
						   ONE_OF(g, names);
		if (!strcmp(name, "Host"))
			kind = 1;
		else if (!strcmp(name, "Connection"))
			kind = 2;
		else if (!strcmp(name, "Content-Length"))
			kind = 3;
		else if (!strcmp(name, "Transfer-Encoding"))
			kind = 4;
		if (kind == 4 && chance(g, 70))
			continue; /* keep chunked requests rare */
		gen_case(g, name);
		putc_(g, ':');
		gen_value(g, kind, &cl, first_cl);
		if (kind == 3 && first_cl < 0)
			first_cl = cl;
		gen_eol(g);
	}
	if (chance(g, 4)) {
		/* A head within 4 bytes of the cap, blank line included. */
		size_t have = g->len - start + 7 + 2 + 2;
		size_t want = g->head_max - 4 + (size_t)pick(g, 9);
		size_t n = want > have ? want - have : 0;

		puts_(g, "X-Big: ");
		for (size_t i = 0; i < n && g->len < sizeof(g->buf) - 64; i++)
			putc_(g, 'v');
		puts_(g, "\r\n");
	}
	gen_eol(g);
	if (chance(g, 4) && g->len > start) {
		/* One byte of the head changed to anything. */
		size_t at = start + pick(g, g->len - start);

		g->buf[at] = (char)pick(g, 256);
	}
	if (cl > 0) {
		/* The body: random bytes, or ones that look like a head. */
		for (long i = 0; i < cl && g->len < sizeof(g->buf); i++)
			putc_(g, chance(g, 50) ? 'A' + (int)(i % 26) :
						 "GET / HTTP/1.1\r\n"[i % 16]);
	}
}

static void generate(struct gen *g, uint64_t seed)
{
	static const size_t caps[] = { 64, 100, 128, 256, 1024 };
	unsigned n;

	g->s = seed ? seed : 1;
	g->len = 0;
	g->head_max = chance(g, 70) ? PW_HTTP_HEAD_MAX_DEFAULT :
				      caps[pick(g, 5)];
	n = chance(g, 60) ? 1 : chance(g, 75) ? 2 : 3;
	for (unsigned i = 0; i < n; i++)
		gen_request(g);
	if (chance(g, 5) && g->len)
		g->len = pick(g, g->len); /* cut short */
}

static struct gen gen;

Test(http_parse, differential_generated)
{
	uint64_t base = 0x5eed0001, cases = (uint64_t)(20000 * pw_test_scale());
	uint64_t reqs = 0, fast = 0, errs = 0;
	const char *env = getenv("PW_HTTP_PARSE_SEED");

	if (env) {
		base = strtoull(env, NULL, 0);
		cases = 1;
	}
	for (uint64_t i = 0; i < cases; i++) {
		uint64_t seed = base + i * 0x9e3779b97f4a7c15ull;
		char what[96];

		generate(&gen, seed);
		snprintf(what, sizeof(what),
			 "case %llu, seed 0x%llx (rerun with "
			 "PW_HTTP_PARSE_SEED=0x%llx)",
			 (unsigned long long)i, (unsigned long long)seed,
			 (unsigned long long)seed);
		differ(gen.buf, gen.len, gen.head_max, what);
		for (unsigned k = 0; k < whole.n; k++) {
			reqs += whole.ev[k].ret == 1;
			errs += whole.ev[k].ret < 0;
		}
		fast += whole.p.fast_heads;
	}
	/* The generator must exercise both paths: most requests go the fast
	 * way, and a good share of inputs are refused. */
	cr_log_info("%llu cases: %llu requests (%llu fast), %llu errors",
		    (unsigned long long)cases, (unsigned long long)reqs,
		    (unsigned long long)fast, (unsigned long long)errs);
	if (!env) {
		cr_expect_gt(fast, reqs / 2, "%llu of %llu requests fast",
			     (unsigned long long)fast,
			     (unsigned long long)reqs);
		cr_expect_gt(errs, cases / 10);
	}
}

/* Every byte value at each place a head has a rule for. */
Test(http_parse, differential_every_byte)
{
	static const char *const tmpl[] = {
		"@GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"G@T / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET@/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /@ HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /0123456@89abcdef HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /@0123456789abcdef HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / @TTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/@.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1@1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.@\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1@\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r@Host: a\r\n\r\n",
		"GET / HTTP/1.1\r\n@X: v\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nX-@: v\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nX@ v\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nX:@v\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a@b\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nX: 0123456@89abcdef\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a@\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHos@: a\r\nHost: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nConnectio@: close\r\n\r\n",
		"GET / HTTP/1.0\r\nConnection: keep-alive@\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nConnection: clos@\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nContent@Length: 5\r\n\r\nabcde",
		"GET / HTTP/1.1\r\nHost: a\r\nContent-Lengt@: 5\r\n\r\nabcde",
		("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1@\r\n\r\n"
		 "abcdefghijklmnopqrstuvwxyz"),
		"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encodin@: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n@\n",
		"GET / HTTP/1.1\r\nHost: a\r\n\r@",
		"GET / HTTP/1.1\r\nHost: a\n@",
	};
	char buf[256], what[64];

	for (size_t t = 0; t < sizeof(tmpl) / sizeof(tmpl[0]); t++) {
		const char *at = strchr(tmpl[t], '@');
		size_t len = strlen(tmpl[t]), pre = (size_t)(at - tmpl[t]);

		/* Twice over, so a request follows a fast one. */
		for (int c = 0; c < 256; c++) {
			for (int k = 0; k < 2; k++) {
				memcpy(buf + k * len, tmpl[t], len);
				buf[k * len + pre] = (char)c;
			}
			snprintf(what, sizeof(what),
				 "template %zu, byte 0x%02x", t, c);
			differ(buf, 2 * len, 0, what);
		}
	}
}

/* The fast path is taken for what wrk sends, one request or many. */
Test(http_parse, fast_path_taken)
{
	static const char wrk[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1:18481\r\n"
				  "\r\n";
	static char buf[16 * sizeof(wrk)];
	size_t len = 0;

	cr_assert_eq(parse_one(wrk, &r), 0);
	cr_assert_eq(r.n, 1);
	expect_req(&r.req[0], "GET", "/", 1, true, 0);
	cr_expect_eq(r.p.req.head_len, sizeof(wrk) - 1);
	cr_expect_eq(r.p.fast_heads, 1);

	for (int i = 0; i < 16; i++, len += sizeof(wrk) - 1)
		memcpy(buf + len, wrk, sizeof(wrk) - 1);
	run_init(&r, 0);
	feed(&r, buf, len);
	cr_assert_eq(r.err, 0);
	cr_assert_eq(r.n, 16);
	cr_expect_eq(r.p.fast_heads, 16);

	/* A head split across reads, and empty lines first, are left to
	 * the state machine. */
	run_init(&r, 0);
	feed(&r, wrk, 10);
	feed(&r, wrk + 10, sizeof(wrk) - 11);
	cr_assert_eq(r.n, 1);
	cr_expect_eq(r.p.fast_heads, 0);
	cr_assert_eq(parse_one("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", &r), 0);
	cr_assert_eq(r.n, 1);
	cr_expect_eq(r.p.fast_heads, 0);
}
/* ---- responses ------------------------------------------------------------ */

static int feed_resp(struct pw_http_resp_parser *p, const char *s, size_t *used)
{
	return pw_http_resp_parse(p, s, strlen(s), used);
}

Test(http_parse, resp_whole_and_split_anywhere)
{
	const char *r = "HTTP/1.1 200 OK\r\nServer: x\r\nContent-Length: 11\r\n"
			"\r\nhello world";
	size_t n = strlen(r), used;
	struct pw_http_resp_parser p;

	pw_http_resp_parser_init(&p);
	cr_assert_eq(feed_resp(&p, r, &used), 1);
	cr_expect_eq(used, n);
	cr_expect_eq(p.resp.status, 200);
	cr_expect_eq(p.resp.minor, 1);
	cr_expect(p.resp.keep_alive);
	cr_expect_eq(p.resp.content_length, 11);
	/* Every split point, and a byte at a time. */
	for (size_t cut = 0; cut <= n; cut++) {
		pw_http_resp_parser_init(&p);
		cr_assert_eq(pw_http_resp_parse(&p, r, cut, &used),
			     cut == n ? 1 : 0, "cut %zu", cut);
		cr_assert_eq(used, cut);
		if (cut == n)
			continue;
		cr_assert_eq(pw_http_resp_parse(&p, r + cut, n - cut, &used), 1,
			     "cut %zu", cut);
		cr_assert_eq(used, n - cut);
		cr_assert_eq(p.resp.status, 200);
	}
	pw_http_resp_parser_init(&p);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(pw_http_resp_parse(&p, r + i, 1, &used),
			     i == n - 1 ? 1 : 0, "byte %zu", i);
		cr_assert_eq(used, 1);
	}
	cr_expect_eq(p.resp.content_length, 11);
}

Test(http_parse, resp_pipelined)
{
	const char *r = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab"
			"HTTP/1.1 404 Not Found\nContent-Length: 0\n\n"
			"HTTP/1.1 204 No Content\r\n\r\n"
			"HTTP/1.1 500 Oops\r\nContent-Length: 3\r\n"
			"Connection: close\r\n\r\nxyz";
	size_t n = strlen(r), off = 0, used;
	struct pw_http_resp_parser p;
	int want[] = { 200, 404, 204, 500 };

	pw_http_resp_parser_init(&p);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(pw_http_resp_parse(&p, r + off, n - off, &used), 1,
			     "response %d", i);
		cr_expect_eq(p.resp.status, want[i]);
		cr_expect_eq(p.resp.keep_alive, i < 3, "response %d", i);
		off += used;
	}
	cr_expect_eq(off, n);
	cr_expect_eq(pw_http_resp_parse(&p, r, 0, &used), 0);
	cr_expect_eq(used, 0);
}

Test(http_parse, resp_bodies_and_connection)
{
	struct pw_http_resp_parser p;
	size_t used;
	static char big[70000];

	/* A large body fed in pieces. */
	pw_http_resp_parser_init(&p);
	cr_assert_eq(
		feed_resp(&p,
			  "HTTP/1.1 200 OK\r\ncontent-length:  65536 \r\n\r\n",
			  &used),
		0);
	for (int i = 0; i < 15; i++)
		cr_assert_eq(pw_http_resp_parse(&p, big, 4096, &used), 0);
	cr_assert_eq(pw_http_resp_parse(&p, big, sizeof(big), &used), 1);
	cr_expect_eq(used, 4096);
	cr_expect_eq(p.resp.content_length, 65536);

	/* HTTP/1.0 closes unless asked to keep the connection. */
	pw_http_resp_parser_init(&p);
	cr_expect_eq(feed_resp(&p,
			       "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
			       &used),
		     1);
	cr_expect(!p.resp.keep_alive);
	pw_http_resp_parser_init(&p);
	cr_expect_eq(feed_resp(&p,
			       "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n"
			       "Content-Length: 0\r\n\r\n",
			       &used),
		     1);
	cr_expect(p.resp.keep_alive);
	pw_http_resp_parser_init(&p);
	cr_expect_eq(
		feed_resp(&p,
			  "HTTP/1.1 200 OK\r\nConnection: upgrade, close\r\n"
			  "Content-Length: 0\r\n\r\n",
			  &used),
		1);
	cr_expect(!p.resp.keep_alive);
	/* 304 has no body whatever its headers say. */
	pw_http_resp_parser_init(&p);
	cr_expect_eq(
		feed_resp(&p,
			  "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n"
			  "\r\n",
			  &used),
		1);
	/* A long header line is skipped past its first bytes. */
	static char longh[2048];
	memset(longh, 'v', sizeof(longh) - 1);
	memcpy(longh, "X-Long: ", 8);
	pw_http_resp_parser_init(&p);
	cr_expect_eq(feed_resp(&p, "HTTP/1.1 200 OK\r\n", &used), 0);
	cr_expect_eq(feed_resp(&p, longh, &used), 0);
	cr_expect_eq(feed_resp(&p, "\r\nContent-Length: 1\r\n\r\nz", &used), 1);
}

Test(http_parse, resp_errors)
{
	static const struct {
		const char *text;
		int err;
	} cases[] = {
		{ "HTTP/2 200 OK\r\n\r\n", -EBADMSG },
		{ "HTTP/1.1 20 OK\r\n\r\n", -EBADMSG },
		{ "HTTP/1.1 200OK\r\n\r\n", -EBADMSG },
		{ "http/1.1 200 OK\r\n\r\n", -EBADMSG },
		{ "HTTP/1.1 200 OK\r\nNo colon\r\n\r\n", -EBADMSG },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", -EBADMSG },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
		  "Content-Length: 2\r\n\r\n",
		  -EBADMSG },
		{ "HTTP/1.1 200 OK\rX\n\r\n", -EBADMSG },
		{ "HTTP/1.1 200 OK\r\nA: \x01\r\n\r\n", -EBADMSG },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
		  -ENOTSUP },
		{ "HTTP/1.1 200 OK\r\n\r\n", -ENOTSUP },
	};
	struct pw_http_resp_parser p;
	size_t used;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pw_http_resp_parser_init(&p);
		cr_expect_eq(feed_resp(&p, cases[i].text, &used), cases[i].err,
			     "case %zu", i);
		/* Sticky. */
		cr_expect_eq(feed_resp(&p, "HTTP/1.1 200 OK\r\n", &used),
			     cases[i].err, "case %zu", i);
	}
	/* A head past the cap. */
	static char hdr[1024];
	memset(hdr, 'a', sizeof(hdr) - 3);
	memcpy(hdr, "X: ", 3);
	hdr[sizeof(hdr) - 3] = '\r';
	hdr[sizeof(hdr) - 2] = '\n';
	pw_http_resp_parser_init(&p);
	int rc = feed_resp(&p, "HTTP/1.1 200 OK\r\n", &used);
	for (int i = 0; i < 100 && rc == 0; i++)
		rc = feed_resp(&p, hdr, &used);
	cr_expect_eq(rc, -EMSGSIZE);
	cr_expect_eq(pw_http_resp_parse(NULL, "x", 1, &used), -EINVAL);
	cr_expect_eq(pw_http_resp_parse(&p, "x", 1, NULL), -EINVAL);
}

/* Parse @text whole into a fresh parser; its result. */
static int resp_one(struct pw_http_resp_parser *p, const char *text,
		    size_t *used)
{
	pw_http_resp_parser_init(p);
	return feed_resp(p, text, used);
}

Test(http_parse, resp_status_lines)
{
	static const struct {
		const char *text;
		int status, minor;
	} good[] = {
		{ "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", 200, 1 },
		{ "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n", 200, 1 },
		{ "HTTP/1.1 404 Not Found Here\r\nContent-Length: 0\r\n\r\n",
		  404, 1 },
		{ "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 200, 0 },
		{ "HTTP/1.2 200 OK\r\nContent-Length: 0\r\n\r\n", 200, 1 },
		{ "HTTP/1.1 100 Continue\r\n\r\n", 100, 1 },
		{ "HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n", 999, 1 },
		{ "\r\n\nHTTP/1.1 201 Created\nContent-Length: 0\n\n", 201, 1 },
		{ "HTTP/1.1 200 \x80\xff reason\r\nContent-Length: 0\r\n\r\n",
		  200, 1 },
	};
	static const char *const bad[] = {
		"HTTP/1.1 099 Low\r\n\r\n", "HTTP/1.1  200 OK\r\n\r\n",
		"HTTP/1.x 200 OK\r\n\r\n",  " HTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 200\tOK\r\n\r\n",
		"HTTP/1.1 -20 OK\r\n\r\n",  "HTTP/1.1\t200 OK\r\n\r\n",
		"HTTP/1.1 200\r\r\n\r\n",   "HTTP/11 200 OK\r\n\r\n",
		"HTTP/1.1 20\r\n\r\n",	    "ICY 200 OK\r\n\r\n",
	};
	struct pw_http_resp_parser p;
	size_t used;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_expect_eq(resp_one(&p, good[i].text, &used), 1, "good %zu",
			     i);
		cr_expect_eq(used, strlen(good[i].text), "good %zu", i);
		cr_expect_eq(p.resp.status, good[i].status, "good %zu", i);
		cr_expect_eq(p.resp.minor, good[i].minor, "good %zu", i);
		cr_expect_eq(p.resp.content_length, 0, "good %zu", i);
		cr_expect_eq(p.resp.head_len, strlen(good[i].text), "good %zu",
			     i);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(resp_one(&p, bad[i], &used), -EBADMSG, "bad %zu",
			     i);
	/* The head's length leaves the body out. */
	cr_expect_eq(resp_one(&p,
			      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab",
			      &used),
		     1);
	cr_expect_eq(p.resp.head_len, used - 2);
}

Test(http_parse, resp_content_length)
{
	static const struct {
		const char *head;
		uint64_t len;
	} good[] = {
		{ "Content-Length: 007", 7 },
		{ "Content-Length:5", 5 },
		{ "Content-Length: \t3\t ", 3 },
		{ "CONTENT-LENGTH: 2", 2 },
		{ "content-Length: 2\r\nContent-Length: 2", 2 },
		{ "Content-Length: 1844674407370955161", 1844674407370955161u },
		{ "Content-Length: 0", 0 },
	};
	static const char *const bad[] = {
		"Content-Length: 18446744073709551616",
		"Content-Length: ",
		"Content-Length: +5",
		"Content-Length: -5",
		"Content-Length: 5 5",
		"Content-Length: 5,5",
		"Content-Length: 0x10",
		"Content-Length: 2\r\nContent-Length: 3",
		"Content-Length : 5",
	};
	static const char *const unknown[] = { "Content-Lengthy: 5",
					       "X-Content-Length: 5",
					       "Content-Lengt: 5" };
	struct pw_http_resp_parser p;
	char text[256];
	size_t used;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "HTTP/1.1 200 OK\r\n%s\r\n\r\n",
			 good[i].head);
		cr_expect_eq(resp_one(&p, text, &used), good[i].len ? 0 : 1,
			     "good %zu", i);
		cr_expect_eq(used, strlen(text), "good %zu", i);
		cr_expect_eq(p.resp.content_length, good[i].len, "good %zu", i);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "HTTP/1.1 200 OK\r\n%s\r\n\r\n",
			 bad[i]);
		cr_expect_eq(resp_one(&p, text, &used), -EBADMSG, "bad %zu", i);
	}
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		snprintf(text, sizeof(text), "HTTP/1.1 200 OK\r\n%s\r\n\r\n",
			 unknown[i]);
		cr_expect_eq(resp_one(&p, text, &used), -ENOTSUP,
			     "no length: %zu", i);
	}
	/* A body of 3, then the next response right behind it. */
	const char *two = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
			  "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n"
			  "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz";
	size_t off = 0, n = strlen(two);
	uint64_t want[] = { 3, 0, 1 };

	pw_http_resp_parser_init(&p);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(pw_http_resp_parse(&p, two + off, n - off, &used),
			     1, "response %d", i);
		cr_expect_eq(p.resp.content_length, want[i], "response %d", i);
		off += used;
	}
	cr_expect_eq(off, n);
}

Test(http_parse, resp_chunked_and_unknown_lengths_refused)
{
	static const struct {
		const char *text;
		int rc;
	} cases[] = {
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
		  -ENOTSUP },
		{ "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n"
		  "Content-Length: 5\r\n\r\n",
		  -ENOTSUP },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n",
		  -ENOTSUP },
		{ "HTTP/1.0 200 OK\r\n\r\n", -ENOTSUP },
		{ "HTTP/1.1 500 Oops\r\nConnection: close\r\n\r\n", -ENOTSUP },
		/* No body at all: nothing to refuse. */
		{ "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n"
		  "\r\n",
		  1 },
		{ "HTTP/1.1 304 Not Modified\r\n\r\n", 1 },
		{ "HTTP/1.1 101 Switching Protocols\r\n\r\n", 1 },
	};
	struct pw_http_resp_parser p;
	size_t used;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_eq(resp_one(&p, cases[i].text, &used), cases[i].rc,
			     "case %zu", i);
		if (cases[i].rc == 1)
			cr_expect_eq(p.resp.content_length, 0, "case %zu", i);
	}
}

Test(http_parse, resp_bad_input)
{
	static const struct {
		const char *text;
		size_t len; /* 0: strlen */
	} cases[] = {
		{ "HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n", 0 }, /* obs-fold */
		{ "HTTP/1.1 200 OK\r\n: b\r\n\r\n", 0 },
		{ "HTTP/1.1 200 OK\r\nA\x80: b\r\n\r\n", 0 },
		{ "HTTP/1.1 200 OK\r\nA: b\x7f\r\n\r\n", 0 },
		{ "HTTP/1.1 200 OK\r\nA: b\0c\r\n\r\n", 27 },
		{ "HTTP/1.1 200 OK\0\r\n\r\n", 20 },
		{ "HTTP/1.1 200 OK\r\r\n\r\n", 0 },
		{ "HTTP/1.1 200 OK\r\nA: b\r\n\rX", 0 },
		{ "HTTP/1.1 200 OK\r\nA b\r\n\r\n", 0 },
		{ "HTTP/1.1 200 OK\r\n\tA: b\r\n\r\n", 0 },
	};
	struct pw_http_resp_parser p;
	size_t used;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = cases[i].len ? cases[i].len :
					    strlen(cases[i].text);

		pw_http_resp_parser_init(&p);
		cr_expect_eq(pw_http_resp_parse(&p, cases[i].text, len, &used),
			     -EBADMSG, "case %zu", i);
		cr_expect_leq(used, len, "case %zu", i);
		cr_expect_eq(pw_http_resp_parse(&p, "\r\n", 2, &used), -EBADMSG,
			     "sticky: case %zu", i);
	}
	/* A CR at the end of one read, then not an LF in the next. */
	pw_http_resp_parser_init(&p);
	cr_expect_eq(feed_resp(&p, "HTTP/1.1 200 OK\r", &used), 0);
	cr_expect_eq(feed_resp(&p, "X\n\r\n", &used), -EBADMSG);
	pw_http_resp_parser_init(&p);
	cr_expect_eq(feed_resp(&p, "\r", &used), 0);
	cr_expect_eq(feed_resp(&p, "\r\n", &used), -EBADMSG);
	/* A control byte past the bytes looked at is still refused. */
	static char longv[400];
	memset(longv, 'v', sizeof(longv) - 1);
	memcpy(longv, "HTTP/1.1 200 OK\r\nX: ", 20);
	longv[300] = '\x01';
	cr_expect_eq(resp_one(&p, longv, &used), -EBADMSG);
	pw_http_resp_parser_init(&p);
	cr_expect_eq(pw_http_resp_parse(&p, longv, 280, &used), 0);
	cr_expect_eq(feed_resp(&p, longv + 280, &used), -EBADMSG);
	/* NULL and empty input. */
	pw_http_resp_parser_init(NULL);
	pw_http_resp_parser_init(&p);
	cr_expect_eq(pw_http_resp_parse(&p, NULL, 0, &used), 0);
	cr_expect_eq(used, 0);
	cr_expect_eq(pw_http_resp_parse(&p, NULL, 1, &used), -EINVAL);
}

/* What a stream of responses parses into, the final result last. */
struct resp_trace {
	int n, rc;
	struct pw_http_resp r[16];
	size_t used[16];
};

/* Parse @buf[0..@len) cut at @cut1 <= @cut2 into three reads. */
static void resp_trace(const char *buf, size_t len, size_t cut1, size_t cut2,
		       struct resp_trace *t)
{
	static struct pw_http_resp_parser p;
	size_t ends[3] = { cut1, cut2, len }, at = 0, used, start = 0;

	memset(t, 0, sizeof(*t));
	pw_http_resp_parser_init(&p);
	for (int k = 0; k < 3 && t->rc >= 0; k++) {
		while (at < ends[k]) {
			t->rc = pw_http_resp_parse(&p, buf + at, ends[k] - at,
						   &used);
			at += used;
			if (t->rc < 0)
				break;
			if (t->rc == 0)
				continue;
			cr_assert_lt(t->n, 16);
			t->r[t->n] = p.resp;
			t->used[t->n++] = at - start;
			start = at;
		}
	}
}

static bool same_trace(const struct resp_trace *a, const struct resp_trace *b)
{
	if (a->n != b->n || (a->rc < 0) != (b->rc < 0) ||
	    (a->rc < 0 && a->rc != b->rc))
		return false;
	for (int i = 0; i < a->n; i++)
		if (a->used[i] != b->used[i] ||
		    a->r[i].status != b->r[i].status ||
		    a->r[i].minor != b->r[i].minor ||
		    a->r[i].keep_alive != b->r[i].keep_alive ||
		    a->r[i].content_length != b->r[i].content_length ||
		    a->r[i].head_len != b->r[i].head_len)
			return false;
	return true;
}

/*
 * A stream of varied responses, and the same with an error at the end,
 * cut into three reads at every pair of places: the responses, their
 * lengths and the error are those of the stream read whole.
 */
Test(http_parse, resp_split_across_buffers)
{
	static char stream[1024], bad[1100];
	static const char *const parts[] = {
		"\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab",
		"HTTP/1.0 200 OK\nConnection: keep-alive\nContent-Length: 1\n\nz",
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
		"HTTP/1.1 503 Busy\r\nX-Long: ",
		NULL, /* a long value: past the line buffer */
		"\r\nConnection: x, Close\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\n",
	};
	struct resp_trace whole, cut;
	size_t len = 0, blen;

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		if (!parts[i]) {
			memset(stream + len, 'q', 300);
			len += 300;
			continue;
		}
		memcpy(stream + len, parts[i], strlen(parts[i]));
		len += strlen(parts[i]);
	}
	memcpy(bad, stream, len);
	memcpy(bad + len, "HTTP/1.1 200 OK\r\nA: \x02\r\n\r\n", 26);
	blen = len + 26;

	resp_trace(stream, len, 0, 0, &whole);
	cr_assert_eq(whole.n, 5, "responses: %d, rc %d", whole.n, whole.rc);
	cr_expect_eq(whole.r[1].keep_alive, true);
	cr_expect_eq(whole.r[3].status, 503);
	cr_expect_eq(whole.r[3].keep_alive, false);
	for (size_t a = 0; a <= len; a++)
		for (size_t b = a; b <= len; b += 3) {
			resp_trace(stream, len, a, b, &cut);
			cr_assert(same_trace(&whole, &cut), "cuts %zu %zu", a,
				  b);
		}
	resp_trace(bad, blen, 0, 0, &whole);
	cr_assert_eq(whole.n, 5);
	cr_assert_eq(whole.rc, -EBADMSG);
	for (size_t a = 0; a <= blen; a += 2)
		for (size_t b = a; b <= blen; b += 5) {
			resp_trace(bad, blen, a, b, &cut);
			cr_assert(same_trace(&whole, &cut), "cuts %zu %zu", a,
				  b);
		}
}

/*
 * A response head that passes the 64 KiB cap fails the same way wherever
 * the reads end: -EBADMSG when a byte under the cap is already wrong (a
 * control byte, a CR with no LF after it), else -EMSGSIZE (a CR last
 * under the cap may yet meet its LF).
 */
Test(http_parse, resp_cap_split_anywhere)
{
	static char buf[PW_HTTP_RESP_HEAD_MAX + 64];
	static const struct {
		const char *tail; /* from 10 bytes under the cap */
		int err;
	} cases[] = {
		{ "X-B: \x01zzzzzzzzzzzzzzzzzzzz\r\n\r\n", -EBADMSG },
		{ "X-B: zzzz\r\nX-C: zzzzzzzzzzzz\r\n\r\n", -EMSGSIZE },
		{ "X-B: zzzzzzz\x01zzzzzzzzzzzzzzzzzz\r\n\r\n", -EMSGSIZE },
		{ "X-B: z\rzzzzzzzzzzzzzzzzzzzzzzz\r\n\r\n", -EBADMSG },
		{ "X-B: zzzz\rzzzzzzzzzzzzzzzzzzzzz\r\n\r\n", -EMSGSIZE },
		{ "X-B: zzzz\r\n", -EMSGSIZE },
	};
	static const char status[] = "HTTP/1.1 200 OK\r\nX-Pad: ";
	size_t pre = PW_HTTP_RESP_HEAD_MAX - 10;
	struct resp_trace whole, cut;

	memcpy(buf, status, sizeof(status) - 1);
	memset(buf + sizeof(status) - 1, 'p', pre - sizeof(status) - 1);
	memcpy(buf + pre - 2, "\r\n", 2);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		size_t len = pre + strlen(cases[c].tail);

		memcpy(buf + pre, cases[c].tail, strlen(cases[c].tail));
		resp_trace(buf, len, 0, 0, &whole);
		cr_assert_eq(whole.n, 0);
		cr_assert_eq(whole.rc, cases[c].err, "case %zu: %d", c,
			     whole.rc);
		for (size_t a = pre - 3; a <= len; a++)
			for (size_t b = a; b <= len; b++) {
				resp_trace(buf, len, a, b, &cut);
				cr_assert(same_trace(&whole, &cut),
					  "case %zu, cuts %zu %zu: %d", c, a, b,
					  cut.rc);
			}
	}
}
