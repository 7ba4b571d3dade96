/* SPDX-License-Identifier: MIT */
/*
 * resolve.h - host names to socket addresses for the commands: the one
 * place that splits "HOST:PORT" and asks the system resolver.
 *
 * pw_resolve() takes every form pw_net_addr_parse() takes (numeric IPv4,
 * [IPv6], unix:) and answers those without a lookup; any other HOST goes
 * to getaddrinfo(), so /etc/hosts, DNS and the rest of nsswitch.conf are
 * honoured as by every other program on the machine. A name may give
 * several addresses: all are returned, in the resolver's order, without
 * repeats. The lookup blocks, so a shard never calls it: the commands
 * resolve at start on the main thread, and a periodic re-resolution runs
 * on the blocking pool (pinwheel/blocking.h).
 */
#ifndef PW_APPS_RESOLVE_H
#define PW_APPS_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "pinwheel/net.h"

/* Most addresses pw_resolve() returns for one name. */
#define PW_RESOLVE_MAX 16
/* Longest host name accepted, without its NUL (RFC 1035's 253 + 2). */
#define PW_RESOLVE_HOST_MAX 255

/**
 * pw_resolve_split - split @text, "HOST:PORT" or "[IPv6]:PORT", into
 * @host (the brackets removed; @hsize bytes with the NUL) and @port.
 * PORT is decimal, 0..65535.
 * Return: 0; -EINVAL for NULL, no colon, an empty host, an unclosed
 * bracket, or a port that is not a number in range; -ENAMETOOLONG for a
 * host that does not fit @hsize.
 * Context: any thread.
 */
int pw_resolve_split(const char *text, char *host, size_t hsize,
		     uint16_t *port);

/**
 * pw_resolve - the addresses of @text: a form pw_net_addr_parse() takes
 * (one address, no lookup) or "NAME:PORT" (getaddrinfo() for @socktype,
 * SOCK_STREAM or SOCK_DGRAM). Up to @max addresses go to @out.
 * Return: the number of addresses, 1..@max; -EINVAL for NULL, @max 0 or
 * text of no form above; -ENOENT for a name the resolver does not know
 * (or that has no address of a supported family); -EAGAIN for a
 * temporary failure (no answer from the name server); -ENOMEM; -EIO for
 * any other resolver error.
 * Context: any thread but a shard: it may block for seconds.
 */
int pw_resolve(const char *text, int socktype, struct pw_net_addr *out,
	       unsigned max);

/**
 * pw_resolve_strerror - a few words for an error of pw_resolve(), for a
 * message such as "--upstream 'db:5432': name not known".
 * Return: a static string. Context: any thread.
 */
const char *pw_resolve_strerror(int err);

#endif /* PW_APPS_RESOLVE_H */
