/* SPDX-License-Identifier: MIT */
/*
 * tests/test_wheel.c - the per-shard timer wheel (timer/wheel.c).
 *
 * Unit tests pin exact placement, order and return values; the model
 * tests run millions of random operations against a plain array of
 * expected deadlines and check every firing and every invariant.
 *
 * PW_TEST_SCALE (a float, default 1.0) scales the random operation
 * counts; sanitizer runs use 0.1. A failure names its seed and step.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common.h"
#include "timer/wheel.h"

#define MAX_TIMERS 512

/* ---------------------------------------------------------------- */
/* Helpers for the unit tests: timers that log their firing.        */

struct ut {
	struct pw__timer t;
	int id;
};

static struct {
	struct pw__wheel *w;
	int ids[4096];
	uint64_t ticks[4096]; /* w->elapsed while the fn ran */
	int n;
	void (*hook)(struct ut *u); /* extra action inside the fn */
} ulog;

static void ut_fn(struct pw__timer *t)
{
	struct ut *u = pw_container_of(t, struct ut, t);
	char err[256];

	cr_assert_eq(t->state, PW__TIMER_FIRED, "fn of %d runs in state %u",
		     u->id, t->state);
	cr_assert_lt(ulog.n, 4096);
	ulog.ids[ulog.n] = u->id;
	ulog.ticks[ulog.n] = ulog.w->elapsed;
	ulog.n++;
	/* The wheel must be whole while a fn runs. */
	cr_assert_eq(pw__wheel_check(ulog.w, err, sizeof(err)), 0,
		     "inside fn of %d: %s", u->id, err);
	if (ulog.hook)
		ulog.hook(u);
}

static void ut_setup(struct pw__wheel *w, uint64_t now, struct ut *u, int n)
{
	memset(&ulog, 0, sizeof(ulog));
	ulog.w = w;
	pw__wheel_init(w, now);
	for (int i = 0; i < n; i++) {
		pw__timer_init(&u[i].t, ut_fn);
		u[i].id = i;
	}
}

static void ut_check(const struct pw__wheel *w)
{
	char err[256];

	cr_assert_eq(pw__wheel_check(w, err, sizeof(err)), 0, "%s", err);
}

static void expect_log(const int *ids, const uint64_t *ticks, int n)
{
	cr_assert_eq(ulog.n, n, "fired %d timers, expected %d", ulog.n, n);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(ulog.ids[i], ids[i], "firing %d: timer %d, not %d",
			     i, ulog.ids[i], ids[i]);
		if (ticks)
			cr_assert_eq(ulog.ticks[i], ticks[i],
				     "firing %d (timer %d) at tick %" PRIu64
				     ", not %" PRIu64,
				     i, ids[i], ulog.ticks[i], ticks[i]);
	}
}

static void expect_place(const struct pw__timer *t, unsigned level,
			 unsigned slot, uint64_t slot_when)
{
	cr_assert_eq(t->state, PW__TIMER_PENDING);
	cr_assert_eq(t->level, level, "deadline %" PRIu64 ": level %u not %u",
		     t->deadline, t->level, level);
	cr_assert_eq(t->slot, slot, "deadline %" PRIu64 ": slot %u not %u",
		     t->deadline, t->slot, slot);
	cr_assert_eq(t->slot_when, slot_when,
		     "deadline %" PRIu64 ": slot_when %" PRIu64 " not %" PRIu64,
		     t->deadline, t->slot_when, slot_when);
}

#define B36 (UINT64_C(1) << 36)

/* ---------------------------------------------------------------- */
/* Unit tests with exact values.                                    */

Test(wheel, level_and_slot)
{
	static struct pw__wheel w;
	static struct ut u[16];
	const struct {
		uint64_t deadline;
		unsigned level, slot;
		uint64_t slot_when;
	} at0[] = {
		{ 1, 0, 1, 1 },
		{ 63, 0, 63, 63 },
		{ 64, 1, 1, 64 },
		{ 100, 1, 1, 100 },
		{ 4095, 1, 63, 4095 },
		{ 4096, 2, 1, 4096 },
		{ 262144, 3, 1, 262144 },
		{ UINT64_C(1) << 24, 4, 1, UINT64_C(1) << 24 },
		{ UINT64_C(1) << 30, 5, 1, UINT64_C(1) << 30 },
		{ B36 - 1, 5, 63, B36 - 1 },
		{ B36, 5, 0, B36 },	   /* next block: the ring slot */
		{ UINT64_MAX, 5, 0, B36 }, /* far: the ring slot too */
	};
	const int n = sizeof(at0) / sizeof(at0[0]);
	uint64_t occ[PW__WHEEL_LEVELS] = { 0 };

	ut_setup(&w, 0, u, n);
	for (int i = 0; i < n; i++) {
		pw__wheel_insert(&w, &u[i].t, at0[i].deadline);
		expect_place(&u[i].t, at0[i].level, at0[i].slot,
			     at0[i].slot_when);
		occ[at0[i].level] |= UINT64_C(1) << at0[i].slot;
		ut_check(&w);
	}
	for (int l = 0; l < PW__WHEEL_LEVELS; l++)
		cr_assert_eq(w.occupied[l], occ[l],
			     "occupied[%d] %#" PRIx64 " not %#" PRIx64, l,
			     w.occupied[l], occ[l]);
	cr_assert_eq(w.count, (size_t)n);

	/* Relative to elapsed = 1000 (digit 0 = 40, digit 1 = 15). */
	ut_setup(&w, 1000, u, 4);
	pw__wheel_insert(&w, &u[0].t, 1001);
	expect_place(&u[0].t, 0, 41, 1001);
	pw__wheel_insert(&w, &u[1].t, 1023);
	expect_place(&u[1].t, 0, 63, 1023);
	pw__wheel_insert(&w, &u[2].t, 1024);
	expect_place(&u[2].t, 1, 16, 1024);
	pw__wheel_insert(&w, &u[3].t, 1000); /* due: the due list */
	cr_assert_eq(u[3].t.level, PW__TIMER_LEVEL_DUE);
	cr_assert_eq(u[3].t.state, PW__TIMER_PENDING);
	ut_check(&w);

	/* Far from a later block: the ring slot is the next block's start. */
	ut_setup(&w, B36 + 5, u, 2);
	pw__wheel_insert(&w, &u[0].t, 2 * B36 + 7);
	expect_place(&u[0].t, 5, 0, 2 * B36);
	pw__wheel_insert(&w, &u[1].t, 2 * B36 - 1);
	expect_place(&u[1].t, 5, 63, 2 * B36 - 1);
	ut_check(&w);

	/* In the last block everything is in range. */
	ut_setup(&w, UINT64_MAX - 10, u, 2);
	pw__wheel_insert(&w, &u[0].t, UINT64_MAX);
	expect_place(&u[0].t, 0, 63, UINT64_MAX);
	ut_check(&w);
}

