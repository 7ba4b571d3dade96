/* SPDX-License-Identifier: MIT */
/*
 * steal.h - the stealing scheduler's records. Private to the library.
 *
 * See steal.c for the design. Every field is touched by its worker only
 * unless it is atomic or guarded by a lock, as noted beside it.
 */
#ifndef PW_SHARD_STEAL_H
#define PW_SHARD_STEAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/slab.h"
#include "shard/queue.h"

struct pw__shard;
struct pw__task;
struct pw_runtime;

/* Counters of one worker, Tokio's names. Written by the worker (relaxed
 * load + store), read by any thread (relaxed). */
struct pw__wstats {
	_Atomic uint64_t polls, steal_count, steal_operations, overflow_count,
		park_count, park_unpark_count, noop_count, local_schedule_count,
		busy_ns, mean_poll_ns, forwarded;
};

struct pw__worker {
	struct pw__lq q;
	struct pw__task *lifo;	  /* the LIFO slot: never stolen */
	struct pw__task *bound_h; /* tasks with operations in flight here */
	struct pw__task *bound_t;
	uint32_t tick;
	uint32_t gqi;	   /* current global queue interval */
	bool lifo_enabled; /* off after 3 LIFO polls in one run */
	bool searching;	   /* counted in the searching workers */
	bool in_park;	   /* wakes now do not notify others */
	bool bound_last;   /* the last task taken came from bound_h */
	uint64_t rand;	   /* victim choice (xorshift) */
	/* Batch statistics, published by pub_stats(). */
	uint64_t polls, steals, steal_ops, overflows, parks, park_unparks,
		noops, local_sched, busy_ns, forwarded;
	uint64_t polls_at_park; /* polls when it last parked */
	uint64_t resume_ns;	/* when it last left a park */
	uint64_t batch_start_ns, batch_polls;
	double ewma_ns; /* mean poll time, exponentially weighted */
	/* Set by a notifying thread before it rouses the worker; cleared by
	 * the worker when it leaves its park. seq_cst: pairs with the
	 * worker's seq_cst asleep store and load of this flag. */
	_Atomic int unpark;
	_Alignas(64) struct pw__wstats st;
};

/* The runtime-wide part: the inject queue, the idle set, foreign tasks. */
struct pw__steal {
	struct pw__inject inj; /* the inject (global) queue */
	/* Idle: searching workers (low 32 bits) and unparked workers
	 * (high 32). seq_cst: a notifier reads it after pushing work and
	 * a worker parking updates it after its last queue check. */
	_Atomic uint64_t idle;
	pthread_mutex_t idle_mu;
	unsigned *sleepers; /* stack of parked workers, under idle_mu */
	unsigned nsleepers;
	/* Tasks spawned by threads that are not workers, under fslab_mu. */
	pthread_mutex_t fslab_mu;
	struct pw__slab fslab;
	_Atomic uint64_t remote_schedules; /* relaxed counter */
	_Atomic uint64_t spawned;	   /* relaxed counter */
};

/* Set-up and tear-down (runtime creator thread). */
int pw__steal_create(struct pw_runtime *rt);
void pw__steal_destroy(struct pw_runtime *rt);

/* The worker loop (the worker thread). */
void pw__steal_loop(struct pw__shard *s);

/* A new task made on another thread (queued with pw__steal_schedule()). */
int pw__steal_spawn_foreign(struct pw_runtime *rt, struct pw__task **tp,
			    pw_poll_fn fn, const void *state, size_t size,
			    pw_drop_fn drop);

/* Queue @t, whose NOTIFIED bit the caller just set. Any thread. */
void pw__steal_schedule(struct pw__task *t, bool is_yield);

/* A forwarded task or a freed block arrived in @s's inbox. */
void pw__steal_inbox(struct pw__shard *s, struct pw__task *t);

/* Release a task whose last reference is gone. Any thread. */
void pw__steal_free(struct pw__task *t);

/* True while @s has tasks queued (shutdown and idle checks). */
bool pw__steal_has_work(struct pw__shard *s);

/* Worker @s begins its shutdown: abort every task it holds. */
void pw__steal_begin_stop(struct pw__shard *s);

/* Live queue depths, any thread: @s's local queue (the LIFO slot
 * excluded) and the inject queue. */
uint32_t pw__steal_local_len(struct pw__shard *s);
uint64_t pw__steal_global_len(struct pw_runtime *rt);

#endif /* PW_SHARD_STEAL_H */
