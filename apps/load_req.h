/* SPDX-License-Identifier: MIT */
/*
 * load_req.h - what `pinwheel load` sends: its target given as a URL, and
 * the HTTP request built from a run's settings (internal to the pinwheel
 * command; apps/load.c is the one user).
 *
 * A target URL is http://HOST[:PORT][/PATH][?QUERY]: the path and query
 * are the request target, HOST[:PORT] the Host header (the port left out
 * when it is 80, as curl does), and HOST:PORT what apps/resolve.h looks
 * up. https:// is refused: there is no TLS.
 *
 * The request is built once per run, before any connection opens, and
 * the same bytes are sent for every request:
 *
 *	METHOD SP target SP HTTP/1.1 CRLF
 *	Host: host CRLF                 (the user's Host line, if any)
 *	the user's other header lines, in order, each with CRLF
 *	Content-Length: N CRLF          (with a body, unless the user's)
 *	CRLF
 *	body
 *
 * Every part is checked first (pw_load_req_check()), with a reason a
 * person can act on: a method or header name that is not a token, a
 * value holding CR, LF or another control byte, more than
 * PW_LOAD_HEADERS_MAX header lines or PW_LOAD_HEADER_BYTES_MAX bytes of
 * them, two Host lines, a Content-Length that disagrees with the body,
 * a Transfer-Encoding (the body is sent as is, never chunked).
 */
#ifndef PW_APPS_LOAD_REQ_H
#define PW_APPS_LOAD_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apps/load.h"
#include "apps/resolve.h"

/* Longest request target and Host value, without the NUL. */
#define PW_LOAD_TEXT_MAX 1024
/* Most header lines of a request besides Host and Content-Length... */
#define PW_LOAD_HEADERS_MAX 64
/* ...and their bytes in all, each line counted with its CRLF. */
#define PW_LOAD_HEADER_BYTES_MAX 8192
/* Longest method. */
#define PW_LOAD_METHOD_MAX 32
/* Largest request body (and echo payload). */
#define PW_LOAD_BODY_MAX (16u << 20)

/* A target URL, split. */
struct pw_load_url {
	/* "HOST:PORT" ("[v6]:PORT") for pw_resolve(). */
	char resolve[PW_RESOLVE_HOST_MAX + 16];
	/* The Host header: HOST as written, ":PORT" unless the port is 80. */
	char authority[PW_RESOLVE_HOST_MAX + 16];
	/* The request target: "/PATH?QUERY", "/" for none. */
	char target[PW_LOAD_TEXT_MAX + 1];
	uint16_t port; /* 80 when the URL gives none */
	bool has_path; /* the URL had a path or a query */
};

/**
 * pw_load_is_url - whether @text is written as a URL, "SCHEME://...", so
 * that pw_load_url_parse() and not an address parser should read it.
 * Context: any thread.
 */
bool pw_load_is_url(const char *text);

/**
 * pw_load_url_parse - split the URL @text into @u. HOST is a name
 * (letters, digits, '-', '.', '_', '~'), a dotted IPv4 address, or an
 * IPv6 address in brackets; PORT 1..65535; PATH and QUERY any bytes but
 * blanks and control bytes; a "#fragment" is dropped, as clients do.
 * Return: 0; -EPROTONOSUPPORT for https:// (*@why: no TLS); -EINVAL for
 * anything else that is not such a URL, with *@why saying what (a
 * static string, e.g. "the port is not 1..65535").
 * Context: any thread.
 */
int pw_load_url_parse(const char *text, struct pw_load_url *u,
		      const char **why);

/**
 * pw_load_req_check - check the HTTP request parts of @cfg: path, host,
 * method, headers and body (see the top of this file).
 * Return: 0; -EINVAL with the reason in @why (@len bytes, may be NULL),
 * e.g. "header 'X Y: 1': the name is not a token".
 * Context: any thread.
 */
int pw_load_req_check(const struct pw_load_config *cfg, char *why, size_t len);

/**
 * pw_load_req_build - the request of @cfg (checked by
 * pw_load_req_check() first) into a malloc'd buffer: *@out, *@len bytes.
 * @host is the Host value to use when neither cfg->host nor a header
 * line gives one (the target address as text).
 * Return: 0; -EINVAL when @cfg does not pass the check; -ENOMEM.
 * Context: any thread.
 */
int pw_load_req_build(const struct pw_load_config *cfg, const char *host,
		      char **out, size_t *len);

/**
 * pw_load_body_read - read the file @path whole (any file that reads to
 * an end, a pipe too) into a malloc'd buffer: *@out, *@len bytes.
 * Return: 0; -EFBIG when it holds more than PW_LOAD_BODY_MAX bytes; the
 * -errno of opening or reading it; -ENOMEM. On error *@out is NULL.
 * Context: any thread but a shard: it blocks.
 */
int pw_load_body_read(const char *path, char **out, size_t *len);

/**
 * pw_load_req_head_only - whether answers to @cfg's method carry no body
 * whatever their Content-Length says: HEAD (RFC 9110 9.3.2).
 * Context: any thread.
 */
bool pw_load_req_head_only(const struct pw_load_config *cfg);

#endif /* PW_APPS_LOAD_REQ_H */
