/* SPDX-License-Identifier: MIT */
/*
 * resolve.c - HOST:PORT splitting and name lookups for the commands
 * (resolve.h). Numeric forms never reach the resolver; names go to
 * getaddrinfo() with AI_NUMERICSERV (the port is always a number) and
 * the answers are copied without repeats (getaddrinfo() gives one per
 * protocol unless the socket type is set, and /etc/hosts may list an
 * address twice).
 */
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "apps/resolve.h"

int pw_resolve_split(const char *text, char *host, size_t hsize, uint16_t *port)
{
	const char *colon, *h = text;
	size_t hlen;
	unsigned long v = 0;

	if (!text || !host || !hsize || !port)
		return -EINVAL;
	if (*text == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		h = text + 1;
		hlen = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(text, ':');
		if (!colon)
			return -EINVAL;
		hlen = (size_t)(colon - text);
		/* An unbracketed IPv6 address is ambiguous: refuse it. */
		if (memchr(text, ':', hlen))
			return -EINVAL;
	}
	if (!hlen || !colon[1] || strlen(colon + 1) > 5)
		return -EINVAL;
	for (const char *p = colon + 1; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v > 65535)
		return -EINVAL;
	if (hlen >= hsize)
		return -ENAMETOOLONG;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	*port = (uint16_t)v;
	return 0;
}

static int gai_errno(int rc)
{
	switch (rc) {
	case EAI_NONAME:
	case EAI_NODATA:
	case EAI_ADDRFAMILY:
	case EAI_FAMILY:
		return -ENOENT;
	case EAI_AGAIN:
		return -EAGAIN;
	case EAI_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

/* Copy @ai's IPv4 and IPv6 answers into @out without repeats. */
static int collect(const struct addrinfo *ai, struct pw_net_addr *out,
		   unsigned max)
{
	unsigned n = 0;

	for (; ai && n < max; ai = ai->ai_next) {
		bool seen = false;

		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    ai->ai_addrlen > sizeof(out[0].u))
			continue;
		for (unsigned i = 0; i < n && !seen; i++)
			seen = out[i].len == ai->ai_addrlen &&
			       !memcmp(&out[i].u, ai->ai_addr, ai->ai_addrlen);
		if (seen)
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		memcpy(&out[n].u, ai->ai_addr, ai->ai_addrlen);
		out[n].len = ai->ai_addrlen;
		n++;
	}
	return n ? (int)n : -ENOENT;
}

int pw_resolve(const char *text, int socktype, struct pw_net_addr *out,
	       unsigned max)
{
	struct addrinfo hints, *res = NULL;
	char host[PW_RESOLVE_HOST_MAX + 1], port[8];
	uint16_t p;
	int rc;

	if (!text || !out || !max)
		return -EINVAL;
	if (pw_net_addr_parse(&out[0], text) == 0)
		return 1;
	rc = pw_resolve_split(text, host, sizeof(host), &p);
	if (rc)
		return -EINVAL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = socktype;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%u", (unsigned)p);
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		return gai_errno(rc);
	rc = collect(res, out, max);
	freeaddrinfo(res);
	return rc;
}

const char *pw_resolve_strerror(int err)
{
	switch (err) {
	case -EINVAL:
		return "not HOST:PORT, [IPv6]:PORT or unix:PATH";
	case -ENAMETOOLONG:
		return "host name too long";
	case -ENOENT:
		return "name not known";
	case -EAGAIN:
		return "temporary failure in name resolution";
	case -ENOMEM:
		return "out of memory";
	default:
		return "name resolution failed";
	}
}
