/* SPDX-License-Identifier: MIT */
/*
 * http_parse.c - incremental HTTP/1.1 parsing, requests and responses,
 * and fixed responses (see http_parse.h).
 *
 * Both sides share one set of token rules: the tchar table, the field
 * names that matter (Host, Connection, Content-Length,
 * Transfer-Encoding, any case), the Content-Length and Connection value
 * rules, the control-byte check of a field value and the keep-alive
 * decision. Requests and responses differ only in how they are read.
 *
 * Requests (the server's hot path). One state per position in the
 * grammar; every byte moves the machine by one step, so a request split
 * anywhere parses the same as in one piece. Head bytes are counted
 * against the cap before they are looked at, so an endless header line
 * fails as soon as it passes the cap. The values of Connection and
 * Content-Length are gathered into a small buffer and interpreted at the
 * end of the line, every other value is only checked for control
 * characters.
 *
 * The fast path. Most requests arrive whole, head and all, in one read.
 * When a call starts a fresh request (nothing of it consumed yet),
 * fast_head() first tries to parse the head in one go: the method and
 * field names through the tchar table, the target up to its space and
 * each field line up to its LF with memchr() (SIMD in glibc), target and
 * values checked eight bytes at a time, the four interpreted names
 * compared a word at a time. It interprets values with the same
 * header_done() and head_done() as the state machine, so a head it
 * accepts leaves the parser exactly as step() would after the head's
 * last byte. It takes only what it fully understands: empty lines before
 * the request, a head not all in the buffer or over the cap, and every
 * error make it give up (new_request() wipes what it wrote), and the
 * state machine parses the same bytes from the start of the request, so
 * errors, their codes and *used, and every edge case stay those of
 * step(). A Content-Length body is skipped by the byte loop, as before.
 *
 * Responses (the load generator's). A line at a time: memchr() finds the
 * LF, a line wholly in the buffer is read in place, one split across
 * buffers is gathered into the parser's line buffer (its first
 * PW_HTTP_RESP_LINE_MAX - 1 bytes; a header line is looked at no further
 * even when whole, so a split never changes the result).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "apps/http_parse.h"

enum {
	S_START,    /* before the method; empty lines are skipped */
	S_METHOD,   /* in the method */
	S_TARGET,   /* in the request target */
	S_VERSION,  /* in "HTTP/1.1" */
	S_RL_LF,    /* after the request line's CR */
	S_LINE,	    /* at the start of a header line */
	S_NAME,	    /* in a field name */
	S_OWS,	    /* after the colon, before the value */
	S_VALUE,    /* in a field value */
	S_VALUE_LF, /* after a field line's CR */
	S_END_LF,   /* after the blank line's CR */
	S_BODY,	    /* skipping a Content-Length body */
	S_DONE,	    /* a request was returned; the next starts afresh */
};

/* A response's states. */
enum { R_STATUS, R_HEADER, R_BODY, R_DONE };

enum { H_OTHER, H_HOST, H_CONNECTION, H_LENGTH, H_TE };

static const char version_text[] = "HTTP/";

/* ---- token rules shared by requests and responses --------------------- */

/* RFC 9110 tchar: the characters of a token; 0x80 and above: none. */
static const unsigned char tchar_tab[256] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x00 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x10 */
	0, 1, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0, /* 0x20 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, /* 0x30 */
	0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x40 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, /* 0x50 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x60 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0, /* 0x70 */
};

static inline bool is_tchar(unsigned char c)
{
	return tchar_tab[c];
}

static inline char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static unsigned header_kind(const char *name, size_t len)
{
	static const struct {
		const char *name;
		unsigned kind;
	} known[] = {
		{ "host", H_HOST },
		{ "connection", H_CONNECTION },
		{ "content-length", H_LENGTH },
		{ "transfer-encoding", H_TE },
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strlen(known[i].name) == len &&
		    !memcmp(known[i].name, name, len))
			return known[i].kind;
	return H_OTHER;
}

