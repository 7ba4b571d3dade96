/* SPDX-License-Identifier: MIT */
/*
 * fiber.c - fibers as tasks: spawning, the task glue that switches into a
 * fiber and back, the wait every blocking-style call is built on, and
 * the fiber's own calls (await, yield, sleep, join, deadline).
 *
 * A fiber task's state is a struct pw__fiber (core/fiber_int.h). Its poll
 * function takes a stack at the first poll, then switches onto it; the
 * fiber runs until a wait finds its leaf pending (the leaf registered
 * the task's waker) and switches back, so the poll returns PW_PENDING;
 * or until its function returns, and the poll returns PW_READY with its
 * value. The drop hook of an aborted fiber resumes it once with
 * PW__F_CANCELLED set: the wait it is in cancels its leaf and returns
 * -ECANCELED, and so does every later wait, at once, so the fiber runs
 * to the end of its function without suspending again.
 *
 * The stack goes back to the pool when the fiber has returned and
 * nothing pins the task (no kernel operation, timer or blocking job
 * points into it or its stack); otherwise the task keeps it
 * (PW__T_FIBER) and its free path returns it (pw__fiber_task_free()).
 * A wrapper that owns a descriptor (a server's connection fiber) has
 * the task close it once the function returned, on the scheduler's
 * stack (pw__fiber_close_at_exit()): nothing runs on the fiber's stack
 * below the frame of a function that returned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/fiber_int.h"
#include "core/task_int.h"
#include "pinwheel/runtime.h"
#include "shard/shard_int.h"
#include "shard/steal_task.h"

/* The fiber this thread runs now (NULL on the scheduler's stack). */
static _Thread_local struct pw__fiber *cur_fiber;

/*
 * Not inlined nor analysed across calls: a fiber may resume on another
 * thread, and a thread-local's address computed before a switch must not
 * be reused after it. Every read goes through here.
 */
__attribute__((noipa)) struct pw__fiber *pw__fiber_cur(void)
{
	return cur_fiber;
}

/* Switch out of the running fiber @f back to the poll that resumed it. */
static inline void fiber_suspend(struct pw__fiber *f)
{
	pw__fctx_switch(&f->ctx, f->back);
}

/*
 * Bytes kept free above the fiber function's frame. A leaf declared in
 * that frame may be written by its final completion after the function
 * returned (a cancelled receive); what still runs on the stack then (the
 * last switch, and the sanitizers' calls in their builds) uses this pad,
 * never the dead frame.
 */
#if defined(PW__FCTX_ASAN) || defined(PW__FCTX_TSAN)
#define EXIT_PAD 8192
#else
#define EXIT_PAD 512
#endif

static __attribute__((noinline)) void fiber_call(struct pw__fiber *f)
{
	char pad[EXIT_PAD];

	/* Its address escapes: the pad is part of this frame, above fn's,
	 * and never written (no page of it is touched). */
	__asm__ volatile("" : : "r"(pad) : "memory");
	f->result = f->fn(f->arg);
	__asm__ volatile("" : : "r"(pad) : "memory");
}

/* Returning f->back ends the fiber's context and resumes the poll. */
static struct pw__fctx *fiber_entry(void *arg)
{
	struct pw__fiber *f = arg;

	fiber_call(f);
	f->flags |= PW__F_DONE;
	return f->back;
}

/* Run @f from where it stopped until it waits or returns. The poll side
 * never changes thread, so its thread-locals stay valid here. */
static void fiber_resume(struct pw__fiber *f, struct pw_cx *cx)
{
	struct pw__fctx here;
	struct pw__fiber *prev = cur_fiber;

#if defined(PW__FCTX_ASAN) || defined(PW__FCTX_TSAN)
	pw__fctx_thread(&here); /* without them the switch keeps only sp */
#endif
	f->back = &here;
	f->cx = cx;
	cur_fiber = f;
	pw__fstack_running(&f->stack, f->name);
	pw__fctx_switch(&here, &f->ctx);
	cur_fiber = prev;
	if (prev)
		pw__fstack_running(&prev->stack, prev->name);
	else
		pw__fstack_running(NULL, NULL);
	f->cx = NULL;
}

/* Give the stack back unless something still points into the task. */
static void fiber_release(struct pw__fiber *f)
{
	if (!(f->flags & PW__F_STACK) || pw__pins(f->task))
		return;
	f->flags &= ~PW__F_STACK;
	f->task->flags &= (uint16_t)~PW__T_FIBER;
	pw__fctx_destroy(&f->ctx);
	pw__fstack_put(&f->stack);
	if (f->connect) {
		free(f->connect);
		f->connect = NULL;
	}
}

void pw__fiber_task_free(struct pw__task *t)
{
	struct pw__fiber *f = t->state;

	t->flags &= (uint16_t)~PW__T_FIBER;
	f->flags &= ~PW__F_STACK;
	pw__fctx_destroy(&f->ctx);
	if (pw__cur_shard)
		pw__fstack_put(&f->stack);
	else
		munmap(f->stack.map, f->stack.map_len);
	free(f->connect);
	f->connect = NULL;
}

