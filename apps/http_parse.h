/* SPDX-License-Identifier: MIT */
/*
 * http_parse.h - the one HTTP/1.1 parser of the pinwheel command, both
 * directions: requests for `pinwheel http`, responses for `pinwheel load`;
 * and the response builder of `pinwheel http` (internal to the pinwheel
 * command).
 *
 * Both parsers are incremental and keep everything they need in their
 * own struct: a connection can hand one each received buffer as it comes
 * (a message may arrive a byte at a time, or many pipelined ones in one
 * read) and give the buffer back at once; nothing is allocated per
 * message or per connection. They share the token rules of RFC 9110:
 * tchars, field names in any case, Content-Length (digits only, repeats
 * must agree), Connection options (close, keep-alive), control bytes
 * refused in values, and the keep-alive decision (HTTP/1.1 unless
 * "close", HTTP/1.0 only with "keep-alive"). Every other header is
 * checked for syntax and skipped.
 *
 * Requests: a request line "METHOD SP target SP HTTP/1.x" and header
 * fields, lines ended by CRLF or a bare LF (a CR must be followed by LF);
 * empty lines before a request are skipped. The method and the request
 * target are copied into the parser; Connection, Content-Length,
 * Transfer-Encoding and Host are interpreted. HTTP/1.1 requests must
 * carry exactly one Host. A Content-Length body is skipped (its bytes are
 * consumed, not kept); one longer than the parser's body_max is refused
 * at the end of the head, its body unread. Request bodies in Transfer-Encoding (chunked) are
 * refused with -ENOTSUP: the server answers 400 and closes. A request
 * head that arrives whole is parsed in one go by a faster path that
 * reaches exactly the same results (see http_parse.c).
 *
 * Responses: a status line "HTTP/1.x SP 3DIGIT [SP reason]" and header
 * fields, lines as above; empty lines before a response are skipped. A
 * Content-Length body is skipped; 1xx, 204 and 304 answers have none.
 * A body in Transfer-Encoding (any coding), or one without a length
 * (that would end only at the close), is refused with -ENOTSUP: a load
 * generator cannot tell where such an answer ends without reading it.
 *
 * Threads: a parser belongs to one connection, hence one shard.
 */
#ifndef PW_APPS_HTTP_PARSE_H
#define PW_APPS_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Longest method and request target kept, terminator included. */
#define PW_HTTP_METHOD_MAX 16
#define PW_HTTP_TARGET_MAX 1024
/* Default cap on a request head: request line, headers, blank line. */
#define PW_HTTP_HEAD_MAX_DEFAULT 8192
/* Longest value kept of a header the parser interprets. */
#define PW_HTTP_VALUE_MAX 128

/* One parsed request; valid until the next pw_http_parse() call. */
struct pw_http_req {
	char method[PW_HTTP_METHOD_MAX]; /* NUL-terminated, e.g. "GET" */
	char target[PW_HTTP_TARGET_MAX]; /* NUL-terminated, e.g. "/" */
	size_t method_len, target_len;
	int minor;		 /* HTTP/1.<minor>: 0 or 1 */
	bool keep_alive;	 /* the connection may carry another request */
	uint64_t content_length; /* body bytes skipped */
	size_t head_len;	 /* bytes of the request head */
	unsigned headers;	 /* header fields seen */
};

struct pw_http_parser {
	size_t head_max; /* cap on head bytes */
	int state, err;
	size_t head;	   /* head bytes so far */
	size_t vlen, nlen; /* bytes of the current value and name */
	unsigned which;	   /* interpreted header being read, or 0 */
	unsigned hosts;
	bool te, close, keep, have_len;
	uint64_t body_left;
	char name[24];
	char value[PW_HTTP_VALUE_MAX];
	struct pw_http_req req;
	uint64_t fast_heads; /* heads parsed whole by the fast path */
	/* Cap on a request's Content-Length (0: none), set after
	 * pw_http_parser_init(): a head declaring more fails with -EFBIG
	 * before any body byte is read. */
	uint64_t body_max;
};

/**
 * pw_http_parser_init - set up @p for a new connection.
 * @head_max: cap on a request head in bytes, 64..1 MiB; 0 means
 * PW_HTTP_HEAD_MAX_DEFAULT.
 * Return: 0; -EINVAL for a NULL @p or a cap out of range.
 * Context: the connection's shard.
 */
int pw_http_parser_init(struct pw_http_parser *p, size_t head_max);

/**
 * pw_http_parse - feed @len bytes of @buf to @p.
 * @used: receives how many bytes of @buf were consumed.
 *
 * Return: 1 when a whole request (head and body) has been read: it is in
 * @p->req and *@used bytes of @buf belong to it; call again with the rest
 * of @buf (a pipelined request may follow). 0 when every byte was
 * consumed and the request is not complete yet. On error (sticky: every
 * later call returns it until pw_http_parser_init()): -EBADMSG for a
 * malformed request (answer 400), -EMSGSIZE for a head over the cap
 * (431), -ENAMETOOLONG for a target of PW_HTTP_TARGET_MAX bytes or more
 * (414), -ENOTSUP for a Transfer-Encoding body (400), -EFBIG for a
 * Content-Length over @p->body_max (413, found at the head's end,
 * before any body byte), -EPROTONOSUPPORT for an HTTP version other than
 * 1.x (505); -EINVAL for NULL arguments.
 * pw_http_error_status() gives the status; the connection must close.
 * Context: the connection's shard.
 */
