/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_http_parse.c - the HTTP/1.1 parser: requests as
 * `pinwheel http` reads them, responses as `pinwheel load` reads them.
 *
 *   bm_http_parse_wrk	      one wrk-style GET (Host only) per operation,
 *			      the whole request in one buffer
 *   bm_http_parse_pipelined  16 such requests in one buffer, parsed one
 *			      after the other; time per request
 *   bm_http_parse_resp	      one response of `pinwheel http` (five
 *			      header lines, a 13-byte body) per operation
 *
 * The parser is set up once; each message starts where the last ended,
 * as on a keep-alive connection.
 */
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "apps/http_parse.h"

#define BATCH	 1024
#define PIPELINE 16

static const char wrk_req[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1:18481\r\n\r\n";

static struct pw_http_parser parser;
static struct pw_http_resp_parser resp_parser;

/* Parse every request in @buf; returns how many were complete. */
static unsigned parse_all(const char *buf, size_t len)
{
	unsigned n = 0;

	while (len) {
		size_t used;
		int rc = pw_http_parse(&parser, buf, len, &used);

		if (rc != 1)
			break;
		n++;
		buf += used;
		len -= used;
	}
	return n;
}

static void bm_http_parse_wrk(struct pw_bench *b)
{
	const size_t len = sizeof(wrk_req) - 1;
	uint64_t done = 0;

	pw_http_parser_init(&parser, 0);
	while (pw_bench_run(b, BATCH))
		for (int i = 0; i < BATCH; i++)
			done += parse_all(wrk_req, len);
	if (done && parser.req.head_len != len)
		pw_bench_skip(b, "the request did not parse");
}
PW_BENCH(bm_http_parse_wrk);

static void bm_http_parse_pipelined(struct pw_bench *b)
{
	static char buf[PIPELINE * sizeof(wrk_req)];
	const size_t one = sizeof(wrk_req) - 1;
	size_t len = 0;
	uint64_t done = 0;

	for (int i = 0; i < PIPELINE; i++, len += one)
		memcpy(buf + len, wrk_req, one);
	pw_http_parser_init(&parser, 0);
	/* One iteration is one request: a batch is BATCH / PIPELINE
	 * buffers. */
	while (pw_bench_run(b, BATCH))
		for (int i = 0; i < BATCH / PIPELINE; i++)
			done += parse_all(buf, len);
	if (done && parser.req.head_len != one)
		pw_bench_skip(b, "the requests did not parse");
}
PW_BENCH(bm_http_parse_pipelined);

static void bm_http_parse_resp(struct pw_bench *b)
{
	static char resp[PW_HTTP_CANNED_MAX + 64];
	char date[PW_HTTP_DATE_LEN + 1];
	uint64_t done = 0;
	size_t used;
	int len;

	pw_http_date(date, 784111777);
	len = pw_http_build(resp, sizeof(resp), 200, true, date,
			    "Hello, world!", 13);
	pw_http_resp_parser_init(&resp_parser);
	while (pw_bench_run(b, BATCH))
		for (int i = 0; i < BATCH; i++)
			done += pw_http_resp_parse(&resp_parser, resp,
						   (size_t)len, &used) == 1;
	if (done && resp_parser.resp.status != 200)
		pw_bench_skip(b, "the response did not parse");
}
PW_BENCH(bm_http_parse_resp);
