/* SPDX-License-Identifier: MIT */
/*
 * shard_int.h - the shard and runtime records. Private to the library.
 *
 * Everything in struct pw__shard is touched only by its own thread except
 * the fields grouped under "shared": the inbox, the asleep flag, the stop
 * flag and the statistics (written by the shard, read by anyone).
 */
#ifndef PW_SHARD_INT_H
#define PW_SHARD_INT_H

#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pinwheel/blocking.h"
#include "pinwheel/op.h"
#include "pinwheel/runtime.h"
#include "numa/mem_int.h"
#include "core/mpsc.h"
#include "core/slab.h"
#include "shard/spsc.h"
#include "shard/steal.h"
#include "core/task_int.h"
#include "timer/time_int.h"
#include "timer/wheel.h"

/* user_data tags: an op pointer (8-aligned) has tag 0. */
#define PW__UD_TAG_MASK	 7ull
#define PW__UD_EVENTFD	 1ull /* the inbox eventfd read */
#define PW__UD_IGNORE	 2ull /* a cancel request's own CQE */
#define PW__UD_MSGRING	 3ull /* a MSG_RING wake-up posted to us */
#define PW__UD_MSGSEND	 4ull /* our MSG_RING to shard (ud >> 3) failed */
#define PW__UD_EFDCANCEL 5ull /* the final cancel of the eventfd read */
#define PW__UD_NET	 6ull /* a net request: (ud & ~7) is its pw_net_op */

/* Messages staged per destination before one batch publish. */
#define PW__STAGE 32

struct pw__ovf;
struct pw__net;
struct pw_net_op;

/* What a shard keeps for one destination shard. */
struct pw__outq {
	struct pw__spsc *ring;	  /* our ring to it */
	struct pw__ovf *ovf_head; /* waiting for room, oldest first */
	struct pw__ovf *ovf_tail;
	struct pw_list waiters; /* pw_calls waiting for a slot */
	uint32_t nstage;	/* messages in stage[] */
	uint32_t calls;		/* pw_calls in flight to it */
	bool pushed;		/* published since the last rouse */
	struct pw__msg stage[PW__STAGE];
};

/* Per-shard counters: written by the shard only (relaxed load + store,
 * no read-modify-write), read by any thread (relaxed loads). */
struct pw__stats {
	_Atomic uint64_t spawned, polls, local_wakes, remote_wakes, inbox_msgs,
		budget_yields, kernel_waits, wakeups_sent, sqes_submitted,
		cqes_reaped, live_tasks, timers_fired, slab_chunks,
		inflight_ops, mesh_sent, mesh_received, mesh_overflowed,
		msg_rings, finished, clock_reads;
};

#define PW__STAT_ADD(s, f, n)                                              \
	atomic_store_explicit(&(s)->stats.f,                               \
			      atomic_load_explicit(&(s)->stats.f,          \
						   memory_order_relaxed) + \
				      (n),                                 \
			      memory_order_relaxed)
#define PW__STAT_INC(s, f) PW__STAT_ADD(s, f, 1)

struct pw__shard {
	struct pw_runtime *rt;
	unsigned id;
	int cpu;

	struct pw__runq runq;	   /* ready tasks (shard mode) */
	struct pw__worker *w;	   /* stealing mode: the worker, or NULL */
	struct pw__task *cur_task; /* the task being polled, or NULL */
	struct pw__slab slab; /* tasks, and nothing else (walked at stop) */
	struct pw__slab aux;  /* mesh overflow blocks and spawn staging */

	struct io_uring ring;
	bool ring_ok;	   /* ring set up */
	bool defer;	   /* DEFER_TASKRUN in use */
	bool min_wait;	   /* the kernel takes a batch wait (min_wait_usec) */
	bool stopping;	   /* shutdown begun: no new work */
	bool exiting;	   /* every shard is done: leaving the loop */
	bool efd_armed;	   /* eventfd read in flight */
	int efd;	   /* eventfd other threads write to rouse us */
	uint64_t efd_buf;  /* target of the eventfd read */
	uint32_t inflight; /* ops and internal requests awaiting a CQE */
	uint32_t sq_dirty; /* SQEs prepared since the last submit */
	uint64_t chunks_reported;
	struct pw__net *net;	  /* networking (net/), created on first use */
	struct pw__shard_mem mem; /* node, binding, arena (numa/mem.c) */

