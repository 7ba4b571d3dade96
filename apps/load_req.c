/* SPDX-License-Identifier: MIT */
/*
 * load_req.c - target URLs and the request of `pinwheel load` (see
 * load_req.h). Everything here runs once, before a run starts: the
 * per-request path only sends the bytes built here. Header lines are
 * sent exactly as given; the checks only refuse what would make the
 * request malformed or ambiguous on the wire.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pinwheel/net.h"
#include "apps/load_req.h"

/* ---- bytes -------------------------------------------------------------- */

/* RFC 9110 tchar: a byte of a token (method, header name). */
static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_token(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_tchar((unsigned char)s[i]))
			return false;
	return true;
}

/* No blank, control byte or DEL: a request target or a Host value. */
static bool clean_text(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* A host name of a URL: letters, digits and "-._~". */
static bool is_name(const char *s, size_t n)
{
	if (!n || n > PW_RESOLVE_HOST_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'z') &&
		    !(c >= 'A' && c <= 'Z') && !strchr("-._~", c))
			return false;
	}
	return true;
}

/* An IPv6 address between brackets: hex digits, ':' and '.'. */
static bool is_v6(const char *s, size_t n)
{
	if (n < 2 || n > 45)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'f') &&
		    !(c >= 'A' && c <= 'F') && c != ':' && c != '.')
			return false;
	}
	return true;
}

/* ---- URLs --------------------------------------------------------------- */

bool pw_load_is_url(const char *text)
{
	const char *s = text;

	if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
		return false;
	while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
	       (*s >= '0' && *s <= '9') || *s == '+' || *s == '-' || *s == '.')
		s++;
	return !strncmp(s, "://", 3);
}

/* Set *@why to @what; return @err. */
static int url_fail(const char **why, const char *what, int err)
{
	*why = what;
	return err;
}

/* The port, @p[0..@n): 1..65535 in decimal; 0 or -EINVAL. */
static int url_port(const char *p, size_t n, unsigned long *port)
{
	*port = 0;
	if (!n || n > 5)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -EINVAL;
		*port = *port * 10 + (unsigned long)(p[i] - '0');
	}
	return *port && *port <= 65535 ? 0 : -EINVAL;
}

/* The authority, @a[0..@n): HOST[:PORT] into @u. */
static int url_authority(const char *a, size_t n, struct pw_load_url *u,
			 const char **why)
{
	const char *close, *colon;
	size_t hn;
	unsigned long port = 80;

	if (memchr(a, '@', n))
		return url_fail(why, "user@ is not supported", -EINVAL);
	if (n && a[0] == '[') {
		close = memchr(a, ']', n);
		if (!close || !is_v6(a + 1, (size_t)(close - a - 1)))
			return url_fail(why,
					"the host is not an [IPv6] address",
					-EINVAL);
		hn = (size_t)(close - a) + 1;
	} else {
		colon = memchr(a, ':', n);
		hn = colon ? (size_t)(colon - a) : n;
		if (!hn)
			return url_fail(why, "the host is empty", -EINVAL);
		if (!is_name(a, hn))
			return url_fail(why,
					"the host is not a name or an address",
					-EINVAL);
	}
	if (hn < n && (a[hn] != ':' || url_port(a + hn + 1, n - hn - 1, &port)))
		return url_fail(why, "the port is not 1..65535", -EINVAL);
	u->port = (uint16_t)port;
	snprintf(u->resolve, sizeof(u->resolve), "%.*s:%lu", (int)hn, a, port);
	if (port == 80)
		snprintf(u->authority, sizeof(u->authority), "%.*s", (int)hn,
			 a);
	else
		snprintf(u->authority, sizeof(u->authority), "%.*s:%lu",
			 (int)hn, a, port);
	return 0;
}

/* The path and query, @p[0..@n) (the fragment cut off), into @u. */
static int url_target(const char *p, size_t n, struct pw_load_url *u,
		      const char **why)
{
	size_t at = 0;

	u->has_path = n > 0;
	if (!n || p[0] == '?')
		u->target[at++] = '/';
	if (at + n > PW_LOAD_TEXT_MAX)
		return url_fail(why, "the path is longer than 1024 bytes",
				-EINVAL);
	memcpy(u->target + at, p, n);
	u->target[at + n] = '\0';
	if (!clean_text(u->target))
		return url_fail(why, "the path holds a blank or a control byte",
				-EINVAL);
	return 0;
}

int pw_load_url_parse(const char *text, struct pw_load_url *u, const char **why)
{
	const char *dummy, *auth;
	size_t an, pn;
	int err;

	if (!why)
		why = &dummy;
	*why = "not a URL";
	if (!text || !u)
		return -EINVAL;
	memset(u, 0, sizeof(*u));
	if (!strncasecmp(text, "https://", 8))
		return url_fail(why,
				"https is not supported (no TLS): use http://",
				-EPROTONOSUPPORT);
	if (strncasecmp(text, "http://", 7))
		return url_fail(why, "not an http:// URL", -EINVAL);
	auth = text + 7;
	an = strcspn(auth, "/?#");
	if ((err = url_authority(auth, an, u, why)))
		return err;
	pn = strcspn(auth + an, "#");
	return url_target(auth + an, pn, u, why);
}