Test(wheel, fifo_within_slot)
{
	static struct pw__wheel w;
	static struct ut u[8];

	ut_setup(&w, 0, u, 8);
	/* Same level 0 slot: insertion order. */
	pw__wheel_insert(&w, &u[2].t, 10);
	pw__wheel_insert(&w, &u[0].t, 10);
	pw__wheel_insert(&w, &u[3].t, 10);
	pw__wheel_insert(&w, &u[1].t, 10);
	cr_assert_eq(pw__wheel_advance(&w, 10), 4);
	expect_log((int[]){ 2, 0, 3, 1 }, (uint64_t[]){ 10, 10, 10, 10 }, 4);
	ut_check(&w);

	/* Same level 1 slot, same deadline after a cascade: still FIFO. */
	ut_setup(&w, 0, u, 8);
	pw__wheel_insert(&w, &u[5].t, 100);
	pw__wheel_insert(&w, &u[4].t, 100);
	pw__wheel_insert(&w, &u[6].t, 100);
	cr_assert_eq(u[5].t.level, 1);
	cr_assert_eq(pw__wheel_advance(&w, 1000), 3);
	expect_log((int[]){ 5, 4, 6 }, NULL, 3);

	/* Re-arming moves a timer to the back of its slot. */
	ut_setup(&w, 0, u, 8);
	pw__wheel_insert(&w, &u[0].t, 7);
	pw__wheel_insert(&w, &u[1].t, 7);
	pw__wheel_insert(&w, &u[0].t, 7);
	cr_assert_eq(pw__wheel_advance(&w, 7), 2);
	expect_log((int[]){ 1, 0 }, NULL, 2);
}

/*
 * Hundreds of timers of one slot fire in arming order after two
 * cascades, with cancelled ones gone and re-armed ones at the back, while
 * a second slot's timers interleaved with them keep their own order.
 */
Test(wheel, fifo_within_slot_many)
{
	enum { N = 480 };
	static struct pw__wheel w;
	static struct ut u[N];
	static int want[N];
	int nwant = 0;

	ut_setup(&w, 0, u, N);
	/* Arm in a scrambled order. */
	int order[N];
	for (int i = 0; i < N; i++)
		order[i] = (int)((i * 187 + 31) % N); /* gcd(187, 480) = 1 */
	for (int i = 0; i < N; i++)
		pw__wheel_insert(&w, &u[order[i]].t,
				 order[i] % 3 ? 5000 : 6000);
	cr_assert_eq(u[order[0]].t.level, 2);
	/* Cancel every 7th armed; re-arm every 11th (to the back). */
	for (int i = 0; i < N; i += 7)
		cr_assert(pw__wheel_cancel(&w, &u[order[i]].t));
	for (int i = 5; i < N; i += 11)
		pw__wheel_insert(&w, &u[order[i]].t,
				 order[i] % 3 ? 5000 : 6000);
	ut_check(&w);
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < N; i++) {
			int id = order[i];
			bool in = pass == 0 ? id % 3 != 0 : id % 3 == 0;

			if (!in || i % 7 == 0 || (i >= 5 && (i - 5) % 11 == 0))
				continue;
			want[nwant++] = id;
		}
		for (int i = 5; i < N; i += 11) {
			int id = order[i];
			bool in = pass == 0 ? id % 3 != 0 : id % 3 == 0;

			if (in)
				want[nwant++] = id;
		}
	}
	cr_assert_eq(pw__wheel_advance(&w, 6000), (size_t)nwant);
	expect_log(want, NULL, nwant);
	/* Each went level 2 -> 1 -> 0 before it fired. */
	cr_assert_eq(w.refiled, (uint64_t)2 * nwant);
	ut_check(&w);
}

/*
 * A slot's expiry walks it from the tail. Timers whose deadline was reset
 * past the next slot of their own level land behind the timers already
 * armed there, in their own arming order; timers cascading to lower
 * levels keep theirs. 40 per group, more than the hint distance.
 */
Test(wheel, reset_later_joins_the_back_in_order)
{
	enum { N = 40 };
	static struct pw__wheel w;
	static struct ut u[2 * N];
	int want[2 * N];
	uint64_t ticks[2 * N];

	ut_setup(&w, 0, u, 2 * N);
	/* A (ids N..2N-1), scrambled, into level 2 slot 1; then reset. */
	for (int i = 0; i < N; i++)
		pw__wheel_insert(&w, &u[N + (i * 17 + 3) % N].t, 5000);
	for (int i = 0; i < N; i++) {
		pw__wheel_reset(&w, &u[N + i].t, 9000);
		expect_place(&u[N + i].t, 2, 1, 5000);
	}
	/* B (ids 0..N-1), scrambled, straight into level 2 slot 2. */
	for (int i = 0; i < N; i++) {
		pw__wheel_insert(&w, &u[(i * 7 + 5) % N].t, 9000);
		expect_place(&u[(i * 7 + 5) % N].t, 2, 2, 9000);
	}
	ut_check(&w);
	/* Slot 1 expires at 4096: A goes behind B in slot 2, in order. */
	cr_assert_eq(pw__wheel_advance(&w, 4096), 0);
	ut_check(&w);
	cr_assert_eq(w.refiled, (uint64_t)N);
	for (int i = 0; i < N; i++)
		expect_place(&u[N + i].t, 2, 2, 9000);
	for (int i = 0; i < N; i++) {
		want[i] = (i * 7 + 5) % N;
		want[N + i] = N + (i * 17 + 3) % N;
		ticks[i] = ticks[N + i] = 9000;
	}
	cr_assert_eq(pw__wheel_advance(&w, 9000), (size_t)(2 * N));
	expect_log(want, ticks, 2 * N);
	/* Then 2 -> 1 -> 0 for everyone. */
	cr_assert_eq(w.refiled, (uint64_t)N + 2 * 2 * N);
	ut_check(&w);
}

Test(wheel, order_across_slots)
{
	static struct pw__wheel w;
	static struct ut u[12];
	/* Scrambled deadlines over all levels, inserted at elapsed 3. */
	const uint64_t d[12] = { 70, 5,	      4096 * 9 + 1, 64, 63,	200,
				 4,  B36 + 3, 1u << 30,	    65, 262145, 4097 };
	const int order[12] = { 6, 1, 4, 3, 9, 0, 5, 11, 2, 10, 8, 7 };
	uint64_t ticks[12];

	ut_setup(&w, 3, u, 12);
	for (int i = 0; i < 12; i++)
		pw__wheel_insert(&w, &u[i].t, d[i]);
	for (int i = 0; i < 12; i++)
		ticks[i] = d[order[i]];
	cr_assert_eq(pw__wheel_advance(&w, UINT64_MAX), 12);
	expect_log(order, ticks, 12);
	cr_assert_eq(w.count, 0);
	cr_assert_eq(w.elapsed, UINT64_MAX);
	ut_check(&w);
}