int pw_http_parse(struct pw_http_parser *p, const char *buf, size_t len,
		  size_t *used);

/* ---- responses ---------------------------------------------------------- */

/* Longest status or header line looked at; the rest of a longer header
 * line is skipped (no header this parser reads is that long). */
#define PW_HTTP_RESP_LINE_MAX 256
/* Cap on a response head. */
#define PW_HTTP_RESP_HEAD_MAX 65536

/* One parsed response; valid until the next pw_http_resp_parse() call. */
struct pw_http_resp {
	int status;		 /* 100..999 */
	int minor;		 /* HTTP/1.<minor>: 0, or 1 for 1.1 and above */
	bool keep_alive;	 /* the connection may carry another one */
	uint64_t content_length; /* body bytes skipped; 0 for 1xx, 204, 304 */
	size_t head_len;	 /* bytes of the response head */
};

/* An incremental HTTP/1.x response parser for one connection. */
struct pw_http_resp_parser {
	int state, err;
	bool have_len, chunked, close, keep;
	uint64_t body_left;
	size_t head;	 /* head bytes so far */
	size_t line_len; /* bytes of line[] in use */
	bool line_cr;	 /* the last byte was a CR */
	struct pw_http_resp resp;
	char line[PW_HTTP_RESP_LINE_MAX]; /* a line split across buffers */
};

/**
 * pw_http_resp_parser_init - set up @p for a new connection. NULL is a
 * no-op.
 * Context: any thread.
 */
void pw_http_resp_parser_init(struct pw_http_resp_parser *p);

/**
 * pw_http_resp_parse - feed @len bytes at @buf to @p.
 * @used: receives how many bytes were consumed.
 *
 * Return: 1 when a whole response has been read: it is in @p->resp and
 * *@used bytes of @buf belong to it; call again with the rest (the next
 * response starts afresh). 0 when all of @buf was consumed and the
 * response is not whole yet. Errors are sticky until
 * pw_http_resp_parser_init() (*@used then counts the bytes looked at):
 * -EBADMSG for a malformed response, -EMSGSIZE for a head over
 * PW_HTTP_RESP_HEAD_MAX, -ENOTSUP for a Transfer-Encoding body or a body
 * without Content-Length; -EINVAL for NULL arguments.
 * Context: the thread that owns @p.
 */
int pw_http_resp_parse(struct pw_http_resp_parser *p, const char *buf,
		       size_t len, size_t *used);

/* ---- status and responses ------------------------------------------------ */

/**
 * pw_http_error_status - the status to answer a pw_http_parse() error
 * with (400, 413, 414, 431, 505), or 500 for an unknown one.
 * Context: any thread.
 */
int pw_http_error_status(int err);

/**
 * pw_http_reason - the reason phrase of @status ("OK", "Bad Request",
 * ...), or "Unknown". Context: any thread.
 */
const char *pw_http_reason(int status);

/* Length of an IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT". */
#define PW_HTTP_DATE_LEN 29

/**
 * pw_http_date - write @t (seconds since the epoch) as an IMF-fixdate in
 * @out, NUL-terminated. Context: any thread.
 */
void pw_http_date(char out[PW_HTTP_DATE_LEN + 1], time_t t);

/**
 * pw_http_build - write a whole response into @buf: status line, Server,
 * Date (@date, an IMF-fixdate), Content-Type text/plain, Content-Length,
 * Connection (keep-alive or close), then @body.
 * Return: the length written, not counting the NUL written after it;
 * -ENOSPC when the response and that NUL do not fit in @len; -EINVAL for NULL @buf, @date, or @body with @body_len > 0,
 * or a status outside 100..599.
 * Context: any thread.
 */
int pw_http_build(char *buf, size_t len, int status, bool keep_alive,
		  const char *date, const char *body, size_t body_len);

/* Room for the canned responses' headers (the body comes on top). */
#define PW_HTTP_CANNED_MAX 512

/*
 * The two 200 responses of a fixed body (keep-alive and close), rebuilt
 * with a new Date at most once per second: a shard keeps one and calls
 * pw_http_canned_tick() with the current time before sending.
 */
struct pw_http_canned {
	time_t sec; /* second the Date says */
	const char *body;
	size_t body_len;
	char date[PW_HTTP_DATE_LEN + 1];
	int keep_len, close_len;
	char keep[PW_HTTP_CANNED_MAX];
	char close[PW_HTTP_CANNED_MAX];
};

/**
 * pw_http_canned_init - build both responses of @body for time @now.
 * @body must outlive @c; @body_len at most 256 bytes.
 * Return: 0; -EINVAL for NULL @c or @body; -EMSGSIZE for a longer body.
 * Context: any thread.
 */
int pw_http_canned_init(struct pw_http_canned *c, const char *body,
			size_t body_len, time_t now);

/**
 * pw_http_canned_tick - rebuild @c when @now is another second than its
 * Date. Return: 1 when rebuilt, 0 when unchanged.
 * Context: the thread that owns @c.
 */
int pw_http_canned_tick(struct pw_http_canned *c, time_t now);

/**
 * pw_http_canned_get - the response for a request that keeps the
 * connection alive or not; *@len receives its length.
 * Context: the thread that owns @c.
 */
const char *pw_http_canned_get(const struct pw_http_canned *c, bool keep_alive,
			       size_t *len);

#endif /* PW_APPS_HTTP_PARSE_H */
