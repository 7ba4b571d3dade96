/* SPDX-License-Identifier: MIT */
/*
 * metrics.c - snapshots of a runtime's metrics under Tokio's names, and
 * their JSON and Prometheus writers (docs/metrics.md).
 *
 * Nothing here writes to the runtime: a snapshot is a set of relaxed
 * loads of counters the shards publish (struct pw__stats, and struct
 * pw__wstats in stealing mode), the live queue depths (the inject queue's
 * length and each local queue's tail minus its real head), and the
 * blocking pool's counters under its lock. The handle is validated and
 * held with the runtime registry (pw__rt_enter) for the whole read, so a
 * concurrent pw_runtime_destroy() waits for it.
 *
 * Both writers walk one table per record (runtime, worker), so a metric
 * is named once for JSON and Prometheus alike.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/fault.h"
#include "core/flush.h"
#include "pinwheel/metrics.h"
#include "pinwheel/numa.h"
#include "shard/shard_int.h"
#include "shard/steal.h"

/* relaxed: counters published by their shard with relaxed stores; a
 * snapshot needs no order between them. */
#define SLOAD(s, f) atomic_load_explicit(&(s)->stats.f, memory_order_relaxed)
/* relaxed: stealing-mode worker counters, published by pub_stats(). */
#define WLOAD(s, f) atomic_load_explicit(&(s)->w->st.f, memory_order_relaxed)

static void read_worker(struct pw_runtime *rt, unsigned i,
			struct pw_metrics_worker *w)
{
	struct pw__shard *s = rt->shards[i];
	struct pw_arena_stats a;

	memset(w, 0, sizeof(*w));
	w->spawned = SLOAD(s, spawned);
	w->budget_forced_yields = SLOAD(s, budget_yields);
	w->mesh_sent = SLOAD(s, mesh_sent);
	w->mesh_received = SLOAD(s, mesh_received);
	w->mesh_overflowed = SLOAD(s, mesh_overflowed);
	w->timers_fired = SLOAD(s, timers_fired);
	w->sqes_submitted = SLOAD(s, sqes_submitted);
	w->cqes_reaped = SLOAD(s, cqes_reaped);
	w->kernel_waits = SLOAD(s, kernel_waits);
	w->inflight_ops = SLOAD(s, inflight_ops);
	w->cpu = (rt->cfg.flags & PW_CONFIG_NO_PIN) ? -1 : s->cpu;
	if (rt->steal && s->w) {
		w->poll_count = WLOAD(s, polls);
		w->steal_count = WLOAD(s, steal_count);
		w->steal_operations = WLOAD(s, steal_operations);
		w->overflow_count = WLOAD(s, overflow_count);
		w->park_count = WLOAD(s, park_count);
		w->park_unpark_count = WLOAD(s, park_unpark_count);
		w->noop_count = WLOAD(s, noop_count);
		w->local_schedule_count = WLOAD(s, local_schedule_count);
		w->total_busy_ns = WLOAD(s, busy_ns);
		w->mean_poll_ns = WLOAD(s, mean_poll_ns);
		w->forwarded = WLOAD(s, forwarded);
		/* Head and tail are read one after the other while the
		 * owner runs: never more than the queue holds. */
		uint64_t d = pw__steal_local_len(s);
		w->local_queue_depth = d > PW__LQ_CAP ? PW__LQ_CAP : d;
	} else {
		/* Shard mode: a shard parks by waiting in the kernel. */
		w->poll_count = SLOAD(s, polls);
		w->local_schedule_count = SLOAD(s, local_wakes);
		w->park_count = w->kernel_waits;
		w->park_unpark_count = 2 * w->kernel_waits;
		w->total_busy_ns = SLOAD(s, busy_ns);
	}
	if (pw_runtime_arena_stats(rt, i, &a) == 0 && a.arena >= 0) {
		w->has_arena = true;
		w->arena_bytes = a.allocated;
	}
}

