/* SPDX-License-Identifier: MIT */
/*
 * steal_task.c - stealing mode's task state machine, beside its
 * scheduler (steal.c).
 *
 * Tasks move between workers, so their scheduling state cannot belong to
 * one thread. As in Tokio, task->remote is then one atomic word (the
 * PW__S_* encoding, core/task_int.h): RUNNING, NOTIFIED, COMPLETE, ABORT
 * and JOINW bits and a reference count. A wake sets NOTIFIED; the thread
 * that set it on an idle task queues it (steal.c); a task woken while
 * running is queued by its runner after the poll, at the back
 * (is_yield). References: the scheduler's (until COMPLETE), the join
 * handle's, each owned waker's and each pin's; the last one frees the
 * block (steal.c). The result, flags and drop hook are written before
 * COMPLETE (release) and read after it (acquire). The join side owns
 * task->joiner while JOINW is clear; the finisher takes it when its
 * COMPLETE transition sees JOINW. The output area (pw_spawn_out()) is
 * written by the task's polls before COMPLETE and copied by the join
 * side after it, like the result. The plain fields (flags, cur_task,
 * pins' owner) belong to the worker running the task, and while a task
 * holds pins to the worker they are bound to.
 */
#include <errno.h>

#include "shard/sched.h"
#include "shard/steal.h"
#include "shard/steal_task.h"

void pw__task_unref_steal(struct pw__task *t)
{
	/* acq_rel: releases this thread's uses of the task; the last one
	 * acquires every other thread's before the block is freed. */
	uint64_t old = atomic_fetch_sub_explicit(&t->remote, PW__S_REF_ONE,
						 memory_order_acq_rel);
	if ((old >> PW__S_REF_SHIFT) == 1)
		pw__steal_free(t);
}

void pw__task_wake_steal(struct pw__task *t)
{
	uint64_t old = atomic_load_explicit(&t->remote, memory_order_relaxed);

	/* acq_rel CAS: release publishes what the waker wrote before the
	 * wake; pairs with the runner's CAS that takes NOTIFIED. */
	do {
		if (old & (PW__S_COMPLETE | PW__S_NOTIFIED))
			return;
	} while (!atomic_compare_exchange_weak_explicit(
		&t->remote, &old, old | PW__S_NOTIFIED, memory_order_acq_rel,
		memory_order_relaxed));
	if (!(old & PW__S_RUNNING))
		pw__steal_schedule(t, false);
}

void pw__task_abort_steal(struct pw__task *t)
{
	uint64_t old = atomic_load_explicit(&t->remote, memory_order_relaxed);

	/* acq_rel CAS: as in pw__task_wake_steal(). */
	do {
		if (old & PW__S_COMPLETE)
			return;
	} while (!atomic_compare_exchange_weak_explicit(
		&t->remote, &old, old | PW__S_ABORT | PW__S_NOTIFIED,
		memory_order_acq_rel, memory_order_relaxed));
	if (!(old & (PW__S_RUNNING | PW__S_NOTIFIED)))
		pw__steal_schedule(t, false);
}

static void s_finish(struct pw__shard *s, struct pw__task *t, int64_t res,
		     bool cancelled)
{
	PW__STAT_INC(s, finished);
	t->result = res;
	t->flags = (uint16_t)((t->flags | PW__T_DONE |
			       (cancelled ? PW__T_CANCELLED : 0)) &
			      ~PW__T_NOTIFIED);
	if (t->drop)
		t->drop(t->state);
	uint64_t old = atomic_load_explicit(&t->remote, memory_order_relaxed);
	/* acq_rel CAS: releases the result, the flags and the drop hook's
	 * effects to the join side (pairs with its acquire load); acquires
	 * the joiner it published with JOINW. */
	while (!atomic_compare_exchange_weak_explicit(
		&t->remote, &old,
		(old | PW__S_COMPLETE) &
			~(PW__S_RUNNING | PW__S_NOTIFIED | PW__S_ABORT),
		memory_order_acq_rel, memory_order_relaxed))
		;
	if (old & PW__S_JOINW) {
		struct pw__task *j = t->joiner;
		pw__task_wake_steal(j);
		pw__task_unref_steal(j);
	}
	pw__blockon_check(t);
	pw__task_unref_steal(t); /* the scheduler's reference */
}

