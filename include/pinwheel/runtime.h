/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/runtime.h - creating, driving and destroying a runtime.
 *
 * A runtime is a set of shards. Each shard is a thread pinned to one CPU
 * that owns an io_uring ring, a run queue, a timer wheel and a slab. The
 * shards start in pw_runtime_create() and run until pw_runtime_destroy();
 * other threads hand them work with pw_block_on() and pw_runtime_spawn(),
 * which travel through the shard's external inbox.
 */
#ifndef PINWHEEL_RUNTIME_H
#define PINWHEEL_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pw_runtime;

/* Bounds the runtime accepts. */
#define PW_MAX_SHARDS	     1024
#define PW_RING_ENTRIES_MIN  8
#define PW_RING_ENTRIES_MAX  32768
#define PW_IDLE_POLL_MAX_NS  1000000000ull /* struct pw_config.idle_poll_ns */
#define PW_BATCH_WAIT_MAX_NS 1000000000ull /* struct pw_config.batch_wait_ns */

/* Flags for struct pw_config.flags. */
#define PW_CONFIG_NO_PIN	0x1u /* do not pin shard threads */
#define PW_CONFIG_NO_DEFER	0x2u /* skip DEFER_TASKRUN, use COOP_TASKRUN */
#define PW_CONFIG_PAUSED_CLOCK	0x4u /* virtual time (see pinwheel/time.h) */
#define PW_CONFIG_OVERSUBSCRIBE 0x8u /* allow more shards than CPUs */

struct pw_placement_opts; /* pinwheel/topo.h */

#define PW_CONFIG_NO_LIFO 0x10u /* stealing mode: no LIFO slot */

/* Schedulers (struct pw_config.sched). */
enum pw_sched {
	PW_SCHED_SHARD = 0, /* shard per core: tasks stay where spawned */
	PW_SCHED_STEAL = 1, /* Tokio's work-stealing scheduler */
};

/* global_queue_interval: tuned from the mean poll time, as Tokio does. */
#define PW_INTERVAL_AUTO 0xffffffffu

/* Runtime configuration. Initialise with pw_config_init(), then adjust. */
struct pw_config {
	unsigned shards; /* number of shards, 1..PW_MAX_SHARDS */
	const int *cpus; /* CPU of each shard (online, in the affinity
				  mask; a CPU used twice is oversubscription),
				  or NULL: see placement */
	const struct pw_placement_opts *placement; /* with cpus NULL: the
				  placement policy (its shards 0 or equal to
				  ours); NULL: one shard per physical core,
				  compact */
	unsigned ring_entries;	/* SQ entries per shard ring, a power of two */
	unsigned cq_factor;	/* CQ size = ring_entries * cq_factor, 1..64 */
	unsigned batch;		/* tasks polled per loop turn before I/O */
	uint64_t tick_ns;	/* timer wheel tick, 1000..1000000000 ns */
	uint32_t flags;		/* PW_CONFIG_* */
	unsigned mesh_slots;	/* slots per shard-to-shard ring: a power of
				two 2..65536; 0: 256 (64 beyond 16 shards) */
	unsigned mesh_batch;	/* messages taken per ring per turn, >= 1 */
	unsigned max_calls;	/* pw_calls in flight per destination shard;
				0: unbounded */
	uint64_t idle_poll_ns;	/* idle shard: poll this long for messages,
				  wakes and completions before it sleeps in
				  the kernel, 0..1 s; 0 (the default): sleep
				  at once. Ignored under the paused clock. */
	uint64_t batch_wait_ns; /* a shard asleep in the kernel returns in
				  this much of its wait only with 32
				  completions, after it with any: fewer
				  wake-ups under load, up to this much more
				  latency; 0..1 s, 0 (the default): off.
				  Linux 6.12 and later (else ignored: see
				  pw_shard_stats.batch_wait). */
	unsigned max_blocking_threads;	 /* blocking pool cap, >= 1 (512) */
	uint64_t blocking_keep_alive_ns; /* idle pool thread lifetime (10 s) */
	enum pw_sched sched;		 /* PW_SCHED_SHARD (the default) */
	/* Stealing mode only (see docs/stealing.md): */
	unsigned event_interval; /* ticks between I/O and timer polls: 61 */
	unsigned global_queue_interval; /* ticks between inject-queue
					   checks, >= 1, or PW_INTERVAL_AUTO
					   (the default: self-tuning) */
};

