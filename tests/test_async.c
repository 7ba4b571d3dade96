/* SPDX-License-Identifier: MIT */
/*
 * test_async.c - the straight-line macros of pinwheel/async.h: the exact
 * order of steps across awaits, an await ready at once (no suspension),
 * outputs delivered through joins and channels, a yield that yields
 * exactly once, return values, a timeline on the paused clock, and the
 * macros in tasks run by pw_block_on() and spawned with pw_spawn().
 */
#include <errno.h>
#include <string.h>

#include "tests/common.h"
#include "pinwheel/async.h"
#include "pinwheel/channel.h"
#include "pinwheel/combinators.h"

#define MS PW_NSEC_PER_MSEC

static int64_t now_ms(void)
{
	return (int64_t)(pw_time_now() / MS);
}

/* ---- a poll that is pending @n times (waking itself), then ready ------ */

struct gate {
	int left;  /* pending polls still to give */
	int polls; /* polls seen */
};

static enum pw_poll gate_poll(struct pw_cx *cx, struct gate *g)
{
	g->polls++;
	if (g->left == 0)
		return PW_READY;
	g->left--;
	struct pw_waker w = pw_cx_waker(cx);
	pw_waker_wake_by_ref(&w);
	return PW_PENDING;
}

/* ---- steps in order ---------------------------------------------------- */

struct steps {
	pw_async_t at;
	struct gate g[3];
	char log[16];
	int n;
	int polls;
};

static enum pw_poll steps_poll(struct pw_cx *cx, void *state)
{
	struct steps *s = state;

	s->polls++;
	PW_ASYNC_BEGIN(cx, &s->at);
	s->log[s->n++] = 'a';
	PW_AWAIT(gate_poll(cx, &s->g[0]));
	s->log[s->n++] = 'b';
	PW_AWAIT(gate_poll(cx, &s->g[1]));
	s->log[s->n++] = 'c';
	PW_AWAIT(gate_poll(cx, &s->g[2]));
	s->log[s->n++] = 'd';
	PW_RETURN(7);
	PW_ASYNC_END();
}

Test(async, steps_run_in_order_once_each_across_awaits)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct steps s = {
		.g = { { .left = 1 }, { .left = 2 }, { .left = 0 } }
	};

	cr_assert_eq(pw_test_block_on(rt, steps_poll, &s), 7);
	cr_assert_str_eq(s.log, "abcd");
	/* 1 + 1 + 2 pending polls, then the one that finishes. */
	cr_assert_eq(s.polls, 4);
	cr_assert_eq(s.g[0].polls, 2);
	cr_assert_eq(s.g[1].polls, 3);
	cr_assert_eq(s.g[2].polls, 1);
	cr_assert(pw_async_done(&s.at));
	pw_runtime_destroy(rt);
}

Test(async, an_await_ready_at_once_does_not_suspend)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct steps s = { 0 };

	cr_assert_eq(pw_test_block_on(rt, steps_poll, &s), 7);
	cr_assert_str_eq(s.log, "abcd");
	cr_assert_eq(s.polls, 1, "%d polls", s.polls);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(s.g[i].polls, 1);
	pw_runtime_destroy(rt);
}

/* ---- yield ------------------------------------------------------------- */

struct flagger {
	int *flag;
};

static enum pw_poll flagger_poll(struct pw_cx *cx, void *state)
{
	struct flagger *f = state;

	(*f->flag)++;
	return pw_ready(cx, 0);
}

struct yielder {
	pw_async_t at;
	int polls;
	int flag;	       /* set by a sibling task */
	int flag_before_yield; /* what the body saw before its yield */
	int flag_after_yield;  /* and after */
	struct pw_join j;
	int64_t v;
};

static enum pw_poll yielder_poll(struct pw_cx *cx, void *state)
{
	struct yielder *s = state;
	struct flagger f = { &s->flag };

	s->polls++;
	PW_ASYNC_BEGIN(cx, &s->at);
	if (pw_spawn(&s->j, flagger_poll, &f, sizeof(f), NULL))
		PW_RETURN(-1);
	s->flag_before_yield = s->flag;
	PW_YIELD();
	s->flag_after_yield = s->flag;
	PW_AWAIT(pw_join_poll(cx, &s->j, &s->v));
	PW_RETURN(s->polls);
	PW_ASYNC_END();
}

