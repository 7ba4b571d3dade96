/* SPDX-License-Identifier: MIT */
/*
 * listen.c - listeners and multishot accept.
 *
 * A listener (runtime-owned, pw_net_listener_create() allocates it) holds
 * one SO_REUSEPORT socket per shard, all bound to one port, or a single
 * socket every shard accepts from. A pw_accept keeps one multishot accept
 * armed on its shard's socket; accepted sockets queue in the pw_accept
 * until the task takes them. The request is re-armed whenever it ends:
 * after a queue that grew too long (we cancel it; sockets the kernel
 * still delivers wait in the listener's per-shard spill, in order, never
 * dropped), after an error the
 * task was told of, or after a resource error (EMFILE, ENFILE, ENOMEM,
 * ENOBUFS), which is counted and followed by a short backoff on the wheel
 * so the shard does not spin while descriptors are exhausted.
 *
 * Before it binds, a listener makes sure it takes no port or path from
 * a live server: a TCP port is probed with a socket bound without
 * SO_REUSEPORT (another listener there makes it fail with EADDRINUSE),
 * unless the caller asked to share the port; a Unix path that is taken
 * is replaced only when it is a socket nobody listens on (docs/net.md).
 *
 * A listener can also take over sockets another process bound and
 * handed over (pw_net_listener_adopt(): shard i accepts from socket
 * i % n) and hand its own out (pw_net_listener_fds()). pw_accept_stop()
 * ends accepting without losing a connection: the sockets stay open, so
 * what the kernel queued on them waits for whoever else holds them, and
 * every connection already accepted is handed to the caller. A new
 * connection wakes only one of the accepts waiting on a socket, so one
 * whose wake-up reached us just before our cancel would wait for the
 * next arrival: the stop therefore ends with one-shot accepts that do
 * not wait (IORING_ACCEPT_DONTWAIT), until the backlog is empty.
 */
#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fault.h"
#include "net/net_int.h"

#ifndef IORING_ACCEPT_DONTWAIT
#define IORING_ACCEPT_DONTWAIT (1U << 1) /* Linux 6.10 */
#endif

static int sock_opt(int fd, int level, int name)
{
	int one = 1;

	return setsockopt(fd, level, name, &one, sizeof(one)) ? -errno : 0;
}

/*
 * Whether a live socket holds @a's Unix path: 0 when the path is free
 * now (it was a socket nobody listens on, removed here, or it vanished),
 * -EADDRINUSE when a listener answers there, the name is abstract or
 * the path is not a socket (never removed then).
 */
static int unix_reclaim(const struct pw_net_addr *a)
{
	size_t off = offsetof(struct sockaddr_un, sun_path);
	char path[sizeof(a->u.un.sun_path) + 1];
	size_t n = a->len - off;
	struct stat st;

	if (!a->u.un.sun_path[0])
		return -EADDRINUSE; /* abstract: only a live socket holds it */
	if (n > sizeof(a->u.un.sun_path))
		n = sizeof(a->u.un.sun_path);
	memcpy(path, a->u.un.sun_path, n);
	path[n] = '\0';
	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -EADDRINUSE;
	if (!S_ISSOCK(st.st_mode))
		return -EADDRINUSE;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int err = connect(fd, &a->u.sa, a->len) ? -errno : 0;
	close(fd);
	if (err == -ENOENT)
		return 0;
	if (err != -ECONNREFUSED)
		return -EADDRINUSE; /* a listener (EAGAIN: its backlog is full) */
	if (unlink(path) && errno != ENOENT)
		return -errno;
	return 0;
}

/* Bind @fd to @a; a Unix path left by a dead server is replaced once. */
static int bind_addr(int fd, const struct pw_net_addr *a)
{
	if (!bind(fd, &a->u.sa, a->len))
		return 0;
	int err = -errno;
	if (err != -EADDRINUSE || a->u.sa.sa_family != AF_UNIX)
		return err;
	err = unix_reclaim(a);
	if (!err && bind(fd, &a->u.sa, a->len))
		err = -errno;
	return err;
}

