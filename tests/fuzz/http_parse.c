/* SPDX-License-Identifier: MIT */
/*
 * http_parse.c - the libFuzzer target of the HTTP/1.1 parsers of
 * apps/http_parse.h: requests (pw_http_parse) and responses
 * (pw_http_resp_parse). `make fuzz` builds it with ASan and UBSan.
 *
 * Differential. Each input goes through both parsers three ways: as one
 * read; a byte per read; and cut into reads whose lengths a small PRNG
 * draws, seeded from a hash of the input, so that a finding reproduces
 * from its file alone. Every read is copied into a heap block of exactly
 * its size, so AddressSanitizer stops a read past its end. The three runs
 * must give the same outcomes in the same order: each message with its
 * fields (method, target, version, keep-alive, Content-Length, the
 * length and chunked flags, head length, header count; for a response
 * its status) and the bytes it took, then the error and its code, or the
 * bytes left over at the end. The one exception is written in
 * http_parse.h: on an error the response parser reports the bytes it
 * looked at, which depend on where the reads end, so for responses only
 * the error code is compared.
 *
 * Invariants, on every call: *used never exceeds the read; 0 means all of
 * it was consumed; a message takes at least one byte of the call and,
 * since the previous outcome, exactly its head and body (head_len plus
 * Content-Length, empty lines before it included); its fields are within
 * their bounds; an error is one the header lists (a request error has a
 * status other than 500) and is sticky (a later call returns it,
 * consuming nothing), so no message follows it; a byte per read never
 * takes the request parser's fast path.
 *
 * The caps are reached by short inputs. The request head cap is drawn
 * from the same hash: the default for half the inputs, else one of a few
 * small caps. The response head cap is fixed (64 KiB), so for a quarter
 * of the inputs the responses start with a padding prefix, a status line
 * and one long header line, that leaves a few bytes to 200 of room under
 * the cap; the input then goes on from a header line. The prefix is one
 * read in every run (the whole run reads it with the input) and the
 * input is cut after it.
 *
 * A disagreement or a broken invariant prints what differs and aborts;
 * libFuzzer keeps the input as a crash file.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/http_parse.h"

/* One outcome of a run. */
struct outcome {
	int ret;      /* 1: a message; 0: the input ended; < 0: an error */
	size_t bytes; /* input bytes since the previous outcome */
	int status, minor;
	bool keep_alive;
	unsigned flags; /* F_* at the end of the message */
	uint64_t content_length;
	size_t head_len;
	unsigned headers;
	size_t method_len, target_len;
	uint64_t target_hash;
	char method[PW_HTTP_METHOD_MAX];
	char target[33]; /* the target's start, for the report */
};

enum { F_LENGTH = 1, F_CHUNKED = 2, F_CLOSE = 4, F_KEEP = 8 };

/* The outcomes of one run, in order. */
struct trace {
	struct outcome *o;
	size_t n, cap;
};

/* What the driver needs of one parser. */
struct side {
	const char *name;
	void (*init)(size_t head_max);
	int (*parse)(const char *buf, size_t len, size_t *used);
	void (*record)(struct outcome *o); /* the message just parsed */
	void (*check_error)(int err);	   /* an error it returned */
	bool error_bytes; /* an error's byte count is part of the outcome */
};

enum cut { CUT_WHOLE, CUT_BYTES, CUT_RANDOM };

static const char *const cut_name[] = { "whole", "a byte per read",
					"in random reads" };

static struct pw_http_parser req_parser;
static struct pw_http_resp_parser resp_parser;
static struct trace traces[3];
static size_t input_len, input_cap;
static char *stream; /* the padding prefix, then the input */
static size_t stream_cap;

__attribute__((format(printf, 1, 2), noreturn)) static void
fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr,
		"http_parse fuzz: input of %zu bytes, request head cap %zu: ",
		input_len, input_cap);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static uint64_t fnv1a(const uint8_t *s, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * UINT64_C(0x100000001b3);
	return h;
}

/* xorshift64*; @s is never 0. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(0x2545f4914f6cdd1d);
}

static struct outcome *push(struct trace *t)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct outcome *o = realloc(t->o, cap * sizeof(*o));

		if (!o)
			abort();
		t->o = o;
		t->cap = cap;
	}
	memset(&t->o[t->n], 0, sizeof(t->o[0]));
	return &t->o[t->n++];
}

/* ---- the two parsers ---------------------------------------------------- */

