/* SPDX-License-Identifier: MIT */
/*
 * shard_int.h - the shard and runtime records, and the shard's and
 * runtime's own calls (loop.c, shard.c, op.c). Private to the library.
 * How tasks are scheduled on a shard is shard/sched.h.
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

#include "pinwheel/runtime.h"
#include "numa/mem_int.h"
#include "core/blocking_int.h"
#include "core/mpsc.h"
#include "core/slab.h"
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

/* Per-shard counters: written by the shard only (relaxed load + store,
 * no read-modify-write), read by any thread (relaxed loads). */
struct pw__stats {
	_Atomic uint64_t spawned, polls, local_wakes, remote_wakes, inbox_msgs,
		budget_yields, kernel_waits, wakeups_sent, sqes_submitted,
		cqes_reaped, live_tasks, timers_fired, slab_chunks,
		inflight_ops, mesh_sent, mesh_received, mesh_overflowed,
		msg_rings, finished, clock_reads;
	/* Shard mode: ns not spent waiting in the kernel (loop.c). */
	_Atomic uint64_t busy_ns;
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
	bool clock_fresh;	/* shard mode: read on waking; the next turn
				   keeps it (loop.c) */
	uint64_t woke_ns;	/* shard mode: when the last kernel wait
				   ended (or the loop began), in now_ns */
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

/* Stealing mode (loop.c): poll @s's ring, timers, inbox and mesh,
 * sleeping in the kernel first when @sleep. Shard thread only. */
void pw__shard_events(struct pw__shard *s, bool sleep);
/* Stealing mode: withdraw @s's eventfd read before the worker leaves its
 * loop, once every shard is done. Shard thread only. */
void pw__shard_final(struct pw__shard *s);
/* A pw_block_on() task's state is no longer used: wake its caller
 * (shard/shard.c). Any thread. */
void pw__blockon_release(void *state);

/* The blocking pool's statistics of @rt (core/metrics.c). Any thread. */
struct pw_blocking_stats;
int pw__runtime_pool_stats(struct pw_runtime *rt,
			   struct pw_blocking_stats *out);

/* Validate a runtime handle from any thread and hold it (false: not a
 * live runtime); pw__rt_leave() releases it. */
bool pw__rt_enter(struct pw_runtime *rt);
void pw__rt_leave(struct pw_runtime *rt);

/* The field checks of pw_config_check() (shard/config.c). Any thread. */
int pw__config_fields(const struct pw_config *c, char *msg, size_t len);
/* The shard thread's body (loop.c): set-up, report to the creator, the
 * loop (or the stealing worker's), teardown. @arg: the shard. */
void *pw__shard_main(void *arg);
/* Mark @s, whose loop will never run, quiet for the shutdown check.
 * The creator thread. */
void pw__shard_never_runs(struct pw__shard *s);
/* Publish the counters kept as plain fields (loop.c). Shard thread. */
void pw__shard_publish_stats(struct pw__shard *s);
/* A spawn or pw_block_on() request from another thread arrived in @s's
 * inbox (shard.c). Shard thread only. */
void pw__runtime_spawn_arrived(struct pw__shard *s, struct pw__mpsc_node *n);

/* Write @s's eventfd: ends its kernel wait whatever its asleep flag
 * says. Any thread, until the runtime is freed. */
void pw__shard_kick(struct pw__shard *s);

/* Rouse @s if it sleeps in the kernel. Any thread. */
void pw__shard_rouse(struct pw__shard *s);

/* Queue @n on @s's inbox and rouse it. Any thread. */
void pw__shard_post(struct pw__shard *s, struct pw__mpsc_node *n);

/* An SQE from @s's ring, flushing a full queue first; NULL only if the
 * kernel accepts nothing. Shard thread only. */
struct io_uring_sqe *pw__shard_sqe(struct pw__shard *s);

#endif /* PW_SHARD_INT_H */
