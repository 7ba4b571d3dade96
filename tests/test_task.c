/* SPDX-License-Identifier: MIT */
/*
 * test_task.c - the task model: spawn, join, detach, abort, wakers, yield,
 * the coop budget, run order, and bad input.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

/* A log of events, written on the shard, read after pw_block_on(). */
struct log {
	int ev[256];
	int n;
	int depth, max_depth;
	int drops;
};

static struct log L;

static void log_ev(int v)
{
	if (L.n < 256)
		L.ev[L.n++] = v;
}

static void assert_log(const int *want, int n)
{
	cr_assert_eq(L.n, n, "log has %d events, want %d", L.n, n);
	for (int i = 0; i < n; i++)
		cr_assert_eq(L.ev[i], want[i], "event %d is %d, want %d", i,
			     L.ev[i], want[i]);
}

/* ---- simple children -------------------------------------------------- */

struct child {
	int id;
	int polls;	       /* how many times polled */
	int yields;	       /* yield this many times before finishing */
	int self_wake;	       /* wake itself this many times, then finish */
	bool forever;	       /* never finish: park without a waker */
	struct pw_waker *keep; /* store a clone of the waker here */
	int64_t result;
};

static enum pw_poll child_poll(struct pw_cx *cx, void *state)
{
	struct child *c = state;

	L.depth++;
	if (L.depth > L.max_depth)
		L.max_depth = L.depth;
	c->polls++;
	log_ev(c->id);
	if (c->keep && !c->keep->task) {
		struct pw_waker w = pw_cx_waker(cx);
		pw_waker_clone(c->keep, &w);
	}
	enum pw_poll r;
	if (c->yields > 0) {
		c->yields--;
		r = pw_yield(cx);
	} else if (c->self_wake > 0) {
		c->self_wake--;
		struct pw_waker w = pw_cx_waker(cx);
		pw_waker_wake_by_ref(&w);
		r = PW_PENDING;
	} else if (c->forever) {
		r = PW_PENDING;
	} else {
		r = pw_ready(cx, c->result);
	}
	L.depth--;
	return r;
}

static void child_drop(void *state)
{
	struct child *c = state;
	L.drops++;
	log_ev(1000 + c->id);
}

/* ---- a scripted root task --------------------------------------------- */

typedef enum pw_poll (*step_fn)(struct pw_cx *cx, void *root);

struct root {
	int step;
	step_fn fn;
	struct pw_join j[16];
	struct pw_waker w[4];
	int64_t res[16];
	int err[16];
	int aux;
};

static enum pw_poll root_poll(struct pw_cx *cx, void *state)
{
	struct root *r = state;
	return r->fn(cx, r);
}

static int64_t run_root(step_fn fn, struct root *r)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	r->fn = fn;
	int64_t v = pw_test_block_on(rt, root_poll, r);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	return v;
}

static int spawn_child(struct pw_join *j, struct child c)
{
	return pw_spawn(j, child_poll, &c, sizeof(c), child_drop);
}

/* ---- tests -------------------------------------------------------------- */

static enum pw_poll s_join_result(struct pw_cx *cx, void *p)
{
	struct root *r = p;
	if (r->step == 0) {
		cr_assert_eq(
			spawn_child(&r->j[0],
				    (struct child){ .id = 1, .result = 42 }),
			0);
		r->step = 1;
	}
	int64_t v;
	if (pw_join_poll(cx, &r->j[0], &v) == PW_PENDING)
		return PW_PENDING;
	cr_assert_null(r->j[0].task, "a ready join consumes the handle");
	cr_assert(!r->j[0].cancelled);
	return pw_ready(cx, v);
}

Test(task, spawn_join_returns_result)
{
	struct root r = { 0 };
	cr_assert_eq(run_root(s_join_result, &r), 42);
	const int want[] = { 1, 1001 };
	assert_log(want, 2);
}

static enum pw_poll s_fifo(struct pw_cx *cx, void *p)
{
	struct root *r = p;
	if (r->step == 0) {
		for (int i = 0; i < 8; i++)
			cr_assert_eq(spawn_child(&r->j[i],
						 (struct child){ .id = i }),
				     0);
		r->step = 1;
	}
	for (; r->aux < 8; r->aux++) {
		int64_t v;
		if (pw_join_poll(cx, &r->j[r->aux], &v) == PW_PENDING)
			return PW_PENDING;
	}
	return pw_ready(cx, 0);
}

