/* SPDX-License-Identifier: MIT */
/*
 * test_task.c - the task model: spawn, join, detach, abort, wakers, yield,
 * the coop budget, run order, and bad input.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "tests/common.h"

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

static enum pw_poll s_noop(struct pw_cx *cx, void *p)
{
	(void)p;
	return pw_ready(cx, 0);
}

Test(task, wakers_keep_memory_until_dropped)
{
	struct root r = { .fn = s_refs };
	RT = pw_test_runtime(1);
	pw_test_block_on(RT, root_poll, &r);
	/* The aborted child is done and its handle consumed, but two
	 * wakers still hold it (the root may still be on its way out). */
	pw_test_wait_live(RT, 0, 1);
	/* A round trip through the shard: a task run after all that, and
	 * gone again, leaves the child's memory still held. */
	struct root idle = { .fn = s_noop };
	pw_test_block_on(RT, root_poll, &idle);
	struct pw_shard_stats st = { 0 };
	PW_TEST_WAIT_UNTIL(pw_runtime_stats(RT, 0, &st) == 0 &&
				   st.live_tasks <= 1,
			   PW_TEST_WAIT_SECS,
			   "the no-op task's memory is still held: %llu live",
			   (unsigned long long)st.live_tasks);
	cr_assert_eq(st.live_tasks, 1, "the wakers' task was freed");
	/* Dropping from this (foreign) thread goes through the inbox. */
	pw_waker_drop(&r.w[0]);
	pw_waker_wake(&r.w[1]);
	cr_assert_eq(pw_test_wait_live(RT, 0, 0).live_tasks, 0);
	cr_assert_eq(pw_runtime_destroy(RT), 0);
}

/* ---- unspend, will_wake, task ids ---------------------------------------- */

/*
 * pw_coop_unspend gives back the unit pw_coop_proceed took: a thousand
 * take-and-return pairs leave the whole budget of 128; with one unit
 * returned after 128, exactly one more operation proceeds. Each poll
 * that ran out is one forced yield.
 */
static enum pw_poll s_unspend(struct pw_cx *cx, void *p)
{
	struct root *r = p;
	int n = 0;

	r->step++;
	if (r->step == 1) {
		for (int i = 0; i < 1000; i++) {
			cr_assert(pw_coop_proceed(cx), "take %d", i);
			pw_coop_unspend(cx);
		}
		while (pw_coop_proceed(cx))
			n++;
		r->res[0] = n;
		return PW_PENDING; /* the refusal scheduled the task */
	}
	if (r->step == 2) {
		for (int i = 0; i < PW_COOP_BUDGET; i++)
			cr_assert(pw_coop_proceed(cx), "take %d", i);
		pw_coop_unspend(cx);
		while (pw_coop_proceed(cx))
			n++;
		r->res[1] = n;
		return PW_PENDING;
	}
	return pw_ready(cx, r->step);
}