Test(async, yield_returns_pending_exactly_once_and_lets_others_run)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct yielder s = { 0 };

	/* The join is ready after the yield: two polls in all. */
	cr_assert_eq(pw_test_block_on(rt, yielder_poll, &s), 2);
	cr_assert_eq(s.polls, 2);
	cr_assert_eq(s.flag_before_yield, 0);
	cr_assert_eq(s.flag_after_yield, 1);
	cr_assert_eq(s.flag, 1);
	cr_assert_eq(s.v, 0);
	pw_runtime_destroy(rt);
}

/* ---- return ------------------------------------------------------------ */

struct returner {
	pw_async_t at;
	int64_t value;
	bool early;
};

static enum pw_poll returner_poll(struct pw_cx *cx, void *state)
{
	struct returner *s = state;

	PW_ASYNC_BEGIN(cx, &s->at);
	if (s->early)
		PW_RETURN(s->value);
	PW_YIELD();
	if (s->value < 0)
		PW_RETURN(-s->value);
	PW_ASYNC_END();
}

Test(async, return_gives_its_value_and_running_off_the_end_gives_0)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct returner a = { .value = -123456789012345, .early = true };
	struct returner b = { .value = -5 };
	struct returner c = { .value = 9 };

	cr_assert_eq(pw_test_block_on(rt, returner_poll, &a), -123456789012345);
	cr_assert_eq(pw_test_block_on(rt, returner_poll, &b), 5);
	cr_assert_eq(pw_test_block_on(rt, returner_poll, &c), 0);
	cr_assert(pw_async_done(&a.at) && pw_async_done(&b.at) &&
		  pw_async_done(&c.at));
	pw_runtime_destroy(rt);
}

/* ---- the paused clock: 30 ms, then 70 ms ------------------------------- */

struct naps {
	pw_async_t at;
	struct pw_sleep nap;
	int64_t start, mid;
	int polls;
};

static enum pw_poll naps_poll(struct pw_cx *cx, void *state)
{
	struct naps *s = state;

	s->polls++;
	PW_ASYNC_BEGIN(cx, &s->at);
	s->start = now_ms();
	pw_sleep_init(&s->nap, 30 * MS);
	PW_AWAIT(pw_sleep_poll(cx, &s->nap));
	s->mid = now_ms();
	pw_sleep_init(&s->nap, 70 * MS);
	PW_AWAIT(pw_sleep_poll(cx, &s->nap));
	PW_RETURN(now_ms() - s->start);
	PW_ASYNC_END();
}

Test(async, sleeps_of_30_then_70_ms_finish_at_exactly_100_ms)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct naps s = { 0 };

	cr_assert_eq(pw_test_block_on(rt, naps_poll, &s), 100);
	cr_assert_eq(s.mid - s.start, 30);
	cr_assert_eq(s.polls, 3);
	pw_runtime_destroy(rt);
}

/* ---- errors: a timeout around a sleep, in a loop ----------------------- */

struct tries {
	pw_async_t at;
	struct pw_delay nap; /* a sleep returning 1 */
	struct pw_timeout to;
	int64_t out;
	int i;
	int64_t at_ms[4]; /* when each try ended */
};

/* Naps of 20, 40, 60, 80 ms, each bounded by 50 ms: the third times out. */
static enum pw_poll tries_poll(struct pw_cx *cx, void *state)
{
	struct tries *s = state;

	PW_ASYNC_BEGIN(cx, &s->at);
	for (s->i = 0; s->i < 4; s->i++) {
		pw_timeout_init(&s->to, 50 * MS,
				pw_delay_init(&s->nap,
					      (uint64_t)(s->i + 1) * 20 * MS,
					      1));
		PW_AWAIT(pw_timeout_poll(cx, &s->to, &s->out));
		s->at_ms[s->i] = now_ms();
		if (s->out < 0)
			PW_RETURN(s->out * 10 - s->i);
	}
	PW_RETURN(0);
	PW_ASYNC_END();
}