/* The function returned: close what pw__fiber_close_at_exit() named.
 * On the scheduler's stack, so its frames never touch the fiber's. */
static void fiber_exit_close(struct pw__fiber *f)
{
	if (f->exit_fd >= 0) {
		close(f->exit_fd);
		f->exit_fd = -1;
	}
}

int pw__fiber_close_at_exit(int fd)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	f->exit_fd = fd;
	return 0;
}

static int fiber_start(struct pw__fiber *f, struct pw_cx *cx)
{
	int err = pw__fstack_get(f->stack_size, &f->stack);

	if (err)
		return err == -EINVAL ? -EINVAL : -ENOMEM;
	pw__fctx_make(&f->ctx, &f->stack, fiber_entry, f);
	f->task = cx->task;
	f->flags |= PW__F_STARTED | PW__F_STACK;
	cx->task->flags |= PW__T_FIBER;
	return 0;
}

static enum pw_poll fiber_poll(struct pw_cx *cx, void *state)
{
	struct pw__fiber *f = state;

	if (__builtin_expect(!(f->flags & PW__F_STARTED), 0)) {
		int err = fiber_start(f, cx);
		if (err)
			return pw_ready(cx, err);
	}
	fiber_resume(f, cx);
	if (!(f->flags & PW__F_DONE))
		return PW_PENDING;
	fiber_exit_close(f);
	fiber_release(f);
	/* Nothing left for the drop hook to do: without it the task ends
	 * on the scheduler's fast path. Both fields belong to the thread
	 * running the task. */
	cx->task->drop = NULL;
	cx->task->flags &= (uint16_t)~PW__T_DROP;
	return pw_ready(cx, f->result);
}

/* The task's drop hook: unwind a fiber that is suspended. */
static void fiber_drop(void *state)
{
	struct pw__fiber *f = state;

	if ((f->flags & (PW__F_STARTED | PW__F_DONE)) != PW__F_STARTED)
		return; /* never ran, or finished and released at its end */
	f->flags |= PW__F_CANCELLED;
	fiber_resume(f, NULL);
	if (!(f->flags & PW__F_DONE)) {
		/* Every wait returns at once once cancelled: only a switch
		 * made by hand can get here. */
		fprintf(stderr,
			"pinwheel: fiber '%s' suspended while "
			"cancelled\n",
			f->name);
		abort();
	}
	fiber_exit_close(f);
	fiber_release(f);
}

/* The record's fields a fiber needs before its first poll; the rest is
 * set by fiber_start() and fiber_resume(). */
static void fiber_init(struct pw__fiber *f, pw_fiber_fn fn, void *arg,
		       const struct pw_fiber_opts *opts)
{
	f->fn = fn;
	f->arg = arg;
	f->name = opts && opts->name ? opts->name : "fiber";
	f->stack_size = opts ? opts->stack_size : 0;
	f->deadline = PW_TIME_NEVER;
	f->timer.state = PW_SLEEP_IDLE; /* armed only after an init */
	f->blk.state = PW_BLOCKING_IDLE;
	f->connect = NULL;
	f->exit_fd = -1;
	f->flags = 0;
}

static bool bad_opts(pw_fiber_fn fn, const struct pw_fiber_opts *opts)
{
	return !fn || (opts && opts->stack_size > PW_FIBER_STACK_MAX);
}

/*
 * pw_spawn() with the record built in the task's block rather than
 * copied into it (the record is a few hundred bytes, mostly filled in
 * later).
 */
int pw_fiber_spawn(struct pw_join *join, pw_fiber_fn fn, void *arg,
		   const struct pw_fiber_opts *opts)
{
	struct pw__shard *s = pw__cur_shard;
	struct pw__task *t;

	if (join) {
		join->task = NULL;
		join->cancelled = false;
	}
	if (bad_opts(fn, opts))
		return -EINVAL;
	if (!s)
		return -EPERM;
	if (s->stopping)
		return -ESHUTDOWN;
	int err = pw__task_new(s, &t, fiber_poll, NULL,
			       sizeof(struct pw__fiber), fiber_drop);
	if (err)
		return err;
	fiber_init(t->state, fn, arg, opts);
	pw__task_launch(t, join);
	return 0;
}

int pw_fiber_spawn_on(struct pw_runtime *rt, unsigned shard, pw_fiber_fn fn,
		      void *arg, const struct pw_fiber_opts *opts)
{
	struct pw__fiber f = { 0 };

	if (bad_opts(fn, opts))
		return -EINVAL;
	fiber_init(&f, fn, arg, opts);
	return pw_runtime_spawn(rt, shard, fiber_poll, &f, sizeof(f),
				fiber_drop);
}

/* pw_fiber_block_on()'s task: spawns the fiber and joins it. */
struct block_on {
	struct pw_join join;
	pw_fiber_fn fn;
	void *arg;
	bool spawned;
};

static enum pw_poll block_on_poll(struct pw_cx *cx, void *state)
{
	struct block_on *b = state;
	int64_t res;