Test(wheel, cascade)
{
	static struct pw__wheel w;
	static struct ut u[2];

	ut_setup(&w, 0, u, 2);
	pw__wheel_insert(&w, &u[0].t, 5000);
	expect_place(&u[0].t, 2, 1, 5000);
	cr_assert_eq(pw__wheel_next(&w), 4096);

	cr_assert_eq(pw__wheel_advance(&w, 4095), 0);
	cr_assert_eq(w.expiries, 0);
	expect_place(&u[0].t, 2, 1, 5000);
	ut_check(&w);

	/* Level 2 slot 1 expires at 4096: to level 1, slot 5000 >> 6 = 78. */
	cr_assert_eq(pw__wheel_advance(&w, 4096), 0);
	cr_assert_eq(w.expiries, 1);
	cr_assert_eq(w.refiled, 1);
	expect_place(&u[0].t, 1, 78 & 63, 5000);
	cr_assert_eq(pw__wheel_next(&w), 78 * 64);
	ut_check(&w);

	/* 4992 = 78 * 64: to level 0 slot 5000 & 63 = 8. */
	cr_assert_eq(pw__wheel_advance(&w, 4999), 0);
	cr_assert_eq(w.expiries, 2);
	cr_assert_eq(w.refiled, 2);
	expect_place(&u[0].t, 0, 8, 5000);
	cr_assert_eq(pw__wheel_next(&w), 5000);
	ut_check(&w);

	cr_assert_eq(pw__wheel_advance(&w, 5000), 1);
	cr_assert_eq(w.expiries, 3);
	cr_assert_eq(w.refiled, 2);
	expect_log((int[]){ 0 }, (uint64_t[]){ 5000 }, 1);
	cr_assert_eq(u[0].t.state, PW__TIMER_FIRED);
	cr_assert_eq(pw__wheel_next(&w), UINT64_MAX);

	/* Reset later keeps the slot; it re-levels when that slot expires. */
	ut_setup(&w, 0, u, 2);
	pw__wheel_insert(&w, &u[0].t, 100);
	expect_place(&u[0].t, 1, 1, 100);
	pw__wheel_reset(&w, &u[0].t, 300);
	cr_assert_eq(u[0].t.deadline, 300);
	expect_place(&u[0].t, 1, 1, 100);
	ut_check(&w);
	cr_assert_eq(pw__wheel_advance(&w, 64), 0);
	/* Re-filed at 64 from its true deadline 300: level 1 slot 4. */
	expect_place(&u[0].t, 1, 4, 300);
	ut_check(&w);
	/* Reset earlier re-files at once. */
	pw__wheel_reset(&w, &u[0].t, 70);
	expect_place(&u[0].t, 0, 70 & 63, 70);
	ut_check(&w);
	cr_assert_eq(pw__wheel_advance(&w, 69), 0);
	cr_assert_eq(pw__wheel_advance(&w, 1000), 1);
	expect_log((int[]){ 0 }, (uint64_t[]){ 70 }, 1);
}

/* fn_mutates: what each timer's fn does. */
static struct ut *mu;
static bool mu_cancel_ret[8];

static void mutate_hook(struct ut *u)
{
	struct pw__wheel *w = ulog.w;

	switch (u->id) {
	case 0: /* first of the batch at 10 */
		/* B (1) is FIRING in this batch: cancel wins, not called. */
		mu_cancel_ret[0] = pw__wheel_cancel(w, &mu[1].t);
		/* C (2), FIRING: re-armed for 20, skipped here. */
		pw__wheel_reset(w, &mu[2].t, 20);
		/* E (4), new, already due (10 <= elapsed): next advance. */
		pw__wheel_insert(w, &mu[4].t, 10);
		/* F (5), new, 15 <= now: fires in this advance. */
		pw__wheel_insert(w, &mu[5].t, 15);
		/* G (6), pending at 40: moved earlier to 12. */
		pw__wheel_reset(w, &mu[6].t, 12);
		/* H (7), pending at 18: cancelled. */
		mu_cancel_ret[1] = pw__wheel_cancel(w, &mu[7].t);
		break;
	case 3: /* D, first time: cancel itself (FIRED: false), re-arm */
		if (ulog.n != 2)
			break;
		mu_cancel_ret[2] = pw__wheel_cancel(w, &u->t);
		mu_cancel_ret[3] = pw__wheel_cancel(w, &mu[1].t); /* twice */
		pw__wheel_insert(w, &u->t, 25);
		break;
	case 5: /* F: re-arm itself for now (due: next advance) */
		if (ulog.n == 4)
			pw__wheel_insert(w, &u->t, w->elapsed);
		break;
	}
}

Test(wheel, fn_mutates_others)
{
	static struct pw__wheel w;
	static struct ut u[8];

	ut_setup(&w, 0, u, 8);
	mu = u;
	ulog.hook = mutate_hook;
	for (int i = 0; i < 4; i++)
		pw__wheel_insert(&w, &u[i].t, 10);
	pw__wheel_insert(&w, &u[6].t, 40);
	pw__wheel_insert(&w, &u[7].t, 18);

	cr_assert_eq(pw__wheel_advance(&w, 30), 6);
	expect_log((int[]){ 0, 3, 6, 5, 2, 3 },
		   (uint64_t[]){ 10, 10, 12, 15, 20, 25 }, 6);
	cr_assert(mu_cancel_ret[0]);
	cr_assert(mu_cancel_ret[1]);
	cr_assert_not(mu_cancel_ret[2]);
	cr_assert_not(mu_cancel_ret[3]);
	cr_assert_eq(u[1].t.state, PW__TIMER_IDLE);
	cr_assert_eq(u[7].t.state, PW__TIMER_IDLE);
	cr_assert_eq(u[4].t.state, PW__TIMER_PENDING);
	cr_assert_eq(u[5].t.state, PW__TIMER_PENDING);
	cr_assert_eq(w.count, 2);
	cr_assert_eq(w.elapsed, 30);
	ut_check(&w);
	/* E and F were armed due during the advance: the next one fires. */
	cr_assert_eq(pw__wheel_next(&w), 30);
	cr_assert_eq(pw__wheel_advance(&w, 30), 2);
	expect_log((int[]){ 0, 3, 6, 5, 2, 3, 4, 5 },
		   (uint64_t[]){ 10, 10, 12, 15, 20, 25, 30, 30 }, 8);
	cr_assert_eq(w.count, 0);
	cr_assert_eq(pw__wheel_next(&w), UINT64_MAX);
}

static void self_rearm_hook(struct ut *u)
{
	/* A periodic timer: every 7 ticks until 100. */
	if (ulog.w->elapsed + 7 <= 100)
		pw__wheel_insert(ulog.w, &u->t, ulog.w->elapsed + 7);
}