	struct pw__wheel wheel; /* timers, in ticks since runtime start */
	uint64_t now_ns;	/* clock cached for this loop turn */
	bool now_stale;		/* real clock: now_ns not read this turn */
	uint64_t tick_ns;	/* the runtime's tick */
	/* Paused clock: this shard's next wheel expiry in ns, published
	 * (seq_cst) before its asleep flag; read by the shard that finds
	 * every shard asleep and moves the clock (time.c). */
	_Atomic uint64_t next_ns;

	/* The mesh: out[d] toward shard d, in[d] the ring from shard d. */
	struct pw__outq *out;
	struct pw__spsc **in;
	uint32_t ovf_dests;	 /* destinations with an overflow backlog */
	uint64_t sent, received; /* mesh messages, published below */

	/* shared */
	struct pw__mpsc inbox;
	/* Shutdown termination (see mesh.c): 1 while the stopping shard
	 * has nothing to do; activity counts its returns to work. Stored
	 * seq_cst, read seq_cst by the shard that checks termination. */
	_Atomic int quiet;
	_Atomic uint64_t activity, sent_pub, recv_pub;
	/* 1 while the shard waits (or is about to wait) in the kernel.
	 * seq_cst store by the shard, then its seq_cst inbox check; pairs
	 * with the producers' seq_cst push then seq_cst load in
	 * pw__shard_rouse(). */
	_Alignas(64) _Atomic int asleep;
	/* Set once by pw_runtime_destroy(); read by the shard each turn.
	 * seq_cst store before pw__shard_rouse(); pairs with the shard's
	 * seq_cst load after it publishes asleep. */
	_Atomic bool stop;
	_Alignas(64) struct pw__stats stats;

	pthread_t thread;
	int start_err; /* set-up result reported to the creator */
};

/* The blocking pool (core/blocking.c). Guarded by mu. */
struct pw__pool {
	pthread_mutex_t mu;
	pthread_cond_t work;	  /* a job was queued, or stop */
	pthread_cond_t gone;	  /* a thread exited or a job ended */
	struct pw_blocking *head; /* FIFO of queued jobs */
	struct pw_blocking *tail;
	unsigned max_threads;	 /* cap on pool threads */
	uint64_t keep_alive_ns;	 /* idle time before a thread exits */
	unsigned threads, idle;	 /* alive, and waiting for work */
	uint64_t depth, running; /* queued, and running, jobs */
	uint64_t jobs_run;	 /* finished jobs */
	bool stopping;
	/* Jobs queued or running whose result the shard has not taken:
	 * read by the paused clock (relaxed; see blocking.c). */
	_Atomic uint64_t inflight;
};

struct pw_runtime {
	struct pw_config cfg;
	unsigned nshards;
	struct pw__shard **shards;
	struct pw_runtime *reg_next; /* registry of live runtimes */
	unsigned callers;	     /* threads inside a push (registry lock) */
	int *cpus;		     /* resolved CPU per shard */
	pthread_mutex_t start_mu;
	pthread_cond_t start_cv;
	unsigned started;      /* shards done with set-up */
	struct pw__rt_mem mem; /* topology, nodes, the mesh's memory */
	uint64_t start_ns;     /* CLOCK_MONOTONIC at creation: tick 0 */
	bool paused;	       /* PW_CONFIG_PAUSED_CLOCK */
	/* The paused clock, ns since start. Moved forward only, with CAS,
	 * by pw_time_advance() or the last shard to go idle; shards read it
	 * once per turn (acquire: pairs with the release CAS). */
	_Atomic uint64_t vnow;
	/* Threads inside pw_block_on(). The paused clock moves by itself
	 * only while one waits (as Tokio's only moves inside block_on), so
	 * work handed in from outside never finds time already jumped.
	 * seq_cst: incremented after the task is queued, decremented by
	 * the caller or the task's release, whichever comes second (see
	 * struct pw__blockon), read by the shard that finds every shard
	 * idle (time.c). */
	_Atomic unsigned blockers;
	struct pw__pool pool;
	bool pool_live;		   /* pool initialised, not yet freed */
	struct pw__steal *steal;   /* stealing mode, or NULL */
	_Atomic unsigned next_any; /* PW_SHARD_ANY spawns, shard mode */
};