static bool token_eq(const char *s, size_t len, const char *want)
{
	if (strlen(want) != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (lower(s[i]) != want[i])
			return false;
	return true;
}

/*
 * A Content-Length value @v[0..@n) (blanks trimmed): digits only, no
 * overflow; a second Content-Length must say the same as the first.
 * *@have and *@len hold what earlier fields said and receive this one.
 * Return: 0; -EBADMSG for a bad or conflicting value.
 */
static int length_value(const char *v, size_t n, bool *have, uint64_t *len)
{
	uint64_t x = 0;

	if (!n)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9' || x > (UINT64_MAX - 9) / 10)
			return -EBADMSG;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	if (*have && x != *len)
		return -EBADMSG;
	*have = true;
	*len = x;
	return 0;
}

/* A Connection value @v[0..@n): a list of options separated by commas
 * or blanks; sets *@close and *@keep for "close" and "keep-alive". */
static void connection_value(const char *v, size_t n, bool *close, bool *keep)
{
	for (size_t i = 0; i < n;) {
		size_t j;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		for (j = i; j < n && v[j] != ',' && v[j] != ' ' && v[j] != '\t';
		     j++)
			;
		if (token_eq(v + i, j - i, "close"))
			*close = true;
		else if (token_eq(v + i, j - i, "keep-alive"))
			*keep = true;
		i = j;
	}
}

/* Whether HTTP/1.<@minor> with these Connection options keeps the
 * connection: 1.1 unless "close", 1.0 only with "keep-alive". */
static inline bool keeps_alive(int minor, bool close, bool keep)
{
	return minor >= 1 ? !close : keep && !close;
}

/* The minor version of "HTTP/1.DIGIT" at @s (8 bytes readable): 0 for
 * 1.0, 1 for 1.1 and above (1.2+ reads as 1.1); -1 for anything else. */
static inline int version_minor(const unsigned char *s)
{
	if (memcmp(s, "HTTP/1.", 7) || s[7] < '0' || s[7] > '9')
		return -1;
	return s[7] == '0' ? 0 : 1;
}

#define ONES  UINT64_C(0x0101010101010101)
#define HIGHS (ONES * 0x80)

/* Eight bytes from @s, which need not be aligned. */
static inline uint64_t load64(const unsigned char *s)
{
	uint64_t v;

	memcpy(&v, s, sizeof(v));
	return v;
}

/*
 * Nonzero when a byte of @v may be below 0x20 or 0x7f and above: it
 * never misses one (a byte below 0x20 minus 0x20, less a borrow, still
 * has its top bit set; 0x7f plus 1, plus a carry, has it too), but a
 * borrow or carry may flag a good byte beside a bad one, so a flagged
 * word is looked at again byte by byte.
 */
static inline uint64_t maybe_ctl(uint64_t v)
{
	return ((v - ONES * 0x20) | (v + ONES) | v) & HIGHS;
}

/* Whether every byte of @s[0..@n) is one step() takes in a target
 * (space aside: the caller's span holds none). */
static bool target_bytes_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] >= 0x7f)
			return false;
	return true;
}

/* The same a word at a time, the last word overlapping the one before:
 * a word of printable bytes is never flagged, so a flag is a refusal. */
static bool target_ok(const unsigned char *s, size_t n)
{
	if (n < 8)
		return target_bytes_ok(s, n);
	for (size_t i = 0; i + 8 < n; i += 8)
		if (maybe_ctl(load64(s + i)))
			return false;
	return !maybe_ctl(load64(s + n - 8));
}

/* Whether every byte of @s[0..@n) may be in a field value: not a control
 * character other than HT, not DEL. */
static bool value_bytes_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((s[i] < ' ' && s[i] != '\t') || s[i] == 0x7f)
			return false;
	return true;
}

/* The same a word at a time (a flagged word looked at byte by byte),
 * the last word overlapping the one before. Inlined whole: it is on the
 * fast path of every header line. */
static inline __attribute__((always_inline)) bool
value_ok(const unsigned char *s, size_t n)
{
	if (n < 8)
		return value_bytes_ok(s, n);
	for (size_t i = 0; i + 8 < n; i += 8)
		if (maybe_ctl(load64(s + i)) && !value_bytes_ok(s + i, 8))
			return false;
	s += n - 8;
	return !maybe_ctl(load64(s)) || value_bytes_ok(s, 8);
}