/**
 * pw_config_init - fill @cfg with the defaults: one shard per physical
 * core of the affinity mask (hwloc; SMT siblings skipped), 256 SQ
 * entries, CQ 8x, batch 64, tick 1 ms, pinning on, no oversubscription,
 * mesh rings of 256 slots drained 256 at a time, unbounded calls, no
 * idle poll and no batch wait, the shard scheduler; for stealing mode an
 * event interval of 61 and a self-tuning global queue interval. Nothing
 * comes from the environment: a program that lets a variable choose (the
 * pinwheel command reads PW_SCHED) sets the field itself.
 * Context: any thread.
 */
PW_API void pw_config_init(struct pw_config *cfg);

/**
 * pw_config_check - say which field of @cfg pw_runtime_create() would
 * refuse, and why.
 * @cfg: the configuration; @msg: receives one line naming the field and
 * the reason, e.g. "shards: 0 is out of range 1..1024" or "cpus[2]: CPU
 * 17 is offline or outside this process's affinity mask" ("" when @cfg is
 * good); at most @len bytes, always terminated when @len > 0; @msg may be
 * NULL when @len is 0.
 *
 * Checks every field on its own (the check pw_runtime_create() makes
 * first), then the placement (@cfg->cpus, @cfg->placement or the
 * default) on a snapshot of the machine's topology, the way
 * pw_runtime_create() places its shards. Starts nothing.
 * Return: 0 when pw_runtime_create() would accept @cfg; else the first
 * error it would return for it: -EINVAL (a NULL @cfg, a field out of
 * range, a negative CPU, a malformed CPU or node list, a policy that
 * leaves no CPU, or both cpus and placement), -ENODEV (a CPU or node
 * that does not exist, is offline or is outside the affinity mask),
 * -E2BIG (more shards than CPUs without PW_CONFIG_OVERSUBSCRIBE),
 * -ENXIO (the topology cannot be read) or -ENOMEM.
 * Context: any thread; may sleep (reads sysfs).
 */
PW_API int pw_config_check(const struct pw_config *cfg, char *msg, size_t len);

/**
 * pw_runtime_create - start a runtime.
 * @rtp: receives the runtime.
 * @cfg: the configuration, or NULL for the defaults.
 *
 * Places the shards (hwloc topology: @cfg->cpus, @cfg->placement or one
 * per physical core), starts every shard thread, pins it, binds its memory
 * to its CPU's NUMA node (see pinwheel/numa.h) and sets up its io_uring
 * ring (SINGLE_ISSUER|DEFER_TASKRUN, or COOP_TASKRUN where the kernel
 * refuses DEFER_TASKRUN). Returns only once every shard runs, or none does.
 *
 * Return: 0; -EINVAL for a NULL @rtp, a field out of range, a negative
 * CPU, an empty or malformed CPU/node list, or both cpus and placement
 * (pw_config_check() names the field of this and the next two errors);
 * -ENODEV for a CPU that is offline, unknown or outside the affinity mask,
 * or an unknown node; -E2BIG for more shards than CPUs without
 * PW_CONFIG_OVERSUBSCRIBE; -ENXIO when the topology cannot be read
 * (hwloc); -ENOSYS or -EPERM when io_uring is unavailable (see
 * pw_strerror_setup()); -ENOMEM; or the -errno of a failed thread, pinning
 * or ring set-up.
 * Context: any thread that is not a shard.
 */
PW_API int pw_runtime_create(struct pw_runtime **rtp,
			     const struct pw_config *cfg);

/**
 * pw_block_on - run a task on shard 0 (stealing mode: on any worker,
 * through the inject queue) and wait for it.
 * @fn: the poll function; @state: its state, used in place (it lives on in
 * the caller while the task runs); @result: receives the task's result, or
 * NULL.
 *
 * Other tasks keep running on the shards after it returns. The counters
 * of the shard that ran the task (pw_runtime_stats()) are published before
 * the caller is released, so they count at least what the task left: the
 * tasks it spawned that still hold memory, its operations in flight.
 * Return: 0 with *@result set; -EINVAL for a bad @rt or NULL @fn;
 * -EDEADLK when called on a shard thread; -ESHUTDOWN if the runtime is
 * stopping; -ENOMEM. The task's own errors travel in *@result.
 * Context: any thread that is not a shard of @rt.
 */