/*
 * The shard's time in ns since the runtime started, as read once per loop
 * turn: the real clock on the turn's first call (see pw__time_turn()),
 * the same value for the rest of the turn. Shard thread only.
 */
static inline uint64_t pw__now(struct pw__shard *s)
{
	if (s->now_stale)
		pw__time_update(s);
	return s->now_ns;
}

/* pw_coop_proceed(), inline in the library's own leaf operations. */
static inline __attribute__((always_inline)) bool
pw__coop_proceed(struct pw_cx *cx)
{
	if (!cx || !cx->task)
		return false;
	if (__builtin_expect(cx->budget > 0, 1)) {
		cx->budget--;
		return true;
	}
	if (cx->budget == 0) {
		/* First refusal in this poll: count one forced yield. */
		PW__STAT_INC(cx->shard, budget_yields);
		cx->budget = -1;
	}
	cx->task->flags |= PW__T_NOTIFIED;
	return false;
}

/*
 * Wake @t on its own shard: queue it unless it is done or queued already;
 * a task being polled is marked NOTIFIED and re-queued after its poll.
 */
static inline void pw__task_schedule(struct pw__shard *s, struct pw__task *t)
{
	uint16_t f = t->flags;

	if (f & (PW__T_DONE | PW__T_SCHEDULED))
		return;
	if (f & PW__T_RUNNING) {
		t->flags = f | PW__T_NOTIFIED;
		return;
	}
	t->flags = f | PW__T_SCHEDULED;
	pw__runq_push(&s->runq, t);
}

/*
 * Finish @t, which returned ready with nothing to drop, no pin, not a
 * pw_block_on() task, a joiner waiting and more references than the
 * scheduler's (the join handle's): wake the joiner and drop the
 * scheduler's reference, which cannot be the last. The short form of
 * pw__task_finish(). Shard thread only.
 */
static inline void pw__task_finish_joined(struct pw__shard *s,
					  struct pw__task *t, int64_t res)
{
	struct pw__task *j = t->joiner;

	t->flags = (uint16_t)((t->flags | PW__T_DONE) &
			      ~(PW__T_NOTIFIED | PW__T_ABORT));
	t->result = res;
	t->joiner = NULL;
	t->refs--;
	PW__STAT_INC(s, finished);
	PW__STAT_INC(s, local_wakes);
	pw__task_schedule(s, j);
	/* The joiner's reference that t->joiner held; the joiner is now
	 * queued (or running), so the scheduler's keeps it alive unless it
	 * is done already. */
	if (--j->refs == 0)
		pw__task_unref_last(s, j);
}

/*
 * Poll @t once (shard mode): the shard loop's inner step, inline there.
 * A detached task that finishes with nothing to wake, drop or keep goes
 * straight back to the slab; any other end goes through
 * pw__task_finish(). Return: 1 if @t's poll function ran, 0 if it was
 * only freed or aborted (the loop counts polls per batch). Shard thread
 * only.
 */
