/* SPDX-License-Identifier: MIT */
/*
 * udp.c - UDP sockets: the per-shard bound set (pw_udp_socket), single
 * sockets bound or connected (pw_udp_open), and the drop counter. The
 * receive is net/udp_recv.c, the sends net/udp_send.c.
 *
 * A pw_udp_socket is a listener's twin: one SO_REUSEPORT socket per
 * shard on one port, so the kernel hashes each peer's 4-tuple to one
 * shard and a flow stays on it, or one shared socket. Before it binds, a
 * probe socket bound without SO_REUSEPORT refuses a port another socket
 * holds. Binding and connecting a datagram socket never wait for a peer,
 * so they are plain system calls, not ring requests.
 */
#include <errno.h>
#include <linux/sock_diag.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fault.h"
#include "net/net_int.h"

struct pw_udp_socket {
	struct pw_runtime *rt;
	unsigned n;		 /* shards */
	bool shared;		 /* one socket for all */
	struct pw_net_addr addr; /* bound address */
	int fd[];
};

/* Whether @a is a whole IPv4 or IPv6 address. */
static bool inet_ok(const struct pw_net_addr *a)
{
	if (a->u.sa.sa_family == AF_INET)
		return a->len == sizeof(a->u.in4);
	if (a->u.sa.sa_family == AF_INET6)
		return a->len == sizeof(a->u.in6);
	return false;
}

static bool opts_ok(const struct pw_udp_opts *o)
{
	return !(o->flags & ~(PW_UDP_SHARED | PW_UDP_SHARE_PORT)) &&
	       o->rcvbuf >= 0 && o->sndbuf >= 0;
}

/* A UDP socket of @family with @o's options. Return: fd or -errno. */
static int udp_socket(int family, const struct pw_udp_opts *o, bool reuseport)
{
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int one = 1, err = 0;

	if (fd < 0)
		return -errno;
	if (reuseport &&
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)))
		err = -errno;
	if (!err && o->rcvbuf &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &o->rcvbuf,
		       sizeof(o->rcvbuf)))
		err = -errno;
	if (!err && o->sndbuf &&
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &o->sndbuf,
		       sizeof(o->sndbuf)))
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/* Bind @fd to @a and read back the port bound. 0 or -errno. */
static int udp_bind(int fd, struct pw_net_addr *a)
{
	socklen_t len = sizeof(a->u);

	if (bind(fd, &a->u.sa, a->len) || getsockname(fd, &a->u.sa, &len))
		return -errno;
	a->len = len;
	return 0;
}

/* A port held by any socket makes a bind without SO_REUSEPORT fail. */
static int port_probe(const struct pw_net_addr *a)
{
	int fd = socket(a->u.sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (bind(fd, &a->u.sa, a->len))
		err = -errno;
	close(fd);
	return err;
}

static void close_all(struct pw_udp_socket *u, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (u->fd[i] >= 0 && (!u->shared || i == 0))
			close(u->fd[i]);
}

static int open_all(struct pw_udp_socket *u, const struct pw_udp_opts *o)
{
	bool share = o->flags & PW_UDP_SHARE_PORT;
	bool reuseport = !u->shared || share;
	bool port = u->addr.u.sa.sa_family == AF_INET ? u->addr.u.in4.sin_port :
							u->addr.u.in6.sin6_port;
	int err = 0;

	if (reuseport && !share && port)
		err = port_probe(&u->addr);
	for (unsigned i = 0; i < u->n && !err; i++) {
		int fd = u->shared && i ? u->fd[0] :
					  udp_socket(u->addr.u.sa.sa_family, o,
						     reuseport);
		if (fd >= 0 && !(u->shared && i))
			err = udp_bind(fd, &u->addr); /* port 0: now fixed */
		if (fd < 0 || err) {
			if (fd >= 0 && !(u->shared && i))
				close(fd);
			close_all(u, i);
			return fd < 0 ? fd : err;
		}
		u->fd[i] = fd;
	}
	return err;
}

int pw_udp_socket_create(struct pw_udp_socket **up, struct pw_runtime *rt,
			 const struct pw_net_addr *addr,
			 const struct pw_udp_opts *opts)
{
	struct pw_udp_opts o = { 0 };

	if (!up)
		return -EINVAL;
	*up = NULL;
	if (opts)
		o = *opts;
	if (!addr || !inet_ok(addr) || !opts_ok(&o))
		return -EINVAL;
	int n = pw_runtime_shards(rt);
	if (n < 1)
		return -EINVAL;
	struct pw_udp_socket *u = pw__fault_calloc(
		PW__FAULT_LISTENER, 1, sizeof(*u) + (size_t)n * sizeof(int));
	if (!u)
		return -ENOMEM;
	u->rt = rt;
	u->n = (unsigned)n;
	u->shared = o.flags & PW_UDP_SHARED;
	u->addr = *addr;
	for (unsigned i = 0; i < u->n; i++)
		u->fd[i] = -1;
	int err = open_all(u, &o);
	if (err) {
		free(u);
		return err;
	}
	*up = u;
	return 0;
}

int pw_udp_socket_fd(const struct pw_udp_socket *u, unsigned shard)
{
	if (!u || shard >= u->n)
		return -EINVAL;
	return u->fd[shard];
}

int pw_udp_socket_addr(const struct pw_udp_socket *u, struct pw_net_addr *out)
{
	if (!u || !out)
		return -EINVAL;
	*out = u->addr;
	return 0;
}

int pw_udp_socket_destroy(struct pw_udp_socket *u)
{
	if (!u)
		return -EINVAL;
	close_all(u, u->n);
	free(u);
	return 0;
}

int pw_udp_open(const struct pw_net_addr *local, const struct pw_net_addr *peer,
		const struct pw_udp_opts *opts)
{
	struct pw_udp_opts o = { 0 };

	if (opts)
		o = *opts;
	if ((!local && !peer) || (local && !inet_ok(local)) ||
	    (peer && !inet_ok(peer)) || !opts_ok(&o) ||
	    (local && peer && local->u.sa.sa_family != peer->u.sa.sa_family))
		return -EINVAL;
	int family = local ? local->u.sa.sa_family : peer->u.sa.sa_family;
	int fd = udp_socket(family, &o, o.flags & PW_UDP_SHARE_PORT);
	if (fd < 0)
		return fd;
	int err = 0;
	if (local && bind(fd, &local->u.sa, local->len))
		err = -errno;
	if (!err && peer && connect(fd, &peer->u.sa, peer->len))
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int pw_udp_connect(int fd, const struct pw_net_addr *peer)
{
	struct sockaddr unspec = { .sa_family = AF_UNSPEC };

	if (!peer)
		return connect(fd, &unspec, sizeof(unspec)) ? -errno : 0;
	return connect(fd, &peer->u.sa, peer->len) ? -errno : 0;
}

int pw_udp_drops(int fd, uint64_t *out)
{
	uint32_t mem[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mem);

	if (!out)
		return -EINVAL;
	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &len))
		return -errno;
	if (len <= SK_MEMINFO_DROPS * sizeof(uint32_t))
		return -EOPNOTSUPP;
	*out = mem[SK_MEMINFO_DROPS];
	return 0;
}
