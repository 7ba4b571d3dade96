/* SPDX-License-Identifier: MIT */
/*
 * task_ref.c - shard mode's reference protocol: how threads other than a
 * task's owner clone, drop and wake it, and when the owner frees it.
 *
 * The true count is refs + delta, where refs is the owner's plain counter
 * and delta is a signed count kept in task->remote (the PW__R_* encoding,
 * core/task_int.h) by other threads. References are held by: the
 * scheduler until the task is DONE, the join handle until consumed or
 * detached, and every owned waker. Other threads change only
 * task->remote, with one read-modify-write that also sets PW__R_QUEUED
 * when the owner must look (a drop, or a wake); the thread that sets
 * PW__R_QUEUED pushes the task's embedded inbox node. The owner folds
 * delta into refs when it pops that node, and also when its own refs
 * reach zero. A task is freed when refs == 0, remote == 0 (no delta,
 * nothing queued), no kernel operation pins it, and it is neither queued
 * nor running. A thread that holds a reference keeps the count positive,
 * so the owner never frees memory another thread can still touch; and
 * once PW__R_QUEUED is set the owner keeps the task until it has popped
 * the node.
 *
 * A wake from another shard of the runtime travels as a mesh message
 * carrying a reference of its own (shard/mesh.c); from any other thread,
 * or when the mesh has no room, through the task's inbox node.
 */
#include "core/task_int.h"
#include "shard/mesh_int.h"
#include "shard/sched.h"

void pw__task_maybe_free(struct pw__shard *s, struct pw__task *t)
{
	pw__blockon_check(t);
	if (t->steal)
		return; /* freed by its last reference */
	if ((t->flags & (PW__T_DONE | PW__T_SCHEDULED | PW__T_RUNNING)) !=
	    PW__T_DONE)
		return;
	if (t->refs > 0 || (t->flags & PW__T_PINNED))
		return;
	/* acquire: pairs with the acq_rel read-modify-writes of other
	 * threads; zero means none holds a reference or has a node queued. */
	if (atomic_load_explicit(&t->remote, memory_order_acquire))
		return;
	if (t->flags & PW__T_FIBER)
		pw__fiber_task_free(t);
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

void pw__task_unref_last(struct pw__shard *s, struct pw__task *t)
{
	/* acquire: as in pw__task_maybe_free(). With no owner-side
	 * reference left, a zero here means no thread holds one at all,
	 * so nothing can change it: no read-modify-write needed. */
	if (atomic_load_explicit(&t->remote, memory_order_acquire))
		fold_remote(t);
	pw__task_maybe_free(s, t);
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
	if (t->flags & PW__T_DROP)
		t->drop(t->state);
	PW__STAT_INC(s, finished);
	struct pw__task *j = t->joiner;
	if (j) {
		t->joiner = NULL;
		pw__task_schedule(s, j);
		PW__STAT_INC(s, local_wakes);
		pw__task_unref(s, j);
	}
	pw__blockon_check(t);
	pw__task_unref(s, t); /* the scheduler's reference */
}

void pw__task_ref_remote(struct pw__task *t)
{
	/* relaxed: the caller already holds a reference, so the count
	 * cannot reach zero concurrently (as Arc::clone); the owner's
	 * acq_rel fold reads it. */
	atomic_fetch_add_explicit(&t->remote, PW__R_ONE, memory_order_relaxed);
}

void pw__task_wake_remote(struct pw__task *t, struct pw__shard *cur)
{
	if (cur && cur->rt == t->shard->rt) {
		/* The message carries a reference of its own, so the task
		 * outlives it whatever happens to the waker meanwhile. */
		pw__task_ref_remote(t);
		if (pw__mesh_remote_wake(cur, t, true))
			return;
		remote_update(t, (uint64_t)0 - PW__R_ONE, 0);
	}
	remote_update(t, 0, PW__R_WAKE | PW__R_QUEUED);
}

void pw__task_release_remote(struct pw__task *t, struct pw__shard *cur,
			     bool wake)
{
	if (cur && cur->rt == t->shard->rt &&
	    pw__mesh_remote_wake(cur, t, wake))
		return;
	remote_update(t, (uint64_t)0 - PW__R_ONE,
		      wake ? PW__R_WAKE | PW__R_QUEUED : PW__R_QUEUED);
}