static inline unsigned pw__task_run(struct pw__shard *s, struct pw__task *t)
{
	uint16_t f = (uint16_t)(t->flags & ~PW__T_SCHEDULED);

	if (__builtin_expect(f & (PW__T_DONE | PW__T_ABORT), 0)) {
		t->flags = f;
		if (f & PW__T_DONE)
			pw__task_maybe_free(s, t);
		else
			pw__task_finish(s, t, -ECANCELED, true);
		return 0;
	}
	t->flags = f | PW__T_RUNNING;
	struct pw_cx cx = { s, t, 0, PW_COOP_BUDGET };
	s->cur_task = t;
	enum pw_poll r = t->fn(&cx, t->state);
	s->cur_task = NULL;
	t->flags &= (uint16_t)~PW__T_RUNNING;
	if (r == PW_READY) {
		/* The common end of a detached task: nothing to run, wake or
		 * keep, so the block goes straight back to the slab. relaxed
		 * pins: only this shard writes them. acquire remote: as in
		 * pw__task_maybe_free(). */
		if (__builtin_expect(!(t->flags & (PW__T_DROP | PW__T_PINNED |
						   PW__T_BLOCKON)) &&
					     !t->joiner && t->refs == 1,
				     1) &&
		    !atomic_load_explicit(&t->remote, memory_order_acquire)) {
			PW__STAT_INC(s, finished);
			pw__slab_free(&s->slab, t, t->cls);
			return 1;
		}
		/* The common end of an awaited task: its join handle keeps
		 * it, so only the awaiting task is woken. */
		if (__builtin_expect(!(t->flags & (PW__T_DROP | PW__T_PINNED |
						   PW__T_BLOCKON)) &&
					     t->joiner && t->refs > 1,
				     1)) {
			pw__task_finish_joined(s, t, cx.result);
			return 1;
		}
		pw__task_finish(s, t, cx.result, false);
		return 1;
	}
	if (t->flags & (PW__T_NOTIFIED | PW__T_ABORT)) {
		t->flags = (uint16_t)((t->flags & ~PW__T_NOTIFIED) |
				      PW__T_SCHEDULED);
		pw__runq_push(&s->runq, t);
	}
	return 1;
}

/*
 * Pins: a kernel operation, timer or call in flight that points into a
 * task's state pins the task, so its memory outlives the operation.
 * pw__task_pin() is called by the shard that registers the operation,
 * while polling @t; the unpin calls by the same shard when the operation
 * ends. pw__task_unpin() frees a finished task whose last pin this was;
 * pw__task_unpin_wake() also wakes @t when it is not finished.
 *
 * In stealing mode a pinned task is bound to the worker its pins are on
 * (every poll and its drop happen there, see steal.c) and each pin also
 * holds a reference.
 */
static inline void pw__task_pin(struct pw__shard *s, struct pw__task *t)
{
	/* relaxed: only this shard writes pins (see task_int.h). */
	uint32_t p = atomic_load_explicit(&t->pins, memory_order_relaxed);

	if (__builtin_expect(t->steal, 0)) {
		if (!p)
			t->bound = s;
		/* relaxed: the caller holds a reference (as Arc::clone). */
		atomic_fetch_add_explicit(&t->remote, PW__S_REF_ONE,
					  memory_order_relaxed);
	} else {
		t->flags |= PW__T_PINNED;
	}
	atomic_store_explicit(&t->pins, p + 1, memory_order_relaxed);
}

void pw__task_unpin_steal(struct pw__shard *s, struct pw__task *t, bool wake);

/* Wake @t from the shard its pins are on (an operation's progress). */
static inline void pw__task_wake_local(struct pw__shard *s, struct pw__task *t)
{
	if (__builtin_expect(t->steal, 0))
		pw__task_wake_steal(t);
	else
		pw__task_schedule(s, t);
}

/* Drop one pin; returns the pins left. */
static inline uint32_t pw__pin_drop(struct pw__task *t)
{
	uint32_t p = atomic_load_explicit(&t->pins, memory_order_relaxed);

	/* release: pairs with pw__pins(); see task_int.h. */
	atomic_store_explicit(&t->pins, p - 1, memory_order_release);
	return p - 1;
}

/* Shard mode: drop a pin and keep PW__T_PINNED in step. */
static inline void pw__pin_drop_shard(struct pw__task *t)
{
	if (!pw__pin_drop(t))
		t->flags &= (uint16_t)~PW__T_PINNED;
}

static inline void pw__task_unpin(struct pw__shard *s, struct pw__task *t)
{
	if (__builtin_expect(t->steal, 0)) {
		pw__task_unpin_steal(s, t, false);
		return;
	}
	pw__pin_drop_shard(t);
	if (t->flags & PW__T_DONE)
		pw__task_maybe_free(s, t);
}

