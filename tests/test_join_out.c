/* SPDX-License-Identifier: MIT */
/*
 * test_join_out.c - results larger than an int64_t (pw_spawn_out(),
 * pw_task_output(), pw_join_poll_out()) and join handles for tasks
 * spawned from outside the runtime (pw_runtime_spawn_join() and the
 * pw_rjoin_* calls): exact bytes, pointer results, abort, detach,
 * shutdown with a live handle, and bad input.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common.h"

#define OUT 256 /* bytes of a large result */

/* The byte @i of the output of task @id. */
static unsigned char pat(int id, int i)
{
	return (unsigned char)(id * 31 + i * 7 + 1);
}

static void check_out(const unsigned char *b, int id, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(b[i], pat(id, (int)i),
			     "task %d: byte %zu is %u, want %u", id, i, b[i],
			     pat(id, (int)i));
}

/* ---- a child that fills its output over two polls ------------------ */

struct filler {
	int id;
	int polls;
	bool forever;	       /* never finish (for abort) */
	bool yield;	       /* yield once between the halves */
	atomic_int *dropped;   /* counts drop hook calls, or NULL */
	unsigned char pad[40]; /* state beyond the output area, checked */
};

static enum pw_poll filler_poll(struct pw_cx *cx, void *state)
{
	struct filler *f = state;
	unsigned char *o = pw_task_output(cx);

	cr_assert_not_null(o, "a task spawned with an output area has one");
	for (int i = 0; i < 40; i++)
		cr_assert_eq(f->pad[i], (unsigned char)(f->id + i));
	int half = f->polls++ ? OUT : OUT / 2;
	for (int i = half - OUT / 2; i < half; i++)
		o[i] = pat(f->id, i);
	if (f->forever)
		return PW_PENDING;
	if (f->yield && f->polls == 1)
		return pw_yield(cx);
	if (f->polls == 1)
		for (int i = OUT / 2; i < OUT; i++)
			o[i] = pat(f->id, i);
	return pw_ready(cx, 1000 + f->id);
}

static void filler_drop(void *state)
{
	struct filler *f = state;
	if (f->dropped)
		atomic_fetch_add(f->dropped, 1);
}

static struct filler make_filler(int id)
{
	struct filler f = { .id = id, .yield = true };
	for (int i = 0; i < 40; i++)
		f.pad[i] = (unsigned char)(id + i);
	return f;
}

/* ---- pw_spawn_out() from a task ------------------------------------- */

struct root {
	int step;
	struct pw_join j[4];
	unsigned char out[4][OUT];
	int64_t res[4];
	bool cancelled[4];
	atomic_int dropped;
	struct filler borrowed; /* a state passed by pointer (size 0) */
};

static enum pw_poll large_root(struct pw_cx *cx, void *state)
{
	struct root *r = state;

	if (r->step == 0) {
		r->step = 1;
		cr_assert_null(pw_task_output(cx), "no area: NULL");
		struct filler f = make_filler(3);
		cr_assert_eq(pw_spawn_out(&r->j[0], filler_poll, &f, sizeof(f),
					  filler_drop, OUT),
			     0);
		f = make_filler(4);
		f.yield = false;
		cr_assert_eq(pw_spawn_out(&r->j[1], filler_poll, &f, sizeof(f),
					  NULL, OUT),
			     0);
		r->borrowed = make_filler(8);
		cr_assert_eq(pw_spawn_out(&r->j[2], filler_poll, &r->borrowed,
					  0, NULL, OUT),
			     0);
	}
	for (; r->step <= 3; r->step++) {
		int i = r->step - 1;
		/* The second is read in part: its first 100 bytes. */
		size_t n = i == 1 ? 100 : OUT;
		if (pw_join_poll_out(cx, &r->j[i], &r->res[i], r->out[i], n) ==
		    PW_PENDING)
			return PW_PENDING;
		cr_assert_null(r->j[i].task,
			       "a ready join consumes the handle");
		cr_assert(!r->j[i].cancelled);
	}
	return pw_ready(cx, 0);
}