/*
 * Whether the field name @s[0..@n), all tchars, is @want (lower case
 * letters and '-', at least 8 bytes) in any case, eight bytes at a time.
 * OR-ing 0x20 into a byte maps it to a lower-case letter only from that
 * letter or its capital, and to '-' only from '-' or CR, no tchar: the
 * same answer as token_eq().
 */
static inline bool name_is(const unsigned char *s, const char *want, size_t n)
{
	const unsigned char *w = (const unsigned char *)want;
	uint64_t diff = 0;

	for (size_t i = 0; i + 8 < n; i += 8)
		diff |= (load64(s + i) | ONES * 0x20) ^ load64(w + i);
	diff |= (load64(s + n - 8) | ONES * 0x20) ^ load64(w + n - 8);
	return !diff;
}

/* header_kind() of a field name of tchars as written (any case). */
static inline unsigned fast_kind(const unsigned char *s, size_t n)
{
	uint32_t v, host;

	switch (n) {
	case 4:
		/* All letters: see name_is(). */
		memcpy(&v, s, sizeof(v));
		memcpy(&host, "host", sizeof(host));
		return (v | 0x20202020u) == host ? H_HOST : H_OTHER;
	case 10:
		return name_is(s, "connection", n) ? H_CONNECTION : H_OTHER;
	case 14:
		return name_is(s, "content-length", n) ? H_LENGTH : H_OTHER;
	case 17:
		return name_is(s, "transfer-encoding", n) ? H_TE : H_OTHER;
	}
	return H_OTHER;
}

/* ---- requests: the state machine --------------------------------------- */

int pw_http_parser_init(struct pw_http_parser *p, size_t head_max)
{
	if (!p)
		return -EINVAL;
	if (!head_max)
		head_max = PW_HTTP_HEAD_MAX_DEFAULT;
	if (head_max < 64 || head_max > (1u << 20))
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	p->head_max = head_max;
	p->state = S_START;
	return 0;
}

static void new_request(struct pw_http_parser *p)
{
	p->state = S_START;
	p->head = 0;
	p->hosts = 0;
	p->te = p->close = p->keep = p->have_len = false;
	p->body_left = 0;
	p->req.method_len = p->req.target_len = 0;
	p->req.method[0] = p->req.target[0] = '\0';
	p->req.minor = 0;
	p->req.keep_alive = false;
	p->req.content_length = 0;
	p->req.head_len = 0;
	p->req.headers = 0;
}

/* Interpret the value (trailing blanks already trimmed) of a known
 * header. Returns 0 or -EBADMSG. */
static int header_done(struct pw_http_parser *p)
{
	switch (p->which) {
	case H_HOST:
		if (++p->hosts > 1)
			return -EBADMSG;
		break;
	case H_TE:
		p->te = true;
		break;
	case H_LENGTH:
		return length_value(p->value, p->vlen, &p->have_len,
				    &p->req.content_length);
	case H_CONNECTION:
		connection_value(p->value, p->vlen, &p->close, &p->keep);
		break;
	}
	return 0;
}

/* The blank line ended the head: decide what the request means. */
static int head_done(struct pw_http_parser *p)
{
	struct pw_http_req *r = &p->req;

	r->head_len = p->head;
	if (p->te)
		return -ENOTSUP;
	if (r->minor >= 1 && p->hosts != 1)
		return -EBADMSG;
	r->keep_alive = keeps_alive(r->minor, p->close, p->keep);
	p->body_left = r->content_length;
	p->state = p->body_left ? S_BODY : S_DONE;
	return 0;
}

/* S_START, S_METHOD, S_TARGET: the method and the target. */
static int step_target(struct pw_http_parser *p, unsigned char c)
{
	struct pw_http_req *r = &p->req;

	switch (p->state) {
	case S_START:
		if (c == '\r' || c == '\n')
			return 0; /* empty lines before a request */
		p->state = S_METHOD;
		/* fall through */
	case S_METHOD:
		if (c == ' ' && r->method_len) {
			p->state = S_TARGET;
			return 0;
		}
		if (!is_tchar(c) || r->method_len + 1 >= PW_HTTP_METHOD_MAX)
			return -EBADMSG;
		r->method[r->method_len++] = (char)c;
		r->method[r->method_len] = '\0';
		return 0;
	default: /* S_TARGET */
		if (c == ' ' && r->target_len) {
			p->state = S_VERSION;
			p->vlen = 0;
			return 0;
		}
		if (c <= ' ' || c >= 0x7f)
			return -EBADMSG;
		if (r->target_len + 1 >= PW_HTTP_TARGET_MAX)
			return -ENAMETOOLONG;
		r->target[r->target_len++] = (char)c;
		r->target[r->target_len] = '\0';
		return 0;
	}
}

