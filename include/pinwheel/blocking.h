/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/blocking.h - the blocking pool: run blocking code off the shards.
 *
 * A shard must never block. Work that does (a blocking syscall, a long
 * computation, a library without an async API) goes to the runtime's pool
 * of plain threads: pw_spawn_blocking() queues it (FIFO, unbounded), an
 * idle pool thread takes it or a new one starts while fewer than
 * max_blocking_threads exist, and the result comes back to the spawning
 * shard through its inbox, waking the task. Idle pool threads exit after
 * blocking_keep_alive_ns. Shard threads do not count against the cap.
 * Under the paused clock, a job in the pool holds automatic time jumps
 * back, as in Tokio.
 */
#ifndef PINWHEEL_BLOCKING_H
#define PINWHEEL_BLOCKING_H

#include <stdint.h>

#include "export.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

/* States of a blocking job (the runtime's). */
enum pw_blocking_state {
	PW_BLOCKING_IDLE = 0, /* not spawned, or its result was taken */
	PW_BLOCKING_QUEUED,   /* in the pool's queue or running */
	PW_BLOCKING_DONE,     /* result back on the shard, not yet taken */
};

/*
 * A blocking job and the future that awaits it, embedded in the spawning
 * task's state. While queued or running it keeps that task's memory alive
 * (like an operation in flight). The fields are the runtime's.
 */
struct pw_blocking {
	int64_t (*fn)(void *arg); /* the job, run on a pool thread */
	void *arg;		  /* its argument */
	int64_t result;		  /* its return value */
	struct pw__task *task;	  /* the task to wake */
	struct pw__shard *shard;  /* its shard: where the result goes */
	struct pw_blocking *next; /* pool queue link */
	uint64_t node[2];	  /* inbox node: the result's way back */
	uint8_t state;		  /* enum pw_blocking_state */
};

/**
 * pw_spawn_blocking - queue @fn(@arg) on the runtime's blocking pool.
 * Await it with pw_blocking_poll(). @b must stay where it is (a task's
 * copied state) until the result is taken.
 * Return: 0; -EINVAL for NULL @b or @fn, or @b already queued; -EPERM off
 * a shard; -ESHUTDOWN when the runtime stops; -EAGAIN when no pool thread
 * can be started and none exists.
 * Context: a task on a shard.
 */
PW_API int pw_spawn_blocking(struct pw_blocking *b, int64_t (*fn)(void *arg),
			     void *arg);

/**
 * pw_blocking_poll - await the job queued in @b.
 * Return: PW_PENDING until it has run; PW_READY with *@result its return
 * value (leaving @b idle for reuse), or -EINVAL for bad arguments or a @b
 * that was never spawned. Counts against the budget.
 * Context: the task that spawned it, on its shard.
 */
PW_API enum pw_poll pw_blocking_poll(struct pw_cx *cx, struct pw_blocking *b,
				     int64_t *result);

/* The pool's counters (Tokio's names). */
struct pw_blocking_stats {
	uint64_t num_blocking_threads;	    /* pool threads alive */
	uint64_t num_idle_blocking_threads; /* of which waiting for work */
	uint64_t blocking_queue_depth;	    /* jobs queued, not started */
	uint64_t jobs_run;		    /* jobs finished so far */
};

struct pw_runtime;

/**
 * pw_runtime_blocking_stats - read the pool's counters.
 * Return: 0; -EINVAL for a bad @rt or NULL @out. Context: any thread.
 */
PW_API int pw_runtime_blocking_stats(struct pw_runtime *rt,
				     struct pw_blocking_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_BLOCKING_H */