Test(join_out, large_result_exact_through_join)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct root r = { 0 };

	cr_assert_eq(pw_test_block_on(rt, large_root, &r), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(r.res[0], 1003);
	cr_assert_eq(r.res[1], 1004);
	check_out(r.out[0], 3, OUT);
	check_out(r.out[1], 4, 100);
	for (int i = 100; i < OUT; i++)
		cr_assert_eq(r.out[1][i], 0, "bytes past out_size untouched");
	cr_assert_eq(r.res[2], 1008);
	check_out(r.out[2], 8, OUT);
	cr_assert_eq(r.borrowed.polls, 2, "the borrowed state used in place");
}

/* A pointer result: the task allocates, the joiner owns and frees. */
struct msg {
	char text[32];
	int n;
};

static enum pw_poll ptr_child(struct pw_cx *cx, void *state)
{
	struct msg *m = malloc(sizeof(*m));
	cr_assert_not_null(m);
	strcpy(m->text, "from the task");
	m->n = *(int *)state;
	struct msg **o = pw_task_output(cx);
	*o = m;
	return pw_ready(cx, 0);
}

static enum pw_poll ptr_root(struct pw_cx *cx, void *state)
{
	struct root *r = state;
	struct msg *m = NULL;

	if (r->step == 0) {
		r->step = 1;
		int n = 77;
		cr_assert_eq(pw_spawn_out(&r->j[0], ptr_child, &n, sizeof(n),
					  NULL, sizeof(m)),
			     0);
	}
	if (pw_join_poll_out(cx, &r->j[0], &r->res[0], &m, sizeof(m)) ==
	    PW_PENDING)
		return PW_PENDING;
	cr_assert_eq(r->res[0], 0);
	cr_assert_not_null(m);
	cr_assert_str_eq(m->text, "from the task");
	cr_assert_eq(m->n, 77);
	free(m);
	return pw_ready(cx, 0);
}

