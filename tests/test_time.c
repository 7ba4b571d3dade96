/* SPDX-License-Identifier: MIT */
/*
 * test_time.c - sleeps, deadlines and the clocks: exact virtual times
 * under the paused clock (one and two shards), resets, cancels, bad
 * input, and the real clock bounding the shard's kernel wait.
 */
#include <errno.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "tests/common.h"

#define MS PW_NSEC_PER_MSEC
#define US PW_NSEC_PER_USEC

/* Sleep for ns, return the time at which it completed. */
struct napper {
	uint64_t ns;
	bool init;
	struct pw_sleep sl;
	uint64_t at;	 /* absolute deadline instead of ns, when set */
	pw_time_t start; /* pw_time_now() when the sleep was made */
};

static enum pw_poll napper_poll(struct pw_cx *cx, void *state)
{
	struct napper *n = state;
	if (!n->init) {
		n->start = pw_time_now();
		if (n->at)
			pw_sleep_init_at(&n->sl, n->at);
		else
			pw_sleep_init(&n->sl, n->ns);
		n->init = true;
	}
	if (pw_sleep_poll(cx, &n->sl) == PW_PENDING)
		return PW_PENDING;
	cr_assert(pw_sleep_is_elapsed(&n->sl));
	return pw_ready(cx, pw_time_now());
}

static void napper_drop(void *state)
{
	struct napper *n = state;
	pw_sleep_cancel(&n->sl);
}

