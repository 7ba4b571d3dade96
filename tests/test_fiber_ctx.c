/* SPDX-License-Identifier: MIT */
/*
 * test_fiber_ctx.c - the fiber context switch and stack pool: ping-pong
 * switches in exact order and count, callee-saved registers and the
 * floating-point control state kept across switches, every stack size
 * class usable to its top and reused from the pool, the overflow report
 * of a fiber that runs past its guard page (in a child process), and the
 * pool on a shard thread.
 */
#include <errno.h>
#include <fenv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tests/common.h"

#include "core/fiber_ctx.h"
#include "core/fiber_stack.h"

/* ---- ping-pong ----------------------------------------------------------- */

struct pingpong {
	struct pw__fctx main, fib;
	int rounds;
	int log[64]; /* first events: +i from the fiber, -i from main */
	int nlog;
	int count;
};

static void pp_log(struct pingpong *p, int ev)
{
	if (p->nlog < (int)(sizeof(p->log) / sizeof(p->log[0])))
		p->log[p->nlog++] = ev;
}

static void pp_fiber(void *arg)
{
	struct pingpong *p = arg;

	for (int i = 1; i <= p->rounds; i++) {
		pp_log(p, i);
		p->count++;
		pw__fctx_switch(&p->fib, &p->main);
	}
	pp_log(p, 1000);
	pw__fctx_exit(&p->fib, &p->main);
}

Test(fiber_ctx, ping_pong_exact_order_and_count)
{
	struct pingpong p = { .rounds = 100000 };
	struct pw__fstack st;

	cr_assert_eq(pw__fstack_get(0, &st), 0);
	cr_assert_eq(st.size, PW_FIBER_STACK_DEFAULT);
	pw__fctx_thread(&p.main);
	pw__fctx_make(&p.fib, &st, pp_fiber, &p);
	for (int i = 1; i <= p.rounds; i++) {
		pw__fctx_switch(&p.main, &p.fib);
		cr_assert_eq(p.count, i);
		pp_log(&p, -i);
	}
	pw__fctx_switch(&p.main, &p.fib); /* the fiber ends */
	cr_assert_eq(p.count, p.rounds);
	pw__fctx_destroy(&p.fib);
	for (int i = 0; i < 62; i++)
		cr_assert_eq(p.log[i], i % 2 ? -(i / 2 + 1) : i / 2 + 1,
			     "event %d: %d", i, p.log[i]);
	cr_assert_eq(p.nlog, 64);
	pw__fstack_put(&st);
	pw__fstack_pool_free();
}

/* Two fibers switching to each other directly, main only at the ends. */
struct trio {
	struct pw__fctx main, a, b;
	int n, seq[16], nseq;
};

static void trio_a(void *arg)
{
	struct trio *t = arg;

	for (int i = 0; i < t->n; i++) {
		t->seq[t->nseq++] = 'a';
		pw__fctx_switch(&t->a, &t->b);
	}
	pw__fctx_exit(&t->a, &t->main);
}

static void trio_b(void *arg)
{
	struct trio *t = arg;

	for (;;) {
		t->seq[t->nseq++] = 'b';
		pw__fctx_switch(&t->b, &t->a);
	}
}

Test(fiber_ctx, fiber_to_fiber_switches)
{
	struct trio t = { .n = 5 };
	struct pw__fstack sa, sb;

	cr_assert_eq(pw__fstack_get(0, &sa), 0);
	cr_assert_eq(pw__fstack_get(0, &sb), 0);
	cr_assert_neq(sa.lo, sb.lo);
	pw__fctx_thread(&t.main);
	pw__fctx_make(&t.a, &sa, trio_a, &t);
	pw__fctx_make(&t.b, &sb, trio_b, &t);
	pw__fctx_switch(&t.main, &t.a);
	cr_assert_eq(t.nseq, 10);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(t.seq[i], i % 2 ? 'b' : 'a');
	pw__fctx_destroy(&t.a);
	pw__fctx_destroy(&t.b); /* b never finished: dropped switched out */
	pw__fstack_put(&sa);
	pw__fstack_put(&sb);
	pw__fstack_pool_free();
}

/* The entry gets its argument; a fiber made twice on one stack runs
 * twice. */
static void arg_fiber(void *arg)
{
	void **slot = arg;
	struct pw__fctx *back = slot[1], *self = slot[2];

	slot[0] = arg;
	pw__fctx_exit(self, back);
}

Test(fiber_ctx, entry_gets_its_argument)
{
	struct pw__fctx main, fib;
	struct pw__fstack st;
	void *slot[3] = { NULL, &main, &fib };

	cr_assert_eq(pw__fstack_get(4096, &st), 0);
	pw__fctx_thread(&main);
	for (int i = 0; i < 2; i++) {
		slot[0] = NULL;
		pw__fctx_make(&fib, &st, arg_fiber, slot);
		pw__fctx_switch(&main, &fib);
		cr_assert_eq(slot[0], (void *)slot);
		pw__fctx_destroy(&fib);
	}
	pw__fstack_put(&st);
	pw__fstack_pool_free();
}
