/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/serve.h - a server in a few lines: an acceptor per shard, a
 * task per connection, a connection limit and a graceful stop.
 *
 * Three layers, each usable alone:
 *
 * - pw_accept_loop_poll(): the body of an acceptor task. It takes the
 *   connections of a pw_accept and hands each socket to a start
 *   callback, which spawns a task (or a fiber) for it. Before each
 *   accept a stop callback may end the loop and a full callback may hold
 *   it at a connection cap (the accept is paused: new connections wait
 *   in the kernel's backlog).
 * - struct pw_drain: a stop every acceptor sees, a count of the live
 *   connections on every shard, and an await "until every connection
 *   finished or a deadline passed", which then aborts the rest: Tokio's
 *   CancellationToken and TaskTracker as one object.
 * - pw_serve(): a listener (one SO_REUSEPORT socket per shard, or one
 *   shared), an acceptor on every shard and a task per connection whose
 *   state is initialised from its socket, counted in the server's drain
 *   and held at max_conns.
 *
 *	static int conn_init(void *state, int fd, void *arg)
 *	{
 *		struct conn *c = state;
 *		pw_recv_init(&c->rx, fd);
 *		...
 *		return 0;
 *	}
 *	struct pw_serve_opts o = { .conn_poll = conn_poll,
 *		.conn_size = sizeof(struct conn), .conn_init = conn_init,
 *		.conn_drop = conn_drop, .max_conns = 1000 };
 *	pw_net_addr_parse(&o.addr, "127.0.0.1:8080");
 *	pw_serve(&srv, rt, &o);
 *	... on SIGINT (pinwheel/signal.h), from a task, stop and wait:
 *	pw_drain_wait_poll(cx, pw_server_drain(srv), &w, deadline, &aborted);
 *
 * Threads: the drain may be stopped and read from any thread; its waits
 * and tokens belong to tasks of the server's runtime.
 */
#ifndef PINWHEEL_SERVE_H
#define PINWHEEL_SERVE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "export.h"
#include "list.h"
#include "net.h"
#include "runtime.h"
#include "task.h"
#include "time.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the accept loop ------------------------------------------------ */

/* What an acceptor does with its connections. Only start is required. */
struct pw_accept_loop {
	/* Checked before each accept: true ends the loop (the accept is
	 * stopped by pw_accept_stop(): the connections it already took
	 * still go to start, then the task ends with result 0; the
	 * listening sockets stay open). NULL: never. */
	bool (*stop)(void *arg);
	/* Checked next: true holds the loop at a cap (the accept is
	 * paused, the task waits with nothing armed: whoever brings the
	 * count below the cap must wake it). NULL: never. */
	bool (*full)(void *arg);
	/* Start a connection on @fd: spawn its task or fiber. 0 when it
	 * took @fd; -errno when it did not, and the loop closes @fd and
	 * tells error(). */
	int (*start)(void *arg, int fd);
	/* A failed accept or start (-errno), for a log line. NULL: none. */
	void (*error)(void *arg, int err);
	void *arg;
};

/**
 * pw_accept_loop_poll - the poll function body of an acceptor task:
 * take the connections of @acc (polled without deadline) and start each
 * through @loop (see struct pw_accept_loop). An accept error goes to
 * @loop->error and the loop goes on, except -EINVAL and -EBADF (the
 * listener is gone), which end the task with that error as its result.
 * The caller's drop hook must pw_accept_cancel(@acc).
 * Return: PW_PENDING while no connection is ready or the cap holds it;
 * PW_READY (through pw_ready()) once the task has ended; PW_READY with
 * result -EINVAL for NULL arguments or a @loop without start.
 * Context: a task on a shard of the runtime of @acc's listener.
 */
PW_API enum pw_poll pw_accept_loop_poll(struct pw_cx *cx, struct pw_accept *acc,
					const struct pw_accept_loop *loop);

/* ---- the drain ------------------------------------------------------ */

/*
 * A graceful stop shared by every shard: a stop flag, the count of live
 * connections and the tasks waiting on either. Embed it (or use the one
 * of a pw_server); the fields are the runtime's.
 */
struct pw_drain {
	pthread_mutex_t lock; /* guards the lists */
	struct pw_list watch; /* tokens of live connections, with wakers */
	struct pw_list waits; /* tasks waiting for a change */
	uint64_t live;	      /* connections added, not yet done */
	uint64_t max;	      /* the cap pw_drain_full() checks; 0: none */
	uint64_t total;	      /* connections ever added */
	uint64_t aborted;     /* connections told to abort at the deadline */
	bool stopping;	      /* pw_drain_stop() was called (atomic loads) */
	bool aborting;	      /* the wait's deadline passed (atomic loads) */
};

/*
 * A connection's membership in a drain, embedded in its task's state:
 * the drain wakes it to abort. Zero it (or pw_drain_token_init()).
 */
struct pw_drain_token {
	struct pw_list node; /* in the drain's watch list; NULL when not */
	struct pw_waker waker;
	struct pw_drain *d; /* set by pw_drain_add() */
	bool counted;	    /* pw_drain_add() counted it, not yet done */
	bool linked;	    /* in the watch list (its task's own flag) */
};

/* A task's registration to be woken by a stop or a change of the count. */
struct pw_drain_wait {
	struct pw_list node;
	struct pw_waker waker;
	struct pw_sleep timer; /* the deadline of pw_drain_wait_poll() */
	struct pw_drain *d;
};

/**
 * pw_drain_init - an open drain with no connections; @max_conns is the
 * cap pw_drain_full() checks (0: none).
 * Return: 0; -EINVAL for NULL.
 * Context: any thread.
 */
PW_API int pw_drain_init(struct pw_drain *d, uint64_t max_conns);

/**
 * pw_drain_destroy - free what pw_drain_init() made. Call it once no
 * task uses @d (after the runtime is destroyed, typically).
 * Context: any thread.
 */
PW_API void pw_drain_destroy(struct pw_drain *d);

/**
 * pw_drain_stop - ask every acceptor of @d to stop (they see it at once:
 * each waiting one is woken). Connections go on until they end or the
 * wait's deadline aborts them. Idempotent.
 * Return: 0; -EINVAL for NULL.
 * Context: any thread.
 */
PW_API int pw_drain_stop(struct pw_drain *d);

/** pw_drain_stopping - whether pw_drain_stop() was called. Any thread. */
PW_API bool pw_drain_stopping(struct pw_drain *d);

/** pw_drain_live - the live connections of @d, all shards. Any thread. */
PW_API uint64_t pw_drain_live(struct pw_drain *d);

/** pw_drain_total - the connections ever added to @d. Any thread. */
PW_API uint64_t pw_drain_total(struct pw_drain *d);

/**
 * pw_drain_full - whether @d holds its cap of live connections: an
 * acceptor's full callback. Any thread.
 */
PW_API bool pw_drain_full(struct pw_drain *d);

/** pw_drain_token_init - an idle token. Context: any thread. */
PW_API void pw_drain_token_init(struct pw_drain_token *t);

/**
 * pw_drain_add - count a new connection in @d with token @t (idle), before
 * its task first runs (an acceptor's start callback calls it), so that
 * the cap and the wait see it at once. @t may then be copied into the
 * task's state (it is not linked until pw_drain_watch()); one
 * pw_drain_done() on it, or on its copy, uncounts it.
 * Context: any thread.
 */
PW_API void pw_drain_add(struct pw_drain *d, struct pw_drain_token *t);

/**
 * pw_drain_watch - link the counted connection's token @t, embedded in
 * the calling task's state, so that an abort wakes the task; call it
 * from each poll (it does nothing once linked).
 * Return: true when the connection must abort now (the wait's deadline
 * passed): end the task (its drop hook then calls pw_drain_done()).
 * Context: the poll function of the connection's task.
 */
PW_API bool pw_drain_watch(struct pw_cx *cx, struct pw_drain *d,
			   struct pw_drain_token *t);

/**
 * pw_drain_done - the connection ended: unlink @t and uncount it (once:
 * a second call does nothing). The last one wakes the drain's waits, one
 * below the cap wakes the acceptors.
 * Context: the shard that watched @t; safe from a drop hook.
 */
PW_API void pw_drain_done(struct pw_drain *d, struct pw_drain_token *t);

/**
 * pw_drain_wake_me - an acceptor's wait for a stop or a free slot:
 * registers @w (zeroed, or idle) so that pw_drain_stop() and a
 * connection ending below the cap wake the task. Call it whenever the
 * task is about to return PW_PENDING; pw_drain_wait_cancel() in its drop.
 * Context: a task of @d's runtime.
 */
PW_API void pw_drain_wake_me(struct pw_cx *cx, struct pw_drain *d,
			     struct pw_drain_wait *w);

/**
 * pw_drain_wait_poll - stop @d (as pw_drain_stop()) and wait until every
 * connection is done. When @deadline passes first, every connection
 * still live is told to abort (its next pw_drain_watch() says so) and
 * the wait goes on until they are done.
 * Return: PW_READY with *@aborted the connections told to abort (0: all
 * finished by themselves), or -EINVAL for NULL arguments; PW_PENDING
 * otherwise. @w is idle afterwards.
 * Context: a task of @d's runtime; one @w per waiting task.
 */
PW_API enum pw_poll pw_drain_wait_poll(struct pw_cx *cx, struct pw_drain *d,
				       struct pw_drain_wait *w,
				       pw_time_t deadline, int64_t *aborted);

/**
 * pw_drain_wait_cancel - unregister @w (a drop hook's call; harmless when
 * idle).
 * Context: the shard that polled @w.
 */
PW_API void pw_drain_wait_cancel(struct pw_drain_wait *w);

/* ---- a server --------------------------------------------------------- */

/* What pw_serve() starts. */
struct pw_serve_opts {
	struct pw_net_addr addr; /* where to listen (port 0: any free) */
	uint64_t max_conns;	 /* live connections, all shards; 0: none */
	uint32_t flags;		 /* PW_NET_LISTEN_* */
	int backlog;		 /* 0 means 1024 */
	int sndbuf;		 /* SO_SNDBUF of connections; 0: the kernel's */
	/* A task per connection: @conn_size bytes of state (at most
	 * PW_SERVE_CONN_MAX), zeroed, then conn_init(state, fd, arg) sets
	 * it up (0: the state owns fd from then on; -errno: the server
	 * closes fd, conn_drop is not called). The state is then copied
	 * into the task (no pointers into itself), polled by conn_poll
	 * until ready, and conn_drop (or NULL) releases it, fd included,
	 * however it ends: finished, aborted by the drain, or dropped at
	 * the runtime's end. */
	pw_poll_fn conn_poll;
	size_t conn_size;
	int (*conn_init)(void *state, int fd, void *arg);
	pw_drop_fn conn_drop;
	/* Or, instead of conn_poll: start(arg, fd) starts the connection
	 * (a fiber, say), counting it with pw_drain_add() in @drain when
	 * it should hold the cap and the drain; 0, or -errno when it did
	 * not take fd (the server closes it). */
	int (*start)(void *arg, int fd);
	/* Or a fiber per connection (pinwheel/fiber.h): conn_fiber(fd,
	 * arg) runs on its own stack of fiber_stack bytes (0: 64 KiB),
	 * named fiber_name (NULL: "connection") in a stack overflow's
	 * report. fd is closed after it returns (it must not close fd).
	 * When the drain's deadline passes, the call it is blocked in
	 * returns -ECANCELED: it should return then. */
	int64_t (*conn_fiber)(int fd, void *arg);
	size_t fiber_stack;
	const char *fiber_name;
	void *arg; /* passed to conn_init, start or conn_fiber */
	/* The drain to count in and stop by: NULL for the server's own
	 * (max_conns its cap); the caller's (initialised, its own cap;
	 * max_conns ignored), so a start callback can reach it. */
	struct pw_drain *drain;
};

/* The largest per-connection state pw_serve() copies. */
#define PW_SERVE_CONN_MAX (PW_TASK_STATE_MAX - 256)

struct pw_server;

/**
 * pw_serve - listen on @o->addr and start an acceptor on every shard of
 * @rt: each takes connections from its shard's socket, counts them in
 * the server's drain (held at @o->max_conns), and starts a task per
 * connection (or calls @o->start). The acceptors end at
 * pw_drain_stop(pw_server_drain(srv)); the last one to end closes the
 * listener, so new connections are refused from then on.
 * Return: 0 with *@sp set; -EINVAL for bad options (not exactly one of
 * conn_poll, start and conn_fiber; conn_init missing, conn_size or
 * fiber_stack too large);
 * the errors of pw_net_listener_create() and pw_runtime_spawn(); nothing
 * is left open or running on error.
 * Context: any thread that is not a shard of @rt.
 */
PW_API int pw_serve(struct pw_server **sp, struct pw_runtime *rt,
		    const struct pw_serve_opts *o);

/** pw_server_drain - the server's drain. Context: any thread. */
PW_API struct pw_drain *pw_server_drain(struct pw_server *srv);

/**
 * pw_server_addr - the bound address (the port chosen).
 * Return: 0; -EINVAL for NULL. Context: any thread.
 */
PW_API int pw_server_addr(const struct pw_server *srv, struct pw_net_addr *out);

/**
 * pw_server_stats - the listener's counters (kept once it closed).
 * Return: 0; -EINVAL for NULL. Context: any thread.
 */
PW_API int pw_server_stats(struct pw_server *srv,
			   struct pw_net_listener_stats *out);

/**
 * pw_server_signals_block - block SIGINT and SIGTERM in the calling
 * thread, so the shard threads it starts afterwards inherit the mask and
 * pw_server_run() sees the signals (pinwheel/signal.h, thread rules).
 * Return: 0; -errno of pthread_sigmask(3).
 * Context: the main thread, before pw_runtime_create().
 */
PW_API int pw_server_signals_block(void);

/**
 * pw_server_run - serve until SIGINT or SIGTERM, then stop gracefully:
 * stop accepting, wait up to @grace ns for the live connections to end,
 * then abort the rest; a second signal aborts them at once. The calling
 * thread waits meanwhile (pw_block_on()). Call pw_server_signals_block()
 * before pw_runtime_create(), or a signal ends the process instead.
 * Return: the connections aborted (>= 0); -EINVAL for NULL; -errno of
 * the signal stream or of pw_block_on().
 * Context: any thread that is not a shard of @rt.
 */
PW_API int64_t pw_server_run(struct pw_runtime *rt, struct pw_server *srv,
			     uint64_t grace);

/**
 * pw_server_destroy - free @srv (and its listener, if still open). Call
 * it once the acceptors ended: after a drain's wait, or after
 * pw_runtime_destroy().
 * Return: 0; -EINVAL for NULL. Context: any thread, not a shard of it.
 */
PW_API int pw_server_destroy(struct pw_server *srv);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_SERVE_H */
