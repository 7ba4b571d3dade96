/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/task.h - tasks, wakers, join handles and the poll contract.
 *
 * A task is a poll function plus its state: Rust's Future::poll in C.
 * The runtime calls fn(cx, state); the function makes what progress it can
 * and returns PW_READY (done, with a result set by pw_ready()) or
 * PW_PENDING (it registered its waker with whatever will make progress
 * possible: an operation, a timer, a join handle, a channel). Tasks are
 * stackless and cooperative; nothing runs behind the caller's back.
 *
 * Leaf operations (pw_op, pw_join, pw_sleep, ...) are structs embedded in
 * the task's state: the task owns them, no operation allocates.
 *
 * Lifetime: a task's memory comes from its shard's slab and is released
 * when the task is finished (completed or aborted), its join handle is
 * consumed or detached, every waker clone is dropped and every in-flight
 * kernel operation has posted its final completion.
 *
 * Threads: everything here runs on the task's own shard, except where a
 * contract says "any thread" (waker wake/clone/drop).
 */
#ifndef PINWHEEL_TASK_H
#define PINWHEEL_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a poll function returns. */
enum pw_poll {
	PW_READY = 0,	/* finished; the result is set */
	PW_PENDING = 1, /* not yet; a waker is registered */
};

struct pw__task;
struct pw__shard;

/*
 * The context a poll function receives. Valid only during that poll;
 * read it through the functions below, its fields are the runtime's.
 */
struct pw_cx {
	struct pw__shard *shard; /* the shard running the poll */
	struct pw__task *task;	 /* the task being polled */
	int64_t result;		 /* the value pw_ready() sets */
	int budget;		 /* cooperative budget left in this poll */
};

/* Poll function: make progress on @state. */
typedef enum pw_poll (*pw_poll_fn)(struct pw_cx *cx, void *state);

/*
 * Drop hook: release what @state holds (cancel embedded operations, drop
 * join handles and wakers). Called exactly once, on the task's shard, when
 * the state is destroyed: after the poll that returned PW_READY, when the
 * task is aborted, or at runtime shutdown.
 */
typedef void (*pw_drop_fn)(void *state);

/* The cooperative budget of one poll: operations a task may complete
 * before it is made to yield (Tokio's value). */
#define PW_COOP_BUDGET 128

/* The largest state pw_spawn() copies into the slab, in bytes. A larger
 * state is passed by pointer with size 0. */
#define PW_TASK_STATE_MAX 16000

/**
 * pw_ready - finish the current poll with @result.
 * Use as `return pw_ready(cx, value);`. The result reaches the join handle.
 * Context: inside a poll function.
 */
static inline enum pw_poll pw_ready(struct pw_cx *cx, int64_t result)
{
	cx->result = result;
	return PW_READY;
}

/*
 * A waker: a handle that schedules its task for another poll. Owned
 * wakers (from pw_waker_clone) keep the task's memory alive until dropped.
 */
struct pw_waker {
	struct pw__task *task; /* NULL for an empty waker */
};

/*
 * A join handle: awaits a spawned task's result. Owned by one task; it
 * holds a reference on the spawned task until consumed (a pw_join_poll()
 * that returns PW_READY) or detached.
 */
struct pw_join {
	struct pw__task *task; /* NULL once consumed or detached */
	bool cancelled;	       /* set when the consumed task had been aborted */
};

/**
 * pw_spawn - spawn a task on the calling task's shard.
 * @join: receives the join handle; NULL to detach at once.
 * @fn: the poll function.
 * @state: the initial state; copied into the task when @size > 0, or
 *         passed as is (caller keeps it alive until the drop hook) when 0.
 * @size: bytes of @state to copy, at most PW_TASK_STATE_MAX.
 * @drop: drop hook or NULL.
 *
 * The task is queued at the back of the shard's run queue; it is first
 * polled after the caller's current poll returns. No allocator call once
 * the slab is warm.
 *
 * Return: 0; -EINVAL for a NULL @fn, @size too large, or @size > 0 with a
 * NULL @state; -EPERM when not called on a shard thread; -ENOMEM when the
 * slab cannot grow; -ESHUTDOWN while the runtime stops.
 * Context: a shard thread (normally inside a poll function).
 */
PW_API int pw_spawn(struct pw_join *join, pw_poll_fn fn, const void *state,
		    size_t size, pw_drop_fn drop);

/**
 * pw_join_poll - await the task behind @j.
 * @result: receives the task's result when ready.
 *
 * Return: PW_PENDING with the current task registered for a wake when the
 * task finishes; PW_READY when finished, consuming @j: *@result is the
 * task's result, or -ECANCELED (and @j->cancelled set) when the task was
 * aborted before it completed. A NULL, consumed or detached handle gives
 * PW_READY with *@result = -EINVAL. Counts against the budget.
 * Context: a task on the spawned task's shard.
 */
PW_API enum pw_poll pw_join_poll(struct pw_cx *cx, struct pw_join *j,
				 int64_t *result);

/**
 * pw_spawn_out - pw_spawn() for a task whose result is larger than an
 * int64_t: Tokio's JoinHandle<T> for any T that is plain bytes.
 * @out_size: bytes of the output area reserved in the task's block after
 *            its header, zeroed; 0 makes this pw_spawn().
 *
 * The task writes its output into pw_task_output(cx) (any poll, before it
 * returns PW_READY); its int64_t result travels as always. The joiner
 * copies the output with pw_join_poll_out(). The area lives in the task's
 * memory, which the join handle keeps until consumed, so no pointer into
 * a finished task is ever handed out. The runtime never reads the bytes:
 * a pointer stored there (an owned result) is the joiner's to free, and
 * is lost when the handle is detached or the task aborted.
 *
 * Return: as pw_spawn(), and -EINVAL when @out_size + @size exceeds
 * PW_TASK_STATE_MAX.
 * Context: a shard thread (normally inside a poll function).
 */
