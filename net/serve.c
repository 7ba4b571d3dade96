/* SPDX-License-Identifier: MIT */
/*
 * serve.c - the accept loop of every server, and pw_serve(): a listener,
 * an acceptor task per shard and a task per connection, counted in the
 * server's drain (net/drain.c).
 *
 * A connection task's state is a small header (the server, the drain
 * token) followed by the user's state, aligned as malloc's: the wrapper
 * poll checks the drain for an abort, then polls the user's function on
 * the user's part; its drop hook runs the user's drop, then uncounts the
 * connection. The user's state is built in the acceptor's stack and
 * copied by pw_spawn(), like every task state.
 *
 * A fiber connection (conn_fiber) is the same task, whose user part is a
 * join handle on the fiber it spawns at its first poll: the task awaits
 * the fiber, and when the drain's grace ends it aborts it, so the call
 * the fiber is blocked in returns -ECANCELED and its cleanup runs; the
 * connection is uncounted once the fiber is gone. The fiber's task closes
 * the socket after conn_fiber returns (core/fiber.c, off the fiber's
 * stack); the connection task closes it if the fiber never started.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fiber_int.h"
#include "pinwheel/fiber.h"
#include "pinwheel/serve.h"
#include "net/serve_int.h"

/* ---- the accept loop ------------------------------------------------- */

enum pw_poll pw_accept_loop_poll(struct pw_cx *cx, struct pw_accept *acc,
				 const struct pw_accept_loop *loop)
{
	int fd, err;

	if (!cx || !acc || !loop || !loop->start)
		return cx ? pw_ready(cx, -EINVAL) : PW_READY;
	for (;;) {
		if (loop->stop && loop->stop(loop->arg)) {
			/* Served, not closed: each was accepted already. */
			if (pw_accept_stop(cx, acc, &fd) == PW_PENDING)
				return PW_PENDING;
			if (fd < 0)
				return pw_ready(cx, 0);
		} else if (loop->full && loop->full(loop->arg)) {
			pw_accept_pause(acc);
			return PW_PENDING;
		} else if (pw_accept_poll(cx, acc, PW_TIME_NEVER, &fd) ==
			   PW_PENDING) {
			return PW_PENDING;
		}
		if (fd < 0) {
			if (loop->error)
				loop->error(loop->arg, fd);
			if (fd == -EINVAL || fd == -EBADF)
				return pw_ready(cx, fd);
			continue;
		}
		err = loop->start(loop->arg, fd);
		if (err) {
			close(fd);
			if (loop->error)
				loop->error(loop->arg, err);
		}
	}
}

/* ---- the server ------------------------------------------------------ */

struct pw_server {
	struct pw_drain own;
	struct pw_drain *d; /* &own, or the caller's */
	struct pw_serve_opts o;
	struct pw_net_addr addr;	 /* bound, port chosen */
	pthread_mutex_t lock;		 /* guards l, st, acceptors, ended */
	struct pw_net_listener *l;	 /* NULL once the last acceptor ended */
	struct pw_net_listener_stats st; /* its counters when it closed */
	unsigned acceptors;		 /* acceptor tasks not yet ended */
	struct pw_waker ended;		 /* woken when the last one ends */
};

/* A connection task's state: this header, then the user's. */
struct serve_conn {
	struct pw_server *srv;
	struct pw_drain_token tok;
	max_align_t user[]; /* o.conn_size bytes */
};

/* An acceptor task's state. */
struct serve_acceptor {
	struct pw_server *srv;
	struct pw_accept acc;
	struct pw_drain_wait w;
};

/* The user part of a fiber connection's task. */
struct fiber_conn {
	struct pw_join j;
	int fd;
	bool spawned, aborting;
	/* Set by the fiber as it starts (release); read by the task's drop
	 * (acquire) to know who closes fd. */
	_Atomic bool started;
};

static enum pw_poll conn_poll(struct pw_cx *cx, void *state)
{
	struct serve_conn *c = state;

	if (pw_drain_watch(cx, c->srv->d, &c->tok))
		return pw_ready(cx, -ECANCELED);
	return c->srv->o.conn_poll(cx, c->user);
}

/*
 * The fiber of a connection: @arg is its task's state, alive as long
 * as the task awaits the fiber. conn_fiber is its last call: the frame
 * it returns from may still hold a leaf whose cancel is in flight (the
 * drain aborted it), which the final completion writes, so nothing may
 * run below this frame afterwards (a close here did, and a lazy symbol
 * binding alone saves kilobytes of registers there). The fiber's task
 * closes fd once it returned, on the scheduler's stack.
 */