/* S_VERSION: "HTTP/" DIGIT "." DIGIT, then CRLF or LF. */
static int step_version(struct pw_http_parser *p, unsigned char c)
{
	if (p->vlen < 5) {
		if (c != (unsigned char)version_text[p->vlen])
			return -EBADMSG;
	} else if (p->vlen == 5) {
		if (c < '0' || c > '9')
			return -EBADMSG;
		if (c != '1')
			return -EPROTONOSUPPORT;
	} else if (p->vlen == 6) {
		if (c != '.')
			return -EBADMSG;
	} else if (p->vlen == 7) {
		if (c < '0' || c > '9')
			return -EBADMSG;
		p->req.minor = c == '0' ? 0 : 1; /* 1.2+ reads as 1.1 */
	} else if (c == '\r') {
		p->state = S_RL_LF;
	} else if (c == '\n') {
		p->state = S_LINE;
	} else {
		return -EBADMSG;
	}
	p->vlen++;
	return 0;
}

/* S_RL_LF, S_VALUE_LF, S_END_LF: the LF after a CR. */
static int step_lf(struct pw_http_parser *p, unsigned char c)
{
	int err;

	if (c != '\n')
		return -EBADMSG;
	if (p->state == S_END_LF)
		return head_done(p);
	if (p->state == S_VALUE_LF && (err = header_done(p)))
		return err;
	p->state = S_LINE;
	return 0;
}

/* S_LINE, S_NAME: the start of a header line and the field name. */
static int step_name(struct pw_http_parser *p, unsigned char c)
{
	if (p->state == S_LINE) {
		if (c == '\r') {
			p->state = S_END_LF;
			return 0;
		}
		if (c == '\n')
			return head_done(p);
		if (!is_tchar(c))
			return -EBADMSG; /* obs-fold, or junk */
		p->nlen = 0;
		p->state = S_NAME;
	}
	if (c == ':') {
		if (!p->nlen)
			return -EBADMSG;
		p->req.headers++;
		p->which = p->nlen <= sizeof(p->name) ?
				   header_kind(p->name, p->nlen) :
				   H_OTHER;
		p->vlen = 0;
		p->state = S_OWS;
		return 0;
	}
	if (!is_tchar(c))
		return -EBADMSG;
	if (p->nlen < sizeof(p->name))
		p->name[p->nlen] = lower((char)c);
	p->nlen++;
	return 0;
}

/* S_OWS, S_VALUE: a field value, kept only when interpreted. */
static int step_value(struct pw_http_parser *p, unsigned char c)
{
	if (p->state == S_OWS) {
		if (c == ' ' || c == '\t')
			return 0;
		p->state = S_VALUE;
	}
	if (c == '\r' || c == '\n') {
		while (p->vlen && (p->value[p->vlen - 1] == ' ' ||
				   p->value[p->vlen - 1] == '\t'))
			p->vlen--;
		if (c == '\r') {
			p->state = S_VALUE_LF;
			return 0;
		}
		p->state = S_LINE;
		return header_done(p);
	}
	if ((c < ' ' && c != '\t') || c == 0x7f)
		return -EBADMSG;
	if (p->which != H_CONNECTION && p->which != H_LENGTH)
		return 0; /* only checked */
	if (p->vlen >= sizeof(p->value))
		return -EBADMSG;
	p->value[p->vlen++] = (char)c;
	return 0;
}