Test(time, paused_sleep_1500us_takes_exactly_2ms)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct napper n = { .ns = 1500 * US };
	cr_assert_eq(pw_test_block_on(rt, napper_poll, &n), (int64_t)(2 * MS));
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(time, zero_sleep_is_ready_at_once)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct napper n = { .ns = 0 };
	cr_assert_eq(pw_test_block_on(rt, napper_poll, &n), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Several sleepers: exact completion order and virtual times. */
struct many {
	int step, done;
	struct pw_join j[5];
	int64_t t[5];
};

static const uint64_t durations[5] = { 5 * MS, 3 * MS, 3 * MS, 10 * MS,
				       1 * MS };

static int order[5], norder;

static enum pw_poll ordered_napper(struct pw_cx *cx, void *state)
{
	struct napper *n = state;
	enum pw_poll r = napper_poll(cx, state);
	if (r == PW_READY)
		order[norder++] = (int)(n->ns / MS);
	return r;
}

static enum pw_poll many_poll(struct pw_cx *cx, void *state)
{
	struct many *m = state;
	if (m->step == 0) {
		for (int i = 0; i < 5; i++) {
			struct napper n = { .ns = durations[i] };
			cr_assert_eq(pw_spawn(&m->j[i], ordered_napper, &n,
					      sizeof(n), napper_drop),
				     0);
		}
		m->step = 1;
	}
	for (; m->done < 5; m->done++)
		if (pw_join_poll(cx, &m->j[m->done], &m->t[m->done]) ==
		    PW_PENDING)
			return PW_PENDING;
	return pw_ready(cx, pw_time_now());
}

Test(time, paused_sleepers_finish_in_deadline_order_at_exact_times)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct many m = { 0 };
	cr_assert_eq(pw_test_block_on(rt, many_poll, &m), (int64_t)(10 * MS));
	for (int i = 0; i < 5; i++)
		cr_assert_eq(m.t[i], (int64_t)durations[i],
			     "sleeper %d at %lld", i, (long long)m.t[i]);
	const int want[] = { 1, 3, 3, 5, 10 };
	cr_assert_eq(norder, 5);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(order[i], want[i]);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Two shards, each with its own sleepers: one virtual clock. */
static _Atomic int64_t shard1_done_at = -1;

static enum pw_poll remote_napper(struct pw_cx *cx, void *state)
{
	enum pw_poll r = napper_poll(cx, state);
	if (r == PW_READY) {
		cr_assert_eq(pw_shard_id(), 1);
		atomic_store(&shard1_done_at, cx->result);
	}
	return r;
}

struct two {
	int step;
	struct napper n;
};

static enum pw_poll two_poll(struct pw_cx *cx, void *state)
{
	struct two *t = state;
	if (t->step == 0) {
		t->n = (struct napper){ .ns = 4 * MS };
		t->step = 1;
	}
	if (napper_poll(cx, &t->n) == PW_PENDING)
		return PW_PENDING;
	if (t->step == 1)
		cr_assert_eq(pw_time_now(), 4 * MS);
	t->step = 2;
	/* Wait for shard 1's sleeper, 7 ms, in 1 ms naps. */
	if (atomic_load(&shard1_done_at) < 0) {
		t->n = (struct napper){ .ns = 1 * MS };
		return pw_yield(cx);
	}
	return pw_ready(cx, atomic_load(&shard1_done_at));
}

Test(time, paused_clock_spans_shards)
{
	struct pw_runtime *rt = pw_test_paused_runtime(2);
	struct napper n = { .ns = 7 * MS };
	cr_assert_eq(pw_runtime_spawn(rt, 1, remote_napper, &n, sizeof(n),
				      napper_drop),
		     0);
	struct two t = { 0 };
	cr_assert_eq(pw_test_block_on(rt, two_poll, &t), (int64_t)(7 * MS));
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* pw_time_advance, resets and cancels, step by step. */
struct script {
	int step;
	struct pw_sleep a, b;
	int64_t at[8];
};

static enum pw_poll script_poll(struct pw_cx *cx, void *state)
{
	struct script *s = state;
	switch (s->step) {
	case 0:
		cr_assert_eq(pw_time_now(), 0);
		pw_sleep_init(&s->a, 10 * MS);
		cr_assert_eq(pw_sleep_poll(cx, &s->a), PW_PENDING);
		/* Later: only the deadline moves. */
		pw_sleep_reset(&s->a, 20 * MS);
		cr_assert_eq(pw_sleep_deadline(&s->a), 20 * MS);
		s->step = 1;
		/* fall through */
	case 1:
		if (pw_sleep_poll(cx, &s->a) == PW_PENDING)
			return PW_PENDING;
		s->at[0] = pw_time_now(); /* 20 ms */
		/* Re-arm a fired sleep, then move it earlier. */
		pw_sleep_reset(&s->a, 50 * MS);
		cr_assert(!pw_sleep_is_elapsed(&s->a));
		cr_assert_eq(pw_sleep_poll(cx, &s->a), PW_PENDING);
		pw_sleep_reset(&s->a, 23 * MS);
		s->step = 2;
		/* fall through */
	case 2:
		if (pw_sleep_poll(cx, &s->a) == PW_PENDING)
			return PW_PENDING;
		s->at[1] = pw_time_now(); /* 23 ms */
		/* Cancel: twice is harmless; the other sleep fires. */
		pw_sleep_reset(&s->a, 30 * MS);
		cr_assert_eq(pw_sleep_poll(cx, &s->a), PW_PENDING);
		cr_assert_eq(pw_sleep_cancel(&s->a), 0);
		cr_assert_eq(pw_sleep_cancel(&s->a), -EALREADY);
		pw_sleep_init(&s->b, 12 * MS);
		s->step = 3;
		/* fall through */
	case 3:
		if (pw_sleep_poll(cx, &s->b) == PW_PENDING)
			return PW_PENDING;
		s->at[2] = pw_time_now(); /* 35 ms: the cancelled 30 is gone */
		/* pw_time_advance: the caller sees the new time at once;
		 * an armed sleep already due fires on the next turn. */
		pw_sleep_init(&s->a, 5 * MS);
		cr_assert_eq(pw_sleep_poll(cx, &s->a), PW_PENDING);
		cr_assert_eq(pw_time_advance(100 * MS), 0);
		s->at[3] = pw_time_now(); /* 135 ms */
		s->step = 4;
		return PW_PENDING; /* the wheel wakes us */
	case 4:
		if (pw_sleep_poll(cx, &s->a) == PW_PENDING)
			return PW_PENDING;
		s->at[4] = pw_time_now(); /* 135 ms */
		/* A deadline in the past, reset while armed: next turn. */
		pw_sleep_init(&s->b, 10 * MS);
		cr_assert_eq(pw_sleep_poll(cx, &s->b), PW_PENDING);
		pw_sleep_reset(&s->b, 1 * MS);
		s->step = 5;
		return PW_PENDING;
	default:
		if (pw_sleep_poll(cx, &s->b) == PW_PENDING)
			return PW_PENDING;
		s->at[5] = pw_time_now(); /* 135 ms still */
		/* A past deadline at first poll: ready at once. */
		pw_sleep_init_at(&s->a, 2 * MS);
		cr_assert_eq(pw_sleep_poll(cx, &s->a), PW_READY);
		return pw_ready(cx, 0);
	}
}

Test(time, reset_cancel_and_advance_exact_times)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static struct script s;
	pw_test_block_on(rt, script_poll, &s);
	const int64_t want[] = { 20 * MS,  23 * MS,  35 * MS,
				 135 * MS, 135 * MS, 135 * MS };
	for (int i = 0; i < 6; i++)
		cr_assert_eq(s.at[i], want[i], "step %d at %lld", i,
			     (long long)s.at[i]);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* A task dropped while its sleep is armed and nothing cancels it: the
 * task's memory waits for the timer; nothing dangles. */
static enum pw_poll careless_poll(struct pw_cx *cx, void *state)
{
	struct napper *n = state;
	if (!n->init) {
		pw_sleep_init(&n->sl, n->ns);
		n->init = true;
	}
	return pw_sleep_poll(cx, &n->sl);
}

struct dropper {
	int step;
	struct pw_join j;
};

static enum pw_poll dropper_poll(struct pw_cx *cx, void *state)
{
	struct dropper *d = state;
	if (d->step == 0) {
		struct napper n = { .ns = 50 * MS };
		pw_spawn(&d->j, careless_poll, &n, sizeof(n), NULL);
		d->step = 1;
		return pw_yield(cx);
	}
	if (d->step == 1) {
		pw_join_abort(&d->j);
		d->step = 2;
	}
	int64_t v;
	if (pw_join_poll(cx, &d->j, &v) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, v);
}

Test(time, dropped_task_keeps_memory_until_its_timer_fires)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct dropper d = { 0 };
	cr_assert_eq(pw_test_block_on(rt, dropper_poll, &d), -ECANCELED);
	/* A later sleep moves the clock past 50 ms: the orphaned entry
	 * fires there, then its memory goes. */
	struct napper n = { .at = 100 * MS };
	cr_assert_eq(pw_test_block_on(rt, napper_poll, &n),
		     (int64_t)(100 * MS));
	struct pw_shard_stats st = pw_test_wait_live(rt, 0, 0);
	cr_assert_eq(st.timers_fired, 2);
	cr_assert_eq(st.live_tasks, 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/*
 * The real clock is read at most once per loop turn, at its first use:
 * 1000 turns (batch 1, one task yielding) read it 0 times with no timer
 * and no task asking the time, exactly 1000 times when the task asks
 * twice per poll, and exactly 1000 times when a timer is armed (the turn
 * reads it to fire timers).
 */
struct turner {
	struct pw_runtime *rt;
	int phase, n;
	uint64_t mark;
	uint64_t reads[3];
	struct pw_sleep sl;
};

static uint64_t clock_reads(struct pw_runtime *rt)
{
	struct pw_shard_stats st;

	cr_assert_eq(pw_runtime_stats(rt, 0, &st), 0);
	return st.clock_reads;
}

static enum pw_poll turner_poll(struct pw_cx *cx, void *state)
{
	struct turner *t = state;

	if (t->n == 0)
		t->mark = clock_reads(t->rt);
	if (t->n == 1000) {
		t->reads[t->phase] = clock_reads(t->rt) - t->mark;
		t->n = 0;
		if (t->phase == 2) {
			pw_sleep_cancel(&t->sl);
			return pw_ready(cx, 0);
		}
		t->phase++;
		t->mark = clock_reads(t->rt);
		if (t->phase == 2) {
			/* Arm an hour-long timer; the reads of this turn are
			 * counted from the next one on. */
			pw_sleep_init(&t->sl, 3600 * PW_NSEC_PER_SEC);
			cr_assert_eq(pw_sleep_poll(cx, &t->sl), PW_PENDING);
			return pw_yield(cx);
		}
	}
	if (t->phase == 1) {
		pw_time_t a = pw_time_now(), b = pw_time_now();
		cr_assert_eq(a, b, "one turn, one now");
	}
	t->n++;
	return pw_yield(cx);
}

Test(time, real_clock_is_read_once_per_turn_and_only_when_used)
{
	PW_TEST_SHARD_ONLY(); /* stealing mode turns once per 61 polls */
	struct pw_config cfg;
	struct pw_runtime *rt;

	pw_test_config_init(&cfg);
	cfg.shards = 1;
	cfg.batch = 1; /* one poll per loop turn */
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	struct turner t = { .rt = rt };
	cr_assert_eq(pw_test_block_on(rt, turner_poll, &t), 0);
	cr_assert_eq(t.reads[0], 0, "no timer, no asking: %llu reads",
		     (unsigned long long)t.reads[0]);
	cr_assert_eq(t.reads[1], 1000, "asking twice a turn: %llu reads",
		     (unsigned long long)t.reads[1]);
	cr_assert_eq(t.reads[2], 1000, "a timer armed: %llu reads",
		     (unsigned long long)t.reads[2]);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/*
 * On the real clock a sleep of d ends when the shard's clock reads at
 * least d after the now it was made at. That now is the turn's, read at
 * most once per turn (pinwheel/time.h), so it may be older than a clock
 * read outside the shard just before the spawn: the promise is kept in
 * the shard's time, which is what the test measures.
 */
Test(time, real_clock_sleep_is_never_early)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	for (int i = 0; i < 5; i++) {
		struct napper n = { .ns = (uint64_t)(3 + i) * MS };
		int64_t at = pw_test_block_on(rt, napper_poll, &n);
		cr_assert_geq(at - (int64_t)n.start, (int64_t)n.ns,
			      "made at %lld ns, woke at %lld ns",
			      (long long)n.start, (long long)at);
	}
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/*
 * A shard waiting in the kernel for a far timer (twice the bound of a
 * test's waits) is given a 10 ms sleeper: it must wake for that one. The
 * long sleeper records the shard's kernel-wait count when its timer is
 * armed; the test waits until the shard has gone to wait after that,
 * then spawns the short sleeper and waits for it to finish, with the
 * long one still pending.
 */
static struct pw_runtime *wait_rt;
static _Atomic uint64_t long_armed_waits = UINT64_MAX;
static _Atomic bool short_done;

static uint64_t kernel_waits(struct pw_runtime *rt)
{
	struct pw_shard_stats st;

	cr_assert_eq(pw_runtime_stats(rt, 0, &st), 0);
	return st.kernel_waits;
}

static enum pw_poll long_napper_poll(struct pw_cx *cx, void *state)
{
	enum pw_poll r = napper_poll(cx, state);

	cr_assert_eq(r, PW_PENDING, "the far timer fired");
	if (atomic_load(&long_armed_waits) == UINT64_MAX)
		atomic_store(&long_armed_waits, kernel_waits(wait_rt));
	return r;
}

static enum pw_poll short_napper_poll(struct pw_cx *cx, void *state)
{
	enum pw_poll r = napper_poll(cx, state);

	if (r == PW_READY)
		atomic_store(&short_done, true);
	return r;
}

Test(time, earlier_timer_shortens_the_wait)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_shard_stats st;
	uint64_t armed;

	wait_rt = rt;
	struct napper longn = { .ns = 2 * PW_TEST_WAIT_SECS * PW_NSEC_PER_SEC };
	cr_assert_eq(pw_runtime_spawn(rt, 0, long_napper_poll, &longn,
				      sizeof(longn), napper_drop),
		     0);
	PW_TEST_WAIT_UNTIL(
		(armed = atomic_load(&long_armed_waits)) != UINT64_MAX,
		PW_TEST_WAIT_SECS, "the long sleeper was never polled");
	PW_TEST_WAIT_UNTIL(kernel_waits(rt) > armed, PW_TEST_WAIT_SECS,
			   "the shard never waited in the kernel after the "
			   "far timer was armed (%llu waits)",
			   (unsigned long long)armed);
	struct napper n = { .ns = 10 * MS };
	cr_assert_eq(pw_runtime_spawn(rt, 0, short_napper_poll, &n, sizeof(n),
				      napper_drop),
		     0);
	PW_TEST_WAIT_UNTIL(atomic_load(&short_done), PW_TEST_WAIT_SECS,
			   "the 10 ms sleep did not end while the shard "
			   "waited for a %d s timer",
			   2 * PW_TEST_WAIT_SECS);
	cr_assert_eq(pw_runtime_stats(rt, 0, &st), 0);
	cr_assert_eq(st.timers_fired, 1,
		     "%llu timers fired, want the short "
		     "one only",
		     (unsigned long long)st.timers_fired);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/*
 * pw_sleep_reset_after moves the deadline to the shard's now + ns, in
 * each state: armed (earlier re-files, later only moves), fired and
 * cancelled (pending again, registered at the next poll), a deadline of
 * now (fires on the next turn and wakes the task), a sub-tick delay
 * (fires at the next tick), and a far delay (saturates to "never").
 */
struct reset_script {
	int step;
	struct pw_sleep s;
	int64_t at[6];
};

static enum pw_poll reset_after_poll(struct pw_cx *cx, void *state)
{
	struct reset_script *r = state;

	switch (r->step) {
	case 0:
		cr_assert_eq(pw_time_advance(5 * MS), 0);
		pw_sleep_init(&r->s, 10 * MS);
		cr_assert_eq(pw_sleep_deadline(&r->s), 15 * MS);
		cr_assert_eq(pw_sleep_poll(cx, &r->s), PW_PENDING);
		/* Armed, earlier: 5 + 3. */
		pw_sleep_reset_after(&r->s, 3 * MS);
		cr_assert_eq(pw_sleep_deadline(&r->s), 8 * MS);
		r->step = 1;
		return PW_PENDING; /* the wheel wakes us */
	case 1:
		if (pw_sleep_poll(cx, &r->s) == PW_PENDING)
			return PW_PENDING;
		r->at[0] = pw_time_now(); /* 8 ms */
		/* Fired: pending again, 8 + 4; then armed, later: 8 + 20. */
		pw_sleep_reset_after(&r->s, 4 * MS);
		cr_assert_eq(pw_sleep_deadline(&r->s), 12 * MS);
		cr_assert_not(pw_sleep_is_elapsed(&r->s));
		cr_assert_eq(pw_sleep_cancel(&r->s), -EALREADY,
			     "not armed before its next poll");
		cr_assert_eq(pw_sleep_poll(cx, &r->s), PW_PENDING);
		pw_sleep_reset_after(&r->s, 20 * MS);
		cr_assert_eq(pw_sleep_deadline(&r->s), 28 * MS);
		r->step = 2;
		return PW_PENDING;
	case 2:
		if (pw_sleep_poll(cx, &r->s) == PW_PENDING)
			return PW_PENDING;
		r->at[1] = pw_time_now(); /* 28 ms, not 12 */
		/* Cancelled: pending again from now, 28 + 7. */
		pw_sleep_reset_after(&r->s, 2 * MS);
		cr_assert_eq(pw_sleep_poll(cx, &r->s), PW_PENDING);
		cr_assert_eq(pw_sleep_cancel(&r->s), 0);
		pw_sleep_reset_after(&r->s, 7 * MS);
		cr_assert_eq(pw_sleep_deadline(&r->s), 35 * MS);
		cr_assert_eq(pw_sleep_poll(cx, &r->s), PW_PENDING);
		r->step = 3;
		return PW_PENDING;
	case 3:
		if (pw_sleep_poll(cx, &r->s) == PW_PENDING)
			return PW_PENDING;
		r->at[2] = pw_time_now(); /* 35 ms */
		/* Armed, reset to now: fires on the next turn. */
		pw_sleep_reset_after(&r->s, 50 * MS);
		cr_assert_eq(pw_sleep_poll(cx, &r->s), PW_PENDING);
		pw_sleep_reset_after(&r->s, 0);
		cr_assert_eq(pw_sleep_deadline(&r->s), 35 * MS);
		r->step = 4;
		return PW_PENDING; /* only the wheel can wake us */
	case 4:
		if (pw_sleep_poll(cx, &r->s) == PW_PENDING)
			return PW_PENDING;
		r->at[3] = pw_time_now(); /* 35 ms still */
		/* Sub-tick: 35 + 1.5 rounds up to the 37 ms tick. */
		pw_sleep_reset_after(&r->s, 1500 * US);
		cr_assert_eq(pw_sleep_deadline(&r->s), 36500 * US);
		cr_assert_eq(pw_sleep_poll(cx, &r->s), PW_PENDING);
		r->step = 5;
		return PW_PENDING;
	default:
		if (pw_sleep_poll(cx, &r->s) == PW_PENDING)
			return PW_PENDING;
		r->at[4] = pw_time_now(); /* 37 ms */
		/* Saturates: never. */
		pw_sleep_reset_after(&r->s, UINT64_MAX);
		cr_assert_eq(pw_sleep_deadline(&r->s), PW_TIME_NEVER);
		cr_assert_eq(pw_sleep_poll(cx, &r->s), PW_PENDING);
		cr_assert_eq(pw_sleep_cancel(&r->s), 0);
		r->at[5] = pw_time_now();
		return pw_ready(cx, 0);
	}
}

Test(time, sleep_reset_after_counts_from_the_shards_now)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static struct reset_script r;
	struct pw_shard_stats st;

	pw_test_block_on(rt, reset_after_poll, &r);
	const int64_t want[] = { 8 * MS,  28 * MS, 35 * MS,
				 35 * MS, 37 * MS, 37 * MS };
	for (int i = 0; i < 6; i++)
		cr_assert_eq(r.at[i], want[i], "step %d at %lld", i,
			     (long long)r.at[i]);
	/* 8, 28, 35, 35 and 37 ms fired; the cancelled ones did not. */
	cr_assert_eq(pw_runtime_stats(rt, 0, &st), 0);
	cr_assert_eq(st.timers_fired, 5, "%llu timers fired",
		     (unsigned long long)st.timers_fired);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/*
 * pw_deadline_remaining under the paused clock: the exact ns left as
 * time moves (by a sleep and by pw_time_advance, to 1 ns before the
 * deadline, onto it and past it), 0 once passed, and a "never"
 * deadline's remainder.
 */
static enum pw_poll remaining_poll(struct pw_cx *cx, void *state)
{
	struct napper *n = state;
	static struct pw_deadline d;

	if (!n->init) {
		d = pw_deadline_after(10 * MS);
		cr_assert_eq(d.at, 10 * MS);
		cr_assert_eq(pw_deadline_remaining(d), 10 * MS);
		cr_assert_not(pw_deadline_expired(d));
	}
	if (napper_poll(cx, n) == PW_PENDING) /* 4 ms */
		return PW_PENDING;
	cr_assert_eq(pw_time_now(), 4 * MS);
	cr_assert_eq(pw_deadline_remaining(d), 6 * MS);
	cr_assert_eq(pw_time_advance(6 * MS - 1), 0);
	cr_assert_eq(pw_deadline_remaining(d), 1);
	cr_assert_not(pw_deadline_expired(d));
	cr_assert_eq(pw_time_advance(1), 0);
	cr_assert_eq(pw_deadline_remaining(d), 0);
	cr_assert(pw_deadline_expired(d));
	cr_assert_eq(pw_time_advance(5 * MS), 0);
	cr_assert_eq(pw_deadline_remaining(d), 0, "passed: 0, not a wrap");
	/* A deadline from a later now, and "never". */
	struct pw_deadline e = pw_deadline_after(3 * MS);
	cr_assert_eq(e.at, 18 * MS);
	cr_assert_eq(pw_deadline_remaining(e), 3 * MS);
	struct pw_deadline never = pw_deadline_after(UINT64_MAX);
	cr_assert_eq(pw_deadline_remaining(never), PW_TIME_NEVER - 15 * MS);
	return pw_ready(cx, pw_time_now());
}

Test(time, deadline_remaining_is_exact_under_the_paused_clock)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct napper n = { .ns = 4 * MS };

	cr_assert_eq(pw_test_block_on(rt, remaining_poll, &n),
		     (int64_t)(15 * MS));
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

static enum pw_poll bad_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	cr_assert_eq(pw_sleep_poll(cx, NULL), PW_READY);
	cr_assert_eq(pw_sleep_poll(NULL, NULL), PW_READY);
	cr_assert_eq(pw_sleep_cancel(NULL), -EINVAL);
	struct pw_sleep s;
	pw_sleep_init(&s, 5 * MS);
	cr_assert_eq(pw_sleep_cancel(&s), -EALREADY, "never polled");
	pw_sleep_init(NULL, 1);
	pw_sleep_init_at(NULL, 1);
	pw_sleep_reset(NULL, 1);
	cr_assert_eq(pw_sleep_deadline(NULL), PW_TIME_NEVER);
	cr_assert(!pw_sleep_is_elapsed(NULL));
	cr_assert_eq(pw_time_advance(1), -EPERM, "real clock");
	/* Far deadlines do not overflow. */
	pw_sleep_init(&s, UINT64_MAX);
	cr_assert_eq(pw_sleep_deadline(&s), PW_TIME_NEVER);
	cr_assert_eq(pw_sleep_poll(cx, &s), PW_PENDING);
	cr_assert_eq(pw_sleep_cancel(&s), 0);
	struct pw_deadline d = pw_deadline_after(UINT64_MAX);
	cr_assert_eq(d.at, PW_TIME_NEVER);
	cr_assert(!pw_deadline_expired(d));
	d = pw_deadline_after(0);
	cr_assert(pw_deadline_expired(d));
	cr_assert_eq(pw_deadline_remaining(d), 0);
	return pw_ready(cx, 0);
}

Test(time, bad_input)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	pw_test_block_on(rt, bad_poll, NULL);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	pw_time_t now = 7;
	cr_assert_eq(pw_time_now(), 0, "off a shard: the start");
	cr_assert_eq(pw_time_get(&now), -EPERM);
	cr_assert_eq(now, 7, "left untouched");
	cr_assert_eq(pw_time_get(NULL), -EINVAL);
	cr_assert_eq(pw_time_advance(1), -EPERM);
	struct pw_deadline d = pw_deadline_after(5);
	cr_assert_eq(d.at, PW_TIME_NEVER, "no shard: never");
}
