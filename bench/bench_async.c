/* SPDX-License-Identifier: MIT */
/*
 * bench_async.c - the cost of pinwheel/async.h's straight-line macros
 * against the same task written by hand. The task awaits a self-wake
 * BATCH times per batch: each operation is one await that suspends (the
 * task wakes itself and returns PW_PENDING) and the poll that resumes
 * it. Argument 0 times the hand-written poll function, 1 the macro one;
 * the difference is the cost of the macros per poll.
 *
 * Like bench_task.c, the body runs in an ordinary task spawned by the
 * pw_block_on() task and awaited there.
 */
#include <errno.h>
#include <stdlib.h>

#include "bench/bench.h"
#include "pinwheel.h"
#include "pinwheel/async.h"

#define BATCH 256

/* Pending once (after waking the task), then ready. */
static inline enum pw_poll self_wake_poll(struct pw_cx *cx, bool *woke)
{
	if (*woke) {
		*woke = false;
		return PW_READY;
	}
	*woke = true;
	struct pw_waker w = pw_cx_waker(cx);
	pw_waker_wake_by_ref(&w);
	return PW_PENDING;
}

/* The task by hand: its counters are its state machine. */
struct spin_hand {
	struct pw_bench *b;
	int left;
	bool woke;
};

static enum pw_poll spin_hand_poll(struct pw_cx *cx, void *state)
{
	struct spin_hand *s = state;

	for (;;) {
		if (s->left == 0) {
			if (!pw_bench_run(s->b, BATCH))
				return pw_ready(cx, 0);
			s->left = BATCH;
		}
		if (self_wake_poll(cx, &s->woke) == PW_PENDING)
			return PW_PENDING;
		s->left--;
	}
}

/* The same task with the macros. */
struct spin_async {
	pw_async_t at;
	struct pw_bench *b;
	int left;
	bool woke;
};

static enum pw_poll spin_async_poll(struct pw_cx *cx, void *state)
{
	struct spin_async *s = state;

	PW_ASYNC_BEGIN(cx, &s->at);
	while (pw_bench_run(s->b, BATCH))
		for (s->left = BATCH; s->left > 0; s->left--)
			PW_AWAIT(self_wake_poll(cx, &s->woke));
	PW_RETURN(0);
	PW_ASYNC_END();
}

static const int64_t variants[] = { 0, 1 }; /* 0: by hand, 1: macros */

static void bm_async_macro_vs_hand(struct pw_bench *b)
{
	struct pw_runtime *rt = pw_bench_runtime(b);
	if (!rt)
		return;
	struct spin_hand hand = { .b = b };
	struct spin_async mac = { .b = b };
	int64_t res = pw_bench_arg(b) == 1 ?
			      pw_bench_run_in_task(rt, spin_async_poll, &mac) :
			      pw_bench_run_in_task(rt, spin_hand_poll, &hand);

	if (res)
		pw_bench_skip(b, "the task failed");
	pw_runtime_destroy(rt);
}
PW_BENCH_ARGS(bm_async_macro_vs_hand, variants);
