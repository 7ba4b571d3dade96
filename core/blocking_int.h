/* SPDX-License-Identifier: MIT */
/*
 * blocking_int.h - the blocking pool's record and calls (blocking.c).
 * Private to the library: the runtime embeds the pool (shard_int.h), the
 * shard loop hands it finished jobs (loop.c), the metrics read it.
 */
#ifndef PW_CORE_BLOCKING_INT_H
#define PW_CORE_BLOCKING_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pinwheel/blocking.h"
#include "core/mpsc.h"

struct pw__shard;

/* The blocking pool. Guarded by mu. */
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

/* Set up an empty pool of at most @max_threads threads, each exiting
 * after @keep_alive_ns idle. Returns 0. The runtime's creator thread. */
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
/* Jobs queued or running whose result no shard has taken yet (a hint
 * for the paused clock). Any thread. */
bool pw__pool_busy(struct pw__pool *p);
/* The finished job whose inbox node is @n arrived at its shard @s: hand
 * the result to its task and wake it. Shard thread only. */
void pw__pool_done(struct pw__shard *s, struct pw__mpsc_node *n);
/* Copy the pool's counters to @out, under its lock. Any thread. */
void pw__pool_read(struct pw__pool *p, struct pw_blocking_stats *out);

#endif /* PW_CORE_BLOCKING_INT_H */