/*
 * Whether @a's TCP port is free of listeners: a socket bound there with
 * SO_REUSEADDR (TIME_WAIT leftovers do not count, as for the real
 * sockets) but without SO_REUSEPORT fails with -EADDRINUSE when another
 * socket listens on the port, SO_REUSEPORT or not. Return: 0 or -errno
 * of socket/bind.
 */
static int port_probe(const struct pw_net_addr *a)
{
	int fd = socket(a->u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	int err = sock_opt(fd, SOL_SOCKET, SO_REUSEADDR);
	if (!err && bind(fd, &a->u.sa, a->len))
		err = -errno;
	close(fd);
	return err;
}

/* A listening socket on @a; the port actually bound goes back in @a. */
static int open_listener(struct pw_net_addr *a, int backlog, bool reuseport,
			 int sndbuf)
{
	int family = a->u.sa.sa_family;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (family != AF_UNIX) {
		err = sock_opt(fd, SOL_SOCKET, SO_REUSEADDR);
		if (!err && reuseport)
			err = sock_opt(fd, SOL_SOCKET, SO_REUSEPORT);
		if (!err) /* inherited by accepted sockets */
			err = sock_opt(fd, IPPROTO_TCP, TCP_NODELAY);
	}
	if (!err && sndbuf &&
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)))
		err = -errno;
	if (!err)
		err = bind_addr(fd, a);
	if (!err && listen(fd, backlog))
		err = -errno;
	if (!err && family != AF_UNIX) {
		socklen_t len = sizeof(a->u);
		if (getsockname(fd, &a->u.sa, &len))
			err = -errno;
		else
			a->len = len;
	}
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

static void close_all(struct pw_net_listener *l, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct pw__lshard *ls = &l->per[i];
		if (ls->fd >= 0 && i < l->nfds)
			close(ls->fd);
		for (uint32_t k = 0; k < ls->spill_len; k++)
			close(ls->spill[(ls->spill_head + k) % ls->spill_cap]);
		free(ls->spill);
		ls->spill = NULL;
		ls->spill_len = 0;
	}
}

/* Keep @fd for later; false when no memory is left for it. */
static bool spill_push(struct pw__lshard *ls, int fd)
{
	if (ls->spill_len == ls->spill_cap) {
		uint32_t cap = ls->spill_cap ? 2 * ls->spill_cap : 64;
		int *n =
			pw__fault_malloc(PW__FAULT_LISTENER, cap * sizeof(int));
		if (!n)
			return false;
		for (uint32_t k = 0; k < ls->spill_len; k++)
			n[k] = ls->spill[(ls->spill_head + k) % ls->spill_cap];
		free(ls->spill);
		ls->spill = n;
		ls->spill_head = 0;
		ls->spill_cap = cap;
	}
	ls->spill[(ls->spill_head + ls->spill_len++) % ls->spill_cap] = fd;
	return true;
}

static int spill_pop(struct pw__lshard *ls)
{
	int fd = ls->spill[ls->spill_head];

	ls->spill_head = (ls->spill_head + 1) % ls->spill_cap;
	ls->spill_len--;
	return fd;
}

/* Whether @addr is a whole address of a family a listener takes. */
static bool addr_ok(const struct pw_net_addr *addr)
{
	int family = addr->u.sa.sa_family;

	if (family == AF_INET)
		return addr->len == sizeof(addr->u.in4);
	if (family == AF_INET6)
		return addr->len == sizeof(addr->u.in6);
	return family == AF_UNIX &&
	       addr->len > offsetof(struct sockaddr_un, sun_path) &&
	       addr->len <= sizeof(addr->u.un);
}

/* The port @a names; 0 (any) for a Unix address. */
static unsigned addr_port(const struct pw_net_addr *a)
{
	if (a->u.sa.sa_family == AF_INET)
		return ntohs(a->u.in4.sin_port);
	if (a->u.sa.sa_family == AF_INET6)
		return ntohs(a->u.in6.sin6_port);
	return 0;
}

/*
 * Open @l's sockets. Per-shard TCP sockets carry SO_REUSEPORT, so first
 * a probe refuses a port another socket listens on (unless @o shares it);
 * with port 0 the first socket gets a fresh port, which no other socket
 * can hold, and the others join it. Return: 0 or -errno (nothing open).
 */