/* One head byte. Returns 0, or a negative error. */
static int step(struct pw_http_parser *p, unsigned char c)
{
	switch (p->state) {
	case S_START:
	case S_METHOD:
	case S_TARGET:
		return step_target(p, c);
	case S_VERSION:
		return step_version(p, c);
	case S_RL_LF:
	case S_VALUE_LF:
	case S_END_LF:
		return step_lf(p, c);
	case S_LINE:
	case S_NAME:
		return step_name(p, c);
	case S_OWS:
	case S_VALUE:
		return step_value(p, c);
	}
	return -EBADMSG;
}

/* ---- requests: the fast path -------------------------------------------- */

/*
 * The request line at @s: METHOD SP target SP HTTP/1.DIGIT, CRLF or LF,
 * all before @end. Fills @r's method, target and minor.
 * Return: the line's LF; NULL when step() must take the line.
 */
static inline const unsigned char *fast_request_line(struct pw_http_req *r,
						     const unsigned char *s,
						     const unsigned char *end)
{
	const unsigned char *e, *t;
	size_t n = (size_t)(end - s);
	int minor;

	/* The method: 1 to 15 tchars (none for an empty line first). */
	e = s + (n < PW_HTTP_METHOD_MAX ? n : PW_HTTP_METHOD_MAX);
	for (t = s; t < e && tchar_tab[*t]; t++)
		;
	if (t == s || t == e || *t != ' ')
		return NULL;
	n = (size_t)(t - s);
	memcpy(r->method, s, n);
	r->method[n] = '\0';
	r->method_len = n;
	/* The target: up to the next space, within PW_HTTP_TARGET_MAX - 1
	 * bytes; target_ok() refuses a CR or LF, so it stays on the line. */
	s = t + 1;
	n = (size_t)(end - s);
	t = memchr(s, ' ', n < PW_HTTP_TARGET_MAX ? n : PW_HTTP_TARGET_MAX);
	if (!t)
		return NULL;
	n = (size_t)(t - s);
	if (!n || n >= PW_HTTP_TARGET_MAX || !target_ok(s, n))
		return NULL;
	memcpy(r->target, s, n);
	r->target[n] = '\0';
	r->target_len = n;
	s = t + 1;
	if (end - s < 9 || (minor = version_minor(s)) < 0)
		return NULL;
	r->minor = minor;
	if (s[8] == '\n')
		return s + 8;
	if (s[8] == '\r' && end - s >= 10 && s[9] == '\n')
		return s + 9;
	return NULL;
}

/*
 * fast_head - parse a whole request head from the start of @buf at once.
 * @p: a parser at the start of a request, none of it consumed (state
 *     S_START, head 0, as new_request() leaves it).
 *
 * Return: the head's length (blank line included) when all of it is in
 * the first min(@len, head_max) bytes and step() would accept it; @p is
 * then as step() leaves it after the head's last byte (S_BODY or S_DONE,
 * the request filled in). 0 otherwise: the head is incomplete, over the
 * cap, malformed, or of a shape left to step(); @p may be half written
 * and must go through new_request() before step() parses the same bytes.
 * Context: the connection's shard.
 */
static size_t fast_head(struct pw_http_parser *p, const char *buf, size_t len)
{
	const unsigned char *s = (const unsigned char *)buf;
	const unsigned char *end = s + (len < p->head_max ? len : p->head_max);
	const unsigned char *lf = fast_request_line(&p->req, s, end);
	const unsigned char *e, *t;
	size_t n;

	if (!lf)
		return 0;
	/* Field lines up to the blank line. */
	for (s = lf + 1;; s = lf + 1) {
		unsigned which;

		if (s < end && *s == '\n') {
			lf = s;
			break;
		}
		if (end - s >= 2 && s[0] == '\r' && s[1] == '\n') {
			lf = s + 1;
			break;
		}
		/* The name: tchars up to a colon (a CR or LF stops it). */
		for (t = s; t < end && tchar_tab[*t]; t++)
			;
		if (t == s || t == end || *t != ':')
			return 0;
		p->req.headers++;
		which = fast_kind(s, (size_t)(t - s));
		/* The value: to the line's end, less OWS before it, CR after
		 * it (lf[-1] is at worst the colon). */
		lf = memchr(t + 1, '\n', (size_t)(end - t - 1));
		if (!lf)
			return 0;
		e = lf[-1] == '\r' ? lf - 1 : lf;
		for (t++; t < e && (*t == ' ' || *t == '\t'); t++)
			;
		n = (size_t)(e - t);
		if (!value_ok(t, n))
			return 0;
		if (which == H_OTHER)
			continue;
		if (which == H_CONNECTION || which == H_LENGTH) {
			if (n > sizeof(p->value))
				return 0;
			memcpy(p->value, t, n);
			while (n && (p->value[n - 1] == ' ' ||
				     p->value[n - 1] == '\t'))
				n--;
			p->vlen = n;
		}
		p->which = which;
		if (header_done(p))
			return 0;
	}
	p->head = (size_t)(lf + 1 - (const unsigned char *)buf);
	if (head_done(p))
		return 0;
	return p->head;
}