Test(async, an_error_after_an_await_in_a_loop_returns_early)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct tries s = { 0 };

	cr_assert_eq(pw_test_block_on(rt, tries_poll, &s), -ETIMEDOUT * 10 - 2);
	cr_assert_eq(s.at_ms[0], 20);
	cr_assert_eq(s.at_ms[1], 60);
	cr_assert_eq(s.at_ms[2], 110);
	cr_assert_eq(s.at_ms[3], 0);
	pw_runtime_destroy(rt);
}

/* ---- outputs: spawned async children, joined; a channel --------------- */

struct child {
	pw_async_t at;
	struct pw_sleep nap;
	int64_t ms;
};

static enum pw_poll child_poll(struct pw_cx *cx, void *state)
{
	struct child *s = state;

	PW_ASYNC_BEGIN(cx, &s->at);
	pw_sleep_init(&s->nap, (uint64_t)s->ms * MS);
	PW_AWAIT(pw_sleep_poll(cx, &s->nap));
	PW_RETURN(s->ms * 1000 + now_ms());
	PW_ASYNC_END();
}

struct producer {
	pw_async_t at;
	struct pw_channel *ch;
	struct pw_channel_sender snd;
	struct pw_sleep nap;
	int item, res;
};

static enum pw_poll producer_poll(struct pw_cx *cx, void *state)
{
	struct producer *s = state;

	PW_ASYNC_BEGIN(cx, &s->at);
	for (s->item = 1; s->item <= 5; s->item++) {
		PW_AWAIT(pw_channel_send_poll(cx, s->ch, &s->snd, &s->item,
					      &s->res));
		if (s->res)
			PW_RETURN(s->res);
		pw_sleep_init(&s->nap, MS);
		PW_AWAIT(pw_sleep_poll(cx, &s->nap));
	}
	PW_RETURN(pw_channel_close_tx(s->ch));
	PW_ASYNC_END();
}

struct parent {
	pw_async_t at;
	struct child kid[2];
	struct pw_join j[2];
	int64_t v[2];
	struct pw_channel ch;
	int storage[2];
	struct producer prod;
	struct pw_join pj;
	int64_t pv;
	int item, res;
	int got[8], n;
	int64_t mid_ms, end_ms;
};

static enum pw_poll parent_poll(struct pw_cx *cx, void *state)
{
	struct parent *s = state;
	int64_t local; /* an output read before the next await */

	PW_ASYNC_BEGIN(cx, &s->at);
	for (int i = 0; i < 2; i++) {
		s->kid[i] = (struct child){ .ms = 10 * (i + 1) };
		if (pw_spawn(&s->j[i], child_poll, &s->kid[i],
			     sizeof(s->kid[i]), NULL))
			PW_RETURN(-1);
	}
	PW_AWAIT(pw_join_poll(cx, &s->j[1], &s->v[1]));
	PW_AWAIT(pw_join_poll(cx, &s->j[0], &local));
	s->v[0] = local;
	s->mid_ms = now_ms();

	if (pw_channel_init(&s->ch, sizeof(int), 2, s->storage))
		PW_RETURN(-2);
	s->prod = (struct producer){ .ch = &s->ch };
	if (pw_spawn(&s->pj, producer_poll, &s->prod, 0, NULL))
		PW_RETURN(-3);
	for (;;) {
		PW_AWAIT(pw_channel_recv_poll(cx, &s->ch, &s->item, &s->res));
		if (s->res <= 0)
			break;
		s->got[s->n++] = s->item;
	}
	PW_AWAIT(pw_join_poll(cx, &s->pj, &s->pv));
	s->end_ms = now_ms();
	PW_RETURN(s->res == 0 ? s->n : -1);
	PW_ASYNC_END();
}

Test(async, outputs_of_joins_and_channel_receives_are_delivered)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct parent s;

	memset(&s, 0, sizeof(s));
	cr_assert_eq(pw_test_block_on(rt, parent_poll, &s), 5);
	cr_assert_eq(s.v[0], 10 * 1000 + 10);
	cr_assert_eq(s.v[1], 20 * 1000 + 20);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(s.got[i], i + 1);
	cr_assert_eq(s.pv, 0);
	cr_assert_eq(s.mid_ms, 20);
	cr_assert_eq(s.end_ms, 25);
	pw_runtime_destroy(rt);
}