Test(wheel, fn_rearms_itself)
{
	static struct pw__wheel w;
	static struct ut u[1];

	ut_setup(&w, 0, u, 1);
	ulog.hook = self_rearm_hook;
	pw__wheel_insert(&w, &u[0].t, 2);
	cr_assert_eq(pw__wheel_advance(&w, 1000), 15);
	for (int i = 0; i < 15; i++)
		cr_assert_eq(ulog.ticks[i], 2 + 7 * (uint64_t)i);
	cr_assert_eq(u[0].t.state, PW__TIMER_FIRED);
	ut_check(&w);
}

Test(wheel, past_deadline_fires_next_advance)
{
	static struct pw__wheel w;
	static struct ut u[4];

	ut_setup(&w, 100, u, 4);
	pw__wheel_insert(&w, &u[0].t, 50);
	pw__wheel_insert(&w, &u[1].t, 100);
	pw__wheel_insert(&w, &u[2].t, 0);
	pw__wheel_insert(&w, &u[3].t, 101);
	ut_check(&w);
	cr_assert_eq(w.count, 4);
	cr_assert_eq(pw__wheel_next(&w), 100);
	/* Same now: the three due fire, in arming order, at tick 100. */
	cr_assert_eq(pw__wheel_advance(&w, 100), 3);
	expect_log((int[]){ 0, 1, 2 }, (uint64_t[]){ 100, 100, 100 }, 3);
	cr_assert_eq(pw__wheel_next(&w), 101);
	/* A now before elapsed counts as elapsed. */
	pw__wheel_insert(&w, &u[0].t, 99);
	cr_assert_eq(pw__wheel_advance(&w, 5), 1);
	cr_assert_eq(w.elapsed, 100);
	expect_log((int[]){ 0, 1, 2, 0 }, NULL, 4);
	cr_assert_eq(pw__wheel_advance(&w, 101), 1);
	expect_log((int[]){ 0, 1, 2, 0, 3 }, NULL, 5);
	ut_check(&w);
}

Test(wheel, zero_delta)
{
	static struct pw__wheel w;
	static struct ut u[2];

	ut_setup(&w, 777, u, 2);
	pw__wheel_insert(&w, &u[0].t, 778);
	cr_assert_eq(pw__wheel_advance(&w, 777), 0);
	cr_assert_eq(pw__wheel_advance(&w, 777), 0);
	cr_assert_eq(w.elapsed, 777);
	cr_assert_eq(w.expiries, 0);
	cr_assert_eq(u[0].t.state, PW__TIMER_PENDING);
	cr_assert_eq(pw__wheel_advance(&w, 778), 1);
	cr_assert_eq(pw__wheel_advance(&w, 778), 0);
	expect_log((int[]){ 0 }, (uint64_t[]){ 778 }, 1);
	ut_check(&w);
}

Test(wheel, rearm_fired_or_cancelled)
{
	static struct pw__wheel w;
	static struct ut u[2];

	ut_setup(&w, 0, u, 2);
	pw__wheel_insert(&w, &u[0].t, 5);
	cr_assert_eq(pw__wheel_advance(&w, 5), 1);
	cr_assert_eq(u[0].t.state, PW__TIMER_FIRED);
	/* Reset of a FIRED timer arms it again. */
	pw__wheel_reset(&w, &u[0].t, 9);
	expect_place(&u[0].t, 0, 9, 9);
	cr_assert_eq(w.count, 1);
	ut_check(&w);
	cr_assert_eq(pw__wheel_advance(&w, 9), 1);

	/* Reset of a cancelled (IDLE) timer arms it too. */
	pw__wheel_insert(&w, &u[1].t, 20);
	cr_assert(pw__wheel_cancel(&w, &u[1].t));
	cr_assert_eq(w.count, 0);
	cr_assert_eq(pw__wheel_next(&w), UINT64_MAX);
	pw__wheel_reset(&w, &u[1].t, 30);
	expect_place(&u[1].t, 0, 30, 30);
	cr_assert_eq(pw__wheel_advance(&w, 29), 0);
	cr_assert_eq(pw__wheel_advance(&w, 30), 1);
	expect_log((int[]){ 0, 0, 1 }, (uint64_t[]){ 5, 9, 30 }, 3);
	ut_check(&w);
}

Test(wheel, cancel_twice)
{
	static struct pw__wheel w;
	static struct ut u[3];

	ut_setup(&w, 0, u, 3);
	cr_assert_not(pw__wheel_cancel(&w, &u[2].t)); /* never armed */
	pw__wheel_insert(&w, &u[0].t, 1000);
	pw__wheel_insert(&w, &u[1].t, 1000);
	cr_assert_eq(w.occupied[1], UINT64_C(1) << 15);
	cr_assert(pw__wheel_cancel(&w, &u[0].t));
	cr_assert_eq(u[0].t.state, PW__TIMER_IDLE);
	cr_assert_not(pw__wheel_cancel(&w, &u[0].t));
	cr_assert_eq(w.occupied[1], UINT64_C(1) << 15);
	cr_assert(pw__wheel_cancel(&w, &u[1].t));
	cr_assert_eq(w.occupied[1], 0); /* last one out clears the bit */
	cr_assert_eq(w.count, 0);
	ut_check(&w);
	cr_assert_eq(pw__wheel_advance(&w, 2000), 0);
	/* Cancel of a FIRED timer is a no-op too; so is a due one's twice. */
	pw__wheel_insert(&w, &u[2].t, 3);
	cr_assert(pw__wheel_cancel(&w, &u[2].t));
	cr_assert_not(pw__wheel_cancel(&w, &u[2].t));
	pw__wheel_insert(&w, &u[2].t, 2001);
	cr_assert_eq(pw__wheel_advance(&w, 2001), 1);
	cr_assert_not(pw__wheel_cancel(&w, &u[2].t));
	cr_assert_eq(u[2].t.state, PW__TIMER_FIRED);
	ut_check(&w);
}