/* Runtime-wide values; @rt is held by the caller. */
static void read_runtime(struct pw_runtime *rt, struct pw_metrics *m)
{
	struct pw_blocking_stats b;
	uint64_t spawned = 0, finished = 0, remote = 0, yields = 0;

	memset(m, 0, sizeof(*m));
	m->sched = rt->steal ? PW_SCHED_STEAL : PW_SCHED_SHARD;
	m->num_workers = rt->nshards;
	/* Finished first: a task's spawn is counted before its finish, so
	 * this order rarely sees more finished than spawned. */
	for (unsigned i = 0; i < rt->nshards; i++)
		finished += SLOAD(rt->shards[i], finished);
	for (unsigned i = 0; i < rt->nshards; i++) {
		struct pw__shard *s = rt->shards[i];
		spawned += SLOAD(s, spawned);
		remote += SLOAD(s, remote_wakes);
		yields += SLOAD(s, budget_yields);
	}
	if (rt->steal) {
		struct pw__steal *g = rt->steal;
		/* relaxed: counters and a live depth (see queue.h). */
		spawned +=
			atomic_load_explicit(&g->spawned, memory_order_relaxed);
		remote = atomic_load_explicit(&g->remote_schedules,
					      memory_order_relaxed);
		m->global_queue_depth = pw__inject_len(&g->inj);
	}
	m->spawned_tasks_count = spawned;
	m->num_alive_tasks = spawned > finished ? spawned - finished : 0;
	m->remote_schedule_count = remote;
	m->budget_forced_yield_count = yields;
	pw__pool_read(&rt->pool, &b);
	m->num_blocking_threads = b.num_blocking_threads;
	m->num_idle_blocking_threads = b.num_idle_blocking_threads;
	m->blocking_queue_depth = b.blocking_queue_depth;
}

int pw_metrics_read(struct pw_runtime *rt, struct pw_metrics *out)
{
	struct pw_metrics_worker *w;

	if (!out)
		return -EINVAL;
	if (!pw__rt_enter(rt))
		return -EINVAL;
	w = pw__fault_calloc(PW__FAULT_METRICS, rt->nshards, sizeof(*w));
	if (!w) {
		pw__rt_leave(rt);
		memset(out, 0, sizeof(*out));
		return -ENOMEM;
	}
	read_runtime(rt, out);
	for (unsigned i = 0; i < rt->nshards; i++)
		read_worker(rt, i, &w[i]);
	out->workers = w;
	pw__rt_leave(rt);
	return 0;
}

void pw_metrics_free(struct pw_metrics *m)
{
	if (!m)
		return;
	free(m->workers);
	memset(m, 0, sizeof(*m));
}

int pw_metrics_num_workers(struct pw_runtime *rt)
{
	return pw_runtime_shards(rt);
}

int64_t pw_metrics_num_alive_tasks(struct pw_runtime *rt)
{
	struct pw_metrics m;

	if (!pw__rt_enter(rt))
		return -EINVAL;
	read_runtime(rt, &m);
	pw__rt_leave(rt);
	return (int64_t)m.num_alive_tasks;
}

int64_t pw_metrics_global_queue_depth(struct pw_runtime *rt)
{
	int64_t d = 0;

	if (!pw__rt_enter(rt))
		return -EINVAL;
	if (rt->steal)
		/* relaxed: a live depth (see queue.h). */
		d = (int64_t)pw__inject_len(&rt->steal->inj);
	pw__rt_leave(rt);
	return d;
}

int64_t pw_metrics_worker_local_queue_depth(struct pw_runtime *rt,
					    unsigned worker)
{
	int64_t d = 0;

	if (!pw__rt_enter(rt))
		return -EINVAL;
	if (worker >= rt->nshards) {
		pw__rt_leave(rt);
		return -ENODEV;
	}
	struct pw__shard *s = rt->shards[worker];
	if (rt->steal && s->w) {
		uint64_t v = pw__steal_local_len(s);
		d = (int64_t)(v > PW__LQ_CAP ? PW__LQ_CAP : v);
	}
	pw__rt_leave(rt);
	return d;
}

int pw_metrics_worker(struct pw_runtime *rt, unsigned worker,
		      struct pw_metrics_worker *out)
{
	if (!out)
		return -EINVAL;
	if (!pw__rt_enter(rt))
		return -EINVAL;
	if (worker >= rt->nshards) {
		pw__rt_leave(rt);
		return -ENODEV;
	}
	read_worker(rt, worker, out);
	pw__rt_leave(rt);
	return 0;
}

/* ---- writers ------------------------------------------------------------ */

enum kind {
	COUNTER,    /* monotonic count */
	GAUGE,	    /* a value that goes up and down */
	COUNTER_NS, /* monotonic duration in ns: seconds in Prometheus */
	GAUGE_NS,   /* duration in ns: seconds in Prometheus */
};

/* One metric: its Tokio-style name (pinwheel's own where Tokio has
 * none), where it sits in the record, and one line of help. */
struct desc {
	const char *name;
	size_t off;
	enum kind kind;
	const char *help;
};

#define RT(f, n, k, h)                                  \
	{                                               \
		n, offsetof(struct pw_metrics, f), k, h \
	}
