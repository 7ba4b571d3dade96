/* SPDX-License-Identifier: MIT */
/*
 * bench_fiber.c - the cost of fibers (pinwheel/fiber.h) on one shard:
 *
 *   - bm_fiber_spawn_join: spawn a fiber that returns at once and await
 *     it through its join handle, from a poll task (what Tokio's
 *     `spawn(async {}).await` measures, and bench_task.c's
 *     bm_spawn_join for a poll task): the stack comes from the pool;
 *   - bm_fiber_yield: one pw_fiber_yield(), i.e. suspend, a trip
 *     through the run queue, and resume;
 *   - bm_fiber_100k: 100,000 fibers alive at once on one shard, each
 *     sleeping 1 ms then returning; reports how many finished, the
 *     process's peak RSS (getrusage) and its growth per finished fiber,
 *     beside the time per fiber. Without guard regions (Linux before
 *     6.13) each stack takes two map entries, so vm.max_map_count
 *     (65530 by default) caps the fibers that hold a stack at once near
 *     32,000; the others end with -ENOMEM and "finished" says so.
 *
 * As in bench_task.c, the bodies run in a task spawned by the
 * pw_block_on() task, on the shard thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "bench/bench.h"
#include "pinwheel.h"

#define BATCH 256

static int64_t empty_fiber(void *arg)
{
	(void)arg;
	return 0;
}

/* Run @fn(@state) as a task on a fresh runtime; skip @b if it fails. */
static void run_in_task(struct pw_bench *b, pw_poll_fn fn, void *state)
{
	struct pw_runtime *rt = pw_bench_runtime(b);
	if (!rt)
		return;
	if (pw_bench_run_in_task(rt, fn, state))
		pw_bench_skip(b, "the task failed");
	pw_runtime_destroy(rt);
}

/* ---- spawn + run + complete + join ------------------------------------ */

struct spawn_join {
	struct pw_bench *b;
	int left;
	struct pw_join j;
};

static enum pw_poll spawn_join_poll(struct pw_cx *cx, void *state)
{
	struct spawn_join *r = state;
	int64_t v;

	for (;;) {
		if (r->j.task) {
			if (pw_join_poll(cx, &r->j, &v) == PW_PENDING)
				return PW_PENDING;
			if (v)
				return pw_ready(cx, v);
		}
		if (r->left == 0) {
			if (!pw_bench_run(r->b, BATCH))
				return pw_ready(cx, 0);
			r->left = BATCH;
		}
		r->left--;
		if (pw_fiber_spawn(&r->j, empty_fiber, NULL, NULL))
			return pw_ready(cx, -ENOMEM);
	}
}

static void bm_fiber_spawn_join(struct pw_bench *b)
{
	struct spawn_join r = { .b = b };

	run_in_task(b, spawn_join_poll, &r);
}
PW_BENCH(bm_fiber_spawn_join);

/* ---- yield ---------------------------------------------------------------- */

static int64_t yield_fiber(void *arg)
{
	struct pw_bench *b = arg;

	while (pw_bench_run(b, BATCH))
		for (int i = 0; i < BATCH; i++)
			if (pw_fiber_yield())
				return -1;
	return 0;
}

struct fiber_root {
	pw_fiber_fn fn;
	void *arg;
	struct pw_join j;
	bool spawned;
};

static enum pw_poll fiber_root_poll(struct pw_cx *cx, void *state)
{
	struct fiber_root *r = state;
	int64_t v;

	if (!r->spawned) {
		r->spawned = true;
		if (pw_fiber_spawn(&r->j, r->fn, r->arg, NULL))
			return pw_ready(cx, -ENOMEM);
	}
	if (pw_join_poll(cx, &r->j, &v) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, v);
}

static void bm_fiber_yield(struct pw_bench *b)
{
	struct fiber_root r = { .fn = yield_fiber, .arg = b };

	run_in_task(b, fiber_root_poll, &r);
}
PW_BENCH(bm_fiber_yield);

/* ---- 100,000 fibers at once --------------------------------------------- */

#define MANY 100000

static int64_t sleeper(void *arg)
{
	(void)arg;
	return pw_fiber_sleep(PW_NSEC_PER_MSEC);
}

/* Spawn MANY fibers in one go (all alive together), join them all;
 * the number that finished without error. */
static int64_t many_main(void *arg)
{
	struct pw_join *j = malloc(MANY * sizeof(*j));
	int64_t ok = 0;

	(void)arg;
	if (!j)
		return -ENOMEM;
	for (int i = 0; i < MANY; i++)
		if (pw_fiber_spawn(&j[i], sleeper, NULL, NULL))
			j[i].task = NULL;
	for (int i = 0; i < MANY; i++)
		if (j[i].task && pw_fiber_join(&j[i]) == 0)
			ok++;
	free(j);
	return ok;
}

static void bm_fiber_100k(struct pw_bench *b)
{
	struct pw_runtime *rt = pw_bench_runtime(b);
	struct rusage ru;
	int64_t ok = 0;

	if (!rt)
		return;
	getrusage(RUSAGE_SELF, &ru);
	double base = (double)ru.ru_maxrss;
	while (pw_bench_run(b, MANY))
		if (pw_fiber_block_on(rt, many_main, NULL, &ok) || ok < 0)
			break;
	pw_runtime_destroy(rt);
	getrusage(RUSAGE_SELF, &ru);
	pw_bench_counter(b, "finished", (double)ok, false);
	pw_bench_counter(b, "maxrss_MiB", (double)ru.ru_maxrss / 1024.0, false);
	if (ok > 0)
		pw_bench_counter(b, "KiB_per_fiber",
				 ((double)ru.ru_maxrss - base) / (double)ok,
				 false);
}
PW_BENCH(bm_fiber_100k);
