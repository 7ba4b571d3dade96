/* SPDX-License-Identifier: MIT */
/*
 * http_parse.c - incremental HTTP/1.1 request parsing and fixed responses
 * (see http_parse.h).
 *
 * One state per position in the grammar; every byte moves the machine by
 * one step, so a request split anywhere parses the same as in one piece.
 * Head bytes are counted against the cap before they are looked at, so
 * an endless header line fails as soon as it passes the cap. Only four
 * header names matter here (Host, Connection, Content-Length,
 * Transfer-Encoding); their values are gathered into a small buffer and
 * interpreted at the end of the line, every other value is only checked
 * for control characters.
 *
 * The fast path. Most requests arrive whole, head and all, in one read.
 * When a call starts a fresh request (nothing of it consumed yet),
 * fast_head() first tries to parse the head in one go: the method and
 * field names through a tchar table, the target up to its space and each
 * field line up to its LF with memchr() (SIMD in glibc), target and
 * values checked eight bytes at a time, the four interpreted names
 * compared a word at a time. It interprets values with
 * the same header_done() and head_done() as the state machine, so a head
 * it accepts leaves the parser exactly as step() would after the head's
 * last byte. It takes only what it fully understands: empty lines before
 * the request, a head not all in the buffer or over the cap, and every
 * error make it give up (new_request() wipes what it wrote), and the
 * state machine parses the same bytes from the start of the request, so
 * errors, their codes and *used, and every edge case stay those of
 * step(). A Content-Length body is skipped by the byte loop, as before.
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

enum { H_OTHER, H_HOST, H_CONNECTION, H_LENGTH, H_TE };

static const char version_text[] = "HTTP/";

/* RFC 9110 tchar: the characters of a token. */
static bool is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c);
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* is_tchar() as a table, for the fast path; 0x80 and above: none. */
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

/* Interpret the value (trailing blanks already trimmed) of a known
 * header. Returns 0 or -EBADMSG. */