Test(wheel, next_exact)
{
	static struct pw__wheel w;
	static struct ut u[4];

	ut_setup(&w, 0, u, 4);
	cr_assert_eq(pw__wheel_next(&w), UINT64_MAX);
	pw__wheel_insert(&w, &u[0].t, 100); /* level 1 slot 1 */
	cr_assert_eq(pw__wheel_next(&w), 64);
	pw__wheel_insert(&w, &u[1].t, 5);
	cr_assert_eq(pw__wheel_next(&w), 5);
	pw__wheel_cancel(&w, &u[1].t);
	cr_assert_eq(pw__wheel_next(&w), 64);
	pw__wheel_cancel(&w, &u[0].t);
	pw__wheel_insert(&w, &u[0].t, 3 * 4096 + 7);
	cr_assert_eq(pw__wheel_next(&w), 3 * 4096);
	pw__wheel_insert(&w, &u[1].t, 0); /* due */
	cr_assert_eq(pw__wheel_next(&w), 0);
	pw__wheel_advance(&w, 0);
	cr_assert_eq(pw__wheel_next(&w), 3 * 4096);

	/* Ring slot while elapsed's level 5 digit is 0: 64 slots ahead. */
	ut_setup(&w, 5, u, 4);
	pw__wheel_insert(&w, &u[0].t, B36 + 1);
	cr_assert_eq(pw__wheel_next(&w), B36);
	pw__wheel_insert(&w, &u[1].t, 63 * (UINT64_C(1) << 30));
	cr_assert_eq(pw__wheel_next(&w), 63 * (UINT64_C(1) << 30));
	/* Digit 63: the ring slot is the very next level 5 slot. */
	cr_assert_eq(pw__wheel_advance(&w, 63 * (UINT64_C(1) << 30) + 3), 1);
	cr_assert_eq(pw__wheel_next(&w), B36);
	cr_assert_eq(pw__wheel_advance(&w, B36), 0);
	cr_assert_eq(pw__wheel_next(&w), B36 + 1);
	ut_check(&w);

	/* Far deadline from a mid-block elapsed. */
	ut_setup(&w, 7 * B36 + 12345, u, 4);
	pw__wheel_insert(&w, &u[0].t, UINT64_MAX);
	cr_assert_eq(pw__wheel_next(&w), 8 * B36);
	pw__wheel_insert(&w, &u[1].t, 7 * B36 + 12345 + 64 * 64);
	cr_assert_eq(pw__wheel_next(&w), 7 * B36 + 16384);
	ut_check(&w);
}

static struct ut *bu;

static void batch_hook(struct ut *u)
{
	if (u->id == 0) {
		/* Batch 1 is 0..31, FIRING; the rest wait, PENDING. */
		cr_assert_eq(bu[31].t.state, PW__TIMER_FIRING);
		cr_assert_eq(bu[32].t.state, PW__TIMER_PENDING);
		cr_assert_eq(bu[32].t.level, PW__TIMER_LEVEL_DUE);
		cr_assert_eq(ulog.w->count, 100 - 32);
		/* Timers waiting for their batch are due: next is now. */
		cr_assert_eq(pw__wheel_next(ulog.w), 50);
		/* 50 waits in the expired list (second batch): cancel it. */
		cr_assert(pw__wheel_cancel(ulog.w, &bu[50].t));
		/* 31 is FIRING in this batch: cancel it. */
		cr_assert(pw__wheel_cancel(ulog.w, &bu[31].t));
	} else if (u->id == 40) {
		cr_assert_eq(bu[63].t.state, PW__TIMER_FIRING);
		cr_assert_eq(bu[64].t.state, PW__TIMER_FIRING); /* 50 gone */
		cr_assert_eq(bu[65].t.state, PW__TIMER_PENDING);
		/* Same batch, later: 45 cancelled, 70 moved to 60. */
		cr_assert(pw__wheel_cancel(ulog.w, &bu[45].t));
		pw__wheel_reset(ulog.w, &bu[70].t, 60);
	} else if (u->id == 99) {
		/* The last of the slot: only 70, moved to 60, is left. */
		cr_assert_eq(pw__wheel_next(ulog.w), 60);
	}
}

Test(wheel, batch_larger_than_32)
{
	static struct pw__wheel w;
	static struct ut u[100];
	int expect[100], n = 0;

	ut_setup(&w, 0, u, 100);
	bu = u;
	ulog.hook = batch_hook;
	for (int i = 0; i < 100; i++)
		pw__wheel_insert(&w, &u[i].t, 50);
	cr_assert_eq(pw__wheel_advance(&w, 100), 97);
	for (int i = 0; i < 100; i++)
		if (i != 31 && i != 45 && i != 50 && i != 70)
			expect[n++] = i;
	expect[n++] = 70;
	expect_log(expect, NULL, n);
	cr_assert_eq(ulog.ticks[95], 50);
	cr_assert_eq(ulog.ticks[96], 60);
	cr_assert_eq(w.count, 0);
	ut_check(&w);
}

static void max_rearm_hook(struct ut *u)
{
	if (u->id == 1)
		pw__wheel_insert(ulog.w, &u->t, UINT64_MAX);
}

Test(wheel, deadline_uint64_max)
{
	static struct pw__wheel w;
	static struct ut u[2];

	ut_setup(&w, 0, u, 2);
	ulog.hook = max_rearm_hook;
	pw__wheel_insert(&w, &u[0].t, UINT64_MAX);
	pw__wheel_insert(&w, &u[1].t, UINT64_MAX - 1);
	ut_check(&w);
	cr_assert_eq(pw__wheel_advance(&w, UINT64_MAX - 2), 0);
	cr_assert_eq(w.elapsed, UINT64_MAX - 2);
	ut_check(&w);
	cr_assert_eq(pw__wheel_next(&w), UINT64_MAX - 1);
	/* 1 fires and re-arms for UINT64_MAX; 0 fires at UINT64_MAX. */
	cr_assert_eq(pw__wheel_advance(&w, UINT64_MAX), 3);
	expect_log((int[]){ 1, 0, 1 },
		   (uint64_t[]){ UINT64_MAX - 1, UINT64_MAX, UINT64_MAX }, 3);
	/* 1 re-armed itself at UINT64_MAX == elapsed: due, next call. */
	cr_assert_eq(pw__wheel_advance(&w, UINT64_MAX), 1);
	cr_assert_eq(pw__wheel_advance(&w, UINT64_MAX), 1);
	cr_assert_eq(w.count, 1);
	cr_assert(pw__wheel_cancel(&w, &u[1].t));
	cr_assert_eq(pw__wheel_advance(&w, UINT64_MAX), 0);
	cr_assert_eq(pw__wheel_next(&w), UINT64_MAX);
	ut_check(&w);
}

Test(wheel, huge_gap_is_cheap)
{
	static struct pw__wheel w;
	static struct ut u[6];
	const uint64_t d[6] = {
		UINT64_C(1) << 60, (UINT64_C(1) << 60) + 1, 3,
		UINT64_C(1) << 40, UINT64_MAX - 1,	    UINT64_C(1) << 62
	};

	ut_setup(&w, 0, u, 6);
	for (int i = 0; i < 6; i++)
		pw__wheel_insert(&w, &u[i].t, d[i]);
	cr_assert_eq(pw__wheel_advance(&w, UINT64_C(1) << 61), 4);
	expect_log((int[]){ 2, 3, 0, 1 },
		   (uint64_t[]){ d[2], d[3], d[0], d[1] }, 4);
	/*
	 * Walking 2^25 blocks would expire 2^25 ring slots; a jump per
	 * deadline keeps it to a few per timer and level.
	 */
	cr_assert_leq(w.expiries, 12, "%" PRIu64 " expiries", w.expiries);
	cr_assert_leq(w.refiled, 24, "%" PRIu64 " refiled", w.refiled);
	ut_check(&w);
	cr_assert_eq(pw__wheel_advance(&w, UINT64_MAX), 2);
	cr_assert_leq(w.expiries, 24, "%" PRIu64 " expiries", w.expiries);
	expect_log((int[]){ 2, 3, 0, 1, 5, 4 }, NULL, 6);
	ut_check(&w);
}