Test(task, run_queue_is_fifo_and_drop_runs_once)
{
	PW_TEST_SHARD_ONLY();
	struct root r = { 0 };
	run_root(s_fifo, &r);
	const int want[] = { 0, 1000, 1, 1001, 2, 1002, 3, 1003,
			     4, 1004, 5, 1005, 6, 1006, 7, 1007 };
	assert_log(want, 16);
	cr_assert_eq(L.drops, 8);
}

static enum pw_poll s_yield(struct pw_cx *cx, void *p)
{
	struct root *r = p;
	if (r->step == 0) {
		spawn_child(&r->j[0], (struct child){ .id = 1, .yields = 2 });
		spawn_child(&r->j[1], (struct child){ .id = 2, .yields = 1 });
		r->step = 1;
	}
	for (; r->aux < 2; r->aux++) {
		int64_t v;
		if (pw_join_poll(cx, &r->j[r->aux], &v) == PW_PENDING)
			return PW_PENDING;
	}
	return pw_ready(cx, 0);
}

Test(task, yield_goes_to_the_back)
{
	PW_TEST_SHARD_ONLY();
	struct root r = { 0 };
	run_root(s_yield, &r);
	/* 1 yields, 2 yields, 1 yields again, 2 finishes, 1 finishes. */
	const int want[] = { 1, 2, 1, 2, 1002, 1, 1001 };
	assert_log(want, 7);
}

static enum pw_poll s_self_wake(struct pw_cx *cx, void *p)
{
	struct root *r = p;
	if (r->step == 0) {
		spawn_child(&r->j[0],
			    (struct child){ .id = 1, .self_wake = 3 });
		spawn_child(&r->j[1], (struct child){ .id = 2 });
		r->step = 1;
	}
	for (; r->aux < 2; r->aux++) {
		int64_t v;
		if (pw_join_poll(cx, &r->j[r->aux], &v) == PW_PENDING)
			return PW_PENDING;
	}
	return pw_ready(cx, 0);
}

Test(task, self_wake_polls_again_later_never_recursively)
{
	PW_TEST_SHARD_ONLY();
	struct root r = { 0 };
	run_root(s_self_wake, &r);
	const int want[] = { 1, 2, 1002, 1, 1, 1, 1001 };
	assert_log(want, 7);
	/* The root's poll is depth 0 here (it is not a child); children
	 * never nest. */
	cr_assert_eq(L.max_depth, 1);
}

static struct pw_waker kept;