PW_API int pw_block_on(struct pw_runtime *rt, pw_poll_fn fn, void *state,
		       int64_t *result);

/* pw_runtime_spawn() shard: wherever the scheduler likes. */
#define PW_SHARD_ANY 0xffffffffu

/**
 * pw_runtime_spawn - spawn a detached task on @shard from any thread.
 * @shard: a shard index, or PW_SHARD_ANY. Shard mode puts PW_SHARD_ANY
 * tasks on the shards in turn. Stealing mode queues a PW_SHARD_ANY task
 * on the inject queue, as Tokio's spawn from outside the runtime, and it
 * runs on any worker; a task given a shard runs on that worker only.
 * @state/@size/@drop: as pw_spawn(): @size bytes are copied (at most
 * PW_TASK_STATE_MAX), or @state is passed as is when @size is 0.
 *
 * In shard mode the task itself is made later, on its shard: if that
 * shard then has no memory for it (or is stopping), the task never runs,
 * @drop is called once on that shard, and a line on stderr says so.
 *
 * Return: 0; -EINVAL for a bad @rt, NULL @fn or bad size; -ENODEV for a
 * shard out of range; -ESHUTDOWN if the runtime is stopping; -ENOMEM.
 * Context: any thread.
 */
PW_API int pw_runtime_spawn(struct pw_runtime *rt, unsigned shard,
			    pw_poll_fn fn, const void *state, size_t size,
			    pw_drop_fn drop);

/*
 * A join handle for a task spawned from outside the runtime: a plain
 * thread (main, a blocking-pool job) awaits the task's result and output
 * through it. Opaque; made by pw_runtime_spawn_join(), freed by
 * pw_rjoin_wait() or pw_rjoin_detach() (exactly one of them, once), even
 * after pw_runtime_destroy().
 */
struct pw_rjoin;

/**
 * pw_runtime_spawn_join - pw_runtime_spawn() with a join handle.
 * @shard/@fn/@state/@size/@drop: as pw_runtime_spawn().
 * @out_size: bytes of output area for the task (pw_task_output(), as
 *            pw_spawn_out()), or 0.
 * @h: receives the handle (NULL on failure).
 *
 * Return: 0; -EINVAL for a bad @rt, NULL @fn or @h, or @out_size + @size
 * larger than PW_TASK_STATE_MAX; -ENODEV, -ESHUTDOWN, -ENOMEM as
 * pw_runtime_spawn(). On failure nothing is called back.
 * Context: any thread.
 */
PW_API int pw_runtime_spawn_join(struct pw_runtime *rt, unsigned shard,
				 pw_poll_fn fn, const void *state, size_t size,
				 pw_drop_fn drop, size_t out_size,
				 struct pw_rjoin **h);

/**
 * pw_rjoin_wait - block until the task of @h has ended, then free @h.
 * @result: receives the task's result, or -ECANCELED; may be NULL.
 * @out: receives the first @out_size bytes of its output when it
 *       completed, untouched otherwise; NULL with @out_size 0.
 *
 * Sleeps in the kernel (a futex), no spinning; returns once the task's
 * drop hook has run. Other tasks run on meanwhile. Under the paused clock
 * time does not move for this caller (only pw_block_on() lets it).
 * Return: 0 when the task completed; -ECANCELED (and @h freed) when it
 * was aborted, dropped by the runtime's shutdown or never made (shard
 * mode: no memory on its shard); -EINVAL for a NULL @h, @out_size larger
 * than the spawn's or a NULL @out with @out_size > 0, and -EDEADLK on a
 * shard thread: both leave @h as it was.
 * Context: any thread that is not a shard.
 */
PW_API int pw_rjoin_wait(struct pw_rjoin *h, int64_t *result, void *out,
			 size_t out_size);

/**
 * pw_rjoin_abort - request that the task of @h stop, as pw_join_abort():
 * at its next poll boundary the task's poll function is no longer called
 * and its drop hook runs; pw_rjoin_wait() then gives -ECANCELED. A task
 * that completed keeps its result. @h stays valid (wait or detach it).
 * Return: 0; -EINVAL for a NULL @h; -EALREADY when the task has ended.
 * Context: any thread, while the runtime exists or after the task ended.
 */
