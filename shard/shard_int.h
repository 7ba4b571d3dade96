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

#include "pinwheel/op.h"
#include "pinwheel/runtime.h"
#include "mpsc.h"
#include "slab.h"
#include "task_int.h"
#include "wheel.h"

/* user_data tags: an op pointer (8-aligned) has tag 0. */
#define PW__UD_TAG_MASK 7ull
#define PW__UD_EVENTFD	1ull /* the inbox eventfd read */
#define PW__UD_IGNORE	2ull /* a cancel request's own CQE */

/* Per-shard counters: written by the shard only (relaxed load + store,
 * no read-modify-write), read by any thread (relaxed loads). */
struct pw__stats {
	_Atomic uint64_t spawned, polls, local_wakes, remote_wakes, inbox_msgs,
		budget_yields, kernel_waits, wakeups_sent, sqes_submitted,
		cqes_reaped, live_tasks, timers_fired, slab_chunks,
		inflight_ops;
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

	struct pw__runq runq; /* ready tasks */
	struct pw__slab slab;

	struct io_uring ring;
	bool ring_ok;	   /* ring set up */
	bool defer;	   /* DEFER_TASKRUN in use */
	bool stopping;	   /* shutdown begun: no new work */
	bool efd_armed;	   /* eventfd read in flight */
	int efd;	   /* eventfd other threads write to rouse us */
	uint64_t efd_buf;  /* target of the eventfd read */
	uint32_t inflight; /* ops and internal requests awaiting a CQE */
	uint32_t sq_dirty; /* SQEs prepared since the last submit */
	uint64_t chunks_reported;

	struct pw__wheel wheel; /* timers, in ticks since runtime start */
	uint64_t now_ns;	/* clock cached for this loop turn */
	uint64_t tick_ns;	/* the runtime's tick */
	/* Paused clock: this shard's next wheel expiry in ns, published
	 * (seq_cst) before its asleep flag; read by the shard that finds
	 * every shard asleep and moves the clock (time.c). */
	_Atomic uint64_t next_ns;

	/* shared */
	struct pw__mpsc inbox;
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
	unsigned started;  /* shards done with set-up */
	uint64_t start_ns; /* CLOCK_MONOTONIC at creation: tick 0 */
	bool paused;	   /* PW_CONFIG_PAUSED_CLOCK */
	/* The paused clock, ns since start. Moved forward only, with CAS,
	 * by pw_time_advance() or the last shard to go idle; shards read it
	 * once per turn (acquire: pairs with the release CAS). */
	_Atomic uint64_t vnow;
};

static inline struct pw__runq *pw__shard_runq(struct pw__shard *s)
{
	return &s->runq;
}

/* Rouse @s if it sleeps in the kernel. Any thread. */
void pw__shard_rouse(struct pw__shard *s);

/* Queue @n on @s's inbox and rouse it. Any thread. */
void pw__shard_post(struct pw__shard *s, struct pw__mpsc_node *n);

/* A CQE for @op arrived. Shard thread only. */
void pw__op_complete(struct pw__shard *s, struct pw_op *op,
		     const struct io_uring_cqe *cqe);

/* An SQE from @s's ring, flushing a full queue first; NULL only if the
 * kernel accepts nothing. Shard thread only. */
struct io_uring_sqe *pw__shard_sqe(struct pw__shard *s);

#endif /* PW_SHARD_INT_H */