static int64_t fiber_main(void *arg)
{
	struct serve_conn *c = arg;
	struct fiber_conn *fc = (void *)c->user;
	const struct pw_serve_opts *o = &c->srv->o;
	int fd = fc->fd;

	(void)pw__fiber_close_at_exit(fd);
	atomic_store_explicit(&fc->started, true, memory_order_release);
	return o->conn_fiber(fd, o->arg);
}

static enum pw_poll fiber_conn_poll(struct pw_cx *cx, void *state)
{
	struct serve_conn *c = state;
	struct fiber_conn *fc = (void *)c->user;
	int64_t res;

	if (!fc->spawned) {
		struct pw_fiber_opts fo = {
			.stack_size = c->srv->o.fiber_stack,
			.name = c->srv->o.fiber_name ? c->srv->o.fiber_name :
						       "connection",
		};
		int err = pw_fiber_spawn(&fc->j, fiber_main, c, &fo);
		if (err)
			return pw_ready(cx, err); /* the drop closes fd */
		fc->spawned = true;
	}
	if (!fc->aborting && pw_drain_watch(cx, c->srv->d, &c->tok)) {
		pw_join_abort(&fc->j);
		fc->aborting = true;
	}
	if (pw_join_poll(cx, &fc->j, &res) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, res);
}

static void fiber_conn_drop(struct fiber_conn *fc)
{
	if (fc->j.task) {
		/* Dropped with the runtime: the fiber unwinds in its own. */
		pw_join_abort(&fc->j);
		pw_join_detach(&fc->j);
	}
	if (!atomic_load_explicit(&fc->started, memory_order_acquire))
		close(fc->fd);
}

static void conn_drop(void *state)
{
	struct serve_conn *c = state;

	if (c->srv->o.conn_fiber)
		fiber_conn_drop((void *)c->user);
	else if (c->srv->o.conn_drop)
		c->srv->o.conn_drop(c->user);
	pw_drain_done(c->srv->d, &c->tok);
}

static bool acceptor_stop(void *arg)
{
	struct pw_server *srv = arg;

	return pw_drain_stopping(srv->d);
}

static bool acceptor_full(void *arg)
{
	struct pw_server *srv = arg;

	return pw_drain_full(srv->d);
}

/* Start the connection task of @fd, counted in the drain. */
static int acceptor_start(void *arg, int fd)
{
	struct pw_server *srv = arg;
	union {
		struct serve_conn c;
		char room[PW_TASK_STATE_MAX];
	} u;
	size_t size = sizeof(u.c) + srv->o.conn_size;
	int err;

	if (srv->o.start) {
		/* The caller counts its connection (pw_drain_add()). */
		return srv->o.start(srv->o.arg, fd);
	}
	if (srv->o.conn_fiber)
		size = sizeof(u.c) + sizeof(struct fiber_conn);
	memset(&u, 0, size);
	u.c.srv = srv;
	if (srv->o.conn_fiber) {
		struct fiber_conn *fc = (void *)u.c.user;
		fc->fd = fd;
	} else if ((err = srv->o.conn_init(u.c.user, fd, srv->o.arg))) {
		return err; /* the loop closes fd */
	}
	pw_drain_add(srv->d, &u.c.tok);
	err = pw_spawn(NULL, srv->o.conn_fiber ? fiber_conn_poll : conn_poll,
		       &u, size, conn_drop);
	if (err) {
		/* The connection never ran: its drop releases what init
		 * made, and the count goes back. */
		conn_drop(&u.c);
		return 0;
	}
	return 0;
}

static enum pw_poll acceptor_poll(struct pw_cx *cx, void *state)
{
	struct serve_acceptor *a = state;
	struct pw_accept_loop loop = {
		.stop = acceptor_stop,
		.full = acceptor_full,
		.start = acceptor_start,
		.arg = a->srv,
	};
	enum pw_poll r;

	/* Before the checks: a stop or a free slot after them wakes us. */
	pw_drain_wake_me(cx, a->srv->d, &a->w);
	r = pw_accept_loop_poll(cx, &a->acc, &loop);
	return r; /* the drop hook follows PW_READY: acceptor_drop() */
}

/* An acceptor ended (or was dropped): the last one closes the
 * listener, so a stopped server refuses new connections at once. */