static int open_all(struct pw_net_listener *l,
		    const struct pw_net_listen_opts *o)
{
	bool share_port = o->flags & PW_NET_LISTEN_SHARE_PORT;
	int backlog = o->backlog ? o->backlog : 1024;
	bool tcp = l->addr.u.sa.sa_family != AF_UNIX;
	bool reuseport = tcp && (!l->shared || share_port);
	int err = 0;

	if (reuseport && !share_port && addr_port(&l->addr))
		err = port_probe(&l->addr);
	for (unsigned i = 0; i < l->n && !err; i++) {
		int fd = l->shared && i > 0 ?
				 l->per[0].fd :
				 open_listener(&l->addr, backlog, reuseport,
					       o->sndbuf);
		if (fd < 0) {
			close_all(l, i);
			return fd;
		}
		l->per[i].fd = fd;
	}
	return err;
}

int pw_net_listener_create(struct pw_net_listener **lp, struct pw_runtime *rt,
			   const struct pw_net_addr *addr,
			   const struct pw_net_listen_opts *opts)
{
	const uint32_t known = PW_NET_LISTEN_SHARED | PW_NET_LISTEN_SHARE_PORT;
	struct pw_net_listen_opts o = { 0 };

	if (!lp)
		return -EINVAL;
	*lp = NULL;
	if (opts)
		o = *opts;
	if (!addr || o.backlog < 0 || o.sndbuf < 0 || (o.flags & ~known) ||
	    !addr_ok(addr))
		return -EINVAL;
	int n = pw_runtime_shards(rt);
	if (n < 1)
		return -EINVAL;
	struct pw_net_listener *l =
		pw__fault_calloc(PW__FAULT_LISTENER, 1,
				 sizeof(*l) + (size_t)n * sizeof(l->per[0]));
	if (!l)
		return -ENOMEM;
	l->rt = rt;
	l->n = (unsigned)n;
	l->shared = (o.flags & PW_NET_LISTEN_SHARED) ||
		    addr->u.sa.sa_family == AF_UNIX;
	l->addr = *addr;
	l->nfds = l->shared ? 1 : l->n;
	for (unsigned i = 0; i < l->n; i++)
		l->per[i].fd = -1;
	int err = open_all(l, &o);
	if (err) {
		free(l);
		return err;
	}
	*lp = l;
	return 0;
}

/* ---- sockets from another process ------------------------------------ */

/*
 * Whether @fd is a listening stream socket of a family a listener takes;
 * its bound address goes to @a. Return: 0; -EBADF or -ENOTSOCK from
 * getsockopt; -EINVAL for a socket that is not a listening stream one
 * of AF_INET, AF_INET6 or AF_UNIX bound to a name.
 */
static int adopt_check(int fd, struct pw_net_addr *a)
{
	int type = 0, acc = 0, dom = 0;
	socklen_t len = sizeof(int);

	if (fd < 0)
		return -EBADF;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len))
		return -errno;
	len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len))
		return -errno;
	len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len))
		return -errno;
	if (type != SOCK_STREAM || !acc)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	len = sizeof(a->u);
	if (getsockname(fd, &a->u.sa, &len))
		return -errno;
	a->len = len;
	return a->u.sa.sa_family == dom && addr_ok(a) ? 0 : -EINVAL;
}

