/* SPDX-License-Identifier: MIT */
/*
 * bench_task.c - the task model on one shard: spawn + run + complete of an
 * empty task (detached, and awaited through a join handle, which is what
 * Tokio's `spawn(async {}).await` measures), and a local wake-to-poll.
 *
 * The benchmark body runs inside an ordinary task on the shard, spawned
 * by the pw_block_on() task and awaited there (as the Tokio peer's
 * --in-task runs its loop inside tokio::spawn), so every operation
 * measured happens on the shard thread, loop overhead included, and no
 * poll of the body goes through pw_block_on()'s wrapper.
 */
#include <errno.h>
#include <stdlib.h>

#include "bench/bench.h"
#include "pinwheel.h"

#define BATCH 256

struct pw_runtime *pw_bench_runtime(struct pw_bench *b)
{
	struct pw_runtime *rt;
	struct pw_config cfg;

	pw_config_init(&cfg);
	/* PW_BENCH_CPU picks the shard's CPU (default: the first allowed). */
	static int cpu;
	const char *env = getenv("PW_BENCH_CPU");
	if (env) {
		cpu = atoi(env);
		cfg.cpus = &cpu;
	}
	int err = pw_runtime_create(&rt, &cfg);
	if (err) {
		pw_bench_skip(b, pw_strerror_setup(err));
		return NULL;
	}
	return rt;
}

static enum pw_poll empty_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	return pw_ready(cx, 0);
}

/* The pw_block_on() task: spawn the body, await it. */
struct in_task {
	pw_poll_fn fn;
	void *state;
	struct pw_join j;
	bool spawned;
};

static enum pw_poll in_task_poll(struct pw_cx *cx, void *state)
{
	struct in_task *it = state;
	int64_t v;

	if (!it->spawned) {
		it->spawned = true;
		if (pw_spawn(&it->j, it->fn, it->state, 0, NULL))
			return pw_ready(cx, -ENOMEM);
	}
	if (pw_join_poll(cx, &it->j, &v) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, v);
}

int64_t pw_bench_run_in_task(struct pw_runtime *rt, pw_poll_fn fn, void *state)
{
	struct in_task it = { .fn = fn, .state = state };
	int64_t res;

	if (pw_block_on(rt, in_task_poll, &it, &res))
		return -EIO;
	return res;
}

/* Spawn BATCH detached empty tasks, yield so they run, repeat. */
static enum pw_poll spawn_detached_root(struct pw_cx *cx, void *state)
{
	struct pw_bench *b = state;

	if (!pw_bench_run(b, BATCH))
		return pw_ready(cx, 0);
	for (int i = 0; i < BATCH; i++)
		if (pw_spawn(NULL, empty_poll, NULL, 0, NULL))
			return pw_ready(cx, -ENOMEM);
	return pw_yield(cx);
}

static void bm_spawn_detached(struct pw_bench *b)
{
	struct pw_runtime *rt = pw_bench_runtime(b);
	if (!rt)
		return;
	int64_t res = pw_bench_run_in_task(rt, spawn_detached_root, b);
	pw_runtime_destroy(rt);
	if (res)
		pw_bench_skip(b, "spawn failed");
}
PW_BENCH(bm_spawn_detached);

/* Spawn one empty task and await it through its join handle. */
struct join_root {
	struct pw_bench *b;
	int left;
	struct pw_join j;
};

static enum pw_poll spawn_join_root(struct pw_cx *cx, void *state)
{
	struct join_root *r = state;
	int64_t v;

	for (;;) {
		if (r->j.task) {
			if (pw_join_poll(cx, &r->j, &v) == PW_PENDING)
				return PW_PENDING;
		}
		if (r->left == 0) {
			if (!pw_bench_run(r->b, BATCH))
				return pw_ready(cx, 0);
			r->left = BATCH;
		}
		r->left--;
		if (pw_spawn(&r->j, empty_poll, NULL, 0, NULL))
			return pw_ready(cx, -ENOMEM);
	}
}

static void bm_spawn_join(struct pw_bench *b)
{
	struct pw_runtime *rt = pw_bench_runtime(b);
	if (!rt)
		return;
	struct join_root r = { .b = b };
	int64_t res = pw_bench_run_in_task(rt, spawn_join_root, &r);
	pw_runtime_destroy(rt);
	if (res)
		pw_bench_skip(b, "spawn failed");
}
PW_BENCH(bm_spawn_join);

/*
 * Wake-to-poll: two tasks wake each other in turn. Each operation is one
 * local wake of a parked task plus the poll it causes.
 */
struct pingpong {
	struct pw_bench *b;
	struct pw_waker peer[2]; /* peer[i]: the waker of task i */
	int left;
	bool done;
};

struct player {
	struct pingpong *pp;
	int me;
};

static enum pw_poll player_poll(struct pw_cx *cx, void *state)
{
	struct player *p = state;
	struct pingpong *pp = p->pp;

	if (!pp->peer[p->me].task) {
		struct pw_waker w = pw_cx_waker(cx);
		pw_waker_clone(&pp->peer[p->me], &w);
	}
	if (p->me == 0) {
		if (pp->left == 0) {
			if (!pw_bench_run(pp->b, BATCH)) {
				pp->done = true;
				pw_waker_wake_by_ref(&pp->peer[1]);
				return pw_ready(cx, 0);
			}
			pp->left = BATCH;
		}
		pp->left -= 2;
	} else if (pp->done) {
		return pw_ready(cx, 0);
	}
	if (pp->peer[!p->me].task)
		pw_waker_wake_by_ref(&pp->peer[!p->me]);
	return PW_PENDING;
}

struct pp_root {
	struct pingpong pp;
	struct player pl[2];
	struct pw_join j[2];
	int step;
};

static enum pw_poll pp_root_poll(struct pw_cx *cx, void *state)
{
	struct pp_root *r = state;
	int64_t v;

	if (r->step == 0) {
		for (int i = 0; i < 2; i++) {
			r->pl[i] = (struct player){ &r->pp, i };
			pw_spawn(&r->j[i], player_poll, &r->pl[i],
				 sizeof(r->pl[i]), NULL);
		}
		r->step = 1;
	}
	for (; r->step <= 2; r->step++)
		if (pw_join_poll(cx, &r->j[r->step - 1], &v) == PW_PENDING)
			return PW_PENDING;
	pw_waker_drop(&r->pp.peer[0]);
	pw_waker_drop(&r->pp.peer[1]);
	return pw_ready(cx, 0);
}

static void bm_wake_to_poll(struct pw_bench *b)
{
	struct pw_runtime *rt = pw_bench_runtime(b);
	if (!rt)
		return;
	static struct pp_root r;
	r = (struct pp_root){ .pp = { .b = b } };
	int64_t res;
	pw_block_on(rt, pp_root_poll, &r, &res);
	pw_runtime_destroy(rt);
}
PW_BENCH(bm_wake_to_poll);