/* Skip up to @len bytes of the body; returns how many were taken. */
static inline size_t skip_body(struct pw_http_parser *p, size_t len)
{
	size_t n = len;

	if (n > p->body_left)
		n = (size_t)p->body_left;
	p->body_left -= n;
	if (!p->body_left)
		p->state = S_DONE;
	return n;
}

/* Start a fresh request with the fast path; 1 when its head and body
 * were all taken (*@i bytes), else 0 with *@i the head bytes taken. */
static inline int start_request(struct pw_http_parser *p, const char *buf,
				size_t len, size_t *i)
{
	*i = fast_head(p, buf, len);
	if (!*i) {
		new_request(p); /* step() takes it from the start */
		return 0;
	}
	p->fast_heads++;
	return p->state == S_DONE;
}

int pw_http_parse(struct pw_http_parser *p, const char *buf, size_t len,
		  size_t *used)
{
	size_t i = 0;
	int err;

	if (!p || (!buf && len) || !used)
		return -EINVAL;
	*used = 0;
	if (p->err)
		return p->err;
	if (p->state == S_DONE)
		new_request(p);
	if (p->state == S_START && !p->head && len &&
	    start_request(p, buf, len, &i)) {
		*used = i;
		return 1;
	}
	while (i < len) {
		if (p->state == S_BODY) {
			i += skip_body(p, len - i);
		} else {
			err = ++p->head > p->head_max ?
				      -EMSGSIZE :
				      step(p, (unsigned char)buf[i]);
			if (err) {
				p->err = err;
				*used = i;
				return err;
			}
			i++;
		}
		if (p->state == S_DONE) {
			*used = i;
			return 1;
		}
	}
	*used = i;
	return 0;
}

/* ---- responses ----------------------------------------------------------- */

void pw_http_resp_parser_init(struct pw_http_resp_parser *p)
{
	if (p)
		memset(p, 0, sizeof(*p));
}

/* Forget the last response (its line buffer need not be cleared). */
static void new_response(struct pw_http_resp_parser *p)
{
	p->state = R_STATUS;
	p->have_len = p->chunked = p->close = p->keep = false;
	p->body_left = 0;
	p->head = 0;
	p->line_len = 0;
	p->line_cr = false;
	memset(&p->resp, 0, sizeof(p->resp));
}