static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static void req_init(size_t head_max)
{
	if (pw_http_parser_init(&req_parser, head_max))
		fail("pw_http_parser_init(%zu) failed", head_max);
}

static int req_parse(const char *buf, size_t len, size_t *used)
{
	return pw_http_parse(&req_parser, buf, len, used);
}

/* The request's method and target: lengths, terminators and bytes. */
static void req_check_line(const struct pw_http_req *r)
{
	if (!r->method_len || r->method_len >= PW_HTTP_METHOD_MAX ||
	    strlen(r->method) != r->method_len)
		fail("method of %zu bytes", r->method_len);
	for (size_t i = 0; i < r->method_len; i++)
		if (!is_tchar((unsigned char)r->method[i]))
			fail("method byte 0x%02x", (unsigned char)r->method[i]);
	if (!r->target_len || r->target_len >= PW_HTTP_TARGET_MAX ||
	    strlen(r->target) != r->target_len)
		fail("target of %zu bytes", r->target_len);
	for (size_t i = 0; i < r->target_len; i++)
		if ((unsigned char)r->target[i] <= ' ' ||
		    (unsigned char)r->target[i] >= 0x7f)
			fail("target byte 0x%02x", (unsigned char)r->target[i]);
	if (r->minor != 0 && r->minor != 1)
		fail("request minor version %d", r->minor);
}

static void req_record(struct outcome *o)
{
	const struct pw_http_parser *p = &req_parser;
	const struct pw_http_req *r = &p->req;

	req_check_line(r);
	if (r->head_len > p->head_max)
		fail("head of %zu bytes over the cap", r->head_len);
	if (p->te)
		fail("a Transfer-Encoding request accepted");
	o->minor = r->minor;
	o->keep_alive = r->keep_alive;
	o->flags = (p->have_len ? F_LENGTH : 0) | (p->close ? F_CLOSE : 0) |
		   (p->keep ? F_KEEP : 0);
	o->content_length = r->content_length;
	o->head_len = r->head_len;
	o->headers = r->headers;
	o->method_len = r->method_len;
	o->target_len = r->target_len;
	o->target_hash = fnv1a((const uint8_t *)r->target, r->target_len,
			       UINT64_C(0xcbf29ce484222325));
	memcpy(o->method, r->method, r->method_len + 1);
	snprintf(o->target, sizeof(o->target), "%s", r->target);
}

/* A request error is one the server has an answer for (not 500). */
static void req_check_error(int err)
{
	if (pw_http_error_status(err) == 500)
		fail("request error %d has no status", err);
}

static void resp_init(size_t head_max)
{
	(void)head_max; /* the response parser's cap is fixed */
	pw_http_resp_parser_init(&resp_parser);
}

static int resp_parse(const char *buf, size_t len, size_t *used)
{
	return pw_http_resp_parse(&resp_parser, buf, len, used);
}

static void resp_record(struct outcome *o)
{
	const struct pw_http_resp_parser *p = &resp_parser;
	const struct pw_http_resp *r = &p->resp;

	if (r->status < 100 || r->status > 999)
		fail("status %d", r->status);
	if (r->minor != 0 && r->minor != 1)
		fail("response minor version %d", r->minor);
	if ((r->status < 200 || r->status == 204 || r->status == 304) &&
	    r->content_length)
		fail("status %d with a body of %llu bytes", r->status,
		     (unsigned long long)r->content_length);
	if (r->head_len > PW_HTTP_RESP_HEAD_MAX)
		fail("response head of %zu bytes", r->head_len);
	o->status = r->status;
	o->minor = r->minor;
	o->keep_alive = r->keep_alive;
	o->flags = (p->have_len ? F_LENGTH : 0) | (p->chunked ? F_CHUNKED : 0) |
		   (p->close ? F_CLOSE : 0) | (p->keep ? F_KEEP : 0);
	o->content_length = r->content_length;
	o->head_len = r->head_len;
}

/* A response error is one http_parse.h lists. */
static void resp_check_error(int err)
{
	if (err != -EBADMSG && err != -EMSGSIZE && err != -ENOTSUP)
		fail("response error %d", err);
}