#define WK(f, n, k, h)                                         \
	{                                                      \
		n, offsetof(struct pw_metrics_worker, f), k, h \
	}

static const struct desc rt_descs[] = {
	RT(num_alive_tasks, "num_alive_tasks", GAUGE,
	   "Tasks spawned and not yet finished."),
	RT(global_queue_depth, "global_queue_depth", GAUGE,
	   "Tasks in the global (inject) queue; 0 in shard mode."),
	RT(spawned_tasks_count, "spawned_tasks_count", COUNTER,
	   "Tasks spawned since the runtime started."),
	RT(remote_schedule_count, "remote_schedule_count", COUNTER,
	   "Tasks scheduled from outside a worker (shard mode: wakes "
	   "from another shard or thread)."),
	RT(budget_forced_yield_count, "budget_forced_yield_count", COUNTER,
	   "Polls ended by the cooperative budget."),
	RT(num_blocking_threads, "num_blocking_threads", GAUGE,
	   "Threads of the blocking pool."),
	RT(num_idle_blocking_threads, "num_idle_blocking_threads", GAUGE,
	   "Blocking pool threads waiting for work."),
	RT(blocking_queue_depth, "blocking_queue_depth", GAUGE,
	   "Blocking jobs queued and not started."),
};

static const struct desc wk_descs[] = {
	WK(poll_count, "worker_poll_count", COUNTER, "Tasks polled."),
	WK(steal_count, "worker_steal_count", COUNTER,
	   "Tasks stolen from other workers; 0 in shard mode."),
	WK(steal_operations, "worker_steal_operations", COUNTER,
	   "Steal operations that took tasks; 0 in shard mode."),
	WK(overflow_count, "worker_overflow_count", COUNTER,
	   "Local queue overflows into the global queue; 0 in shard mode."),
	WK(park_count, "worker_park_count", COUNTER,
	   "Times the worker parked (shard mode: kernel waits)."),
	WK(park_unpark_count, "worker_park_unpark_count", COUNTER,
	   "Parks plus unparks (shard mode: twice the kernel waits)."),
	WK(noop_count, "worker_noop_count", COUNTER,
	   "Unparks that polled no task; 0 in shard mode."),
	WK(local_schedule_count, "worker_local_schedule_count", COUNTER,
	   "Tasks scheduled from the worker itself (shard mode: local "
	   "wakes)."),
	WK(total_busy_ns, "worker_total_busy_duration", COUNTER_NS,
	   "Time the worker was not parked (shard mode: not waiting in "
	   "the kernel)."),
	WK(mean_poll_ns, "worker_mean_poll_time", GAUGE_NS,
	   "Mean poll time, exponentially weighted; 0 in shard mode."),
	WK(local_queue_depth, "worker_local_queue_depth", GAUGE,
	   "Tasks in the local queue, LIFO slot excluded; 0 in shard mode."),
	WK(spawned, "worker_spawned_tasks_count", COUNTER,
	   "Tasks spawned on the worker."),
	WK(budget_forced_yields, "worker_budget_forced_yield_count", COUNTER,
	   "Polls on the worker ended by the cooperative budget."),
	WK(forwarded, "worker_forwarded_count", COUNTER,
	   "Tasks handed to the worker their operations bind them to."),
	WK(mesh_sent, "worker_mesh_sent_count", COUNTER,
	   "Messages sent to other shards."),
	WK(mesh_received, "worker_mesh_received_count", COUNTER,
	   "Messages received from other shards."),
	WK(mesh_overflowed, "worker_mesh_overflowed_count", COUNTER,
	   "Messages that waited in a mesh overflow list."),
	WK(timers_fired, "worker_timers_fired_count", COUNTER,
	   "Timer wheel entries fired."),
	WK(sqes_submitted, "worker_sqes_submitted_count", COUNTER,
	   "io_uring submission entries handed to the kernel."),
	WK(cqes_reaped, "worker_cqes_reaped_count", COUNTER,
	   "io_uring completion entries processed."),
	WK(kernel_waits, "worker_kernel_wait_count", COUNTER,
	   "Blocking waits in io_uring."),
	WK(inflight_ops, "worker_inflight_ops", GAUGE,
	   "Kernel operations in flight."),
};

static uint64_t field(const void *rec, const struct desc *d)
{
	uint64_t v;

	memcpy(&v, (const char *)rec + d->off, sizeof(v));
	return v;
}

static const char *json_key(const struct desc *d, char *buf, size_t n)
{
	if (d->kind == COUNTER_NS || d->kind == GAUGE_NS) {
		snprintf(buf, n, "%s_ns", d->name);
		return buf;
	}
	return d->name;
}

