/* SPDX-License-Identifier: MIT */
/*
 * task.c - the public task calls: spawn, join handles, wakers, yield and
 * the coop budget.
 *
 * Each call checks the task's mode once (task->steal, set at creation)
 * and goes on in one of two protocols:
 *
 *   - shard mode: the task belongs to one shard. On that shard its flags
 *     and refs are plain fields and the call works on them here, inline
 *     (shard/sched.h: schedule, unref); from any other thread it goes
 *     through the reference protocol of core/task_ref.c (task->remote as
 *     PW__R_*, the inbox node, a mesh message).
 *   - stealing mode: Tokio's state word (task->remote as PW__S_*), in
 *     shard/steal_task.c beside the stealing scheduler.
 *
 * Scheduling on the owner (shard mode): wake = "if not done and not
 * queued, queue it" (a task woken twice before it runs is queued once); a
 * wake while the task is being polled sets NOTIFIED and the loop re-queues
 * it after the poll (never a recursive poll); a wake after DONE does
 * nothing. No lock and no atomic read-modify-write on any of these paths.
 */
#include <errno.h>
#include <string.h>

#include "core/task_int.h"
#include "shard/sched.h"
#include "shard/steal.h"
#include "shard/steal_task.h"

_Thread_local struct pw__shard *pw__cur_shard
	__attribute__((tls_model("initial-exec")));

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
	t->out_size = 0;
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

/* Give @join (or nobody) the new task's handle, then queue @t. */
static inline void task_launch(struct pw__task *t, struct pw_join *join)
{
	if (join) {
		if (t->steal)
			pw__task_ref_steal(t); /* not yet visible elsewhere */
		else
			t->refs++;
		join->task = t;
	}
	task_start(t);
}

void pw__task_launch(struct pw__task *t, struct pw_join *join)
{
	task_launch(t, join);
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
	task_launch(t, join);
	return 0;
}

void pw__task_out_layout(struct pw__task *t, size_t out, const void *state,
			 size_t size)
{
	char *area = (char *)t + PW__TASK_HDR;

	t->out_size = (uint16_t)out;
	memset(area, 0, out);
	if (size) {
		t->state = area + pw__task_out_block(out, 0);
		copy_state(t->state, state, size);
	} else {
		t->state = (void *)state;
	}
}

void pw__task_out_copy(const struct pw__task *t, void *out, size_t n)
{
	memcpy(out, (const char *)t + PW__TASK_HDR, n);
}

int pw_spawn_out(struct pw_join *join, pw_poll_fn fn, const void *state,
		 size_t size, pw_drop_fn drop, size_t out_size)
{
	struct pw__shard *s = pw__cur_shard;
	struct pw__task *t;

	if (!out_size)
		return pw_spawn(join, fn, state, size, drop);
	if (join) {
		join->task = NULL;
		join->cancelled = false;
	}
	if (!fn || out_size > PW_TASK_STATE_MAX ||
	    size > PW_TASK_STATE_MAX - out_size || (size && !state))
		return -EINVAL;
	if (!s)
		return -EPERM;
	if (s->stopping)
		return -ESHUTDOWN;
	int err = task_new(s, &t, fn, NULL, pw__task_out_block(out_size, size),
			   drop);
	if (err)
		return err;
	pw__task_out_layout(t, out_size, state, size);
	task_launch(t, join);
	return 0;
}

void *pw_task_output(struct pw_cx *cx)
{
	if (!cx || !cx->task || !cx->task->out_size)
		return NULL;
	return (char *)cx->task + PW__TASK_HDR;
}

/*
 * pw_join_poll() and pw_join_poll_out() of a shard-mode task, @out
 * receiving the first @n bytes of a completed task's output area (@n 0:
 * none). Inline in pw_join_poll(), where @n is 0.
 */
static inline __attribute__((always_inline)) enum pw_poll
join_poll_shard(struct pw_cx *cx, struct pw_join *j, int64_t *result, void *out,
		size_t n)
{
	struct pw__task *t = j->task;

	if (t->shard != cx->shard) {
		*result = -EXDEV;
		return PW_READY;
	}
	if (!pw__coop_proceed(cx))
		return PW_PENDING;
	if (t->flags & PW__T_DONE) {
		*result = t->result;
		j->cancelled = (t->flags & PW__T_CANCELLED) != 0;
		if (n && !j->cancelled)
			pw__task_out_copy(t, out, n);
		j->task = NULL;
		pw__task_unref(cx->shard, t);
		return PW_READY;
	}
	pw_coop_unspend(cx);
	if (t->joiner != cx->task) {
		if (t->joiner)
			pw__task_unref(cx->shard, t->joiner);
		t->joiner = cx->task;
		cx->task->refs++;
	}
	return PW_PENDING;
}

enum pw_poll pw_join_poll(struct pw_cx *cx, struct pw_join *j, int64_t *result)
{
	if (!cx || !j || !result || !j->task) {
		if (result)
			*result = -EINVAL;
		return PW_READY;
	}
	if (j->task->steal)
		return pw__task_join_poll_steal(cx, j, result, NULL, 0);
	return join_poll_shard(cx, j, result, NULL, 0);
}

enum pw_poll pw_join_poll_out(struct pw_cx *cx, struct pw_join *j,
			      int64_t *result, void *out, size_t out_size)
{
	if (!cx || !j || !result || !j->task ||
	    (out_size && (!out || out_size > j->task->out_size))) {
		if (result)
			*result = -EINVAL;
		return PW_READY;
	}
	if (j->task->steal)
		return pw__task_join_poll_steal(cx, j, result, out, out_size);
	return join_poll_shard(cx, j, result, out, out_size);
}

bool pw_join_is_finished(const struct pw_join *j)
{
	if (!j || !j->task)
		return false;
	if (j->task->steal)
		return pw__task_finished_steal(j->task);
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
		pw__task_join_detach_steal(t);
		return;
	}
	if (t->joiner) {
		struct pw__task *w = t->joiner;
		t->joiner = NULL;
		pw__task_unref(s, w);
	}
	pw__task_unref(s, t);
}

int pw_join_abort(struct pw_join *j)
{
	if (!j || !j->task)
		return -EINVAL;
	struct pw__task *t = j->task;
	if (t->steal) {
		if (pw__task_finished_steal(t))
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
		pw__task_ref_steal(t);
	else if (pw__cur_shard == t->shard)
		t->refs++;
	else
		pw__task_ref_remote(t);
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

	if (__builtin_expect(t->steal, 0)) {
		pw__task_wake_steal(t);
		return;
	}
	/* The common case first: a shard-mode task woken on its shard. */
	if (__builtin_expect(cur == s, 1)) {
		PW__STAT_INC(s, local_wakes);
		pw__task_schedule(s, t);
		return;
	}
	pw__task_wake_remote(t, cur);
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
		pw__task_unref(s, t);
	} else {
		pw__task_release_remote(t, cur, true);
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
		pw__task_unref(s, t);
	else
		pw__task_release_remote(t, cur, false);
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