	if (!b->spawned) {
		int err = pw_fiber_spawn(&b->join, b->fn, b->arg, NULL);
		if (err)
			return pw_ready(cx, err);
		b->spawned = true;
	}
	if (pw_join_poll(cx, &b->join, &res) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, res);
}

int pw_fiber_block_on(struct pw_runtime *rt, pw_fiber_fn fn, void *arg,
		      int64_t *result)
{
	struct block_on b = { .fn = fn, .arg = arg };

	if (!fn)
		return -EINVAL;
	return pw_block_on(rt, block_on_poll, &b, result);
}

bool pw_fiber_is_running(void)
{
	return pw__fiber_cur() != NULL;
}

struct pw_cx *pw_fiber_cx(void)
{
	struct pw__fiber *f = pw__fiber_cur();

	return f ? f->cx : NULL;
}

/* ---- the wait ----------------------------------------------------------- */

static bool deadline_passed(const struct pw__fiber *f)
{
	return f->deadline != PW_TIME_NEVER &&
	       (uint64_t)pw_time_now() >= f->deadline;
}

int pw__fiber_wait(struct pw__fiber *f, pw_poll_fn fn, void *st,
		   pw_drop_fn cancel, bool timed)
{
	if (f->flags & PW__F_CANCELLED)
		return -ECANCELED;
	timed = timed && f->deadline != PW_TIME_NEVER;
	if (timed) {
		if (deadline_passed(f))
			return -ETIMEDOUT;
		pw_sleep_init_at(&f->timer, f->deadline);
	}
	for (;;) {
		if (fn(f->cx, st) == PW_READY)
			break;
		if (timed && pw_sleep_poll(f->cx, &f->timer) == PW_READY) {
			if (cancel)
				cancel(st);
			return -ETIMEDOUT;
		}
		fiber_suspend(f);
		if (f->flags & PW__F_CANCELLED) {
			if (timed)
				pw_sleep_cancel(&f->timer);
			if (cancel)
				cancel(st);
			return -ECANCELED;
		}
	}
	if (timed)
		pw_sleep_cancel(&f->timer);
	return 0;
}

int64_t pw_fiber_await(pw_poll_fn fn, void *state, pw_drop_fn cancel)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	if (!fn)
		return -EINVAL;
	int err = pw__fiber_wait(f, fn, state, cancel, true);
	/* Ready in this very poll: cx->result is what fn set. */
	return err ? err : f->cx->result;
}

int pw_fiber_yield(void)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	if (f->flags & PW__F_CANCELLED)
		return -ECANCELED;
	pw_yield(f->cx);
	fiber_suspend(f);
	return (f->flags & PW__F_CANCELLED) ? -ECANCELED : 0;
}

/* ---- sleeps and the deadline ------------------------------------------ */

static enum pw_poll sleep_step(struct pw_cx *cx, void *st)
{
	return pw_sleep_poll(cx, st);
}

static void sleep_cancel(void *st)
{
	pw_sleep_cancel(st);
}

int pw_fiber_sleep_until(uint64_t deadline)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	uint64_t until = deadline < f->deadline ? deadline : f->deadline;
	if (!(f->flags & PW__F_CANCELLED))
		pw_sleep_init_at(&f->timer, until);
	int err = pw__fiber_wait(f, sleep_step, &f->timer, sleep_cancel, false);
	if (err)
		return err;
	return until < deadline ? -ETIMEDOUT : 0;
}

static uint64_t after(uint64_t ns)
{
	uint64_t now = (uint64_t)pw_time_now();

	return ns >= PW_TIME_NEVER - now ? PW_TIME_NEVER : now + ns;
}

int pw_fiber_sleep(uint64_t ns)
{
	if (!pw__fiber_cur())
		return -EPERM;
	return pw_fiber_sleep_until(after(ns));
}

int pw_fiber_set_deadline(uint64_t deadline)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	f->deadline = deadline;
	return 0;
}

int pw_fiber_timeout(uint64_t ns)
{
	struct pw__fiber *f = pw__fiber_cur();

	if (!f)
		return -EPERM;
	f->deadline = after(ns);
	return 0;
}

uint64_t pw_fiber_deadline(void)
{
	struct pw__fiber *f = pw__fiber_cur();

	return f ? f->deadline : PW_TIME_NEVER;
}

bool pw_fiber_cancelled(void)
{
	struct pw__fiber *f = pw__fiber_cur();

	return f && (f->flags & PW__F_CANCELLED);
}

/* ---- join --------------------------------------------------------------- */

struct join_wait {
	struct pw_join *j;
	int64_t res;
};

static enum pw_poll join_step(struct pw_cx *cx, void *st)
{
	struct join_wait *w = st;

	return pw_join_poll(cx, w->j, &w->res);
}

int64_t pw_fiber_join(struct pw_join *j)
{
	struct pw__fiber *f = pw__fiber_cur();
	struct join_wait w = { j, 0 };

	if (!f)
		return -EPERM;
	if (!j || !j->task)
		return -EINVAL;
	int err = pw__fiber_wait(f, join_step, &w, NULL, true);
	return err ? err : w.res;
}