static void acceptor_end(struct pw_server *srv)
{
	struct pw_net_listener *l = NULL;

	struct pw_waker w = { 0 };

	pthread_mutex_lock(&srv->lock);
	if (!--srv->acceptors) {
		l = srv->l;
		srv->l = NULL;
		if (l)
			pw_net_listener_stats(l, &srv->st);
		w = srv->ended;
		memset(&srv->ended, 0, sizeof(srv->ended));
	}
	pthread_mutex_unlock(&srv->lock);
	if (l)
		pw_net_listener_destroy(l);
	pw_waker_wake(&w); /* after the close: the waiter sees it closed */
}

bool pw__server_acceptors_ended(struct pw_server *srv, struct pw_cx *cx)
{
	struct pw_waker w = pw_cx_waker(cx);
	bool ended;

	pthread_mutex_lock(&srv->lock);
	ended = !srv->acceptors;
	if (!ended) {
		pw_waker_drop(&srv->ended);
		(void)pw_waker_clone(&srv->ended, &w);
	}
	pthread_mutex_unlock(&srv->lock);
	return ended;
}

static void acceptor_drop(void *state)
{
	struct serve_acceptor *a = state;

	pw_accept_cancel(&a->acc);
	pw_drain_wait_cancel(&a->w);
	acceptor_end(a->srv);
}

static int serve_check(const struct pw_serve_opts *o)
{
	if (!o || !!o->conn_poll + !!o->start + !!o->conn_fiber != 1)
		return -EINVAL;
	if (o->conn_fiber && o->fiber_stack > PW_FIBER_STACK_MAX)
		return -EINVAL;
	if (o->conn_poll && (!o->conn_init || o->conn_size > PW_SERVE_CONN_MAX))
		return -EINVAL;
	return 0;
}

int pw_serve(struct pw_server **sp, struct pw_runtime *rt,
	     const struct pw_serve_opts *o)
{
	struct pw_net_listen_opts lo;
	struct pw_server *srv;
	int n, err;

	if (!sp || !rt || serve_check(o))
		return -EINVAL;
	n = pw_runtime_shards(rt);
	if (n < 0)
		return n;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->o = *o;
	pthread_mutex_init(&srv->lock, NULL);
	pw_drain_init(&srv->own, o->max_conns);
	srv->d = o->drain ? o->drain : &srv->own;
	lo = (struct pw_net_listen_opts){ .backlog = o->backlog,
					  .flags = o->flags,
					  .sndbuf = o->sndbuf };
	err = pw_net_listener_create(&srv->l, rt, &o->addr, &lo);
	if (err) {
		srv->l = NULL;
		pw_server_destroy(srv);
		return err;
	}
	pw_net_listener_addr(srv->l, &srv->addr);
	srv->acceptors = (unsigned)n; /* each spawn failure ends one */
	for (int i = 0; i < n; i++) {
		struct serve_acceptor a = { .srv = srv };

		pw_accept_init(&a.acc, srv->l, 0);
		err = pw_runtime_spawn(rt, (unsigned)i, acceptor_poll, &a,
				       sizeof(a), acceptor_drop);
		if (err && i == 0) {
			pw_server_destroy(srv);
			return err;
		}
		if (err) {
			/* Some acceptors run: stop them; the caller destroys
			 * the server after the runtime. */
			pw_drain_stop(srv->d);
			for (int j = i; j < n; j++)
				acceptor_end(srv);
			break;
		}
	}
	*sp = srv;
	return err;
}

struct pw_drain *pw_server_drain(struct pw_server *srv)
{
	return srv ? srv->d : NULL;
}

int pw_server_addr(const struct pw_server *srv, struct pw_net_addr *out)
{
	if (!srv || !out)
		return -EINVAL;
	*out = srv->addr;
	return 0;
}

int pw_server_stats(struct pw_server *srv, struct pw_net_listener_stats *out)
{
	if (!srv || !out)
		return -EINVAL;
	pthread_mutex_lock(&srv->lock);
	if (srv->l)
		pw_net_listener_stats(srv->l, out);
	else
		*out = srv->st;
	pthread_mutex_unlock(&srv->lock);
	return 0;
}

int pw_server_destroy(struct pw_server *srv)
{
	if (!srv)
		return -EINVAL;
	if (srv->l)
		pw_net_listener_destroy(srv->l);
	pw_waker_drop(&srv->ended);
	pw_drain_destroy(&srv->own);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return 0;
}