/* ---- header lines ------------------------------------------------------- */

/* @s for a message: at most 40 bytes, control bytes as \r, \n, \xNN. */
static void quote(char *dst, size_t size, const char *s)
{
	size_t at = 0;

	for (size_t i = 0; s[i] && at + 5 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		if (i == 40) {
			at += (size_t)snprintf(dst + at, size - at, "...");
			break;
		}
		if (c == '\r' || c == '\n')
			at += (size_t)snprintf(dst + at, size - at, "\\%c",
					       c == '\r' ? 'r' : 'n');
		else if (c < 0x20 || c == 0x7f)
			at += (size_t)snprintf(dst + at, size - at, "\\x%02x",
					       c);
		else
			dst[at++] = (char)c;
	}
	dst[at < size ? at : size - 1] = '\0';
}

/* Write "header 'LINE': @what" into @why. Return -EINVAL. */
static int header_fail(char *why, size_t len, const char *line,
		       const char *what)
{
	char q[64];

	if (why && len) {
		quote(q, sizeof(q), line);
		snprintf(why, len, "header '%s': %s", q, what);
	}
	return -EINVAL;
}

/* Check "Name: value" syntax; *@name gets the name's length.
 * Return: why the line is bad, or NULL. */
static const char *header_syntax(const char *line, size_t *name)
{
	const char *colon = strchr(line, ':');

	if (!colon)
		return "not 'Name: value'";
	*name = (size_t)(colon - line);
	if (!is_token(line, *name))
		return "the name is not a token";
	for (const char *v = colon + 1; *v; v++) {
		unsigned char c = (unsigned char)*v;
		if (c == '\r' || c == '\n')
			return "the value holds CR or LF";
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return "the value holds a control byte";
	}
	return NULL;
}

static bool name_is(const char *line, size_t n, const char *name)
{
	return strlen(name) == n && !strncasecmp(line, name, n);
}

/* The value of @line after its name of @n bytes, blanks trimmed, as a
 * decimal number. Return: 0, or -EINVAL when it is not one. */
static int header_number(const char *line, size_t n, uint64_t *v)
{
	const char *s = line + n + 1;
	size_t len;

	s += strspn(s, " \t");
	len = strcspn(s, " \t");
	if (!len || len > 19 || s[len + strspn(s + len, " \t")])
		return -EINVAL;
	*v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		*v = *v * 10 + (uint64_t)(s[i] - '0');
	}
	return 0;
}

/* What one header line means for the request; 0 or -EINVAL. */
static int header_check(const struct pw_load_config *cfg, const char *line,
			unsigned *hosts, char *why, size_t len)
{
	const char *bad;
	size_t n = 0;
	uint64_t cl;

	if (!line)
		return header_fail(why, len, "", "missing");
	if ((bad = header_syntax(line, &n)))
		return header_fail(why, len, line, bad);
	if (name_is(line, n, "Host") && ++*hosts > 1)
		return header_fail(why, len, line, "a second Host");
	if (name_is(line, n, "Transfer-Encoding"))
		return header_fail(why, len, line,
				   "not supported (the body is sent as is, "
				   "with Content-Length)");
	if (!name_is(line, n, "Content-Length"))
		return 0;
	if (header_number(line, n, &cl))
		return header_fail(why, len, line, "not a number");
	if (cl != (cfg->body ? cfg->body_len : 0))
		return header_fail(why, len, line,
				   cfg->body ? "disagrees with the body's "
					       "length" :
					       "but there is no body");
	return 0;
}

/* The method, path and Host value of @cfg; 0 or -EINVAL. */
static int line_check(const struct pw_load_config *cfg, char *why, size_t len)
{
	const char *m = cfg->method;

	if (m && (strlen(m) > PW_LOAD_METHOD_MAX || !is_token(m, strlen(m)))) {
		if (why && len)
			snprintf(why, len,
				 "the method is not a token of 1..%d "
				 "bytes",
				 PW_LOAD_METHOD_MAX);
		return -EINVAL;
	}
	if (!cfg->path || cfg->path[0] != '/' ||
	    strlen(cfg->path) > PW_LOAD_TEXT_MAX || !clean_text(cfg->path)) {
		if (why && len)
			snprintf(why, len,
				 "the path must start with /, hold "
				 "no blank or control byte and "
				 "have at most 1024 bytes");
		return -EINVAL;
	}
	if (cfg->host &&
	    (!cfg->host[0] || strlen(cfg->host) > PW_LOAD_TEXT_MAX ||
	     !clean_text(cfg->host))) {
		if (why && len)
			snprintf(why, len,
				 "the host must be non-empty, hold "
				 "no blank or control byte and "
				 "have at most 1024 bytes");
		return -EINVAL;
	}
	return 0;
}

