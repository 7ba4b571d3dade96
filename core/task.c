/* SPDX-License-Identifier: MIT */
/*
 * task.c - task lifecycle, wakers, join handles and the coop budget.
 *
 * Scheduling on the owner. A task's flags are plain fields of the owning
 * shard: wake = "if not done and not queued, queue it" (a task woken twice
 * before it runs is queued once); a wake while the task is being polled
 * sets NOTIFIED and the loop re-queues it after the poll (never a
 * recursive poll); a wake after DONE does nothing. No lock and no atomic
 * read-modify-write on any of these paths.
 *
 * References. The true count is refs + delta, where refs is the owner's
 * plain counter and delta is a signed count kept in task->remote by other
 * threads. References are held by: the scheduler until the task is DONE,
 * the join handle until consumed or detached, and every owned waker. Other
 * threads change only task->remote, with one read-modify-write that also
 * sets PW__R_QUEUED when the owner must look (a drop, or a wake); the
 * thread that sets PW__R_QUEUED pushes the task's embedded inbox node.
 * The owner folds delta into refs when it pops that node, and also when
 * its own refs reach zero. A task is freed when refs == 0, remote == 0
 * (no delta, nothing queued), no kernel operation pins it, and it is
 * neither queued nor running. A thread that holds a reference keeps the
 * count positive, so the owner never frees memory another thread can
 * still touch; and once PW__R_QUEUED is set the owner keeps the task until
 * it has popped the node.
 */
#include <errno.h>
#include <string.h>

#include "shard_int.h"
#include "task_int.h"

_Thread_local struct pw__shard *pw__cur_shard
	__attribute__((tls_model("initial-exec")));

/* A pw_block_on() caller may go once nothing uses its state: the task
 * is done and no kernel operation still points into it. */
static inline void blockon_check(struct pw__task *t)
{
	if ((t->flags & (PW__T_BLOCKON | PW__T_DONE)) ==
		    (PW__T_BLOCKON | PW__T_DONE) &&
	    !t->pins) {
		t->flags &= (uint16_t)~PW__T_BLOCKON;
		pw__blockon_release(t->state);
	}
}

void pw__task_maybe_free(struct pw__shard *s, struct pw__task *t)
{
	blockon_check(t);
	if ((t->flags & (PW__T_DONE | PW__T_SCHEDULED | PW__T_RUNNING)) !=
	    PW__T_DONE)
		return;
	if (t->refs > 0 || t->pins)
		return;
	/* acquire: pairs with the acq_rel read-modify-writes of other
	 * threads; zero means none holds a reference or has a node queued. */
	if (atomic_load_explicit(&t->remote, memory_order_acquire))
		return;
	pw__slab_free(&s->slab, t, t->cls);
}

/* Move the remote delta into refs, keeping the flags for the inbox. */
static void fold_remote(struct pw__task *t)
{
	uint64_t old = atomic_load_explicit(&t->remote, memory_order_relaxed);

	/* acq_rel CAS: acquires what the other threads released with their
	 * read-modify-writes; pairs with those in remote_update(). */
	while (!atomic_compare_exchange_weak_explicit(
		&t->remote, &old, old & PW__R_FLAGS, memory_order_acq_rel,
		memory_order_relaxed))
		;
	t->refs += (int32_t)((int64_t)old >> 2);
}

static inline void unref(struct pw__shard *s, struct pw__task *t)
{
	if (--t->refs > 0)
		return;
	/* acquire: as in pw__task_maybe_free(). With no owner-side
	 * reference left, a zero here means no thread holds one at all,
	 * so nothing can change it: no read-modify-write needed. */
	if (atomic_load_explicit(&t->remote, memory_order_acquire))
		fold_remote(t);
	pw__task_maybe_free(s, t);
}

void pw__task_unref(struct pw__shard *s, struct pw__task *t)
{
	unref(s, t);
}

void pw__task_remote_event(struct pw__shard *s, struct pw__task *t)
{
	uint64_t old = atomic_load_explicit(&t->remote, memory_order_relaxed);

	/* acq_rel CAS: clears QUEUED and WAKE and takes the delta; acquires
	 * the data the waking thread released (pairs with remote_update()).
	 * After it, another thread may queue the node again. */
	while (!atomic_compare_exchange_weak_explicit(&t->remote, &old, 0,
						      memory_order_acq_rel,
						      memory_order_relaxed))
		;
	t->refs += (int32_t)((int64_t)old >> 2);
	if (old & PW__R_WAKE) {
		PW__STAT_INC(s, remote_wakes);
		pw__task_schedule(s, t);
	}
	pw__task_maybe_free(s, t);
}

/*
 * Apply @add (a multiple of PW__R_ONE, possibly negative) and @flags to
 * task->remote from a thread that is not the owner, and queue the task's
 * inbox node if this call is the one that set PW__R_QUEUED. The caller
 * holds a reference, so the task cannot be freed before the exchange.
 */
