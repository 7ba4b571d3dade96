/* SPDX-License-Identifier: MIT */
/*
 * test_http_parse.c - the HTTP/1.1 request parser of `pinwheel http`:
 * pipelining, arrival a byte at a time and split at every offset, bodies
 * across reads, keep-alive rules, caps, malformed input; the responses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "../apps/http_parse.h"

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