int pw_load_req_check(const struct pw_load_config *cfg, char *why, size_t len)
{
	size_t bytes = 0;
	unsigned hosts = 0;
	int err;

	if (why && len)
		why[0] = '\0';
	if (!cfg)
		return -EINVAL;
	if ((err = line_check(cfg, why, len)))
		return err;
	if (cfg->nheaders > PW_LOAD_HEADERS_MAX ||
	    (cfg->nheaders && !cfg->headers)) {
		if (why && len)
			snprintf(why, len, "more than %d headers",
				 PW_LOAD_HEADERS_MAX);
		return -EINVAL;
	}
	for (unsigned i = 0; i < cfg->nheaders; i++) {
		if ((err = header_check(cfg, cfg->headers[i], &hosts, why,
					len)))
			return err;
		bytes += strlen(cfg->headers[i]) + 2;
	}
	if (bytes > PW_LOAD_HEADER_BYTES_MAX) {
		if (why && len)
			snprintf(why, len,
				 "the headers take %zu bytes, more "
				 "than %d",
				 bytes, PW_LOAD_HEADER_BYTES_MAX);
		return -EINVAL;
	}
	if ((!cfg->body && cfg->body_len) || cfg->body_len > PW_LOAD_BODY_MAX) {
		if (why && len)
			snprintf(why, len, "the body is over 16 MiB");
		return -EINVAL;
	}
	return 0;
}

/* ---- the request -------------------------------------------------------- */

/* Header line @i of @cfg is named @name. */
static bool header_named(const struct pw_load_config *cfg, unsigned i,
			 const char *name)
{
	const char *line = cfg->headers[i];

	return name_is(line, strcspn(line, ":"), name);
}

/* The user's line named @name, or -1. */
static int find_header(const struct pw_load_config *cfg, const char *name)
{
	for (unsigned i = 0; i < cfg->nheaders; i++)
		if (header_named(cfg, i, name))
			return (int)i;
	return -1;
}

/* A buffer being filled; with p NULL only its length is counted. */
struct req_out {
	char *p;
	size_t n;
};

static void put(struct req_out *o, const char *s, size_t n)
{
	if (o->p)
		memcpy(o->p + o->n, s, n);
	o->n += n;
}

static void puts_(struct req_out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* The whole request into @o (see the top of load_req.h). */
static void req_write(const struct pw_load_config *cfg, const char *host,
		      struct req_out *o)
{
	int user_host = find_header(cfg, "Host");
	char cl[48];

	puts_(o, cfg->method ? cfg->method : "GET");
	puts_(o, " ");
	puts_(o, cfg->path);
	puts_(o, " HTTP/1.1\r\n");
	if (user_host >= 0) {
		puts_(o, cfg->headers[user_host]);
	} else {
		puts_(o, "Host: ");
		puts_(o, cfg->host ? cfg->host : host);
	}
	puts_(o, "\r\n");
	for (unsigned i = 0; i < cfg->nheaders; i++) {
		if ((int)i == user_host)
			continue;
		puts_(o, cfg->headers[i]);
		puts_(o, "\r\n");
	}
	if (cfg->body && find_header(cfg, "Content-Length") < 0) {
		snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n",
			 cfg->body_len);
		puts_(o, cl);
	}
	puts_(o, "\r\n");
	if (cfg->body)
		put(o, cfg->body, cfg->body_len);
}

int pw_load_req_build(const struct pw_load_config *cfg, const char *host,
		      char **out, size_t *len)
{
	struct req_out o = { NULL, 0 };

	if (!cfg || !out || !len || pw_load_req_check(cfg, NULL, 0))
		return -EINVAL;
	if (!cfg->host && find_header(cfg, "Host") < 0 &&
	    (!host || !host[0] || !clean_text(host)))
		return -EINVAL;
	req_write(cfg, host, &o);
	o.p = malloc(o.n + 1);
	if (!o.p)
		return -ENOMEM;
	o.n = 0;
	req_write(cfg, host, &o);
	o.p[o.n] = '\0';
	*out = o.p;
	*len = o.n;
	return 0;
}

int pw_load_body_read(const char *path, char **out, size_t *len)
{
	FILE *f = path && out && len ? fopen(path, "re") : NULL;
	size_t cap = 65536, n = 0, r;
	char *p, *q;
	int err = 0;

	if (!f)
		return path && out && len ? -errno : -EINVAL;
	p = malloc(cap);
	while (p && n <= PW_LOAD_BODY_MAX) {
		if (n == cap) {
			if (!(q = realloc(p, cap * 2)))
				break;
			p = q;
			cap *= 2;
		}
		if (!(r = fread(p + n, 1, cap - n, f)))
			break;
		n += r;
	}
	if (!p || (n == cap && n <= PW_LOAD_BODY_MAX))
		err = -ENOMEM; /* the realloc failed */
	else if (ferror(f))
		err = errno ? -errno : -EIO;
	else if (n > PW_LOAD_BODY_MAX)
		err = -EFBIG;
	fclose(f);
	if (err) {
		free(p);
		p = NULL;
		n = 0;
	}
	*out = p;
	*len = n;
	return err;
}

bool pw_load_req_head_only(const struct pw_load_config *cfg)
{
	return cfg && cfg->method && !strcmp(cfg->method, "HEAD");
}