/* The checker is the model tests' oracle: it must see each corruption. */
Test(wheel, check_detects_corruption)
{
	static struct pw__wheel w;
	static struct ut u[3];
	char err[256];

	ut_setup(&w, 1000, u, 3);
	pw__wheel_insert(&w, &u[0].t, 5000);
	pw__wheel_insert(&w, &u[1].t, 900); /* due */
	pw__wheel_insert(&w, &u[2].t, B36 * 3);
	ut_check(&w);

	w.occupied[2] ^= 1; /* a bit without a list */
	cr_assert_eq(pw__wheel_check(&w, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "slot 2/0: occupied bit 1, list empty");
	w.occupied[2] ^= 1;
	w.recent_links[3][7] = 1; /* an empty slot whose hint ring counts */
	cr_assert_eq(pw__wheel_check(&w, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "slot 3/7: empty but its hint ring counts 1");
	w.recent_links[3][7] = 0;
	w.count++;
	cr_assert_eq(pw__wheel_check(&w, NULL, 0), -EINVAL);
	w.count -= 2;
	cr_assert_eq(pw__wheel_check(&w, err, sizeof(err)), -EINVAL);
	w.count++;
	u[0].t.slot_when++; /* level 1 slot 14 no longer what it selects */
	cr_assert_eq(pw__wheel_check(&w, err, sizeof(err)), -EINVAL);
	u[0].t.slot_when--;
	u[0].t.deadline = u[0].t.slot_when - 1;
	cr_assert_eq(pw__wheel_check(&w, err, sizeof(err)), -EINVAL);
	u[0].t.deadline = 5000;
	u[1].t.deadline = 1001; /* in the due list but not due */
	cr_assert_eq(pw__wheel_check(&w, err, sizeof(err)), -EINVAL);
	u[1].t.deadline = 900;
	u[2].t.slot_when = B36 * 2; /* far timer off the ring tick */
	cr_assert_eq(pw__wheel_check(&w, err, sizeof(err)), -EINVAL);
	u[2].t.slot_when = B36;
	u[2].t.state = PW__TIMER_FIRED;
	cr_assert_eq(pw__wheel_check(&w, err, sizeof(err)), -EINVAL);
	u[2].t.state = PW__TIMER_PENDING;
	w.elapsed = 5000; /* slots left behind */
	cr_assert_eq(pw__wheel_check(&w, err, sizeof(err)), -EINVAL);
	w.elapsed = 1000;
	ut_check(&w);
}

Test(wheel, tick_conversions)
{
	cr_assert_eq(pw__ns_to_tick_ceil(0, 1000), 0);
	cr_assert_eq(pw__ns_to_tick_ceil(1, 1000), 1);
	cr_assert_eq(pw__ns_to_tick_ceil(999, 1000), 1);
	cr_assert_eq(pw__ns_to_tick_ceil(1000, 1000), 1);
	cr_assert_eq(pw__ns_to_tick_ceil(1001, 1000), 2);
	cr_assert_eq(pw__ns_to_tick_ceil(1500000, 1000000), 2);
	cr_assert_eq(pw__ns_to_tick_ceil(13, 7), 2);
	cr_assert_eq(pw__ns_to_tick_ceil(14, 7), 2);
	cr_assert_eq(pw__ns_to_tick_ceil(UINT64_MAX, 1), UINT64_MAX);
	cr_assert_eq(pw__ns_to_tick_ceil(UINT64_MAX, 2), UINT64_C(1) << 63);
	/* 2^64 - 1 = 1 (mod 7): rounds up. */
	cr_assert_eq(pw__ns_to_tick_ceil(UINT64_MAX, 7), UINT64_MAX / 7 + 1);
	cr_assert_eq(pw__ns_to_tick_ceil(UINT64_MAX, 1000),
		     UINT64_C(18446744073709552));
	cr_assert_eq(pw__ns_to_tick_ceil(UINT64_MAX, UINT64_MAX), 1);
	cr_assert_eq(pw__ns_to_tick_ceil(5, 0), 5);

	cr_assert_eq(pw__ns_to_tick_floor(0, 1000), 0);
	cr_assert_eq(pw__ns_to_tick_floor(999, 1000), 0);
	cr_assert_eq(pw__ns_to_tick_floor(1000, 1000), 1);
	cr_assert_eq(pw__ns_to_tick_floor(1999, 1000), 1);
	cr_assert_eq(pw__ns_to_tick_floor(13, 7), 1);
	cr_assert_eq(pw__ns_to_tick_floor(UINT64_MAX, 1), UINT64_MAX);
	cr_assert_eq(pw__ns_to_tick_floor(UINT64_MAX, 1000),
		     UINT64_C(18446744073709551));
	cr_assert_eq(pw__ns_to_tick_floor(5, 0), 5);

	cr_assert_eq(pw__tick_to_ns(3, 1000), 3000);
	cr_assert_eq(pw__tick_to_ns(UINT64_MAX / 1000, 1000),
		     UINT64_MAX / 1000 * 1000);
	cr_assert_eq(pw__tick_to_ns(UINT64_MAX / 1000 + 1, 1000), UINT64_MAX);
	cr_assert_eq(pw__tick_to_ns(UINT64_MAX, 1), UINT64_MAX);
	cr_assert_eq(pw__tick_to_ns(UINT64_MAX, 7), UINT64_MAX);
}

/* ---------------------------------------------------------------- */
/* Randomized model test.                                           */

struct mt {
	struct pw__timer t;
	bool armed;	    /* PENDING or FIRING by the model */
	bool due_next;	    /* armed due: fires at the next advance */
	uint64_t deadline;  /* model deadline (ticks) */
	uint64_t arm_epoch; /* advances started when it was armed */
	uint64_t fires;	    /* fns seen */
};

static struct model {
	struct pw__wheel w;
	struct mt tm[MAX_TIMERS];
	int nt;
	uint64_t rng;
	uint64_t seed;
	uint64_t step;
	uint64_t tick_ns;
	uint64_t now_ns;
	uint64_t advances; /* advance calls started */
	bool in_advance;
	uint64_t adv_now;	 /* effective now of the running advance */
	uint64_t adv_start;	 /* elapsed when it started */
	uint64_t last_fire_tick; /* order check within an advance */
	size_t adv_calls;	 /* fns seen in the running advance */
	int check_in_fn;	 /* run pw__wheel_check in 1 of N fns */
	uint64_t total_fires;
	uint64_t total_ops;
} M;

static uint64_t rnd(void)
{
	uint64_t z = (M.rng += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_sub(uint64_t a, uint64_t b)
{
	return a < b ? 0 : a - b;
}

#define MFAIL(...)                                                          \
	cr_assert_fail("seed %" PRIu64 " tick_ns %" PRIu64 " step %" PRIu64 \
		       ": %s",                                              \
		       M.seed, M.tick_ns, M.step, mfmt(__VA_ARGS__))

static const char *mfmt(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static const char *mfmt(const char *fmt, ...)
{
	static char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return buf;
}

static void m_check(void)
{
	char err[256];
	size_t armed = 0;
	uint64_t min = UINT64_MAX, nx;
	bool due = false;

	if (pw__wheel_check(&M.w, err, sizeof(err)))
		MFAIL("pw__wheel_check: %s", err);
	if (M.in_advance)
		return;
	for (int i = 0; i < M.nt; i++) {
		struct mt *m = &M.tm[i];

		if (m->armed) {
			armed++;
			if (m->t.state != PW__TIMER_PENDING)
				MFAIL("timer %d armed but state %u", i,
				      m->t.state);
			if (m->t.deadline != m->deadline)
				MFAIL("timer %d deadline %" PRIu64
				      " not %" PRIu64,
				      i, m->t.deadline, m->deadline);
			if (m->due_next)
				due = true;
			else if (m->deadline < min)
				min = m->deadline;
		} else if (m->t.state != PW__TIMER_IDLE &&
			   m->t.state != PW__TIMER_FIRED) {
			MFAIL("timer %d not armed but state %u", i, m->t.state);
		}
	}
	if (M.w.count != armed)
		MFAIL("count %zu, model %zu", M.w.count, armed);
	nx = pw__wheel_next(&M.w);
	if (!armed && nx != UINT64_MAX)
		MFAIL("empty but next %" PRIu64, nx);
	if (due && nx != M.w.elapsed)
		MFAIL("due timer but next %" PRIu64 " elapsed %" PRIu64, nx,
		      M.w.elapsed);
	if (armed && !due && (nx <= M.w.elapsed || nx > min))
		MFAIL("next %" PRIu64 " not in (elapsed %" PRIu64
		      ", min deadline %" PRIu64 "]",
		      nx, M.w.elapsed, min);
}

/* Arm timer @i for @deadline through insert or reset, model in step. */
static void m_arm(int i, uint64_t deadline, bool reset)
{
	struct mt *m = &M.tm[i];

	m->armed = true;
	m->deadline = deadline;
	m->due_next = deadline <= M.w.elapsed;
	m->arm_epoch = M.advances;
	if (reset)
		pw__wheel_reset(&M.w, &m->t, deadline);
	else
		pw__wheel_insert(&M.w, &m->t, deadline);
	if (m->t.deadline != deadline || m->t.state != PW__TIMER_PENDING)
		MFAIL("timer %d armed for %" PRIu64 ": deadline %" PRIu64
		      " state %u",
		      i, deadline, m->t.deadline, m->t.state);
}

static void m_cancel(int i)
{
	struct mt *m = &M.tm[i];
	bool r = pw__wheel_cancel(&M.w, &m->t);

	if (r != m->armed)
		MFAIL("cancel of timer %d returned %d, armed %d", i, r,
		      m->armed);
	m->armed = false;
	if (m->t.state != PW__TIMER_IDLE && m->t.state != PW__TIMER_FIRED)
		MFAIL("cancelled timer %d in state %u", i, m->t.state);
}

static void m_fn(struct pw__timer *t)
{
	struct mt *m = pw_container_of(t, struct mt, t);
	int i = (int)(m - M.tm);
	uint64_t tick = M.w.elapsed, want;

	if (!M.in_advance)
		MFAIL("timer %d fired outside advance", i);
	if (!m->armed)
		MFAIL("timer %d fired but not armed (cancelled or fired)", i);
	if (t->state != PW__TIMER_FIRED)
		MFAIL("timer %d fn in state %u", i, t->state);
	if (m->due_next) {
		if (m->arm_epoch >= M.advances)
			MFAIL("timer %d armed due in this advance fired in it",
			      i);
		want = M.adv_start;
	} else {
		if (m->deadline > M.adv_now)
			MFAIL("timer %d deadline %" PRIu64
			      " fired early, now %" PRIu64,
			      i, m->deadline, M.adv_now);
		want = m->deadline;
	}
	if (tick != want)
		MFAIL("timer %d (deadline %" PRIu64 ") fired at tick %" PRIu64
		      ", want %" PRIu64,
		      i, m->deadline, tick, want);
	if (tick < M.last_fire_tick)
		MFAIL("timer %d fired at %" PRIu64 " after one at %" PRIu64, i,
		      tick, M.last_fire_tick);
	M.last_fire_tick = tick;
	m->armed = false;
	m->fires++;
	M.adv_calls++;
	M.total_fires++;

	if (M.check_in_fn && rnd() % M.check_in_fn == 0)
		m_check();
	/* Sometimes act on a random timer (maybe this one) from the fn. */
	switch (rnd() % 16) {
	case 0:
	case 1: {
		int j = (int)(rnd() % M.nt);
		uint64_t d = rnd() % 4 ? sat_add(tick, rnd() % 300) :
					 sat_sub(tick, rnd() % 3);

		m_arm(j, d, rnd() & 1);
		break;
	}
	case 2:
		m_cancel((int)(rnd() % M.nt));
		break;
	case 3:
		m_arm(i, sat_add(tick, 1 + rnd() % 70), false);
		break;
	default:
		break;
	}
}

static uint64_t m_rand_deadline(void)
{
	uint64_t r = rnd() % 100, tk = M.tick_ns, ns;

	if (r < 4)
		ns = sat_sub(M.now_ns, rnd() % (100 * tk + 1));
	else if (r < 8)
		ns = M.now_ns;
	else if (r < 40)
		ns = sat_add(M.now_ns, rnd() % (64 * tk));
	else if (r < 65)
		ns = sat_add(M.now_ns, rnd() % (4096 * tk));
	else if (r < 80)
		ns = sat_add(M.now_ns, rnd() % ((UINT64_C(1) << 24) * tk));
	else if (r < 88)
		ns = sat_add(M.now_ns, rnd() % ((UINT64_C(1) << 38) * tk));
	else if (r < 95)
		ns = sat_add(M.now_ns, rnd() >> (rnd() % 64));
	else if (r < 98)
		ns = UINT64_MAX - rnd() % (1000 * tk);
	else
		ns = UINT64_MAX;
	return pw__ns_to_tick_ceil(ns, tk);
}

static void m_restart(void)
{
	uint64_t tk = M.tick_ns, start;

	switch (rnd() % 5) {
	case 0:
		start = 0;
		break;
	case 1: /* just before a 2^36 block boundary */
		start = sat_add((B36 - rnd() % 5000) * tk,
				(rnd() % 8) * B36 * tk);
		break;
	case 2:
		start = rnd() >> (rnd() % 64);
		break;
	case 3: /* close to the end of time */
		start = UINT64_MAX - rnd() % ((UINT64_C(1) << 40) * tk);
		break;
	default:
		start = rnd() % ((UINT64_C(1) << 36) * tk);
		break;
	}
	M.now_ns = start;
	pw__wheel_init(&M.w, pw__ns_to_tick_floor(start, tk));
	for (int i = 0; i < M.nt; i++) {
		pw__timer_init(&M.tm[i].t, m_fn);
		M.tm[i].armed = false;
	}
}

static void m_advance(void)
{
	uint64_t r = rnd() % 100, tk = M.tick_ns, arg, nx;
	size_t calls;

	if (r < 45) {
		M.now_ns = sat_add(M.now_ns, rnd() % (64 * tk));
	} else if (r < 70) {
		M.now_ns = sat_add(M.now_ns, rnd() % (8192 * tk));
	} else if (r < 85) {
		/* Exactly to the next event, or one tick short of it. */
		nx = pw__wheel_next(&M.w);
		if (nx != UINT64_MAX) {
			if (rnd() & 1 && nx > M.w.elapsed)
				nx--;
			if (pw__tick_to_ns(nx, tk) > M.now_ns)
				M.now_ns = pw__tick_to_ns(nx, tk);
		}
	} else if (r < 96) {
		M.now_ns =
			sat_add(M.now_ns, rnd() % ((UINT64_C(1) << 30) * tk));
	} else {
		M.now_ns = sat_add(M.now_ns, rnd() >> (rnd() % 64));
	}
	arg = pw__ns_to_tick_floor(M.now_ns, tk);
	if (arg < M.w.elapsed)
		MFAIL("clock went back: %" PRIu64 " < %" PRIu64, arg,
		      M.w.elapsed);
	M.advances++;
	M.in_advance = true;
	M.adv_now = arg;
	M.adv_start = M.w.elapsed;
	M.last_fire_tick = 0;
	M.adv_calls = 0;
	if (rnd() % 50 == 0 && M.w.elapsed > 0) { /* a stale now */
		arg = M.w.elapsed - 1 - rnd() % M.w.elapsed;
		M.adv_now = M.w.elapsed;
	}
	calls = pw__wheel_advance(&M.w, arg);
	M.in_advance = false;
	if (calls != M.adv_calls)
		MFAIL("advance returned %zu, %zu fns ran", calls, M.adv_calls);
	if (M.w.elapsed != M.adv_now)
		MFAIL("elapsed %" PRIu64 " after advance to %" PRIu64,
		      M.w.elapsed, M.adv_now);
	for (int i = 0; i < M.nt; i++) {
		struct mt *m = &M.tm[i];

		if (!m->armed)
			continue;
		if (m->due_next && m->arm_epoch < M.advances)
			MFAIL("timer %d armed due did not fire", i);
		if (!m->due_next && m->deadline <= M.adv_now)
			MFAIL("timer %d deadline %" PRIu64
			      " did not fire by %" PRIu64,
			      i, m->deadline, M.adv_now);
	}
	if (M.now_ns == UINT64_MAX) {
		/* End of time: all fired but ticks past the last whole one. */
		for (int i = 0; i < M.nt; i++)
			if (M.tm[i].armed)
				m_cancel(i);
		m_restart();
	}
}

/*
 * Run @ops random operations on @nt timers with @tick_ns ticks, checking
 * all invariants every @check_every steps (and in 1 of @check_in_fn fns).
 */
static void model_run(uint64_t seed, uint64_t tick_ns, int nt, uint64_t ops,
		      uint64_t check_every, int check_in_fn)
{
	memset(&M, 0, sizeof(M));
	M.seed = seed;
	M.rng = seed;
	M.tick_ns = tick_ns;
	M.nt = nt;
	M.check_in_fn = check_in_fn;
	m_restart();
	for (M.step = 0; M.step < ops; M.step++) {
		uint64_t r = rnd() % 100;
		int i = (int)(rnd() % (uint64_t)nt);

		if (r < 30)
			m_arm(i, m_rand_deadline(), false);
		else if (r < 48)
			m_arm(i, m_rand_deadline(), true);
		else if (r < 52) /* reset later than its deadline */
			m_arm(i, sat_add(M.tm[i].deadline, rnd() % 5000), true);
		else if (r < 65)
			m_cancel(i);
		else
			m_advance();
		if (M.step % check_every == 0)
			m_check();
	}
	m_check();
	/* Drain: every armed timer with a reachable deadline fires. */
	M.now_ns = UINT64_MAX;
	M.advances++;
	M.in_advance = true;
	M.adv_now = pw__ns_to_tick_floor(UINT64_MAX, tick_ns);
	M.adv_start = M.w.elapsed;
	M.last_fire_tick = 0;
	M.adv_calls = 0;
	if (pw__wheel_advance(&M.w, M.adv_now) != M.adv_calls)
		MFAIL("final advance count mismatch");
	M.in_advance = false;
	m_check();
	cr_assert_gt(M.total_fires, ops / 20,
		     "seed %" PRIu64 ": only %" PRIu64 " fires in %" PRIu64
		     " ops",
		     seed, M.total_fires, ops);
}

static const uint64_t seeds[] = { 1, 0x5eed, 0xdeadbeef, 42, 0x123456789abcdef,
				  7 };

static uint64_t scaled(uint64_t n)
{
	double v = (double)n * pw_test_scale();

	return v < 1000 ? 1000 : (uint64_t)v;
}

/* Smaller runs with the invariant checker after every single step. */
Test(wheel, model_checked_every_step)
{
	pw_test_time_limit(300);
	const uint64_t ticks[] = { 1000, 1000000, 7, 1 };

	for (int k = 0; k < 4; k++)
		for (int s = 0; s < 2; s++)
			model_run(seeds[s] + k, ticks[k], 64, scaled(100000), 1,
				  4);
}

static void model_big(uint64_t tick_ns)
{
	for (int s = 0; s < 6; s++)
		model_run(seeds[s] * 31 + tick_ns, tick_ns,
			  s & 1 ? 48 : MAX_TIMERS, scaled(600000), 97, 0);
}

Test(wheel, model_tick_1us)
{
	pw_test_time_limit(300);
	model_big(1000);
}

Test(wheel, model_tick_1ms)
{
	pw_test_time_limit(300);
	model_big(1000000);
}

Test(wheel, model_tick_7ns)
{
	pw_test_time_limit(300);
	model_big(7);
}

Test(wheel, model_tick_1ns)
{
	pw_test_time_limit(300);
	model_big(1);
}
