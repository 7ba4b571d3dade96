/* SPDX-License-Identifier: MIT */
/*
 * bench_sched.c - spawn + run throughput under both schedulers, and the
 * skewed workload, matching bench/peers/tokio's spawn_mt_throughput and
 * skewed_mt scenarios task for task.
 *
 * One task spawns N tasks, each running K iterations of arithmetic the
 * compiler cannot fold, keeps their join handles and awaits them in
 * order; the time per task is reported. Every task is spawned on one
 * worker: in shard mode they all run there, in stealing mode idle workers
 * steal them. In the skewed workload (K > 0) the "w0_share" counter is
 * the fraction of tasks that ran on worker 0; empty tasks (K = 0) count
 * nothing, as in the peer, whose spawn_mt_throughput counts nothing.
 *
 *   PW_BENCH_WORKERS   workers (default 2); PW_BENCH_CPUS is not used:
 *                      the runtime's default placement pins them.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "bench/bench.h"
#include "pinwheel.h"

#define BATCH	   100000u
#define MAX_WORKER 64

static _Alignas(128) _Atomic uint64_t ran_on[MAX_WORKER][16];

static uint64_t spin_work(uint64_t k)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (uint64_t i = 0; i < k; i++) {
		x = x * 6364136223846793005ull + i;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

struct work {
	uint64_t k;
};

static enum pw_poll work_poll(struct pw_cx *cx, void *state)
{
	struct work *w = state;

	/* Only the skewed workload counts where its tasks run, as the peer
	 * does: the count would otherwise be most of an empty task's cost. */
	if (w->k) {
		/* relaxed: a per-worker tally read after the batch. */
		atomic_fetch_add_explicit(&ran_on[pw_shard_id()][0], 1,
					  memory_order_relaxed);
	}
	return pw_ready(cx, (int64_t)spin_work(w->k));
}

struct many {
	uint64_t n, k, i;
	int phase;
	struct pw_join *j;
};

static enum pw_poll many_poll(struct pw_cx *cx, void *state)
{
	struct many *m = state;
	int64_t r;

	if (m->phase == 0) {
		struct work w = { m->k };
		for (uint64_t i = 0; i < m->n; i++)
			if (pw_spawn(&m->j[i], work_poll, &w, sizeof(w), NULL))
				return pw_ready(cx, -1);
		m->phase = 1;
	}
	for (; m->i < m->n; m->i++)
		if (pw_join_poll(cx, &m->j[m->i], &r) == PW_PENDING)
			return PW_PENDING;
	return pw_ready(cx, 0);
}

/* The spawner itself runs as a spawned task, as in the peer. */
struct outer {
	struct many m;
	struct pw_join j;
	int phase;
};

static enum pw_poll outer_poll(struct pw_cx *cx, void *state)
{
	struct outer *o = state;
	int64_t r;

	if (o->phase == 0) {
		if (pw_spawn(&o->j, many_poll, &o->m, 0, NULL))
			return pw_ready(cx, -1);
		o->phase = 1;
	}
	if (pw_join_poll(cx, &o->j, &r) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, r);
}

static void run(struct pw_bench *b, enum pw_sched sched, uint64_t k)
{
	struct pw_config cfg;
	struct pw_runtime *rt;
	const char *env = getenv("PW_BENCH_WORKERS");
	unsigned workers = env ? (unsigned)atoi(env) : 2;

	pw_config_init(&cfg);
	cfg.shards = workers ? workers : 2;
	cfg.sched = sched;
	cfg.flags |= PW_CONFIG_OVERSUBSCRIBE;
	if (pw_runtime_create(&rt, &cfg)) {
		pw_bench_skip(b, "runtime did not start");
		return;
	}
	struct outer o = { .m = { .n = BATCH, .k = k } };
	o.m.j = calloc(BATCH, sizeof(*o.m.j));
	uint64_t total = 0, on0 = 0;
	int64_t res;
	/* Warm-up: fault in the slab and queues. */
	pw_block_on(rt, outer_poll, &o, &res);
	for (unsigned i = 0; i < cfg.shards && i < MAX_WORKER; i++)
		atomic_store(&ran_on[i][0], 0);
	while (pw_bench_run(b, BATCH)) {
		o.phase = 0;
		o.m.i = 0;
		o.m.phase = 0;
		pw_block_on(rt, outer_poll, &o, &res);
		total += BATCH;
	}
	on0 = atomic_load(&ran_on[0][0]);
	if (k)
		pw_bench_counter(b, "w0_share",
				 total ? (double)on0 / (double)total : 0,
				 false);
	pw_bench_items(b, (int64_t)total);
	pw_runtime_destroy(rt);
	free(o.m.j);
}

/* Argument: K, iterations of work per task (0: spawn + run only; 2000:
 * the skewed workload). */
static const int64_t work_args[] = { 0, 2000 };

static void bm_spawn_run_shard(struct pw_bench *b)
{
	run(b, PW_SCHED_SHARD, (uint64_t)pw_bench_arg(b));
}
PW_BENCH_ARGS(bm_spawn_run_shard, work_args);

static void bm_spawn_run_steal(struct pw_bench *b)
{
	run(b, PW_SCHED_STEAL, (uint64_t)pw_bench_arg(b));
}
PW_BENCH_ARGS(bm_spawn_run_steal, work_args);