static inline void pw__task_unpin_wake(struct pw__shard *s, struct pw__task *t)
{
	if (__builtin_expect(t->steal, 0)) {
		pw__task_unpin_steal(s, t, true);
		return;
	}
	pw__pin_drop_shard(t);
	if (t->flags & PW__T_DONE)
		pw__task_maybe_free(s, t);
	else
		pw__task_schedule(s, t);
}

/* The blocking pool (blocking.c). */
struct pw_blocking_stats;
int pw__pool_init(struct pw__pool *p, unsigned max_threads,
		  uint64_t keep_alive_ns);
/* Stops the pool: queued jobs are dropped, running ones finish, its
 * threads exit; later pw_spawn_blocking() calls get -ESHUTDOWN. Any
 * thread but a pool thread; may be called again. The lock lives on
 * until pw__pool_free(), so a shard still running may call into it. */
void pw__pool_stop(struct pw__pool *p);
/* Frees what pw__pool_init() made; after pw__pool_stop() and after the
 * shards have stopped. */
void pw__pool_free(struct pw__pool *p);
bool pw__pool_busy(struct pw__pool *p);
void pw__pool_done(struct pw__shard *s, struct pw__mpsc_node *n);
void pw__pool_read(struct pw__pool *p, struct pw_blocking_stats *out);
int pw__runtime_pool_stats(struct pw_runtime *rt,
			   struct pw_blocking_stats *out);

/* The mesh (mesh.c). */
int pw__mesh_create(struct pw_runtime *rt);
void pw__mesh_destroy(struct pw_runtime *rt);
int pw__mesh_send(struct pw__shard *s, unsigned dst, const struct pw__msg *m);
void pw__mesh_drain(struct pw__shard *s);
void pw__mesh_flush(struct pw__shard *s);
/* No message waits in any inbound ring (no fence: for polling). */
bool pw__mesh_empty(struct pw__shard *s);
/* The same after a seq_cst fence: for the check after "asleep" is up. */
bool pw__mesh_idle(struct pw__shard *s);
bool pw__mesh_stop_done(struct pw__shard *s);
uint64_t pw__mesh_wait_cap(struct pw__shard *s);
/* Send @t's owner a message carrying one reference of ours: wake (if
 * @wake) and drop it. false if it could not be staged (no memory). */
bool pw__mesh_remote_wake(struct pw__shard *s, struct pw__task *t, bool wake);
void pw__mesh_send_failed(struct pw__shard *s, uint64_t ud);

/* Stealing mode: poll @s's ring, timers, inbox and mesh, sleeping in the
 * kernel first when @sleep; and leave the loop once stopped. Shard
 * thread only. */
void pw__shard_events(struct pw__shard *s, bool sleep);
void pw__shard_final(struct pw__shard *s);
/* Validate a runtime handle from any thread and hold it (false: not a
 * live runtime); pw__rt_leave() releases it. */
bool pw__rt_enter(struct pw_runtime *rt);
void pw__rt_leave(struct pw_runtime *rt);

/* The field checks of pw_config_check() (shard/config.c). Any thread. */
int pw__config_fields(const struct pw_config *c, char *msg, size_t len);

/* Write @s's eventfd: ends its kernel wait whatever its asleep flag
 * says. Any thread, until the runtime is freed. */
void pw__shard_kick(struct pw__shard *s);

/* Rouse @s if it sleeps in the kernel. Any thread. */
void pw__shard_rouse(struct pw__shard *s);

/* Queue @n on @s's inbox and rouse it. Any thread. */
void pw__shard_post(struct pw__shard *s, struct pw__mpsc_node *n);

/* A CQE for @op arrived. Shard thread only. */
void pw__op_complete(struct pw__shard *s, struct pw_op *op,
		     const struct io_uring_cqe *cqe);

/* A CQE for net request @op arrived; free @s's networking at teardown
 * (net/net.c). Shard thread only. */
void pw__net_complete(struct pw__shard *s, struct pw_net_op *op,
		      const struct io_uring_cqe *cqe);
void pw__net_teardown(struct pw__shard *s);

/* An SQE from @s's ring, flushing a full queue first; NULL only if the
 * kernel accepts nothing. Shard thread only. */
struct io_uring_sqe *pw__shard_sqe(struct pw__shard *s);

#endif /* PW_SHARD_INT_H */
