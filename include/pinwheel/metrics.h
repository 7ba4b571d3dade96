/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/metrics.h - runtime metrics under Tokio's names, readable from
 * any thread, and writers for JSON and the Prometheus text format.
 *
 * pw_metrics_read() takes a snapshot of a running runtime: runtime-wide
 * values and one record per worker (a shard in shard mode, a worker in
 * stealing mode). Names and meanings follow Tokio's RuntimeMetrics
 * wherever Tokio has the concept; pinwheel's own counters (the mesh, the
 * ring, the timer wheel, the arena) sit beside them. docs/metrics.md lists
 * every metric and what it means in each scheduler mode.
 *
 * The values are read without stopping the runtime. As in Tokio, the two
 * queue depths are live and the per-worker counters of stealing mode are
 * published by each worker in batches (at maintenance, before it parks),
 * so they may lag while a worker is busy. Counters that have no meaning
 * in a mode read 0 there.
 */
#ifndef PINWHEEL_METRICS_H
#define PINWHEEL_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "export.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One worker (stealing mode) or shard (shard mode). */
struct pw_metrics_worker {
	/* Tokio's per-worker metrics. */
	uint64_t poll_count;	       /* tasks polled */
	uint64_t steal_count;	       /* tasks stolen from other workers */
	uint64_t steal_operations;     /* steals that took at least one */
	uint64_t overflow_count;       /* local queue overflows */
	uint64_t park_count;	       /* times the worker parked */
	uint64_t park_unpark_count;    /* parks plus unparks */
	uint64_t noop_count;	       /* unparks that polled no task */
	uint64_t local_schedule_count; /* tasks scheduled from the worker */
	uint64_t total_busy_ns;	       /* time not parked, ns (shard mode:
					  not waiting in the kernel, counted
					  at each wait) */
	uint64_t mean_poll_ns;	       /* mean poll time (EWMA), ns */
	uint64_t local_queue_depth;    /* live; the LIFO slot excluded */
	/* pinwheel's own. */
	uint64_t spawned;	       /* tasks spawned on it */
	uint64_t budget_forced_yields; /* polls ended by the coop budget */
	uint64_t forwarded;	       /* tasks handed to their bound worker */
	uint64_t mesh_sent;	       /* messages sent to other shards */
	uint64_t mesh_received;	       /* messages taken from other shards */
	uint64_t mesh_overflowed;      /* messages that waited in overflow */
	uint64_t timers_fired;	       /* timer wheel entries fired */
	uint64_t sqes_submitted;       /* SQEs handed to the kernel */
	uint64_t cqes_reaped;	       /* CQEs processed */
	uint64_t kernel_waits;	       /* blocking waits in io_uring */
	uint64_t inflight_ops;	       /* kernel operations in flight */
	uint64_t arena_bytes;	       /* jemalloc arena bytes allocated */
	bool has_arena;		       /* arena_bytes is meaningful */
	int cpu;		       /* CPU it is pinned to, or -1 */
};

/* A snapshot of a runtime. Filled by pw_metrics_read(). */
struct pw_metrics {
	enum pw_sched sched;		    /* the scheduler mode */
	unsigned num_workers;		    /* workers (shards) */
	uint64_t num_alive_tasks;	    /* spawned, not yet finished */
	uint64_t global_queue_depth;	    /* live; 0 in shard mode */
	uint64_t spawned_tasks_count;	    /* tasks ever spawned */
	uint64_t remote_schedule_count;	    /* scheduled from outside */
	uint64_t budget_forced_yield_count; /* coop budget yields, all */
	uint64_t num_blocking_threads;	    /* blocking pool threads */
	uint64_t num_idle_blocking_threads; /* of which idle */
	uint64_t blocking_queue_depth;	    /* blocking jobs not started */
	struct pw_metrics_worker *workers;  /* num_workers records */
};

/**
 * pw_metrics_read - take a snapshot of @rt's metrics into @out.
 *
 * Allocates @out->workers (num_workers records); release it with
 * pw_metrics_free(). @out is overwritten whole: free an earlier snapshot
 * before reading into the same struct again.
 * Return: 0; -EINVAL for a bad @rt or NULL @out; -ENOMEM (then @out
 * holds no allocation).
 * Context: any thread, shards included.
 */
PW_API int pw_metrics_read(struct pw_runtime *rt, struct pw_metrics *out);

/**
 * pw_metrics_free - release what pw_metrics_read() allocated in @m and
 * clear it. NULL, or a zeroed or already freed @m, is accepted.
 * Context: any thread.
 */
PW_API void pw_metrics_free(struct pw_metrics *m);

/**
 * pw_metrics_num_workers - Tokio's num_workers: @rt's workers (shards).
 * Return: the count; -EINVAL for a bad @rt. Context: any thread.
 */
PW_API int pw_metrics_num_workers(struct pw_runtime *rt);

/**
 * pw_metrics_num_alive_tasks - tasks spawned and not yet finished
 * (completed, aborted or dropped at shutdown), all workers together.
 * Return: the count; -EINVAL for a bad @rt. Context: any thread.
 */
PW_API int64_t pw_metrics_num_alive_tasks(struct pw_runtime *rt);

/**
 * pw_metrics_global_queue_depth - tasks in the global (inject) queue
 * now; always 0 in shard mode, which has none.
 * Return: the depth; -EINVAL for a bad @rt. Context: any thread.
 */
PW_API int64_t pw_metrics_global_queue_depth(struct pw_runtime *rt);

/**
 * pw_metrics_worker_local_queue_depth - tasks in worker @worker's local
 * queue now, its LIFO slot excluded (stealing mode); 0 in shard mode,
 * whose run queue only its own thread may read.
 * Return: the depth; -EINVAL for a bad @rt; -ENODEV for a bad @worker.
 * Context: any thread.
 */
PW_API int64_t pw_metrics_worker_local_queue_depth(struct pw_runtime *rt,
						   unsigned worker);

/**
 * pw_metrics_worker - read worker @worker's record alone into @out.
 * Return: 0; -EINVAL for a bad @rt or NULL @out; -ENODEV for a bad
 * @worker. Context: any thread.
 */
PW_API int pw_metrics_worker(struct pw_runtime *rt, unsigned worker,
			     struct pw_metrics_worker *out);

/**
 * pw_metrics_write_json - write @m to @f as one JSON object: the
 * runtime-wide values under Tokio's names and a "workers" array of
 * per-worker objects. Durations are in nanoseconds (keys end in "_ns").
 * Return: 0; -EINVAL for a NULL argument or a snapshot without workers;
 * -EIO when writing failed.
 * Context: any thread.
 */
PW_API int pw_metrics_write_json(const struct pw_metrics *m, FILE *f);

/**
 * pw_metrics_write_prometheus - write @m to @f in the Prometheus text
 * exposition format (version 0.0.4): a "# HELP" and a "# TYPE" line per
 * metric, names prefixed "pinwheel_", counters ending in "_total",
 * durations in seconds, per-worker values labelled worker="i".
 * Return: 0; -EINVAL for a NULL argument or a snapshot without workers;
 * -EIO when writing failed.
 * Context: any thread.
 */
PW_API int pw_metrics_write_prometheus(const struct pw_metrics *m, FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_METRICS_H */
