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
 *
 * Stealing mode. Tasks move between workers, so their scheduling state
 * cannot belong to one thread. As in Tokio, task->remote is then one
 * atomic word: RUNNING, NOTIFIED, COMPLETE, ABORT and JOINW bits and a
 * reference count. A wake sets NOTIFIED; the thread that set it on an
 * idle task queues it (steal.c); a task woken while running is queued by
 * its runner after the poll, at the back (is_yield). References: the
 * scheduler's (until COMPLETE), the join handle's, each owned waker's and
 * each pin's; the last one frees the block (steal.c). The result, flags
 * and drop hook are written before COMPLETE (release) and read after it
 * (acquire). The join side owns task->joiner while JOINW is clear; the
 * finisher takes it when its COMPLETE transition sees JOINW. The plain
 * fields (flags, cur_task, pins' owner) belong to the worker running the
 * task, and while a task holds pins to the worker they are bound to.
 */
#include <errno.h>
#include <string.h>

#include "shard/shard_int.h"
#include "core/task_int.h"

_Thread_local struct pw__shard *pw__cur_shard
	__attribute__((tls_model("initial-exec")));

/* A pw_block_on() caller may go once nothing uses its state: the task
 * is done and no kernel operation still points into it. */
static inline void blockon_check(struct pw__task *t)
{
	if ((t->flags & (PW__T_BLOCKON | PW__T_DONE)) ==
		    (PW__T_BLOCKON | PW__T_DONE) &&
	    !atomic_load_explicit(&t->pins, memory_order_relaxed)) {
		t->flags &= (uint16_t)~PW__T_BLOCKON;
		pw__blockon_release(t->state);
	}
}

void pw__task_maybe_free(struct pw__shard *s, struct pw__task *t)
{
	blockon_check(t);
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

static inline void unref(struct pw__shard *s, struct pw__task *t)
{
	if (--t->refs > 0)
		return;
	/* The common last reference: a finished shard-mode task, not
	 * queued, running, pinned or a pw_block_on() task, that no other
	 * thread references (acquire: as in pw__task_maybe_free()). */
	if (__builtin_expect((t->flags &
			      (PW__T_DONE | PW__T_SCHEDULED | PW__T_RUNNING |
			       PW__T_PINNED | PW__T_BLOCKON)) == PW__T_DONE &&
				     !t->steal,
			     1) &&
	    !atomic_load_explicit(&t->remote, memory_order_acquire)) {
		pw__slab_free(&s->slab, t, t->cls);
		return;
	}
	pw__task_unref_last(s, t);
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
	if (t->flags & PW__T_DROP)
		t->drop(t->state);
	PW__STAT_INC(s, finished);
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

/* Copy @n bytes, @w <= @n <= 2 * @w, as two overlapping @w-byte moves
 * (@w a constant once inlined, so no call). */
static inline __attribute__((always_inline)) void
copy_ends(char *d, const char *s, size_t n, size_t w)
{
	char a[16], b[16];

	memcpy(a, s, w);
	memcpy(b, s + n - w, w);
	memcpy(d, a, w);
	memcpy(d + n - w, b, w);
}

/*
 * Copy a task's state into its block. Most states are a few words, so
 * sizes up to 32 bytes are two overlapping loads and stores each, with
 * no call; larger ones go to memcpy().
 */
static inline __attribute__((always_inline)) void
copy_state(void *dst, const void *src, size_t n)
{
	char *d = dst;
	const char *s = src;

	if (n > 32)
		memcpy(d, s, n);
	else if (n >= 16)
		copy_ends(d, s, n, 16);
	else if (n >= 8)
		copy_ends(d, s, n, 8);
	else if (n >= 4)
		copy_ends(d, s, n, 4);
	else
		for (size_t i = 0; i < n; i++)
			d[i] = s[i];
}

static inline __attribute__((always_inline)) void
task_init(struct pw__task *t, struct pw__shard *home, int cls, pw_poll_fn fn,
	  const void *state, size_t size, pw_drop_fn drop, bool steal)
{
	t->next = NULL;
	t->shard = home;
	t->fn = fn;
	t->drop = drop;
	t->result = 0;
	t->joiner = NULL;
	t->refs = 1;
	t->cls = (int8_t)cls;
	t->steal = steal;
	if (steal) { /* read only in stealing mode */
		t->bound = NULL;
		t->fixed = false;
	}
	atomic_init(&t->pins, 0);
	atomic_init(&t->inbox.next, NULL);
	t->inbox.kind = PW__MSG_TASK;
	if (steal) {
		/* Queued by the caller; the scheduler's reference. */
		t->flags = 0;
		atomic_init(&t->remote, PW__S_NOTIFIED | PW__S_REF_ONE);
	} else {
		/* Queued by pw__task_new(). */
		t->flags = PW__T_SCHEDULED | (drop ? PW__T_DROP : 0);
		atomic_init(&t->remote, 0);
	}
	if (size) {
		t->state = (char *)t + PW__TASK_HDR;
		if (state) /* NULL: the (internal) caller fills it in */
			copy_state(t->state, state, size);
	} else {
		t->state = (void *)state;
	}
}

void pw__task_init(struct pw__task *t, struct pw__shard *home, int cls,
		   pw_poll_fn fn, const void *state, size_t size,
		   pw_drop_fn drop, bool steal)
{
	task_init(t, home, cls, fn, state, size, drop, steal);
}

/* pw__task_new(), inline in pw_spawn()'s hot path. */
static inline __attribute__((always_inline)) int
task_new(struct pw__shard *s, struct pw__task **tp, pw_poll_fn fn,
	 const void *state, size_t size, pw_drop_fn drop)
{
	int cls = pw__slab_class(PW__TASK_HDR + size);

	if (cls < 0)
		return -EINVAL;
	struct pw__task *t = pw__slab_alloc(&s->slab, cls);
	if (!t)
		return -ENOMEM;
	task_init(t, s, cls, fn, state, size, drop, s->w != NULL);
	PW__STAT_INC(s, spawned);
	if (!s->w)
		pw__runq_push(&s->runq, t);
	*tp = t;
	return 0;
}

int pw__task_new(struct pw__shard *s, struct pw__task **tp, pw_poll_fn fn,
		 const void *state, size_t size, pw_drop_fn drop)
{
	return task_new(s, tp, fn, state, size, drop);
}

/* pw__task_start(), inline in pw_spawn()'s hot path. */
static inline void task_start(struct pw__task *t)
{
	if (t->steal)
		pw__steal_schedule(t, false); /* a worker's: its LIFO slot */
}

void pw__task_start(struct pw__task *t)
{
	task_start(t);
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
	int err = task_new(s, &t, fn, state, size, drop);
	if (err)
		return err;
	if (join) {
		if (t->steal)
			/* relaxed: not yet visible to any other thread. */
			atomic_fetch_add_explicit(&t->remote, PW__S_REF_ONE,
						  memory_order_relaxed);
		else
			t->refs++;
		join->task = t;
	}
	task_start(t);
	return 0;
}

/* ---- stealing mode (see the top of this file) ---------------------- */

static inline void s_ref_inc(struct pw__task *t)
{
	/* relaxed: the caller holds a reference (as Arc::clone); the
	 * acq_rel decrements order the uses. */
	atomic_fetch_add_explicit(&t->remote, PW__S_REF_ONE,
				  memory_order_relaxed);
}

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
	blockon_check(t);
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
		blockon_check(t);
	else if (wake)
		pw__task_wake_steal(t);
	pw__task_unref_steal(t);
}

/* Kept out of line: the shard-mode join needs no frame of its size. */
static __attribute__((noinline)) enum pw_poll
join_poll_steal(struct pw_cx *cx, struct pw_join *j, int64_t *result)
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
	s_ref_inc(cx->task);
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
	j->task = NULL;
	pw__task_unref_steal(t);
	return PW_READY;
}

static void join_detach_steal(struct pw__task *t)
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

enum pw_poll pw_join_poll(struct pw_cx *cx, struct pw_join *j, int64_t *result)
{
	if (!cx || !j || !result || !j->task) {
		if (result)
			*result = -EINVAL;
		return PW_READY;
	}
	struct pw__task *t = j->task;
	if (t->steal) {
		if (!pw__coop_proceed(cx))
			return PW_PENDING;
		enum pw_poll r = join_poll_steal(cx, j, result);
		if (r == PW_PENDING)
			pw_coop_unspend(cx);
		return r;
	}
	if (t->shard != cx->shard) {
		*result = -EXDEV;
		return PW_READY;
	}
	if (!pw__coop_proceed(cx))
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
	if (!j || !j->task)
		return false;
	if (j->task->steal)
		/* acquire: pairs with the finisher's release. */
		return atomic_load_explicit(&j->task->remote,
					    memory_order_acquire) &
		       PW__S_COMPLETE;
	return j->task->flags & PW__T_DONE;
}

void pw_join_detach(struct pw_join *j)
{
	if (!j || !j->task)
		return;
	struct pw__task *t = j->task;
	struct pw__shard *s = t->shard;

	j->task = NULL;
	if (t->steal) {
		join_detach_steal(t);
		return;
	}
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
	if (t->steal) {
		if (pw_join_is_finished(j))
			return -EALREADY;
		pw__task_abort_steal(t);
		return 0;
	}
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
	if (t->steal)
		s_ref_inc(t);
	else if (pw__cur_shard == t->shard)
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

/* pw_waker_wake_by_ref() of anything but a shard-mode task on its own
 * shard: kept out of line so the common case needs no stack frame. */
static __attribute__((noinline)) void wake_by_ref_slow(struct pw__task *t,
						       struct pw__shard *cur)
{
	struct pw__shard *s = t->shard;

	if (t->steal) {
		pw__task_wake_steal(t);
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

void pw_waker_wake_by_ref(const struct pw_waker *w)
{
	if (!w || !w->task)
		return;
	struct pw__task *t = w->task;
	struct pw__shard *s = t->shard;
	struct pw__shard *cur = pw__cur_shard;

	/* The common case first: a shard-mode task woken on its shard. */
	if (__builtin_expect(cur == s && !t->steal, 1)) {
		PW__STAT_INC(s, local_wakes);
		pw__task_schedule(s, t);
		return;
	}
	wake_by_ref_slow(t, cur);
}

void pw_waker_wake(struct pw_waker *w)
{
	if (!w || !w->task)
		return;
	struct pw__task *t = w->task;
	struct pw__shard *s = t->shard;

	w->task = NULL;
	if (t->steal) {
		pw__task_wake_steal(t);
		pw__task_unref_steal(t);
		return;
	}
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
	if (t->steal) {
		pw__task_unref_steal(t);
		return;
	}
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
	return pw__coop_proceed(cx);
}

uint64_t pw_task_id(const struct pw_cx *cx)
{
	return cx && cx->task ? (uint64_t)(uintptr_t)cx->task : 0;
}
