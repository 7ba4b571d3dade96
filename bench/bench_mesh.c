/* SPDX-License-Identifier: MIT */
/*
 * bench_mesh.c - pw_call round trips between two shards pinned to two
 * CPUs: to a target that is busy running tasks (it drains its rings every
 * turn: no system call on either side) and to a target asleep in the
 * kernel (each call rouses it with one MSG_RING, and the reply rouses the
 * caller the same way).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "bench/bench.h"
#include "pinwheel.h"

#define BATCH 64

static enum pw_poll answer_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	return pw_ready(cx, 1);
}

static _Atomic bool spinning;

/* Keeps the target shard busy: yields until told to stop. */
static enum pw_poll spinner_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	/* relaxed: a stop flag; the spinner only needs to see it at last. */
	return atomic_load_explicit(&spinning, memory_order_relaxed) ?
		       pw_yield(cx) :
		       pw_ready(cx, 0);
}

struct caller {
	struct pw_bench *b;
	int left;
	bool sent;
	struct pw_call call;
};

static enum pw_poll caller_poll(struct pw_cx *cx, void *state)
{
	struct caller *c = state;
	int64_t v;

	for (;;) {
		if (c->sent) {
			if (pw_call_poll(cx, &c->call, &v) == PW_PENDING)
				return PW_PENDING;
			c->sent = false;
		}
		if (c->left == 0) {
			if (!pw_bench_run(c->b, BATCH))
				return pw_ready(cx, 0);
			c->left = BATCH;
		}
		c->left--;
		pw_call_init(&c->call, 1, answer_poll, NULL, 0, NULL);
		c->sent = true;
	}
}

void pw_bench_call_roundtrips(struct pw_bench *b, struct pw_runtime *rt,
			      bool busy)
{
	atomic_store(&spinning, busy);
	if (busy)
		pw_runtime_spawn(rt, 1, spinner_poll, NULL, 0, NULL);
	usleep(10000); /* let the target settle: spinning, or asleep */
	struct caller c = { .b = b };
	int64_t res;
	pw_block_on(rt, caller_poll, &c, &res);
	atomic_store(&spinning, false);
}

static void run_calls(struct pw_bench *b, bool busy, uint64_t idle_poll_ns)
{
	static const int cpus[2] = { 0, 1 };
	struct pw_config cfg;
	struct pw_runtime *rt;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		pw_bench_skip(b, "needs 2 CPUs");
		return;
	}
	pw_config_init(&cfg);
	cfg.shards = 2;
	cfg.cpus = cpus;
	cfg.idle_poll_ns = idle_poll_ns;
	int err = pw_runtime_create(&rt, &cfg);
	if (err) {
		pw_bench_skip(b, pw_strerror_setup(err));
		return;
	}
	pw_bench_call_roundtrips(b, rt, busy);
	struct pw_shard_stats st;
	pw_runtime_stats(rt, 0, &st);
	pw_bench_counter(b, "msg_rings", (double)st.msg_rings, false);
	pw_runtime_destroy(rt);
}

static void bm_call_roundtrip_busy(struct pw_bench *b)
{
	run_calls(b, true, 0);
}
PW_BENCH(bm_call_roundtrip_busy);

/* The same with the caller polling 200 us before it sleeps (Seastar's
 * default idle-poll time): it sees the reply without a kernel wake-up. */
static void bm_call_roundtrip_busy_idle_poll(struct pw_bench *b)
{
	run_calls(b, true, 200000);
}
PW_BENCH(bm_call_roundtrip_busy_idle_poll);

/* Both shards idle and polling: the target answers from its poll loop. */
static void bm_call_roundtrip_polling(struct pw_bench *b)
{
	run_calls(b, false, 200000);
}
PW_BENCH(bm_call_roundtrip_polling);

static void bm_call_roundtrip_asleep(struct pw_bench *b)
{
	run_calls(b, false, 0);
}
PW_BENCH(bm_call_roundtrip_asleep);