static int header_done(struct pw_http_parser *p)
{
	const char *v = p->value;
	size_t n = p->vlen;
	uint64_t len = 0;

	switch (p->which) {
	case H_HOST:
		if (++p->hosts > 1)
			return -EBADMSG;
		break;
	case H_TE:
		p->te = true;
		break;
	case H_LENGTH:
		if (!n)
			return -EBADMSG;
		for (size_t i = 0; i < n; i++) {
			if (v[i] < '0' || v[i] > '9' ||
			    len > (UINT64_MAX - 9) / 10)
				return -EBADMSG;
			len = len * 10 + (uint64_t)(v[i] - '0');
		}
		if (p->have_len && len != p->req.content_length)
			return -EBADMSG;
		p->have_len = true;
		p->req.content_length = len;
		break;
	case H_CONNECTION:
		/* A comma-separated list of options. */
		for (size_t i = 0; i < n;) {
			size_t j;

			while (i < n &&
			       (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
				i++;
			for (j = i; j < n && v[j] != ',' && v[j] != ' ' &&
				    v[j] != '\t';
			     j++)
				;
			if (token_eq(v + i, j - i, "close"))
				p->close = true;
			else if (token_eq(v + i, j - i, "keep-alive"))
				p->keep = true;
			i = j;
		}
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
	if (r->minor >= 1)
		r->keep_alive = !p->close;
	else
		r->keep_alive = p->keep && !p->close;
	p->body_left = r->content_length;
	p->state = p->body_left ? S_BODY : S_DONE;
	return 0;
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

/* Whether every byte of @s[0..@n) is one step() takes in a field value:
 * not a control character other than HT, not DEL. */
static bool value_bytes_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((s[i] < ' ' && s[i] != '\t') || s[i] == 0x7f)
			return false;
	return true;
}

/* The same a word at a time (a flagged word looked at byte by byte),
 * the last word overlapping the one before. */
static bool value_ok(const unsigned char *s, size_t n)
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
static bool name_is(const unsigned char *s, const char *want, size_t n)
{
	const unsigned char *w = (const unsigned char *)want;
	uint64_t diff = 0;

	for (size_t i = 0; i + 8 < n; i += 8)
		diff |= (load64(s + i) | ONES * 0x20) ^ load64(w + i);
	diff |= (load64(s + n - 8) | ONES * 0x20) ^ load64(w + n - 8);
	return !diff;
}

/* header_kind() of a field name of tchars as written (any case). */
static unsigned fast_kind(const unsigned char *s, size_t n)
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
	struct pw_http_req *r = &p->req;
	const unsigned char *s = (const unsigned char *)buf;
	const unsigned char *end = s + (len < p->head_max ? len : p->head_max);
	const unsigned char *lf, *e, *t;
	size_t n;

	/* The request line: METHOD SP target SP HTTP/1.DIGIT, CRLF or LF.
	 * The method: 1 to 15 tchars (none for an empty line first). */
	n = (size_t)(end - s);
	e = s + (n < PW_HTTP_METHOD_MAX ? n : PW_HTTP_METHOD_MAX);
	for (t = s; t < e && tchar_tab[*t]; t++)
		;
	if (t == s || t == e || *t != ' ')
		return 0;
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
		return 0;
	n = (size_t)(t - s);
	if (!n || n >= PW_HTTP_TARGET_MAX || !target_ok(s, n))
		return 0;
	memcpy(r->target, s, n);
	r->target[n] = '\0';
	r->target_len = n;
	s = t + 1;
	if (end - s < 9 || memcmp(s, "HTTP/1.", 7) || s[7] < '0' || s[7] > '9')
		return 0;
	r->minor = s[7] == '0' ? 0 : 1;
	if (s[8] == '\n')
		lf = s + 8;
	else if (s[8] == '\r' && end - s >= 10 && s[9] == '\n')
		lf = s + 9;
	else
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
		r->headers++;
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

/* One head byte. Returns 0, or a negative error. */
static int step(struct pw_http_parser *p, unsigned char c)
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
	case S_TARGET:
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
	case S_VERSION:
		/* "HTTP/" DIGIT "." DIGIT, then CRLF or LF. */
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
			r->minor = c == '0' ? 0 : 1; /* 1.2+ reads as 1.1 */
		} else if (c == '\r') {
			p->state = S_RL_LF;
		} else if (c == '\n') {
			p->state = S_LINE;
		} else {
			return -EBADMSG;
		}
		p->vlen++;
		return 0;
	case S_RL_LF:
	case S_VALUE_LF:
		if (c != '\n')
			return -EBADMSG;
		if (p->state == S_VALUE_LF) {
			int err = header_done(p);
			if (err)
				return err;
		}
		p->state = S_LINE;
		return 0;
	case S_LINE:
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
		/* fall through */
	case S_NAME:
		if (c == ':') {
			if (!p->nlen)
				return -EBADMSG;
			r->headers++;
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
	case S_OWS:
		if (c == ' ' || c == '\t')
			return 0;
		p->state = S_VALUE;
		/* fall through */
	case S_VALUE:
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
	case S_END_LF:
		if (c != '\n')
			return -EBADMSG;
		return head_done(p);
	}
	return -EBADMSG;
}

int pw_http_parse(struct pw_http_parser *p, const char *buf, size_t len,
		  size_t *used)
{
	size_t i = 0;

	if (!p || (!buf && len) || !used)
		return -EINVAL;
	*used = 0;
	if (p->err)
		return p->err;
	if (p->state == S_DONE)
		new_request(p);
	if (p->state == S_START && !p->head && len) {
		i = fast_head(p, buf, len);
		if (!i) {
			new_request(p); /* step() takes it from the start */
		} else {
			p->fast_heads++;
			if (p->state == S_DONE) {
				*used = i;
				return 1;
			}
		}
	}
	while (i < len) {
		if (p->state == S_BODY) {
			size_t n = len - i;

			if (n > p->body_left)
				n = (size_t)p->body_left;
			p->body_left -= n;
			i += n;
			if (!p->body_left)
				p->state = S_DONE;
		} else {
			int err;

			if (++p->head > p->head_max)
				err = -EMSGSIZE;
			else
				err = step(p, (unsigned char)buf[i]);
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
