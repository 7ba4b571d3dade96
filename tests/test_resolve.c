/* SPDX-License-Identifier: MIT */
/*
 * test_resolve.c - HOST:PORT splitting and name lookups (apps/resolve.c):
 * numeric forms answered without a lookup, "localhost" through the
 * system resolver, and every malformed form refused with its error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "tests/common.h"
#include "apps/resolve.h"

Test(resolve, split)
{
	char host[16];
	uint16_t port = 1;

	cr_expect_eq(pw_resolve_split("db.example:5432", host, sizeof(host),
				      &port),
		     0);
	cr_expect_str_eq(host, "db.example");
	cr_expect_eq(port, 5432);
	cr_expect_eq(pw_resolve_split("[::1]:0", host, sizeof(host), &port), 0);
	cr_expect_str_eq(host, "::1");
	cr_expect_eq(port, 0);
	cr_expect_eq(pw_resolve_split("host:65535", host, sizeof(host), &port),
		     0);
	cr_expect_eq(port, 65535);
	port = 9;
	cr_expect_eq(pw_resolve_split("host", host, sizeof(host), &port),
		     -EINVAL);
	cr_expect_eq(pw_resolve_split(":80", host, sizeof(host), &port),
		     -EINVAL);
	cr_expect_eq(pw_resolve_split("host:", host, sizeof(host), &port),
		     -EINVAL);
	cr_expect_eq(pw_resolve_split("host:65536", host, sizeof(host), &port),
		     -EINVAL);
	cr_expect_eq(pw_resolve_split("host:8x", host, sizeof(host), &port),
		     -EINVAL);
	cr_expect_eq(pw_resolve_split("host:-1", host, sizeof(host), &port),
		     -EINVAL);
	cr_expect_eq(pw_resolve_split("::1:80", host, sizeof(host), &port),
		     -EINVAL);
	cr_expect_eq(pw_resolve_split("[::1:80", host, sizeof(host), &port),
		     -EINVAL);
	cr_expect_eq(pw_resolve_split("[::1]80", host, sizeof(host), &port),
		     -EINVAL);
	cr_expect_eq(pw_resolve_split("a-very-long-host-name:1", host,
				      sizeof(host), &port),
		     -ENAMETOOLONG);
	cr_expect_eq(port, 9, "a refused text leaves the port alone");
}

Test(resolve, numeric_forms_need_no_lookup)
{
	struct pw_net_addr a[4];

	cr_assert_eq(pw_resolve("127.0.0.2:81", SOCK_STREAM, a, 4), 1);
	cr_expect_eq(a[0].u.sa.sa_family, AF_INET);
	cr_expect_eq(ntohs(a[0].u.in4.sin_port), 81);
	cr_expect_eq(ntohl(a[0].u.in4.sin_addr.s_addr), 0x7f000002u);
	cr_assert_eq(pw_resolve("[::1]:82", SOCK_DGRAM, a, 4), 1);
	cr_expect_eq(a[0].u.sa.sa_family, AF_INET6);
	cr_expect_eq(ntohs(a[0].u.in6.sin6_port), 82);
	cr_assert_eq(pw_resolve("unix:/tmp/x.sock", SOCK_STREAM, a, 4), 1);
	cr_expect_eq(a[0].u.sa.sa_family, AF_UNIX);
}

/* "localhost" resolves on every machine; which of 127.0.0.1 and ::1 it
 * gives depends on /etc/hosts, so the test asks for one of them, each
 * address once, every one carrying the port. */
Test(resolve, localhost)
{
	struct pw_net_addr a[PW_RESOLVE_MAX];
	int n = pw_resolve("localhost:8080", SOCK_STREAM, a, PW_RESOLVE_MAX);
	bool loop = false;

	cr_assert(n >= 1 && n <= 2, "localhost gave %d addresses", n);
	for (int i = 0; i < n; i++) {
		if (a[i].u.sa.sa_family == AF_INET) {
			cr_expect_eq(ntohs(a[i].u.in4.sin_port), 8080);
			loop |= ntohl(a[i].u.in4.sin_addr.s_addr) ==
				0x7f000001u;
		} else {
			cr_assert_eq(a[i].u.sa.sa_family, AF_INET6);
			cr_expect_eq(ntohs(a[i].u.in6.sin6_port), 8080);
			loop |= IN6_IS_ADDR_LOOPBACK(&a[i].u.in6.sin6_addr);
		}
		for (int j = 0; j < i; j++)
			cr_expect(a[i].len != a[j].len ||
					  memcmp(&a[i].u, &a[j].u, a[i].len),
				  "address %d repeats %d", i, j);
	}
	cr_expect(loop);
	cr_expect_eq(pw_resolve("localhost:8080", SOCK_STREAM, a, 1), 1,
		     "at most max addresses");
}

Test(resolve, refused)
{
	struct pw_net_addr a[2];

	cr_expect_eq(pw_resolve("localhost", SOCK_STREAM, a, 2), -EINVAL);
	cr_expect_eq(pw_resolve("localhost:99999", SOCK_STREAM, a, 2), -EINVAL);
	cr_expect_eq(pw_resolve("localhost:80", SOCK_STREAM, a, 0), -EINVAL);
	cr_expect_eq(pw_resolve(NULL, SOCK_STREAM, a, 2), -EINVAL);
	/* RFC 6761: no name under .invalid resolves (-EAGAIN where no
	 * name server answers). */
	int rc = pw_resolve("no-such-host.invalid:80", SOCK_STREAM, a, 2);
	cr_expect(rc == -ENOENT || rc == -EAGAIN, "got %d", rc);
	cr_expect_str_eq(pw_resolve_strerror(-ENOENT), "name not known");
}