Test(join_out, pointer_result)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct root r = { 0 };

	cr_assert_eq(pw_test_block_on(rt, ptr_root, &r), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Abort: -ECANCELED, the joiner's buffer untouched, the drop hook once;
 * aborting a completed task keeps its output. */
static enum pw_poll abort_root(struct pw_cx *cx, void *state)
{
	struct root *r = state;

	if (r->step == 0) {
		r->step = 1;
		memset(r->out, 0xaa, sizeof(r->out));
		struct filler f = make_filler(5);
		f.forever = true;
		f.dropped = &r->dropped;
		cr_assert_eq(pw_spawn_out(&r->j[0], filler_poll, &f, sizeof(f),
					  filler_drop, OUT),
			     0);
		f = make_filler(6);
		f.yield = false;
		f.dropped = &r->dropped;
		cr_assert_eq(pw_spawn_out(&r->j[1], filler_poll, &f, sizeof(f),
					  filler_drop, OUT),
			     0);
		return pw_yield(cx); /* both run once */
	}
	if (r->step == 1) {
		if (!pw_join_is_finished(&r->j[1]))
			return pw_yield(cx);
		r->step = 2;
		cr_assert_eq(pw_join_abort(&r->j[0]), 0);
		cr_assert_eq(pw_join_abort(&r->j[1]), -EALREADY);
	}
	for (int i = 0; i < 2; i++) {
		if (!r->j[i].task)
			continue;
		if (pw_join_poll_out(cx, &r->j[i], &r->res[i], r->out[i],
				     OUT) == PW_PENDING)
			return PW_PENDING;
		r->cancelled[i] = r->j[i].cancelled;
	}
	return pw_ready(cx, 0);
}

Test(join_out, abort_gives_ecanceled_and_leaves_output_untouched)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct root r = { 0 };

	cr_assert_eq(pw_test_block_on(rt, abort_root, &r), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(r.res[0], -ECANCELED);
	cr_assert(r.cancelled[0]);
	for (int i = 0; i < OUT; i++)
		cr_assert_eq(r.out[0][i], 0xaa, "byte %d written", i);
	cr_assert_eq(r.res[1], 1006);
	cr_assert(!r.cancelled[1]);
	check_out(r.out[1], 6, OUT);
	cr_assert_eq(atomic_load(&r.dropped), 2);
}

static enum pw_poll plain_child(struct pw_cx *cx, void *state)
{
	(void)state;
	cr_assert_null(pw_task_output(cx), "no area: NULL");
	return pw_ready(cx, 5);
}

/* Bad input: sizes, a NULL buffer, no shard; a refused join poll leaves
 * the handle as it was. */
static enum pw_poll bad_root(struct pw_cx *cx, void *state)
{
	struct root *r = state;
	char big[8];

	if (r->step == 0) {
		r->step = 1;
		struct filler f = make_filler(7);
		cr_assert_eq(pw_spawn_out(&r->j[0], filler_poll, &f,
					  PW_TASK_STATE_MAX, NULL, 8),
			     -EINVAL);
		cr_assert_null(r->j[0].task);
		cr_assert_eq(pw_spawn_out(NULL, filler_poll, &f, sizeof(f),
					  NULL, PW_TASK_STATE_MAX + 1),
			     -EINVAL);
		cr_assert_eq(pw_spawn_out(&r->j[0], filler_poll, &f, sizeof(f),
					  NULL, OUT),
			     0);
		int64_t v = 0;
		cr_assert_eq(pw_join_poll_out(cx, &r->j[0], &v, r->out[0],
					      OUT + 1),
			     PW_READY);
		cr_assert_eq(v, -EINVAL);
		cr_assert_eq(pw_join_poll_out(cx, &r->j[0], &v, NULL, 1),
			     PW_READY);
		cr_assert_eq(v, -EINVAL);
		cr_assert_not_null(r->j[0].task, "handle left as it was");
		/* A task without an area: only out_size 0 is accepted. */
		cr_assert_eq(pw_spawn(&r->j[1], plain_child, NULL, 0, NULL), 0);
		cr_assert_eq(pw_join_poll_out(cx, &r->j[1], &v, big, 1),
			     PW_READY);
		cr_assert_eq(v, -EINVAL);
		pw_join_detach(&r->j[1]);
	}
	if (pw_join_poll_out(cx, &r->j[0], &r->res[0], r->out[0], OUT) ==
	    PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, 0);
}

Test(join_out, bad_input)
{
	struct filler f = make_filler(1);
	struct pw_join j;
	cr_assert_eq(pw_spawn_out(&j, filler_poll, &f, sizeof(f), NULL, OUT),
		     -EPERM);
	cr_assert_null(j.task);

	struct pw_runtime *rt = pw_test_runtime(1);
	struct root r = { 0 };
	cr_assert_eq(pw_test_block_on(rt, bad_root, &r), 0);
	cr_assert_eq(r.res[0], 1007);
	check_out(r.out[0], 7, OUT);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- pw_runtime_spawn_join() from a plain thread --------------------- */

#define SHARDS 2
#define NTASK  64

/* Waits for *@go (set by the test) before it fills its output. */
struct rtask {
	struct filler f;
	atomic_bool *go;
	atomic_int *polled; /* counts polls, or NULL */
	int yields;
};

static enum pw_poll rtask_poll(struct pw_cx *cx, void *state)
{
	struct rtask *t = state;

	if (t->polled)
		atomic_fetch_add(t->polled, 1);
	if (t->go && !atomic_load(t->go))
		return pw_yield(cx);
	if (t->yields > 0) {
		t->yields--;
		return pw_yield(cx);
	}
	return filler_poll(cx, &t->f);
}

static void rtask_drop(void *state)
{
	struct rtask *t = state;
	filler_drop(&t->f);
}

static struct rtask make_rtask(int id, atomic_int *dropped)
{
	struct rtask t = { .f = make_filler(id), .yields = id % 5 };
	t.f.dropped = dropped;
	return t;
}

/* Yields until *state is set: keeps a shard busy meanwhile. */
static enum pw_poll busy_poll(struct pw_cx *cx, void *state)
{
	if (atomic_load((atomic_bool *)state))
		return pw_ready(cx, 0);
	return pw_yield(cx);
}

Test(join_out, runtime_spawn_join_many_tasks_on_every_shard)
{
	struct pw_runtime *rt = pw_test_runtime(SHARDS);
	struct pw_rjoin *h[NTASK];
	atomic_int dropped = 0;
	atomic_bool stop = false;

	/* Other tasks run meanwhile, one placed on each shard (in stealing
	 * mode bound to its worker, which still polls the others). */
	for (unsigned s = 0; s < SHARDS; s++)
		cr_assert_eq(pw_runtime_spawn(rt, s, busy_poll, &stop, 0, NULL),
			     0);
	for (int i = 0; i < NTASK; i++) {
		struct rtask t = make_rtask(i, &dropped);
		unsigned sh = i % 3 == 2 ? PW_SHARD_ANY : (unsigned)i % SHARDS;
		cr_assert_eq(pw_runtime_spawn_join(rt, sh, rtask_poll, &t,
						   sizeof(t), rtask_drop, OUT,
						   &h[i]),
			     0);
		cr_assert_not_null(h[i]);
	}
	for (int i = NTASK - 1; i >= 0; i--) {
		unsigned char out[OUT];
		int64_t v = 0;
		cr_assert_eq(pw_rjoin_wait(h[i], &v, out, OUT), 0);
		cr_assert_eq(v, 1000 + i);
		check_out(out, i, OUT);
	}
	cr_assert_eq(atomic_load(&dropped), NTASK,
		     "each drop hook ran before its wait returned");
	atomic_store(&stop, true);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* A borrowed state (size 0), a result without output, and a wait after
 * the task finished. */
Test(join_out, runtime_wait_after_finish_and_borrowed_state)
{
	struct pw_runtime *rt = pw_test_runtime(SHARDS);
	atomic_int dropped = 0;
	struct rtask t = make_rtask(9, &dropped);
	struct pw_rjoin *h, *h2;

	cr_assert_eq(pw_runtime_spawn_join(rt, 1, rtask_poll, &t, 0, rtask_drop,
					   OUT, &h),
		     0);
	cr_assert_eq(pw_runtime_spawn_join(rt, 0, plain_child, NULL, 0, NULL, 0,
					   &h2),
		     0);
	PW_TEST_WAIT_UNTIL(pw_rjoin_is_finished(h) && pw_rjoin_is_finished(h2),
			   PW_TEST_WAIT_SECS, "both tasks end");
	cr_assert_eq(atomic_load(&dropped), 1);
	cr_assert_eq(pw_rjoin_abort(h), -EALREADY);
	unsigned char out[OUT];
	int64_t v = 0;
	cr_assert_eq(pw_rjoin_wait(h, &v, out, 10), 0);
	cr_assert_eq(v, 1009);
	check_out(out, 9, 10);
	cr_assert_eq(t.f.polls, 2, "the borrowed state was used in place");
	cr_assert_eq(pw_rjoin_wait(h2, NULL, NULL, 0), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Abort from main: before or after the first poll, then after the end. */
Test(join_out, runtime_abort)
{
	struct pw_runtime *rt = pw_test_runtime(SHARDS);
	atomic_int dropped = 0;
	atomic_int polled[4] = { 0 };
	struct pw_rjoin *h[4];

	for (int i = 0; i < 4; i++) {
		struct rtask t = make_rtask(20 + i, &dropped);
		t.f.forever = true;
		t.polled = &polled[i];
		cr_assert_eq(pw_runtime_spawn_join(rt, (unsigned)i % SHARDS,
						   rtask_poll, &t, sizeof(t),
						   rtask_drop, OUT, &h[i]),
			     0);
		if (i >= 2) /* surely polled before the abort */
			PW_TEST_WAIT_UNTIL(atomic_load(&polled[i]) > 0,
					   PW_TEST_WAIT_SECS,
					   "task %d is polled", i);
		cr_assert_eq(pw_rjoin_abort(h[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		unsigned char out[OUT];
		memset(out, 0xaa, sizeof(out));
		int64_t v = 0;
		cr_assert_eq(pw_rjoin_wait(h[i], &v, out, OUT), -ECANCELED);
		cr_assert_eq(v, -ECANCELED);
		for (int k = 0; k < OUT; k++)
			cr_assert_eq(out[k], 0xaa, "byte %d written", k);
	}
	cr_assert_eq(atomic_load(&dropped), 4);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Detach: the task runs on and its memory goes when it ends. */
Test(join_out, runtime_detach)
{
	struct pw_runtime *rt = pw_test_runtime(SHARDS);
	atomic_int dropped = 0;
	atomic_bool go = false;
	struct pw_rjoin *h;
	struct rtask t = make_rtask(30, &dropped);

	t.go = &go;
	cr_assert_eq(pw_runtime_spawn_join(rt, 1, rtask_poll, &t, sizeof(t),
					   rtask_drop, OUT, &h),
		     0);
	pw_rjoin_detach(h);
	pw_rjoin_detach(NULL);
	atomic_store(&go, true);
	PW_TEST_WAIT_UNTIL(atomic_load(&dropped) == 1, PW_TEST_WAIT_SECS,
			   "the detached task ends");
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Shutdown with live handles: the tasks are dropped, the waits after it
 * give -ECANCELED, a detach after it frees its handle. */
Test(join_out, runtime_shutdown_with_live_handles)
{
	struct pw_runtime *rt = pw_test_runtime(SHARDS);
	atomic_int dropped = 0;
	struct pw_rjoin *h[3];

	for (int i = 0; i < 3; i++) {
		struct rtask t = make_rtask(40 + i, &dropped);
		t.f.forever = true;
		cr_assert_eq(pw_runtime_spawn_join(rt, (unsigned)i % SHARDS,
						   rtask_poll, &t, sizeof(t),
						   rtask_drop, OUT, &h[i]),
			     0);
	}
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(atomic_load(&dropped), 3);
	cr_assert(pw_rjoin_is_finished(h[0]));
	cr_assert_eq(pw_rjoin_abort(h[0]), -EALREADY);
	int64_t v = 0;
	cr_assert_eq(pw_rjoin_wait(h[0], &v, NULL, 0), -ECANCELED);
	cr_assert_eq(v, -ECANCELED);
	cr_assert_eq(pw_rjoin_wait(h[1], NULL, NULL, 0), -ECANCELED);
	pw_rjoin_detach(h[2]);
}

/* A shard thread may not wait: -EDEADLK, the handle kept. */
struct waiter {
	struct pw_rjoin *h;
};

static enum pw_poll waiter_poll(struct pw_cx *cx, void *state)
{
	struct waiter *w = state;
	return pw_ready(cx, pw_rjoin_wait(w->h, NULL, NULL, 0));
}

Test(join_out, runtime_bad_input_and_wait_on_a_shard)
{
	struct pw_runtime *rt = pw_test_runtime(SHARDS);
	struct rtask t = make_rtask(50, NULL);
	struct pw_rjoin *h = (struct pw_rjoin *)&t;

	cr_assert_eq(pw_runtime_spawn_join(rt, 0, NULL, &t, sizeof(t), NULL, 0,
					   &h),
		     -EINVAL);
	cr_assert_null(h);
	cr_assert_eq(pw_runtime_spawn_join(rt, 0, rtask_poll, &t, sizeof(t),
					   NULL, 0, NULL),
		     -EINVAL);
	cr_assert_eq(pw_runtime_spawn_join(rt, 0, rtask_poll, &t,
					   PW_TASK_STATE_MAX, NULL, 1, &h),
		     -EINVAL);
	cr_assert_eq(pw_runtime_spawn_join(NULL, 0, rtask_poll, &t, sizeof(t),
					   NULL, 0, &h),
		     -EINVAL);
	cr_assert_eq(pw_runtime_spawn_join(rt, SHARDS, rtask_poll, &t,
					   sizeof(t), NULL, 0, &h),
		     -ENODEV);
	cr_assert_null(h);
	cr_assert_eq(pw_rjoin_wait(NULL, NULL, NULL, 0), -EINVAL);
	cr_assert_eq(pw_rjoin_abort(NULL), -EINVAL);
	cr_assert(!pw_rjoin_is_finished(NULL));

	cr_assert_eq(pw_runtime_spawn_join(rt, 0, rtask_poll, &t, sizeof(t),
					   NULL, OUT, &h),
		     0);
	unsigned char out[OUT + 1];
	cr_assert_eq(pw_rjoin_wait(h, NULL, out, OUT + 1), -EINVAL);
	cr_assert_eq(pw_rjoin_wait(h, NULL, NULL, 1), -EINVAL);
	struct waiter w = { h };
	cr_assert_eq(pw_test_block_on(rt, waiter_poll, &w), -EDEADLK);
	int64_t v = 0;
	cr_assert_eq(pw_rjoin_wait(h, &v, out, OUT), 0);
	cr_assert_eq(v, 1050);
	check_out(out, 50, OUT);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}