static const struct side sides[] = {
	{ "request", req_init, req_parse, req_record, req_check_error, true },
	{ "response", resp_init, resp_parse, resp_record, resp_check_error,
	  false },
};

/* ---- one run ------------------------------------------------------------ */

/* The length of the next read, at most @left (> 0); *@first, when not 0,
 * is the length of this one (it is then cleared). */
static size_t next_read(enum cut how, uint64_t *rng, size_t left, size_t *first)
{
	uint64_t r, n;

	if (how == CUT_WHOLE)
		return left;
	if (*first) {
		n = *first;
		*first = 0;
		return (size_t)n;
	}
	if (how == CUT_BYTES)
		return 1;
	/* Mostly short reads, which end inside tokens; now and then one of
	 * any length, which may hold whole messages. */
	r = rnd(rng);
	switch (r & 3) {
	case 0:
		n = 1 + (r >> 8) % 4;
		break;
	case 1:
		n = 1 + (r >> 8) % 24;
		break;
	case 2:
		n = 1 + (r >> 8) % 160;
		break;
	default:
		n = 1 + (r >> 8) % left;
		break;
	}
	return n < left ? (size_t)n : left;
}

/* After error @err: a later call returns it again and consumes nothing. */
static void check_sticky(const struct side *s, int err, const char *buf,
			 size_t len)
{
	size_t used = SIZE_MAX;
	int ret = s->parse(buf, len, &used);

	if (ret != err || used)
		fail("%s: after error %d a call of %zu bytes returned %d and "
		     "used %zu",
		     s->name, err, len, ret, used);
}

/*
 * Feed one read of @len bytes (> 0) until it is consumed or an error
 * comes, pushing an outcome per message; *@acc counts the bytes since the
 * last outcome. Return: 0, or the error (pushed).
 */
static int feed_read(const struct side *s, struct trace *t, const char *buf,
		     size_t len, size_t *acc)
{
	for (size_t at = 0;;) {
		size_t used = SIZE_MAX;
		int ret = s->parse(buf + at, len - at, &used);
		struct outcome *o;

		if (used > len - at)
			fail("%s: used %zu of %zu bytes (returned %d)", s->name,
			     used, len - at, ret);
		*acc += used;
		at += used;
		if (ret < 0) {
			o = push(t);
			o->ret = ret;
			o->bytes = *acc;
			s->check_error(ret);
			check_sticky(s, ret, buf + at, len - at);
			check_sticky(s, ret, NULL, 0);
			return ret;
		}
		if (ret == 0 && at != len)
			fail("%s: 0 with %zu bytes left", s->name, len - at);
		if (ret == 0)
			return 0;
		if (ret != 1 || !used)
			fail("%s: returned %d after %zu bytes", s->name, ret,
			     used);
		o = push(t);
		o->ret = 1;
		o->bytes = *acc;
		*acc = 0;
		s->record(o);
		if (o->bytes != o->head_len + o->content_length)
			fail("%s: a message of %zu bytes, head %zu, body %llu",
			     s->name, o->bytes, o->head_len,
			     (unsigned long long)o->content_length);
		if (at == len)
			return 0;
	}
}

/* Parse @in[0..@len) cut as @how says into @t, from a fresh parser; the
 * first read, unless whole, is @first bytes when that is not 0. */
static void run(const struct side *s, struct trace *t, const char *in,
		size_t len, size_t first, enum cut how, uint64_t seed)
{
	size_t off = 0, acc = 0;

	t->n = 0;
	s->init(input_cap);
	while (off < len) {
		size_t n = next_read(how, &seed, len - off, &first);
		char *buf = malloc(n); /* exactly the read: ASan guards it */
		int err;

		if (!buf)
			abort();
		memcpy(buf, in + off, n);
		err = feed_read(s, t, buf, n, &acc);
		free(buf);
		if (err)
			return;
		off += n;
	}
	push(t)->bytes = acc;
}

/* ---- comparing runs ----------------------------------------------------- */

static bool same(const struct side *s, const struct outcome *a,
		 const struct outcome *b)
{
	if (a->ret != b->ret)
		return false;
	if (a->ret < 0 && !s->error_bytes)
		return true;
	return a->bytes == b->bytes && a->status == b->status &&
	       a->minor == b->minor && a->keep_alive == b->keep_alive &&
	       a->flags == b->flags && a->content_length == b->content_length &&
	       a->head_len == b->head_len && a->headers == b->headers &&
	       a->method_len == b->method_len &&
	       a->target_len == b->target_len &&
	       a->target_hash == b->target_hash &&
	       !strcmp(a->method, b->method);
}