static void remote_update(struct pw__task *t, uint64_t add, uint64_t flags)
{
	struct pw__shard *s = t->shard;
	uint64_t old = atomic_load_explicit(&t->remote, memory_order_relaxed);

	/* acq_rel CAS: release publishes the caller's writes before the
	 * wake; pairs with the owner's CAS in pw__task_remote_event() and
	 * fold_remote(). */
	while (!atomic_compare_exchange_weak_explicit(
		&t->remote, &old, (old + add) | flags, memory_order_acq_rel,
		memory_order_relaxed))
		;
	if ((flags & PW__R_QUEUED) && !(old & PW__R_QUEUED))
		pw__shard_post(s, &t->inbox);
}

void pw__task_finish(struct pw__shard *s, struct pw__task *t, int64_t res,
		     bool cancelled)
{
	t->flags = (uint16_t)((t->flags | PW__T_DONE |
			       (cancelled ? PW__T_CANCELLED : 0)) &
			      ~(PW__T_NOTIFIED | PW__T_ABORT));
	t->result = res;
	if (t->drop)
		t->drop(t->state);
	struct pw__task *j = t->joiner;
	if (j) {
		t->joiner = NULL;
		pw__task_schedule(s, j);
		PW__STAT_INC(s, local_wakes);
		unref(s, j);
	}
	blockon_check(t);
	unref(s, t); /* the scheduler's reference */
}

void pw__task_run(struct pw__shard *s, struct pw__task *t)
{
	t->flags &= (uint16_t)~PW__T_SCHEDULED;
	if (t->flags & PW__T_DONE) {
		pw__task_maybe_free(s, t);
		return;
	}
	if (t->flags & PW__T_ABORT) {
		pw__task_finish(s, t, -ECANCELED, true);
		return;
	}
	t->flags |= PW__T_RUNNING;
	struct pw_cx cx = { s, t, 0, PW_COOP_BUDGET };
	s->cur_task = t;
	enum pw_poll r = t->fn(&cx, t->state);
	s->cur_task = NULL;
	PW__STAT_INC(s, polls);
	t->flags &= (uint16_t)~PW__T_RUNNING;
	if (r == PW_READY) {
		pw__task_finish(s, t, cx.result, false);
		return;
	}
	if (t->flags & (PW__T_NOTIFIED | PW__T_ABORT)) {
		t->flags = (uint16_t)((t->flags & ~PW__T_NOTIFIED) |
				      PW__T_SCHEDULED);
		pw__runq_push(&s->runq, t);
	}
}

int pw__task_new(struct pw__shard *s, struct pw__task **tp, pw_poll_fn fn,
		 const void *state, size_t size, pw_drop_fn drop)
{
	int cls = pw__slab_class(PW__TASK_HDR + size);

	if (cls < 0)
		return -EINVAL;
	struct pw__task *t = pw__slab_alloc(&s->slab, cls);
	if (!t)
		return -ENOMEM;
	t->next = NULL;
	t->shard = s;
	t->fn = fn;
	t->drop = drop;
	t->result = 0;
	t->joiner = NULL;
	t->refs = 1;
	t->pins = 0;
	t->flags = PW__T_SCHEDULED; /* queued below */
	t->cls = (int8_t)cls;
	atomic_init(&t->remote, 0);
	atomic_init(&t->inbox.next, NULL);
	t->inbox.kind = PW__MSG_TASK;
	if (size) {
		t->state = (char *)t + PW__TASK_HDR;
		if (state) /* NULL: the (internal) caller fills it in */
			memcpy(t->state, state, size);
	} else {
		t->state = (void *)state;
	}
	PW__STAT_INC(s, spawned);
	pw__runq_push(&s->runq, t);
	*tp = t;
	return 0;
}

int pw_spawn(struct pw_join *join, pw_poll_fn fn, const void *state,
	     size_t size, pw_drop_fn drop)
{
	struct pw__shard *s = pw__cur_shard;
	struct pw__task *t;

	if (join) {
		join->task = NULL;
		join->cancelled = false;
	}
	if (!fn || size > PW_TASK_STATE_MAX || (size && !state))
		return -EINVAL;
	if (!s)
		return -EPERM;
	if (s->stopping)
		return -ESHUTDOWN;
	int err = pw__task_new(s, &t, fn, state, size, drop);
	if (err)
		return err;
	if (join) {
		t->refs++;
		join->task = t;
	}
	return 0;
}

