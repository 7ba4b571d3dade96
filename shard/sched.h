/* SPDX-License-Identifier: MIT */
/*
 * sched.h - the interface between tasks and the shard that runs them:
 * wake (schedule), run (one poll and its end), pin and unpin, and the
 * coop budget, inline because they are the hot paths of every spawn,
 * wake and poll. Private to the library.
 *
 * Shard mode: a task's flags are plain fields of its owning shard, so
 * each call here is a few loads and stores, no atomic read-modify-write.
 * Stealing mode: the calls hand over to shard/steal_task.c, which works
 * on Tokio's state word (core/task_int.h, task->remote). Callers: the
 * shard loop (pw__task_run()), core/task.c (wakers, joins), and every
 * leaf operation that registers kernel work, a timer or a call for a
 * task (pins) and wakes it on progress. Shard thread only, throughout.
 */
#ifndef PW_SHARD_SCHED_H
#define PW_SHARD_SCHED_H

#include <errno.h>

#include "pinwheel/time.h"
#include "core/task_int.h"
#include "shard/shard_int.h"
#include "shard/steal_task.h"

/* pw_coop_proceed(), inline in the library's own leaf operations. */
static inline __attribute__((always_inline)) bool
pw__coop_proceed(struct pw_cx *cx)
{
	if (!cx || !cx->task)
		return false;
	if (__builtin_expect(cx->budget > 0, 1)) {
		cx->budget--;
		return true;
	}
	if (cx->budget == 0) {
		/* First refusal in this poll: count one forced yield. */
		PW__STAT_INC(cx->shard, budget_yields);
		cx->budget = -1;
	}
	cx->task->flags |= PW__T_NOTIFIED;
	return false;
}

/*
 * Wake @t on its own shard: queue it unless it is done or queued already;
 * a task being polled is marked NOTIFIED and re-queued after its poll.
 */
static inline void pw__task_schedule(struct pw__shard *s, struct pw__task *t)
{
	uint16_t f = t->flags;

	if (f & (PW__T_DONE | PW__T_SCHEDULED))
		return;
	if (f & PW__T_RUNNING) {
		t->flags = f | PW__T_NOTIFIED;
		return;
	}
	t->flags = f | PW__T_SCHEDULED;
	pw__runq_push(&s->runq, t);
}

/* A pw_block_on() caller may go once nothing uses its state: the task
 * is done and no kernel operation still points into it. The thread
 * running or owning @t. */
static inline void pw__blockon_check(struct pw__task *t)
{
	if ((t->flags & (PW__T_BLOCKON | PW__T_DONE)) ==
		    (PW__T_BLOCKON | PW__T_DONE) &&
	    !atomic_load_explicit(&t->pins, memory_order_relaxed)) {
		t->flags &= (uint16_t)~PW__T_BLOCKON;
		pw__blockon_release(t->state);
	}
}

/*
 * Drop one owner-side reference of shard-mode task @t (inline in the
 * join and waker calls): a finished task, not queued, running, pinned or
 * a pw_block_on() task, that no other thread references goes straight
 * back to the slab; anything else goes through pw__task_unref_last().
 */
static inline void pw__task_unref(struct pw__shard *s, struct pw__task *t)
{
	if (--t->refs > 0)
		return;
	/* acquire: as in pw__task_maybe_free(). */
	if (__builtin_expect((t->flags &
			      (PW__T_DONE | PW__T_SCHEDULED | PW__T_RUNNING |
			       PW__T_PINNED | PW__T_BLOCKON)) == PW__T_DONE,
			     1) &&
	    !atomic_load_explicit(&t->remote, memory_order_acquire)) {
		pw__slab_free(&s->slab, t, t->cls);
		return;
	}
	pw__task_unref_last(s, t);
}

/*
 * Finish @t, which returned ready with nothing to drop, no pin, not a
 * pw_block_on() task, a joiner waiting and more references than the
 * scheduler's (the join handle's): wake the joiner and drop the
 * scheduler's reference, which cannot be the last. The short form of
 * pw__task_finish(). Shard thread only.
 */
static inline void pw__task_finish_joined(struct pw__shard *s,
					  struct pw__task *t, int64_t res)
{
	struct pw__task *j = t->joiner;

	t->flags = (uint16_t)((t->flags | PW__T_DONE) &
			      ~(PW__T_NOTIFIED | PW__T_ABORT));
	t->result = res;
	t->joiner = NULL;
	t->refs--;
	PW__STAT_INC(s, finished);
	PW__STAT_INC(s, local_wakes);
	pw__task_schedule(s, j);
	/* The joiner's reference that t->joiner held; the joiner is now
	 * queued (or running), so the scheduler's keeps it alive unless it
	 * is done already. */
	if (--j->refs == 0)
		pw__task_unref_last(s, j);
}

/*
 * Poll @t once (shard mode): the shard loop's inner step, inline there.
 * A detached task that finishes with nothing to wake, drop or keep goes
 * straight back to the slab; any other end goes through
 * pw__task_finish(). Return: 1 if @t's poll function ran, 0 if it was
 * only freed or aborted (the loop counts polls per batch). Shard thread
 * only.
 */
