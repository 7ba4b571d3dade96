/* SPDX-License-Identifier: MIT */
/*
 * steal_task.h - stealing mode's task state machine (steal_task.c): run,
 * finish, wake, abort, join and references on Tokio's state word, the
 * PW__S_* encoding of task->remote (core/task_int.h). Private to the
 * library.
 */
#ifndef PW_SHARD_STEAL_TASK_H
#define PW_SHARD_STEAL_TASK_H

#include <stdatomic.h>
#include <stdbool.h>

#include "core/task_int.h"

struct pw__shard;
struct pw_join;

/* One more reference of @t; the caller holds one (as Arc::clone), or
 * @t is not yet visible to another thread. Any thread. */
static inline void pw__task_ref_steal(struct pw__task *t)
{
	/* relaxed: the caller holds a reference; the acq_rel decrements
	 * order the uses. */
	atomic_fetch_add_explicit(&t->remote, PW__S_REF_ONE,
				  memory_order_relaxed);
}

/* Has @t completed? acquire: pairs with the finisher's release, so the
 * result may be read after a true. Any thread holding a reference. */
static inline bool pw__task_finished_steal(struct pw__task *t)
{
	return atomic_load_explicit(&t->remote, memory_order_acquire) &
	       PW__S_COMPLETE;
}

/* Poll @t once on worker @s with the coop @budget (updated). Return: its
 * poll result; PW_READY also when it was aborted. Worker thread. */
enum pw_poll pw__task_poll_steal(struct pw__shard *s, struct pw__task *t,
				 int *budget);
/* Wake @t: set NOTIFIED, queueing it if idle. Any thread. */
void pw__task_wake_steal(struct pw__task *t);
/* Drop a reference; the last frees the block. Any thread. */
void pw__task_unref_steal(struct pw__task *t);
/* Request @t's abort and wake it. Any thread. */
void pw__task_abort_steal(struct pw__task *t);
/* Drop a pin of @t held on @s (and its reference), waking @t first if
 * @wake and it is not done. The worker the pin is on. */
void pw__task_unpin_steal(struct pw__shard *s, struct pw__task *t, bool wake);
/* pw_join_poll() (@n 0) or pw_join_poll_out() (@n bytes of the output
 * area to @out once completed) and pw_join_detach() of a stealing-mode
 * task. The joining task's worker. */
enum pw_poll pw__task_join_poll_steal(struct pw_cx *cx, struct pw_join *j,
				      int64_t *result, void *out, size_t n);
void pw__task_join_detach_steal(struct pw__task *t);

#endif /* PW_SHARD_STEAL_TASK_H */