static void show(const char *how, const struct outcome *o)
{
	fprintf(stderr,
		"  %s: returned %d after %zu bytes; status %d, 1.%d, "
		"keep-alive %d, flags 0x%x, length %llu, head %zu, headers %u, "
		"method \"%s\" (%zu), target \"%s\" (%zu, hash %016llx)\n",
		how, o->ret, o->bytes, o->status, o->minor, o->keep_alive,
		o->flags, (unsigned long long)o->content_length, o->head_len,
		o->headers, o->method, o->method_len, o->target, o->target_len,
		(unsigned long long)o->target_hash);
}

/* The run cut as @how says must match the whole one, outcome by outcome
 * (each run ends at its first error or at the end). */
static void compare(const struct side *s, enum cut how)
{
	const struct trace *a = &traces[CUT_WHOLE], *b = &traces[how];
	size_t n = a->n < b->n ? a->n : b->n;

	for (size_t i = 0; i < n; i++) {
		if (same(s, &a->o[i], &b->o[i]))
			continue;
		fprintf(stderr, "%s outcome %zu differs:\n", s->name, i);
		show(cut_name[CUT_WHOLE], &a->o[i]);
		show(cut_name[how], &b->o[i]);
		fail("%s parsed whole and %s disagree", s->name, cut_name[how]);
	}
	if (a->n != b->n)
		fail("%s: %zu outcomes whole, %zu %s", s->name, a->n, b->n,
		     cut_name[how]);
}

/* ---- the entry ---------------------------------------------------------- */

/*
 * The text the response runs parse: @data, after a padding prefix when
 * @h asks for one. Return: the prefix's length (0 for none); *@len
 * receives the text's.
 */
static size_t response_text(const uint8_t *data, size_t size, uint64_t h,
			    const char **text, size_t *len)
{
	static const size_t rooms[4] = { 4, 17, 64, 200 };
	static const char status[] = "HTTP/1.1 200 OK\r\nX-Pad: ";
	size_t pre = PW_HTTP_RESP_HEAD_MAX - rooms[(h >> 42) % 4];
	size_t need = pre + size;

	*text = (const char *)data;
	*len = size;
	if ((h >> 40) % 4)
		return 0;
	if (need > stream_cap) {
		free(stream);
		stream = malloc(need);
		if (!stream)
			abort();
		stream_cap = need;
	}
	memcpy(stream, status, sizeof(status) - 1);
	memset(stream + sizeof(status) - 1, 'p', pre - sizeof(status) - 1);
	memcpy(stream + pre - 2, "\r\n", 2);
	if (size)
		memcpy(stream + pre, data, size);
	*text = stream;
	*len = need;
	return pre;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/**
 * LLVMFuzzerTestOneInput - parse @data[0..@size) as requests and as
 * responses, whole, a byte at a time and in random reads; abort on any
 * disagreement or broken invariant.
 * Return: 0 (libFuzzer's contract).
 * Context: libFuzzer's thread, one input at a time.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[8] = { 0, 0, 0, 0, 64, 100, 256, 1024 };
	uint64_t h = fnv1a(data, size, UINT64_C(0xcbf29ce484222325));

	input_len = size;
	input_cap = caps[h % 8] ? caps[h % 8] : PW_HTTP_HEAD_MAX_DEFAULT;
	for (size_t k = 0; k < sizeof(sides) / sizeof(sides[0]); k++) {
		const struct side *s = &sides[k];
		const char *text = (const char *)data;
		size_t len = size, first = 0;

		if (s->parse == resp_parse)
			first = response_text(data, size, h, &text, &len);
		for (int how = CUT_WHOLE; how <= CUT_RANDOM; how++) {
			run(s, &traces[how], text, len, first, (enum cut)how,
			    (h >> 3) | 1);
			if (how == CUT_BYTES && k == 0 && req_parser.fast_heads)
				fail("a byte per read took the fast path");
		}
		compare(s, CUT_BYTES);
		compare(s, CUT_RANDOM);
	}
	return 0;
}