static inline unsigned pw__task_run(struct pw__shard *s, struct pw__task *t)
{
	uint16_t f = (uint16_t)(t->flags & ~PW__T_SCHEDULED);

	if (__builtin_expect(f & (PW__T_DONE | PW__T_ABORT), 0)) {
		t->flags = f;
		if (f & PW__T_DONE)
			pw__task_maybe_free(s, t);
		else
			pw__task_finish(s, t, -ECANCELED, true);
		return 0;
	}
	t->flags = f | PW__T_RUNNING;
	struct pw_cx cx = { s, t, 0, PW_COOP_BUDGET };
	s->cur_task = t;
	enum pw_poll r = t->fn(&cx, t->state);
	s->cur_task = NULL;
	t->flags &= (uint16_t)~PW__T_RUNNING;
	if (r == PW_READY) {
		/* The common end of a detached task: nothing to run, wake or
		 * keep, so the block goes straight back to the slab. relaxed
		 * pins: only this shard writes them. acquire remote: as in
		 * pw__task_maybe_free(). */
		if (__builtin_expect(!(t->flags & (PW__T_DROP | PW__T_PINNED |
						   PW__T_BLOCKON)) &&
					     !t->joiner && t->refs == 1,
				     1) &&
		    !atomic_load_explicit(&t->remote, memory_order_acquire)) {
			PW__STAT_INC(s, finished);
			pw__slab_free(&s->slab, t, t->cls);
			return 1;
		}
		/* The common end of an awaited task: its join handle keeps
		 * it, so only the awaiting task is woken. */
		if (__builtin_expect(!(t->flags & (PW__T_DROP | PW__T_PINNED |
						   PW__T_BLOCKON)) &&
					     t->joiner && t->refs > 1,
				     1)) {
			pw__task_finish_joined(s, t, cx.result);
			return 1;
		}
		pw__task_finish(s, t, cx.result, false);
		return 1;
	}
	if (t->flags & (PW__T_NOTIFIED | PW__T_ABORT)) {
		t->flags = (uint16_t)((t->flags & ~PW__T_NOTIFIED) |
				      PW__T_SCHEDULED);
		pw__runq_push(&s->runq, t);
	}
	return 1;
}

/*
 * Pins: a kernel operation, timer or call in flight that points into a
 * task's state pins the task, so its memory outlives the operation.
 * pw__task_pin() is called by the shard that registers the operation,
 * while polling @t; the unpin calls by the same shard when the operation
 * ends. pw__task_unpin() frees a finished task whose last pin this was;
 * pw__task_unpin_wake() also wakes @t when it is not finished.
 *
 * In stealing mode a pinned task is bound to the worker its pins are on
 * (every poll and its drop happen there, see steal.c) and each pin also
 * holds a reference.
 */
static inline void pw__task_pin(struct pw__shard *s, struct pw__task *t)
{
	/* relaxed: only this shard writes pins (see task_int.h). */
	uint32_t p = atomic_load_explicit(&t->pins, memory_order_relaxed);

	if (__builtin_expect(t->steal, 0)) {
		if (!p)
			t->bound = s;
		/* relaxed: the caller holds a reference (as Arc::clone). */
		atomic_fetch_add_explicit(&t->remote, PW__S_REF_ONE,
					  memory_order_relaxed);
	} else {
		t->flags |= PW__T_PINNED;
	}
	atomic_store_explicit(&t->pins, p + 1, memory_order_relaxed);
}

/* Wake @t from the shard its pins are on (an operation's progress). */
static inline void pw__task_wake_local(struct pw__shard *s, struct pw__task *t)
{
	if (__builtin_expect(t->steal, 0))
		pw__task_wake_steal(t);
	else
		pw__task_schedule(s, t);
}

/* Drop one pin; returns the pins left. */
static inline uint32_t pw__pin_drop(struct pw__task *t)
{
	uint32_t p = atomic_load_explicit(&t->pins, memory_order_relaxed);

	/* release: pairs with pw__pins(); see task_int.h. */
	atomic_store_explicit(&t->pins, p - 1, memory_order_release);
	return p - 1;
}

/* Shard mode: drop a pin and keep PW__T_PINNED in step. */
static inline void pw__pin_drop_shard(struct pw__task *t)
{
	if (!pw__pin_drop(t))
		t->flags &= (uint16_t)~PW__T_PINNED;
}

static inline void pw__task_unpin(struct pw__shard *s, struct pw__task *t)
{
	if (__builtin_expect(t->steal, 0)) {
		pw__task_unpin_steal(s, t, false);
		return;
	}
	pw__pin_drop_shard(t);
	if (t->flags & PW__T_DONE)
		pw__task_maybe_free(s, t);
}

static inline void pw__task_unpin_wake(struct pw__shard *s, struct pw__task *t)
{
	if (__builtin_expect(t->steal, 0)) {
		pw__task_unpin_steal(s, t, true);
		return;
	}
	pw__pin_drop_shard(t);
	if (t->flags & PW__T_DONE)
		pw__task_maybe_free(s, t);
	else
		pw__task_schedule(s, t);
}

/*
 * pw__deadline_passed - the deadline of a leaf's poll (net/, fs/): true
 * when @deadline has passed; otherwise @timer is armed for it
 * (PW_TIME_NEVER disarms it). Never counts against the budget.
 * Context: the shard thread, from the polling task.
 */
static inline bool pw__deadline_passed(struct pw_cx *cx, struct pw_sleep *timer,
				       pw_time_t deadline)
{
	if (deadline == PW_TIME_NEVER) {
		pw_sleep_cancel(timer);
		return false;
	}
	if (deadline <= pw__now(cx->shard)) {
		pw_sleep_cancel(timer);
		return true;
	}
	if (pw_sleep_deadline(timer) != deadline || pw_sleep_is_elapsed(timer))
		pw_sleep_reset(timer, deadline);
	(void)pw_sleep_poll(cx, timer); /* arms it: the deadline is ahead */
	return false;
}

#endif /* PW_SHARD_SCHED_H */