/* "HTTP/1.x SP 3DIGIT [SP reason]" */
static int status_line(struct pw_http_resp_parser *p, const unsigned char *l,
		       size_t n)
{
	int minor;

	if (n < 12 || (minor = version_minor(l)) < 0 || l[8] != ' ')
		return -EBADMSG;
	for (int i = 9; i < 12; i++)
		if (l[i] < '0' || l[i] > '9')
			return -EBADMSG;
	if (n > 12 && l[12] != ' ')
		return -EBADMSG;
	p->resp.minor = minor;
	p->resp.status =
		(l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	return p->resp.status < 100 ? -EBADMSG : 0;
}

/* A header line (its first PW_HTTP_RESP_LINE_MAX - 1 bytes at most):
 * "name: value", the value interpreted for the names that matter. */
static int resp_field(struct pw_http_resp_parser *p, const unsigned char *l,
		      size_t n)
{
	const char *v;
	size_t name, vn;
	unsigned which;

	if (n > PW_HTTP_RESP_LINE_MAX - 1)
		n = PW_HTTP_RESP_LINE_MAX - 1;
	for (name = 0; name < n && is_tchar(l[name]); name++)
		;
	if (!name || name == n || l[name] != ':')
		return -EBADMSG;
	which = fast_kind(l, name);
	if (which == H_TE)
		p->chunked = true; /* any coding: the length is unknown */
	if (which != H_LENGTH && which != H_CONNECTION)
		return 0;
	v = (const char *)l + name + 1;
	vn = n - name - 1;
	for (; vn && (*v == ' ' || *v == '\t'); vn--)
		v++;
	while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
		vn--;
	if (which == H_LENGTH)
		return length_value(v, vn, &p->have_len,
				    &p->resp.content_length);
	connection_value(v, vn, &p->close, &p->keep);
	return 0;
}

/* The blank line: decide what follows the head. */
static int resp_head_done(struct pw_http_resp_parser *p)
{
	struct pw_http_resp *r = &p->resp;

	r->keep_alive = keeps_alive(r->minor, p->close, p->keep);
	r->head_len = p->head;
	if (r->status < 200 || r->status == 204 || r->status == 304)
		r->content_length = 0;
	else if (p->chunked || !p->have_len)
		return -ENOTSUP;
	p->body_left = r->content_length;
	p->state = p->body_left ? R_BODY : R_DONE;
	return 0;
}

/* A whole line @l[0..@n), without its CR LF. */
static int resp_line(struct pw_http_resp_parser *p, const unsigned char *l,
		     size_t n)
{
	int err;

	if (p->state == R_HEADER)
		return n ? resp_field(p, l, n) : resp_head_done(p);
	if (!n)
		return 0; /* blank lines before a response */
	err = status_line(p, l, n);
	if (!err)
		p->state = R_HEADER;
	return err;
}

/*
 * The head passes its cap within the bytes at @s, @room of which fit
 * under it. The first wrong byte decides, wherever the reads end: a CR
 * with no LF after it (the LF would be @s[0]) or a control byte among
 * those that fit gives -EBADMSG, as a read ending at the cap would; a CR
 * that fits last may still be followed by its LF, which is past the cap.
 * Otherwise -EMSGSIZE.
 */
static int resp_over_cap(const struct pw_http_resp_parser *p,
			 const unsigned char *s, size_t room)
{
	if (p->line_cr && room)
		return -EBADMSG;
	if (room && s[room - 1] == '\r')
		room--;
	return value_ok(s, room) ? -EMSGSIZE : -EBADMSG;
}

/*
 * Head bytes from @s: up to and including the next LF, or all @len when
 * there is none. A CR must come right before an LF; no other control
 * byte but HT may appear. *@took receives the bytes taken.
 * Return: 0, or a negative error.
 */
static int resp_head(struct pw_http_resp_parser *p, const unsigned char *s,
		     size_t len, size_t *took)
{
	const unsigned char *lf = memchr(s, '\n', len);
	size_t n = lf ? (size_t)(lf - s) : len; /* bytes before the LF */
	size_t room;

	*took = lf ? n + 1 : n;
	if (*took > PW_HTTP_RESP_HEAD_MAX - p->head)
		return resp_over_cap(p, s, PW_HTTP_RESP_HEAD_MAX - p->head);
	p->head += *took;
	if (p->line_cr && n)
		return -EBADMSG; /* a CR, then not an LF */
	p->line_cr = false;
	if (n && s[n - 1] == '\r') {
		n--;
		p->line_cr = !lf;
	}
	if (!value_ok(s, n))
		return -EBADMSG;
	if (lf && !p->line_len)
		return resp_line(p, s, n); /* the whole line is here */
	room = PW_HTTP_RESP_LINE_MAX - 1 - p->line_len;
	memcpy(p->line + p->line_len, s, n < room ? n : room);
	p->line_len += n < room ? n : room;
	if (!lf)
		return 0;
	n = p->line_len;
	p->line_len = 0;
	return resp_line(p, (const unsigned char *)p->line, n);
}

int pw_http_resp_parse(struct pw_http_resp_parser *p, const char *buf,
		       size_t len, size_t *used)
{
	const unsigned char *s = (const unsigned char *)buf;
	size_t i = 0, n;
	int err;

	if (!p || (!buf && len) || !used)
		return -EINVAL;
	*used = 0;
	if (p->err)
		return p->err;
	if (p->state == R_DONE)
		new_response(p);
	while (i < len && p->state != R_DONE) {
		if (p->state == R_BODY) {
			n = len - i < p->body_left ? len - i :
						     (size_t)p->body_left;
			p->body_left -= n;
			i += n;
			if (!p->body_left)
				p->state = R_DONE;
			continue;
		}
		err = resp_head(p, s + i, len - i, &n);
		i += n;
		if (err) {
			p->err = err;
			*used = i;
			return err;
		}
	}
	*used = i;
	return p->state == R_DONE;
}

/* ---- status and responses ----------------------------------------------- */

int pw_http_error_status(int err)
{
	switch (err) {
	case -EBADMSG:
	case -ENOTSUP:
		return 400;
	case -ENAMETOOLONG:
		return 414;
	case -EMSGSIZE:
		return 431;
	case -EPROTONOSUPPORT:
		return 505;
	default:
		return 500;
	}
}

const char *pw_http_reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 414:
		return "URI Too Long";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Unknown";
	}
}