static enum pw_poll s_wake_twice(struct pw_cx *cx, void *p)
{
	struct root *r = p;
	switch (r->step) {
	case 0:
		spawn_child(&r->j[0], (struct child){ .id = 1,
						      .forever = true,
						      .keep = &kept });
		r->step = 1;
		return pw_yield(cx); /* let the child run and park */
	case 1:
		cr_assert_not_null(kept.task);
		pw_waker_wake_by_ref(&kept);
		pw_waker_wake_by_ref(&kept);
		pw_waker_wake_by_ref(&kept);
		r->step = 2;
		return pw_yield(cx);
	case 2:
		r->step = 3;
		return pw_yield(cx); /* a second turn: nothing more runs */
	case 3:
		cr_assert_eq(pw_join_abort(&r->j[0]), 0);
		r->step = 4;
		/* fall through */
	default:;
		int64_t v;
		if (pw_join_poll(cx, &r->j[0], &v) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(v, -ECANCELED);
		cr_assert(r->j[0].cancelled);
		/* A wake after the task finished does nothing. */
		pw_waker_wake_by_ref(&kept);
		pw_waker_drop(&kept);
		cr_assert_null(kept.task);
		return pw_ready(cx, 0);
	}
}

Test(task, woken_three_times_runs_once_then_abort)
{
	struct root r = { 0 };
	run_root(s_wake_twice, &r);
	/* first poll, one poll for three wakes, then the abort's drop. */
	const int want[] = { 1, 1, 1001 };
	assert_log(want, 3);
}

static enum pw_poll s_abort_queued(struct pw_cx *cx, void *p)
{
	struct root *r = p;
	if (r->step == 0) {
		spawn_child(&r->j[0], (struct child){ .id = 1 });
		/* Queued but not yet polled: it never will be. */
		cr_assert_eq(pw_join_abort(&r->j[0]), 0);
		cr_assert_eq(pw_join_abort(&r->j[0]), 0, "abort is idempotent");
		r->step = 1;
	}
	int64_t v;
	if (pw_join_poll(cx, &r->j[0], &v) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, v);
}

Test(task, abort_takes_effect_at_the_next_poll_boundary)
{
	struct root r = { 0 };
	cr_assert_eq(run_root(s_abort_queued, &r), -ECANCELED);
	const int want[] = { 1001 };
	assert_log(want, 1);
}

static enum pw_poll s_abort_done(struct pw_cx *cx, void *p)
{
	struct root *r = p;
	if (r->step == 0) {
		spawn_child(&r->j[0], (struct child){ .id = 1, .result = 7 });
		r->step = 1;
		return pw_yield(cx);
	}
	cr_assert(pw_join_is_finished(&r->j[0]));
	cr_assert_eq(pw_join_abort(&r->j[0]), -EALREADY);
	int64_t v;
	cr_assert_eq(pw_join_poll(cx, &r->j[0], &v), PW_READY);
	cr_assert(!r->j[0].cancelled);
	return pw_ready(cx, v);
}

Test(task, abort_after_completion_keeps_the_result)
{
	struct root r = { 0 };
	cr_assert_eq(run_root(s_abort_done, &r), 7);
}

static enum pw_poll s_detach(struct pw_cx *cx, void *p)
{
	struct root *r = p;
	if (r->step == 0) {
		spawn_child(&r->j[0], (struct child){ .id = 1, .yields = 1 });
		pw_join_detach(&r->j[0]);
		cr_assert_null(r->j[0].task);
		pw_join_detach(&r->j[0]); /* twice: nothing */
		cr_assert_eq(pw_spawn(NULL, child_poll,
				      &(struct child){ .id = 2 },
				      sizeof(struct child), child_drop),
			     0);
		r->step = 1;
	}
	if (L.drops < 2)
		return pw_yield(cx);
	return pw_ready(cx, 0);
}

Test(task, detached_tasks_run_to_completion)
{
	PW_TEST_SHARD_ONLY();
	struct root r = { 0 };
	run_root(s_detach, &r);
	const int want[] = { 1, 2, 1002, 1, 1001 };
	assert_log(want, 5);
}

/* A task that takes K budget units, then finishes. */
struct budget {
	int k, taken, polls;
};

static enum pw_poll budget_poll(struct pw_cx *cx, void *state)
{
	struct budget *b = state;
	b->polls++;
	while (b->taken < b->k) {
		if (!pw_coop_proceed(cx))
			return PW_PENDING;
		b->taken++;
	}
	return pw_ready(cx, b->polls);
}

static enum pw_poll s_budget(struct pw_cx *cx, void *p)
{
	struct root *r = p;
	static const int ks[] = { 1, 127, 128, 129, 256, 1000 };
	if (r->step == 0) {
		for (int i = 0; i < 6; i++)
			pw_spawn(&r->j[i], budget_poll,
				 &(struct budget){ .k = ks[i] },
				 sizeof(struct budget), NULL);
		r->step = 1;
	}
	for (; r->aux < 6; r->aux++)
		if (pw_join_poll(cx, &r->j[r->aux], &r->res[r->aux]) ==
		    PW_PENDING)
			return PW_PENDING;
	return pw_ready(cx, 0);
}

Test(task, budget_forces_a_yield_every_128_units)
{
	struct root r = { 0 };
	run_root(s_budget, &r);
	/* ceil(K / 128) polls: each poll may take 128 units. */
	const int64_t want[] = { 1, 1, 1, 2, 2, 8 };
	for (int i = 0; i < 6; i++)
		cr_assert_eq(r.res[i], want[i], "K index %d: %lld polls", i,
			     (long long)r.res[i]);
}

/* ---- references and memory --------------------------------------------- */

static struct pw_runtime *RT;

static enum pw_poll s_refs(struct pw_cx *cx, void *p)
{
	struct root *r = p;
	switch (r->step) {
	case 0:
		spawn_child(&r->j[0], (struct child){ .id = 1,
						      .forever = true,
						      .keep = &r->w[0] });
		r->step = 1;
		return pw_yield(cx);
	case 1:
		cr_assert_eq(pw_waker_clone(&r->w[1], &r->w[0]), 0);
		pw_join_abort(&r->j[0]);
		r->step = 2;
		return pw_yield(cx);
	default: {
		int64_t v;
		cr_assert_eq(pw_join_poll(cx, &r->j[0], &v), PW_READY);
		cr_assert_eq(v, -ECANCELED);
		return pw_ready(cx, 0);
	}
	}
}

Test(task, wakers_keep_memory_until_dropped)
{
	struct root r = { .fn = s_refs };
	RT = pw_test_runtime(1);
	pw_test_block_on(RT, root_poll, &r);
	/* The aborted child is done and its handle consumed, but two
	 * wakers still hold it (the root may still be on its way out). */
	pw_test_wait_live(RT, 0, 1);
	usleep(10000);
	cr_assert_eq(pw_test_wait_live(RT, 0, 1).live_tasks, 1);
	/* Dropping from this (foreign) thread goes through the inbox. */
	pw_waker_drop(&r.w[0]);
	pw_waker_wake(&r.w[1]);
	cr_assert_eq(pw_test_wait_live(RT, 0, 0).live_tasks, 0);
	cr_assert_eq(pw_runtime_destroy(RT), 0);
}

/* ---- bad input ------------------------------------------------------------ */

static void *spawn_from_thread(void *arg)
{
	(void)arg;
	struct pw_join j = { (void *)1, true };
	int err = pw_spawn(&j, child_poll, &(struct child){ 0 },
			   sizeof(struct child), NULL);
	cr_assert_null(j.task, "a failed spawn leaves the handle empty");
	return (void *)(intptr_t)err;
}

Test(task, spawn_outside_a_shard_is_eperm)
{
	pthread_t th;
	void *ret;
	pthread_create(&th, NULL, spawn_from_thread, NULL);
	pthread_join(th, &ret);
	cr_assert_eq((intptr_t)ret, -EPERM);
}

static enum pw_poll s_bad(struct pw_cx *cx, void *p)
{
	struct root *r = p;
	struct pw_join j;
	char big[8];
	(void)r;
	cr_assert_eq(pw_spawn(&j, NULL, NULL, 0, NULL), -EINVAL);
	cr_assert_eq(pw_spawn(&j, child_poll, NULL, 8, NULL), -EINVAL);
	cr_assert_eq(pw_spawn(&j, child_poll, big, PW_TASK_STATE_MAX + 1, NULL),
		     -EINVAL);
	int64_t v = 0;
	cr_assert_eq(pw_join_poll(cx, NULL, &v), PW_READY);
	cr_assert_eq(v, -EINVAL);
	struct pw_join empty = { 0 };
	v = 0;
	cr_assert_eq(pw_join_poll(cx, &empty, &v), PW_READY);
	cr_assert_eq(v, -EINVAL);
	cr_assert_eq(pw_join_poll(cx, &empty, NULL), PW_READY);
	cr_assert_eq(pw_join_abort(NULL), -EINVAL);
	cr_assert_eq(pw_join_abort(&empty), -EINVAL);
	cr_assert(!pw_join_is_finished(NULL));
	cr_assert(!pw_join_is_finished(&empty));
	pw_join_detach(NULL);
	struct pw_waker w = { 0 }, w2;
	cr_assert_eq(pw_waker_clone(NULL, &w), -EINVAL);
	cr_assert_eq(pw_waker_clone(&w2, NULL), -EINVAL);
	cr_assert_eq(pw_waker_clone(&w2, &w), -EINVAL);
	pw_waker_wake(NULL);
	pw_waker_wake(&w);
	pw_waker_wake_by_ref(NULL);
	pw_waker_wake_by_ref(&w);
	pw_waker_drop(NULL);
	pw_waker_drop(&w);
	cr_assert_eq(pw_yield(NULL), PW_PENDING);
	cr_assert_eq(pw_task_id(NULL), 0);
	cr_assert_neq(pw_task_id(cx), 0);
	cr_assert_geq(pw_shard_id(), 0);
	return pw_ready(cx, 5);
}

Test(task, bad_arguments_get_einval)
{
	struct root r = { 0 };
	cr_assert_eq(run_root(s_bad, &r), 5);
	cr_assert_eq(pw_shard_id(), -EPERM);
}