PW_API int pw_rjoin_abort(struct pw_rjoin *h);

/**
 * pw_rjoin_detach - free @h without waiting; the task runs on,
 * unobserved (its output is discarded). A NULL @h does nothing.
 * Context: any thread.
 */
PW_API void pw_rjoin_detach(struct pw_rjoin *h);

/**
 * pw_rjoin_is_finished - true once the task of @h has ended (a
 * pw_rjoin_wait() would not block).
 * Context: any thread.
 */
PW_API bool pw_rjoin_is_finished(const struct pw_rjoin *h);

/**
 * pw_runtime_destroy - stop every shard and free the runtime.
 *
 * A clean shutdown: each shard stops taking work, drops every task (their
 * drop hooks run and cancel in-flight operations), waits for every
 * operation's final completion, closes its ring and exits; the threads are
 * joined. No fd or memory is left behind. Wakers must not be used after.
 * Return: 0; -EINVAL for an unknown or already destroyed @rt; -EDEADLK
 * when called on one of its shards.
 * Context: any thread that is not a shard of @rt.
 */
PW_API int pw_runtime_destroy(struct pw_runtime *rt);

/**
 * pw_runtime_shards - number of shards of @rt, or -EINVAL.
 * Context: any thread.
 */
PW_API int pw_runtime_shards(struct pw_runtime *rt);

/**
 * pw_shard_id - index of the shard running the caller, or -EPERM when
 * the caller is not a shard thread. Context: any thread.
 */
PW_API int pw_shard_id(void);

/* Counters of one shard. Read with pw_runtime_stats(). */
struct pw_shard_stats {
	uint64_t spawned;	  /* tasks spawned on the shard */
	uint64_t polls;		  /* task polls */
	uint64_t local_wakes;	  /* wakes made on the shard */
	uint64_t remote_wakes;	  /* wakes received through the inbox */
	uint64_t inbox_msgs;	  /* inbox messages processed */
	uint64_t budget_yields;	  /* polls ended by the coop budget */
	uint64_t kernel_waits;	  /* blocking waits in io_uring */
	uint64_t wakeups_sent;	  /* eventfd writes that roused it */
	uint64_t sqes_submitted;  /* SQEs handed to the kernel */
	uint64_t cqes_reaped;	  /* CQEs processed */
	uint64_t slab_chunks;	  /* slab chunks allocated so far */
	uint64_t live_tasks;	  /* tasks whose memory is held */
	uint64_t timers_fired;	  /* timer wheel entries fired */
	uint64_t mesh_sent;	  /* messages published to other shards */
	uint64_t mesh_received;	  /* messages taken from incoming rings */
	uint64_t mesh_overflowed; /* messages that waited in overflow */
	uint64_t msg_rings;	  /* MSG_RING wake-ups sent */
	uint64_t inflight_ops;	  /* kernel operations in flight */
	uint64_t clock_reads;	  /* real-clock reads (at most one a turn) */
	bool defer_taskrun;	  /* ring uses DEFER_TASKRUN */
	bool batch_wait;	  /* kernel waits use batch_wait_ns */
	int cpu;		  /* CPU the shard is pinned to, or -1 */
};

/**
 * pw_runtime_stats - copy shard @shard's counters into @out.
 * Counters are updated by the shard and read without stopping it, so
 * they may lag by a few events (but never behind the end of a
 * pw_block_on() task, for its caller: see there).
 * Return: 0; -EINVAL for a bad @rt or NULL @out; -ENODEV for a bad shard.
 * Context: any thread.
 */
PW_API int pw_runtime_stats(struct pw_runtime *rt, unsigned shard,
			    struct pw_shard_stats *out);

/**
 * pw_strerror_setup - explain a pw_runtime_create() error to a person:
 * what is wrong and how to fix it (e.g. the io_uring_disabled sysctl).
 * A mistake in one field of the configuration gets a general sentence
 * here; pw_config_check() names the field.
 * Return: a static string. Context: any thread.
 */
PW_API const char *pw_strerror_setup(int err);

/** pw_version - the library version as "MAJOR.MINOR.PATCH". */
PW_API const char *pw_version(void);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_RUNTIME_H */