enum pw_poll pw__task_poll_steal(struct pw__shard *s, struct pw__task *t,
				 int *budget)
{
	uint64_t old = atomic_load_explicit(&t->remote, memory_order_relaxed);

	/* acq_rel CAS: acquires what the last runner and the waker
	 * released; pairs with their CASes. */
	while (!atomic_compare_exchange_weak_explicit(
		&t->remote, &old, (old & ~PW__S_NOTIFIED) | PW__S_RUNNING,
		memory_order_acq_rel, memory_order_relaxed))
		;
	if ((old & PW__S_ABORT) || s->stopping) {
		s_finish(s, t, -ECANCELED, true);
		return PW_READY;
	}
	struct pw_cx cx = { s, t, 0, *budget };
	s->cur_task = t;
	enum pw_poll r = t->fn(&cx, t->state);
	s->cur_task = NULL;
	*budget = cx.budget > 0 ? cx.budget : 0;
	if (r == PW_READY) {
		s_finish(s, t, cx.result, false);
		return PW_READY;
	}
	uint64_t self = (t->flags & PW__T_NOTIFIED) ? PW__S_NOTIFIED : 0;
	uint64_t nw;
	t->flags &= (uint16_t)~PW__T_NOTIFIED;
	old = atomic_load_explicit(&t->remote, memory_order_relaxed);
	/* acq_rel CAS: releases the poll's writes to the next runner. */
	do {
		nw = (old & ~PW__S_RUNNING) | self;
	} while (!atomic_compare_exchange_weak_explicit(&t->remote, &old, nw,
							memory_order_acq_rel,
							memory_order_relaxed));
	if (nw & PW__S_NOTIFIED)
		pw__steal_schedule(t, true);
	return PW_PENDING;
}

void pw__task_unpin_steal(struct pw__shard *s, struct pw__task *t, bool wake)
{
	(void)s;
	/* Read while the pin still binds the task to this thread. */
	bool done = t->flags & PW__T_DONE;

	pw__pin_drop(t);
	if (done)
		pw__blockon_check(t);
	else if (wake)
		pw__task_wake_steal(t);
	pw__task_unref_steal(t);
}

static enum pw_poll join_poll(struct pw_cx *cx, struct pw_join *j,
			      int64_t *result, void *out, size_t n)
{
	struct pw__task *t = j->task;
	/* acquire: pairs with the finisher's release of COMPLETE. */
	uint64_t st = atomic_load_explicit(&t->remote, memory_order_acquire);

	for (;;) {
		if (st & PW__S_COMPLETE)
			goto ready;
		if (!(st & PW__S_JOINW))
			break;
		if (t->joiner == cx->task)
			return PW_PENDING;
		/* Another task waited before: take the slot back. acq_rel
		 * CAS: fails, and acquires, if the task completed. */
		if (atomic_compare_exchange_weak_explicit(
			    &t->remote, &st, st & ~PW__S_JOINW,
			    memory_order_acq_rel, memory_order_acquire)) {
			pw__task_unref_steal(t->joiner);
			st &= ~PW__S_JOINW;
			break;
		}
	}
	t->joiner = cx->task;
	pw__task_ref_steal(cx->task);
	/* acq_rel CAS: releases the joiner to the finisher (pairs with its
	 * CAS); fails, and acquires the result, if the task completed. */
	while (!atomic_compare_exchange_weak_explicit(
		&t->remote, &st, st | PW__S_JOINW, memory_order_acq_rel,
		memory_order_acquire)) {
		if (st & PW__S_COMPLETE) {
			pw__task_unref_steal(cx->task);
			goto ready;
		}
	}
	return PW_PENDING;
ready:
	*result = t->result;
	j->cancelled = (t->flags & PW__T_CANCELLED) != 0;
	if (n && !j->cancelled)
		pw__task_out_copy(t, out, n);
	j->task = NULL;
	pw__task_unref_steal(t);
	return PW_READY;
}

void pw__task_join_detach_steal(struct pw__task *t)
{
	uint64_t st = atomic_load_explicit(&t->remote, memory_order_acquire);

	/* acq_rel CAS: takes the joiner back unless the finisher has. */
	while ((st & (PW__S_JOINW | PW__S_COMPLETE)) == PW__S_JOINW) {
		if (atomic_compare_exchange_weak_explicit(
			    &t->remote, &st, st & ~PW__S_JOINW,
			    memory_order_acq_rel, memory_order_acquire)) {
			pw__task_unref_steal(t->joiner);
			break;
		}
	}
	pw__task_unref_steal(t);
}

enum pw_poll pw__task_join_poll_steal(struct pw_cx *cx, struct pw_join *j,
				      int64_t *result, void *out, size_t n)
{
	if (!pw__coop_proceed(cx))
		return PW_PENDING;
	enum pw_poll r = join_poll(cx, j, result, out, n);
	if (r == PW_PENDING)
		pw_coop_unspend(cx);
	return r;
}