void pw_http_date(char out[PW_HTTP_DATE_LEN + 1], time_t t)
{
	static const char days[7][4] = { "Sun", "Mon", "Tue", "Wed",
					 "Thu", "Fri", "Sat" };
	static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr",
					    "May", "Jun", "Jul", "Aug",
					    "Sep", "Oct", "Nov", "Dec" };
	struct tm tm;

	if (!gmtime_r(&t, &tm)) {
		snprintf(out, PW_HTTP_DATE_LEN + 1, "%s",
			 "Thu, 01 Jan 1970 00:00:00 GMT");
		return;
	}
	/* The year is 4 digits for the dates a server sees; wider years
	 * are cut rather than overflow @out. */
	snprintf(out, PW_HTTP_DATE_LEN + 1,
		 "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday % 7],
		 tm.tm_mday, months[tm.tm_mon % 12],
		 (tm.tm_year + 1900) % 10000, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

int pw_http_build(char *buf, size_t len, int status, bool keep_alive,
		  const char *date, const char *body, size_t body_len)
{
	int n;

	if (!buf || !date || (!body && body_len) || status < 100 ||
	    status > 599)
		return -EINVAL;
	n = snprintf(buf, len,
		     "HTTP/1.1 %d %s\r\nServer: pinwheel\r\nDate: %s\r\n"
		     "Content-Type: text/plain\r\nContent-Length: %zu\r\n"
		     "Connection: %s\r\n\r\n",
		     status, pw_http_reason(status), date, body_len,
		     keep_alive ? "keep-alive" : "close");
	if (n < 0 || (size_t)n >= len || len - (size_t)n <= body_len)
		return -ENOSPC;
	if (body_len)
		memcpy(buf + n, body, body_len);
	buf[(size_t)n + body_len] = '\0';
	return n + (int)body_len;
}

static int canned_build(struct pw_http_canned *c, time_t now)
{
	c->sec = now;
	pw_http_date(c->date, now);
	c->keep_len = pw_http_build(c->keep, sizeof(c->keep), 200, true,
				    c->date, c->body, c->body_len);
	c->close_len = pw_http_build(c->close, sizeof(c->close), 200, false,
				     c->date, c->body, c->body_len);
	return c->keep_len < 0 || c->close_len < 0 ? -EMSGSIZE : 0;
}

int pw_http_canned_init(struct pw_http_canned *c, const char *body,
			size_t body_len, time_t now)
{
	if (!c || !body)
		return -EINVAL;
	if (body_len > 256)
		return -EMSGSIZE;
	memset(c, 0, sizeof(*c));
	c->body = body;
	c->body_len = body_len;
	return canned_build(c, now);
}

int pw_http_canned_tick(struct pw_http_canned *c, time_t now)
{
	if (now == c->sec)
		return 0;
	canned_build(c, now);
	return 1;
}

const char *pw_http_canned_get(const struct pw_http_canned *c, bool keep_alive,
			       size_t *len)
{
	*len = (size_t)(keep_alive ? c->keep_len : c->close_len);
	return keep_alive ? c->keep : c->close;
}