PW_API int pw_spawn_out(struct pw_join *join, pw_poll_fn fn, const void *state,
			size_t size, pw_drop_fn drop, size_t out_size);

/**
 * pw_task_output - the running task's output area (pw_spawn_out(),
 * pw_runtime_spawn_join()), the same address at every poll; NULL when
 * the task has none.
 * Context: inside a poll function.
 */
PW_API void *pw_task_output(struct pw_cx *cx);

/**
 * pw_join_poll_out - pw_join_poll() that also copies the output.
 * @out: receives the first @out_size bytes of the task's output area when
 *       it completed; untouched when it was aborted (*@result -ECANCELED,
 *       @j->cancelled set). NULL with @out_size 0: no copy.
 *
 * Return: as pw_join_poll(). PW_READY with *@result = -EINVAL, @j left
 * as it was, when @out_size is larger than the spawn's output area or
 * @out is NULL with @out_size > 0.
 * Context: a task on the spawned task's shard.
 */
PW_API enum pw_poll pw_join_poll_out(struct pw_cx *cx, struct pw_join *j,
				     int64_t *result, void *out,
				     size_t out_size);

/**
 * pw_join_is_finished - true when the task completed or was aborted.
 * Context: the task's shard.
 */
PW_API bool pw_join_is_finished(const struct pw_join *j);

/**
 * pw_join_detach - drop the handle; the task runs on, unobserved.
 * Detaching an empty handle does nothing.
 * Context: the task's shard.
 */
PW_API void pw_join_detach(struct pw_join *j);

/**
 * pw_join_abort - request that the task stop.
 *
 * Takes effect at the task's next poll boundary: instead of being polled
 * again, the task's drop hook runs (cancelling its embedded operations)
 * and its join handle yields -ECANCELED. A task that is idle is scheduled
 * so that the drop happens promptly; a task that already completed keeps
 * its result. The handle stays valid (poll or detach it).
 *
 * Return: 0; -EINVAL for an empty handle; -EALREADY if the task already
 * finished.
 * Context: the task's shard.
 */
PW_API int pw_join_abort(struct pw_join *j);

/**
 * pw_cx_waker - the current task's waker, borrowed for this poll.
 * Clone it (pw_waker_clone) to keep it past the poll.
 * Context: inside a poll function.
 */
static inline struct pw_waker pw_cx_waker(struct pw_cx *cx)
{
	struct pw_waker w = { cx->task };
	return w;
}

/**
 * pw_waker_clone - make @dst an owned waker for the task of @src.
 * Return: 0; -EINVAL when either pointer or @src's task is NULL.
 * Context: any thread; @src must be alive (borrowed or owned).
 */
PW_API int pw_waker_clone(struct pw_waker *dst, const struct pw_waker *src);

/**
 * pw_waker_wake_by_ref - schedule the task; @w stays valid.
 *
 * A task woken several times before it runs is polled once; a wake after
 * the task finished does nothing; a task woken during its own poll is
 * polled again after that poll returns. From another thread the wake goes
 * through the shard's inbox and rouses the shard if it sleeps: it is never
 * lost. An empty waker does nothing.
 * Context: any thread, while the runtime exists.
 */
PW_API void pw_waker_wake_by_ref(const struct pw_waker *w);

/**
 * pw_waker_wake - wake and drop an owned waker, leaving @w empty.
 * Context: any thread, while the runtime exists.
 */
PW_API void pw_waker_wake(struct pw_waker *w);

/**
 * pw_waker_drop - drop an owned waker without waking, leaving @w empty.
 * Dropping an empty waker does nothing.
 * Context: any thread, while the runtime exists.
 */
PW_API void pw_waker_drop(struct pw_waker *w);

/**
 * pw_waker_will_wake - true when @a and @b wake the same task.
 * Context: any thread.
 */
static inline bool pw_waker_will_wake(const struct pw_waker *a,
				      const struct pw_waker *b)
{
	return a->task == b->task;
}

/**
 * pw_yield - yield to the other ready tasks.
 * Use as `return pw_yield(cx);`: the task goes to the back of the run
 * queue and is polled again after the tasks already queued.
 * Context: inside a poll function.
 */
PW_API enum pw_poll pw_yield(struct pw_cx *cx);

/**
 * pw_coop_proceed - take one unit of the cooperative budget.
 *
 * Leaf operations call this before completing. When the budget of
 * PW_COOP_BUDGET units is used up, it returns false and schedules the
 * task again: the operation must then return PW_PENDING, so the task
 * yields and others run. pw_coop_unspend() gives the unit back when the
 * operation turns out not to be ready.
 * Return: true when the operation may proceed; false for a NULL @cx.
 * Context: inside a poll function.
 */
PW_API bool pw_coop_proceed(struct pw_cx *cx);

/** pw_coop_unspend - return a unit taken by pw_coop_proceed(). */
static inline void pw_coop_unspend(struct pw_cx *cx)
{
	cx->budget++;
}

/**
 * pw_task_id - a number naming the current task, unique among the live
 * tasks of its shard. Context: inside a poll function.
 */
PW_API uint64_t pw_task_id(const struct pw_cx *cx);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_TASK_H */