int pw_metrics_write_json(const struct pw_metrics *m, FILE *f)
{
	char key[96];

	if (!m || !f || !m->workers || !m->num_workers)
		return -EINVAL;
	fprintf(f, "{\"sched\":\"%s\",\"num_workers\":%u",
		m->sched == PW_SCHED_STEAL ? "steal" : "shard", m->num_workers);
	for (size_t i = 0; i < sizeof(rt_descs) / sizeof(rt_descs[0]); i++)
		fprintf(f, ",\"%s\":%" PRIu64,
			json_key(&rt_descs[i], key, sizeof(key)),
			field(m, &rt_descs[i]));
	fputs(",\"workers\":[", f);
	for (unsigned w = 0; w < m->num_workers; w++) {
		const struct pw_metrics_worker *r = &m->workers[w];
		fprintf(f, "%s{\"worker\":%u,\"cpu\":%d", w ? "," : "", w,
			r->cpu);
		for (size_t i = 0; i < sizeof(wk_descs) / sizeof(wk_descs[0]);
		     i++)
			fprintf(f, ",\"%s\":%" PRIu64,
				json_key(&wk_descs[i], key, sizeof(key)),
				field(r, &wk_descs[i]));
		if (r->has_arena)
			fprintf(f, ",\"arena_bytes\":%" PRIu64 "}",
				r->arena_bytes);
		else
			fputs(",\"arena_bytes\":null}", f);
	}
	fputs("]}\n", f);
	return pw__flushed(f);
}

/* The Prometheus name of @d: prefix, seconds for durations, _total for
 * counters. */
static const char *prom_name(const struct desc *d, char *buf, size_t n)
{
	const char *unit =
		d->kind == COUNTER_NS || d->kind == GAUGE_NS ? "_seconds" : "";
	const char *total =
		d->kind == COUNTER || d->kind == COUNTER_NS ? "_total" : "";

	snprintf(buf, n, "pinwheel_%s%s%s", d->name, unit, total);
	return buf;
}

static void prom_head(FILE *f, const char *name, const char *help, enum kind k)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
		k == COUNTER || k == COUNTER_NS ? "counter" : "gauge");
}

static void prom_value(FILE *f, const struct desc *d, uint64_t v)
{
	if (d->kind == COUNTER_NS || d->kind == GAUGE_NS)
		fprintf(f, "%" PRIu64 ".%09" PRIu64 "\n", v / 1000000000u,
			v % 1000000000u);
	else
		fprintf(f, "%" PRIu64 "\n", v);
}

int pw_metrics_write_prometheus(const struct pw_metrics *m, FILE *f)
{
	char name[128];
	bool arena = false;

	if (!m || !f || !m->workers || !m->num_workers)
		return -EINVAL;
	prom_head(f, "pinwheel_info", "The scheduler mode (label sched).",
		  GAUGE);
	fprintf(f, "pinwheel_info{sched=\"%s\"} 1\n",
		m->sched == PW_SCHED_STEAL ? "steal" : "shard");
	prom_head(f, "pinwheel_num_workers", "Worker threads (shards).", GAUGE);
	fprintf(f, "pinwheel_num_workers %u\n", m->num_workers);
	for (size_t i = 0; i < sizeof(rt_descs) / sizeof(rt_descs[0]); i++) {
		const struct desc *d = &rt_descs[i];
		prom_name(d, name, sizeof(name));
		prom_head(f, name, d->help, d->kind);
		fprintf(f, "%s ", name);
		prom_value(f, d, field(m, d));
	}
	for (size_t i = 0; i < sizeof(wk_descs) / sizeof(wk_descs[0]); i++) {
		const struct desc *d = &wk_descs[i];
		prom_name(d, name, sizeof(name));
		prom_head(f, name, d->help, d->kind);
		for (unsigned w = 0; w < m->num_workers; w++) {
			fprintf(f, "%s{worker=\"%u\"} ", name, w);
			prom_value(f, d, field(&m->workers[w], d));
		}
	}
	for (unsigned w = 0; w < m->num_workers; w++)
		arena = arena || m->workers[w].has_arena;
	if (arena) {
		prom_head(f, "pinwheel_worker_arena_bytes",
			  "Bytes allocated from the worker's jemalloc arena.",
			  GAUGE);
		for (unsigned w = 0; w < m->num_workers; w++)
			if (m->workers[w].has_arena)
				fprintf(f,
					"pinwheel_worker_arena_bytes"
					"{worker=\"%u\"} %" PRIu64 "\n",
					w, m->workers[w].arena_bytes);
	}
	return pw__flushed(f);
}