/* Whether the sockets @fd and @other are one (two descriptors of it). */
static bool same_socket(int fd, int other)
{
	struct stat a, b;

	return !fstat(fd, &a) && !fstat(other, &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/*
 * Check @fds for pw_net_listener_adopt(): each a listening socket, all
 * bound to one address (put in @addr), no socket twice; give each
 * @sndbuf when it is not 0. Return: 0 or the -errno of the first bad one.
 */
static int adopt_all(const int *fds, unsigned nfds, int sndbuf,
		     struct pw_net_addr *addr)
{
	struct pw_net_addr a;

	for (unsigned i = 0; i < nfds; i++) {
		int err = adopt_check(fds[i], i ? &a : addr);
		if (err)
			return err;
		if (i && (a.len != addr->len || memcmp(&a.u, &addr->u, a.len)))
			return -EINVAL;
		for (unsigned k = 0; k < i; k++)
			if (same_socket(fds[i], fds[k]))
				return -EINVAL;
		if (sndbuf && setsockopt(fds[i], SOL_SOCKET, SO_SNDBUF, &sndbuf,
					 sizeof(sndbuf)))
			return -errno;
	}
	return 0;
}

int pw_net_listener_adopt(struct pw_net_listener **lp, struct pw_runtime *rt,
			  const int *fds, unsigned nfds,
			  const struct pw_net_listen_opts *opts)
{
	const uint32_t known = PW_NET_LISTEN_SHARED | PW_NET_LISTEN_SHARE_PORT;
	struct pw_net_listen_opts o = { 0 };
	struct pw_net_addr addr;

	if (!lp)
		return -EINVAL;
	*lp = NULL;
	if (opts)
		o = *opts;
	int n = pw_runtime_shards(rt);
	if (!fds || !nfds || n < 1 || o.backlog < 0 || o.sndbuf < 0 ||
	    (o.flags & ~known) ||
	    (nfds > 1 && (o.flags & PW_NET_LISTEN_SHARED)))
		return -EINVAL;
	if (nfds > (unsigned)n)
		return -E2BIG;
	int err = adopt_all(fds, nfds, o.sndbuf, &addr);
	if (err)
		return err;
	struct pw_net_listener *l =
		pw__fault_calloc(PW__FAULT_LISTENER, 1,
				 sizeof(*l) + (size_t)n * sizeof(l->per[0]));
	if (!l)
		return -ENOMEM;
	l->rt = rt;
	l->n = (unsigned)n;
	l->nfds = nfds;
	l->shared = nfds == 1;
	l->addr = addr;
	for (unsigned i = 0; i < l->n; i++)
		l->per[i].fd = fds[i % nfds];
	*lp = l;
	return 0;
}

int pw_net_listener_fds(struct pw_net_listener *l, int *fds, unsigned cap)
{
	if (!l || (!fds && cap))
		return -EINVAL;
	for (unsigned i = 0; i < l->nfds && i < cap; i++)
		fds[i] = l->per[i].fd;
	l->handed = true;
	return (int)l->nfds;
}

int pw_net_listener_destroy(struct pw_net_listener *l)
{
	if (!l)
		return -EINVAL;
	close_all(l, l->n);
	if (l->addr.u.sa.sa_family == AF_UNIX && l->addr.u.un.sun_path[0] &&
	    !l->handed)
		unlink(l->addr.u.un.sun_path);
	free(l);
	return 0;
}

int pw_net_listener_addr(const struct pw_net_listener *l,
			 struct pw_net_addr *out)
{
	if (!l || !out)
		return -EINVAL;
	*out = l->addr;
	return 0;
}

int pw_net_listener_stats(const struct pw_net_listener *l,
			  struct pw_net_listener_stats *out)
{
	if (!l || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < l->n; i++) {
		/* relaxed: counters written by shard i (PW__LSTAT_ADD). */
		out->accepted += atomic_load_explicit(&l->per[i].accepted,
						      memory_order_relaxed);
		out->accept_errors += atomic_load_explicit(
			&l->per[i].errors, memory_order_relaxed);
		out->dropped += atomic_load_explicit(&l->per[i].dropped,
						     memory_order_relaxed);
	}
	return 0;
}

/* ---- accept --------------------------------------------------------- */

void pw_accept_init(struct pw_accept *a, struct pw_net_listener *l,
		    uint64_t backoff_ns)
{
	if (!a)
		return;
	memset(a, 0, sizeof(*a));
	pw_sleep_init_at(&a->timer, PW_TIME_NEVER);
	pw_sleep_init_at(&a->backoff, PW_TIME_NEVER);
	a->l = l;
	a->backoff_ns = backoff_ns ? backoff_ns : 10 * PW_NSEC_PER_MSEC;
}

static bool resource_error(int res)
{
	return res == -EMFILE || res == -ENFILE || res == -ENOMEM ||
	       res == -ENOBUFS;
}

void pw__accept_cqe(struct pw__shard *s, struct pw_net_op *op,
		    const struct io_uring_cqe *cqe, bool final, bool alive)
{
	struct pw_accept *a = (struct pw_accept *)(void *)op;
	int res = cqe->res;

	if (final)
		op->state = PW__NS_IDLE;
	if (!alive || (op->flags & PW__NF_DROPPED)) {
		/* Nobody will take it (the listener may be gone too). */
		if (res >= 0)
			close(res);
		return;
	}
	struct pw__lshard *ls = &a->l->per[s->id];
	if (res >= 0) {
		if (a->count == PW_ACCEPT_QUEUE || ls->spill_len) {
			/* Behind the full queue, in arrival order. */
			if (spill_push(ls, res)) {
				PW__LSTAT_ADD(ls, accepted, 1);
			} else {
				close(res); /* out of memory: counted */
				PW__LSTAT_ADD(ls, dropped, 1);
			}
		} else {
			a->fds[(a->head + a->count) % PW_ACCEPT_QUEUE] = res;
			a->count++;
			PW__LSTAT_ADD(ls, accepted, 1);
		}
		if (!final && a->count >= PW_ACCEPT_QUEUE / 2 &&
		    op->state == PW__NS_ARMED) {
			op->flags |= PW__NF_PAUSED;
			pw__nop_cancel(s, op);
		}
		return;
	}
	if (a->sweep == PW__SWEEP_ON) {
		/* -EAGAIN: the backlog is empty; -EINVAL: a kernel without
		 * DONTWAIT; a resource error leaves the rest to others. */
		if (resource_error(res))
			PW__LSTAT_ADD(ls, errors, 1);
		a->sweep = PW__SWEEP_DONE;
		return;
	}
	if (resource_error(res)) {
		PW__LSTAT_ADD(ls, errors, 1);
		if (final)
			op->flags |= PW__NF_BACKOFF;
	} else if (res != -ECANCELED || !(op->flags & PW__NF_PAUSED)) {
		a->err = res;
	}
	if (final)
		op->flags &= (uint8_t)~PW__NF_PAUSED;
}

static int accept_arm(struct pw_cx *cx, struct pw_accept *a, int fd)
{
	struct io_uring_sqe *sqe = pw__nop_sqe(cx);

	if (!sqe)
		return -EAGAIN;
	io_uring_prep_multishot_accept(sqe, fd, NULL, NULL, SOCK_CLOEXEC);
	pw__nop_arm(cx, &a->op, sqe, PW__NK_ACCEPT);
	a->sweep = PW__SWEEP_NONE; /* a later stop sweeps afresh */
	a->swept = 0;
	return 0;
}

/*
 * One step of pw_accept_stop()'s sweep: a one-shot accept on @fd that
 * does not wait, its socket queued in @a as any accepted one; its
 * completion ends the sweep when the backlog is empty. Return: 0 armed,
 * -EAGAIN when no SQE was free (the task is polled again next turn).
 */
static int sweep_arm(struct pw_cx *cx, struct pw_accept *a, int fd)
{
	struct io_uring_sqe *sqe = pw__nop_sqe(cx);

	if (!sqe)
		return -EAGAIN;
	io_uring_prep_accept(sqe, fd, NULL, NULL, SOCK_CLOEXEC);
	sqe->ioprio |= IORING_ACCEPT_DONTWAIT;
	pw__nop_arm(cx, &a->op, sqe, PW__NK_ACCEPT);
	a->sweep = PW__SWEEP_ON;
	a->swept++;
	return 0;
}

/*
 * Hand out what @a and the shard's spill hold, oldest first: true with
 * *@res set, false when both are empty.
 */
static bool accept_take(struct pw_accept *a, struct pw__lshard *ls, int *res)
{
	if (a->count) {
		*res = a->fds[a->head];
		a->head = (uint16_t)((a->head + 1) % PW_ACCEPT_QUEUE);
		a->count--;
		return true;
	}
	if (ls->spill_len) {
		*res = spill_pop(ls);
		return true;
	}
	return false;
}

/* Whether @a may be polled from @cx: a listener of the shard's runtime
 * with a socket for the shard. */
static bool accept_usable(const struct pw_cx *cx, const struct pw_accept *a)
{
	return cx && a && a->l && cx->shard->rt == a->l->rt &&
	       cx->shard->id < a->l->n;
}

enum pw_poll pw_accept_poll(struct pw_cx *cx, struct pw_accept *a,
			    pw_time_t deadline, int *res)
{
	if (!res)
		return PW_READY;
	if (!accept_usable(cx, a)) {
		*res = -EINVAL;
		return PW_READY;
	}
	struct pw__shard *s = cx->shard;
	struct pw_net_op *op = &a->op;

	struct pw__lshard *ls = &a->l->per[s->id];

	op->flags &= (uint8_t)~PW__NF_DROPPED;
	if (a->count || ls->spill_len) {
		if (!pw__coop_proceed(cx))
			return PW_PENDING;
		(void)accept_take(a, ls, res);
		pw_sleep_cancel(&a->timer);
		return PW_READY;
	}
	if (a->err) {
		*res = a->err;
		a->err = 0;
		pw_sleep_cancel(&a->timer);
		return PW_READY;
	}
	if (op->flags & PW__NF_BACKOFF) {
		op->flags &= (uint8_t)~PW__NF_BACKOFF;
		op->flags |= PW__NF_WAITING;
		pw_sleep_reset(&a->backoff, pw__now(s) + a->backoff_ns);
	}
	if (op->flags & PW__NF_WAITING) {
		if (pw_sleep_poll(cx, &a->backoff) == PW_READY)
			op->flags &= (uint8_t)~PW__NF_WAITING;
	}
	if (op->state == PW__NS_IDLE && !(op->flags & PW__NF_WAITING))
		(void)accept_arm(cx, a, a->l->per[s->id].fd);
	if (pw__deadline_passed(cx, &a->timer, deadline)) {
		*res = -ETIMEDOUT;
		return PW_READY;
	}
	return PW_PENDING;
}

void pw_accept_pause(struct pw_accept *a)
{
	struct pw__shard *s = pw__cur_shard;

	if (!a || !s || a->op.state != PW__NS_ARMED)
		return;
	/* The final CQE's -ECANCELED is then ours: not reported. */
	a->op.flags |= PW__NF_PAUSED;
	pw__nop_cancel(s, &a->op);
}

void pw_accept_cancel(struct pw_accept *a)
{
	struct pw__shard *s = pw__cur_shard;

	if (!a || !s)
		return;
	a->op.flags |= PW__NF_DROPPED;
	a->op.flags &= (uint8_t) ~(PW__NF_WAITING | PW__NF_BACKOFF);
	pw__nop_cancel(s, &a->op);
	while (a->count) {
		close(a->fds[a->head]);
		a->head = (uint16_t)((a->head + 1) % PW_ACCEPT_QUEUE);
		a->count--;
	}
	a->err = 0;
	pw_sleep_cancel(&a->timer);
	pw_sleep_cancel(&a->backoff);
}

enum pw_poll pw_accept_stop(struct pw_cx *cx, struct pw_accept *a, int *res)
{
	if (!res)
		return PW_READY;
	if (!accept_usable(cx, a)) {
		*res = -EINVAL;
		return PW_READY;
	}
	struct pw__shard *s = cx->shard;
	struct pw_net_op *op = &a->op;

	/* Our own cancel: its -ECANCELED is not an error to report. A
	 * sweep's accept ends at once: never cancelled. */
	if (op->state == PW__NS_ARMED && a->sweep == PW__SWEEP_NONE) {
		op->flags |= PW__NF_PAUSED;
		pw__nop_cancel(s, op);
	}
	op->flags &= (uint8_t) ~(PW__NF_WAITING | PW__NF_BACKOFF);
	pw_sleep_cancel(&a->backoff);
	if (accept_take(a, &a->l->per[s->id], res))
		return PW_READY;
	if (op->state != PW__NS_IDLE)
		return PW_PENDING; /* the final completion wakes us */
	if (a->sweep != PW__SWEEP_DONE && a->swept < PW__SWEEP_MAX) {
		(void)sweep_arm(cx, a, a->l->per[s->id].fd);
		return PW_PENDING; /* its completion, or the next turn */
	}
	a->err = 0;
	pw_sleep_cancel(&a->timer);
	*res = -ECANCELED;
	return PW_READY;
}