Test(task, coop_unspend_returns_one_unit)
{
	struct root r = { .fn = s_unspend };
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_shard_stats st;

	cr_assert_eq(pw_test_block_on(rt, root_poll, &r), 3, "three polls");
	cr_assert_eq(r.res[0], PW_COOP_BUDGET, "%lld units after 1000 returns",
		     (long long)r.res[0]);
	cr_assert_eq(r.res[1], 1, "%lld units after one was returned",
		     (long long)r.res[1]);
	cr_assert_eq(pw_runtime_stats(rt, 0, &st), 0);
	cr_assert_eq(st.budget_yields, 2, "%llu forced yields",
		     (unsigned long long)st.budget_yields);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/*
 * pw_waker_will_wake is true exactly for two wakers of one task: a
 * borrowed waker and its clone, two clones of a child; false for two
 * children, for the root and a child, and for an empty waker.
 */
static enum pw_poll s_will_wake(struct pw_cx *cx, void *p)
{
	struct root *r = p;
	struct pw_waker me = pw_cx_waker(cx), none = { 0 };

	if (r->step == 0) {
		for (int i = 0; i < 2; i++)
			cr_assert_eq(
				spawn_child(&r->j[i],
					    (struct child){ .id = i + 1,
							    .forever = true,
							    .keep = &r->w[i] }),
				0);
		r->step = 1;
	}
	if (r->step == 1) {
		/* Each child keeps a clone of its waker at its first poll. */
		if (!r->w[0].task || !r->w[1].task)
			return pw_yield(cx);
		cr_assert_eq(pw_waker_clone(&r->w[2], &me), 0);
		cr_assert_eq(pw_waker_clone(&r->w[3], &r->w[0]), 0);
		cr_assert(pw_waker_will_wake(&me, &me));
		cr_assert(pw_waker_will_wake(&me, &r->w[2]));
		cr_assert(pw_waker_will_wake(&r->w[2], &me));
		cr_assert(pw_waker_will_wake(&r->w[0], &r->w[3]));
		cr_assert(pw_waker_will_wake(&r->w[3], &r->w[0]));
		cr_assert_not(pw_waker_will_wake(&r->w[0], &r->w[1]));
		cr_assert_not(pw_waker_will_wake(&r->w[1], &r->w[3]));
		cr_assert_not(pw_waker_will_wake(&me, &r->w[0]));
		cr_assert_not(pw_waker_will_wake(&r->w[1], &me));
		cr_assert_not(pw_waker_will_wake(&none, &r->w[0]));
		cr_assert_not(pw_waker_will_wake(&me, &none));
		for (int i = 0; i < 4; i++)
			pw_waker_drop(&r->w[i]);
		cr_assert_eq(pw_join_abort(&r->j[0]), 0);
		cr_assert_eq(pw_join_abort(&r->j[1]), 0);
		r->step = 2;
	}
	for (; r->aux < 2; r->aux++)
		if (pw_join_poll(cx, &r->j[r->aux], &r->res[r->aux]) ==
		    PW_PENDING)
			return PW_PENDING;
	return pw_ready(cx, 0);
}

Test(task, will_wake_is_true_only_for_the_same_task)
{
	struct root r = { 0 };

	memset(&L, 0, sizeof(L));
	cr_assert_eq(run_root(s_will_wake, &r), 0);
	cr_assert_eq(r.res[0], -ECANCELED);
	cr_assert_eq(r.res[1], -ECANCELED);
}

/*
 * pw_task_id: 16 children, all alive at once, and the root each record
 * their id at every poll. Every id is non-zero and the same at every
 * poll of its task, and the 17 ids are distinct.
 */
#define NIDS	 16
#define ID_POLLS 4

static uint64_t task_ids[NIDS + 1][ID_POLLS];

struct id_child {
	int k, polls;
};

static enum pw_poll id_child_poll(struct pw_cx *cx, void *state)
{
	struct id_child *c = state;

	task_ids[c->k][c->polls++] = pw_task_id(cx);
	if (c->polls < ID_POLLS)
		return pw_yield(cx);
	return pw_ready(cx, c->k);
}

static enum pw_poll s_ids(struct pw_cx *cx, void *p)
{
	struct root *r = p;

	if (r->step < ID_POLLS)
		task_ids[NIDS][r->step] = pw_task_id(cx);
	if (r->step == 0)
		for (int k = 0; k < NIDS; k++)
			cr_assert_eq(pw_spawn(&r->j[k], id_child_poll,
					      &(struct id_child){ k, 0 },
					      sizeof(struct id_child), NULL),
				     0);
	if (++r->step < ID_POLLS)
		return pw_yield(cx);
	for (; r->aux < NIDS; r->aux++)
		if (pw_join_poll(cx, &r->j[r->aux], &r->res[r->aux]) ==
		    PW_PENDING)
			return PW_PENDING;
	return pw_ready(cx, 0);
}

Test(task, task_ids_are_stable_and_unique_among_live_tasks)
{
	struct root r = { 0 };

	cr_assert_eq(run_root(s_ids, &r), 0);
	for (int k = 0; k <= NIDS; k++) {
		cr_assert_neq(task_ids[k][0], 0, "task %d", k);
		for (int i = 1; i < ID_POLLS; i++)
			cr_assert_eq(task_ids[k][i], task_ids[k][0],
				     "task %d, poll %d: another id", k, i);
		for (int m = 0; m < k; m++)
			cr_assert_neq(task_ids[k][0], task_ids[m][0],
				      "tasks %d and %d share an id", m, k);
	}
	for (int k = 0; k < NIDS; k++)
		cr_assert_eq(r.res[k], k);
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
	cr_assert_eq(pw_shard_id(), 0, "the only shard");
	return pw_ready(cx, 5);
}

Test(task, bad_arguments_get_einval)
{
	struct root r = { 0 };
	cr_assert_eq(run_root(s_bad, &r), 5);
	cr_assert_eq(pw_shard_id(), -EPERM);
}