enum pw_poll pw_join_poll(struct pw_cx *cx, struct pw_join *j, int64_t *result)
{
	if (!cx || !j || !result || !j->task) {
		if (result)
			*result = -EINVAL;
		return PW_READY;
	}
	struct pw__task *t = j->task;
	if (t->shard != cx->shard) {
		*result = -EXDEV;
		return PW_READY;
	}
	if (!pw_coop_proceed(cx))
		return PW_PENDING;
	if (t->flags & PW__T_DONE) {
		*result = t->result;
		j->cancelled = (t->flags & PW__T_CANCELLED) != 0;
		j->task = NULL;
		unref(cx->shard, t);
		return PW_READY;
	}
	pw_coop_unspend(cx);
	if (t->joiner != cx->task) {
		if (t->joiner)
			unref(cx->shard, t->joiner);
		t->joiner = cx->task;
		cx->task->refs++;
	}
	return PW_PENDING;
}

bool pw_join_is_finished(const struct pw_join *j)
{
	return j && j->task && (j->task->flags & PW__T_DONE);
}

void pw_join_detach(struct pw_join *j)
{
	if (!j || !j->task)
		return;
	struct pw__task *t = j->task;
	struct pw__shard *s = t->shard;

	j->task = NULL;
	if (t->joiner) {
		struct pw__task *w = t->joiner;
		t->joiner = NULL;
		unref(s, w);
	}
	unref(s, t);
}

int pw_join_abort(struct pw_join *j)
{
	if (!j || !j->task)
		return -EINVAL;
	struct pw__task *t = j->task;
	if (t->flags & PW__T_DONE)
		return -EALREADY;
	t->flags |= PW__T_ABORT;
	if (!(t->flags & (PW__T_SCHEDULED | PW__T_RUNNING))) {
		t->flags |= PW__T_SCHEDULED;
		pw__runq_push(&t->shard->runq, t);
	}
	return 0;
}

int pw_waker_clone(struct pw_waker *dst, const struct pw_waker *src)
{
	if (!dst || !src || !src->task)
		return -EINVAL;
	struct pw__task *t = src->task;
	if (pw__cur_shard == t->shard)
		t->refs++;
	else
		/* relaxed: the caller already holds a reference, so the
		 * count cannot reach zero concurrently (as Arc::clone); the
		 * owner's acq_rel fold reads it. */
		atomic_fetch_add_explicit(&t->remote, PW__R_ONE,
					  memory_order_relaxed);
	dst->task = t;
	return 0;
}

void pw_waker_wake_by_ref(const struct pw_waker *w)
{
	if (!w || !w->task)
		return;
	struct pw__task *t = w->task;
	struct pw__shard *s = t->shard;

	struct pw__shard *cur = pw__cur_shard;

	if (cur == s) {
		PW__STAT_INC(s, local_wakes);
		pw__task_schedule(s, t);
		return;
	}
	if (cur && cur->rt == s->rt) {
		/* The message carries a reference of its own, so the task
		 * outlives it whatever happens to @w meanwhile. relaxed: as
		 * in pw_waker_clone(). */
		atomic_fetch_add_explicit(&t->remote, PW__R_ONE,
					  memory_order_relaxed);
		if (pw__mesh_remote_wake(cur, t, true))
			return;
		remote_update(t, (uint64_t)0 - PW__R_ONE, 0);
	}
	remote_update(t, 0, PW__R_WAKE | PW__R_QUEUED);
}

void pw_waker_wake(struct pw_waker *w)
{
	if (!w || !w->task)
		return;
	struct pw__task *t = w->task;
	struct pw__shard *s = t->shard;

	w->task = NULL;
	struct pw__shard *cur = pw__cur_shard;
	if (cur == s) {
		PW__STAT_INC(s, local_wakes);
		pw__task_schedule(s, t);
		unref(s, t);
	} else if (!cur || cur->rt != s->rt ||
		   !pw__mesh_remote_wake(cur, t, true)) {
		remote_update(t, (uint64_t)0 - PW__R_ONE,
			      PW__R_WAKE | PW__R_QUEUED);
	}
}

void pw_waker_drop(struct pw_waker *w)
{
	if (!w || !w->task)
		return;
	struct pw__task *t = w->task;
	struct pw__shard *s = t->shard;

	w->task = NULL;
	struct pw__shard *cur = pw__cur_shard;
	if (cur == s)
		unref(s, t);
	else if (!cur || cur->rt != s->rt ||
		 !pw__mesh_remote_wake(cur, t, false))
		remote_update(t, (uint64_t)0 - PW__R_ONE, PW__R_QUEUED);
}

enum pw_poll pw_yield(struct pw_cx *cx)
{
	if (cx && cx->task)
		cx->task->flags |= PW__T_NOTIFIED;
	return PW_PENDING;
}

bool pw_coop_proceed(struct pw_cx *cx)
{
	if (!cx || !cx->task)
		return false;
	if (cx->budget > 0) {
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

uint64_t pw_task_id(const struct pw_cx *cx)
{
	return cx && cx->task ? (uint64_t)(uintptr_t)cx->task : 0;
}
