/* SPDX-License-Identifier: MIT */
/*
 * bench_fiber_ctx.c - the fiber context switch and stack pool.
 *
 *   bm_fiber_switch       one round trip: the scheduler side switches
 *                         into a fiber, which switches straight back
 *                         (a resume plus a suspend)
 *   bm_fiber_stack_pool   a stack taken from the thread's pool and given
 *                         back (the pool's hit path)
 *   bm_fiber_ctx_life     a fiber's whole context life on a pooled
 *                         stack: take, make, run to its end, destroy,
 *                         give back (the switching part of a spawn)
 *
 * Single-threaded: run it pinned (taskset -c 0) for stable numbers.
 */
#include <stdint.h>

#include "bench/bench.h"
#include "core/fiber_ctx.h"
#include "core/fiber_stack.h"

struct bench_fib {
	struct pw__fctx sched, fib;
	uint64_t n;
};

static struct pw__fctx *bounce(void *arg)
{
	struct bench_fib *f = arg;

	for (;;) {
		f->n++;
		pw__fctx_switch(&f->fib, &f->sched);
	}
	return NULL; /* never ends: dropped switched out */
}

static void bm_fiber_switch(struct pw_bench *b)
{
	struct bench_fib f = { .n = 0 };
	struct pw__fstack st;

	if (pw__fstack_get(0, &st)) {
		pw_bench_skip(b, "no stack");
		return;
	}
	pw__fctx_thread(&f.sched);
	pw__fctx_make(&f.fib, &st, bounce, &f);
	while (pw_bench_run(b, 1024))
		for (int i = 0; i < 1024; i++)
			pw__fctx_switch(&f.sched, &f.fib);
	pw__fctx_destroy(&f.fib);
	pw__fstack_put(&st);
	pw__fstack_pool_free();
}
PW_BENCH(bm_fiber_switch);

static void bm_fiber_stack_pool(struct pw_bench *b)
{
	struct pw__fstack st;

	while (pw_bench_run(b, 1024))
		for (int i = 0; i < 1024; i++) {
			if (pw__fstack_get(0, &st)) {
				pw_bench_skip(b, "no stack");
				return;
			}
			pw__fstack_put(&st);
		}
	pw__fstack_pool_free();
}
PW_BENCH(bm_fiber_stack_pool);

static struct pw__fctx *once(void *arg)
{
	struct bench_fib *f = arg;

	f->n++;
	return &f->sched;
}

static void bm_fiber_ctx_life(struct pw_bench *b)
{
	struct bench_fib f = { .n = 0 };
	struct pw__fstack st;

	pw__fctx_thread(&f.sched);
	while (pw_bench_run(b, 1024))
		for (int i = 0; i < 1024; i++) {
			if (pw__fstack_get(0, &st)) {
				pw_bench_skip(b, "no stack");
				return;
			}
			pw__fstack_running(&st, "once");
			pw__fctx_make(&f.fib, &st, once, &f);
			pw__fctx_switch(&f.sched, &f.fib);
			pw__fstack_running(NULL, NULL);
			pw__fctx_destroy(&f.fib);
			pw__fstack_put(&st);
		}
	pw__fstack_pool_free();
}
PW_BENCH(bm_fiber_ctx_life);
