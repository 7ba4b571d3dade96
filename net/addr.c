/* SPDX-License-Identifier: MIT */
/*
 * addr.c - socket addresses from and to text.
 *
 * Numeric forms only (no name resolution, which would block a shard):
 * "A.B.C.D:PORT", "[IPv6]:PORT", "unix:/path", "unix:@abstract".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "pinwheel/net.h"

static int parse_port(const char *p, uint16_t *out)
{
	unsigned v = 0;
	int n = 0;

	for (; *p; p++, n++) {
		if (*p < '0' || *p > '9' || n >= 5)
			return -EINVAL;
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (n == 0 || v > 65535)
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

static int parse_unix(struct pw_net_addr *a, const char *path)
{
	size_t len = strlen(path);
	struct pw_net_addr t;

	if (len == 0 || len >= sizeof(t.u.un.sun_path) ||
	    (path[0] == '@' && len == 1))
		return -EINVAL;
	memset(&t, 0, sizeof(t));
	t.u.un.sun_family = AF_UNIX;
	memcpy(t.u.un.sun_path, path, len);
	if (path[0] == '@') {
		t.u.un.sun_path[0] = '\0'; /* abstract: no NUL terminator */
		t.len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				    len);
	} else {
		t.len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				    len + 1);
	}
	*a = t;
	return 0;
}

int pw_net_addr_parse(struct pw_net_addr *a, const char *text)
{
	char host[INET6_ADDRSTRLEN + 1];
	struct pw_net_addr t;
	const char *port;
	uint16_t pn;

	if (!a || !text)
		return -EINVAL;
	if (!strncmp(text, "unix:", 5))
		return parse_unix(a, text + 5);
	memset(&t, 0, sizeof(t));
	if (text[0] == '[') {
		const char *end = strchr(text, ']');
		size_t hl = end ? (size_t)(end - text - 1) : 0;
		if (!end || hl == 0 || hl >= sizeof(host) || end[1] != ':')
			return -EINVAL;
		memcpy(host, text + 1, hl);
		host[hl] = '\0';
		port = end + 2;
		if (parse_port(port, &pn) ||
		    inet_pton(AF_INET6, host, &t.u.in6.sin6_addr) != 1)
			return -EINVAL;
		t.u.in6.sin6_family = AF_INET6;
		t.u.in6.sin6_port = htons(pn);
		t.len = sizeof(t.u.in6);
	} else {
		const char *colon = strrchr(text, ':');
		size_t hl = colon ? (size_t)(colon - text) : 0;
		if (!colon || hl == 0 || hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, text, hl);
		host[hl] = '\0';
		if (parse_port(colon + 1, &pn) ||
		    inet_pton(AF_INET, host, &t.u.in4.sin_addr) != 1)
			return -EINVAL;
		t.u.in4.sin_family = AF_INET;
		t.u.in4.sin_port = htons(pn);
		t.len = sizeof(t.u.in4);
	}
	*a = t;
	return 0;
}

int pw_net_addr_format(const struct pw_net_addr *a, char *buf, size_t size)
{
	char host[INET6_ADDRSTRLEN];
	int n;

	if (!a || !buf)
		return -EINVAL;
	switch (a->u.sa.sa_family) {
	case AF_INET:
		inet_ntop(AF_INET, &a->u.in4.sin_addr, host, sizeof(host));
		n = snprintf(buf, size, "%s:%u", host,
			     ntohs(a->u.in4.sin_port));
		break;
	case AF_INET6:
		inet_ntop(AF_INET6, &a->u.in6.sin6_addr, host, sizeof(host));
		n = snprintf(buf, size, "[%s]:%u", host,
			     ntohs(a->u.in6.sin6_port));
		break;
	case AF_UNIX: {
		size_t off = offsetof(struct sockaddr_un, sun_path);
		size_t pl = a->len > off ? a->len - off : 0;
		const char *p = a->u.un.sun_path;
		if (pl && p[0] == '\0')
			n = snprintf(buf, size, "unix:@%.*s", (int)(pl - 1),
				     p + 1);
		else
			n = snprintf(buf, size, "unix:%.*s",
				     (int)strnlen(p, pl), p);
		break;
	}
	default:
		return -EINVAL;
	}
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= size)
		return -ENOSPC;
	return n;
}
