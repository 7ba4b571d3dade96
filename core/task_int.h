/* SPDX-License-Identifier: MIT */
/*
 * task_int.h - the task record and the scheduling primitives shared by
 * core/ and shard/. Private to the library.
 *
 * A task is one slab block: this header, then the copied state (or a
 * pointer to a borrowed one). Its fields are touched only by the owning
 * shard's thread, except `remote` and `inbox`, through which other threads
 * clone, drop and wake it (see task.c, "Remote references").
 */
#ifndef PW_CORE_TASK_INT_H
#define PW_CORE_TASK_INT_H

#include <stdatomic.h>
#include <stdint.h>

#include "pinwheel/list.h"
#include "pinwheel/task.h"
#include "mpsc.h"

/* Task flags (owner thread only). */
#define PW__T_SCHEDULED 0x01u /* in the run queue */
#define PW__T_RUNNING	0x02u /* being polled */
#define PW__T_NOTIFIED	0x04u /* woken while running: poll again */
#define PW__T_DONE	0x08u /* finished: completed or aborted */
#define PW__T_ABORT	0x10u /* abort requested, not yet carried out */
#define PW__T_CANCELLED 0x20u /* finished by abort or shutdown */
#define PW__T_BLOCKON	0x40u /* state is a pw_block_on() record */

/* task->remote: a signed reference delta in bits 2..63, two flags below.
 * Adding or subtracting PW__R_ONE never disturbs the flags. */
#define PW__R_WAKE   1ull /* a remote wake is pending */
#define PW__R_QUEUED 2ull /* the inbox node is queued */
#define PW__R_FLAGS  3ull
#define PW__R_ONE    4ull /* one reference */

/* Inbox node kinds. */
#define PW__MSG_TASK	 1u /* a task's own node: remote wake or drop */
#define PW__MSG_SPAWN	 2u /* a spawn from another thread */
#define PW__MSG_BLOCKING 3u /* a blocking job's result */

struct pw__shard;

struct pw__task {
	struct pw__task *next;	 /* run queue link */
	struct pw__shard *shard; /* owner (never PW__SLAB_FREE_MARK) */
	pw_poll_fn fn;		 /* poll function */
	void *state;		 /* copied state (below) or borrowed */
	pw_drop_fn drop;	 /* drop hook or NULL */
	int64_t result;		 /* result once DONE */
	struct pw__task *joiner; /* task awaiting this one (owns a ref) */
	int32_t refs;		 /* owner-side references (see remote) */
	uint16_t flags;		 /* PW__T_* */
	int8_t cls;		 /* slab class of this block */
	uint32_t pins;		 /* kernel operations awaiting their CQE */
	/* Remote references and wake (other threads): the true reference
	 * count is refs + (remote >> 2); see task.c. */
	_Atomic uint64_t remote;
	struct pw__mpsc_node inbox; /* pushed when PW__R_QUEUED is set */
	/* 16-byte aligned state follows when copied */
};

#define PW__TASK_HDR ((sizeof(struct pw__task) + 15) & ~(size_t)15)

/* Run queue of a shard: FIFO, singly linked through task->next. */
struct pw__runq {
	struct pw__task *head, *tail;
};

static inline void pw__runq_push(struct pw__runq *q, struct pw__task *t)
{
	t->next = NULL;
	if (q->tail)
		q->tail->next = t;
	else
		q->head = t;
	q->tail = t;
}

static inline struct pw__task *pw__runq_pop(struct pw__runq *q)
{
	struct pw__task *t = q->head;

	if (t) {
		q->head = t->next;
		if (!q->head)
			q->tail = NULL;
	}
	return t;
}

/* Called by the shard loop. */
void pw__task_run(struct pw__shard *s, struct pw__task *t);
void pw__task_remote_event(struct pw__shard *s, struct pw__task *t);
void pw__task_maybe_free(struct pw__shard *s, struct pw__task *t);
void pw__task_unref(struct pw__shard *s, struct pw__task *t);
void pw__task_finish(struct pw__shard *s, struct pw__task *t, int64_t res,
		     bool cancelled);
int pw__task_new(struct pw__shard *s, struct pw__task **tp, pw_poll_fn fn,
		 const void *state, size_t size, pw_drop_fn drop);

/* A pw_block_on() task's state is no longer used: wake its caller. */
void pw__blockon_release(void *state);

/* The shard running on this thread, or NULL. initial-exec: one load
 * from the thread pointer, no __tls_get_addr call, in the .so too. */
extern _Thread_local struct pw__shard *pw__cur_shard
	__attribute__((tls_model("initial-exec")));

#endif /* PW_CORE_TASK_INT_H */
