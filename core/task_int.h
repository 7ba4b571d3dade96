/* SPDX-License-Identifier: MIT */
/*
 * task_int.h - the task record, the one definition of its `remote`
 * word in both modes, and the shard-mode reference protocol's calls
 * (core/task_ref.c). Private to the library.
 *
 * A task is one slab block: this header, then its output area if it has
 * one (pw_spawn_out(), out_size bytes rounded up to 16), then the copied
 * state (or a pointer to a borrowed one). In shard mode its fields are touched only by
 * the owning shard's thread, except `remote` and `inbox`, through which
 * other threads clone, drop and wake it (core/task_ref.c). In stealing
 * mode `remote` is the task's state word and reference count, and the
 * other fields belong to the worker running the task (shard/steal_task.c).
 * How a task is scheduled and run is shard/sched.h.
 */
#ifndef PW_CORE_TASK_INT_H
#define PW_CORE_TASK_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pinwheel/list.h"
#include "pinwheel/task.h"
#include "core/mpsc.h"

/* Task flags (owner thread only). */
#define PW__T_SCHEDULED 0x01u /* in the run queue */
#define PW__T_RUNNING	0x02u /* being polled */
#define PW__T_NOTIFIED	0x04u /* woken while running: poll again */
#define PW__T_DONE	0x08u /* finished: completed or aborted */
#define PW__T_ABORT	0x10u /* abort requested, not yet carried out */
#define PW__T_CANCELLED 0x20u /* finished by abort or shutdown */
#define PW__T_BLOCKON	0x40u /* state is a pw_block_on() record */
#define PW__T_FOREIGN	0x80u /* stealing mode: made by another thread */
/* Shard mode only: mirrors of fields on the record's second cache line,
 * so the hot paths test one word of the first. */
#define PW__T_PINNED 0x100u /* pins > 0 */
#define PW__T_DROP   0x200u /* drop != NULL */
/* Both modes: the state is a fiber whose stack the task still holds;
 * the free path returns it with pw__fiber_task_free(). */
#define PW__T_FIBER 0x400u

/*
 * task->remote, one 64-bit atomic word with two encodings; task->steal,
 * set once at creation, says which one a task uses.
 *
 * Shard mode (PW__R_*, core/task_ref.c): what threads other than the
 * owner did to the task. Bits 2..63 are a signed reference delta (the
 * true count is refs + (remote >> 2)); bit 0 asks the owner to wake the
 * task, bit 1 says its inbox node is queued. Adding or subtracting
 * PW__R_ONE never disturbs the flags. The owner folds the delta into
 * refs and clears the flags when it pops the node. Zero: no other thread
 * holds a reference or has a node queued.
 */
#define PW__R_WAKE   1ull /* a remote wake is pending */
#define PW__R_QUEUED 2ull /* the inbox node is queued */
#define PW__R_FLAGS  3ull
#define PW__R_ONE    4ull /* one reference */

/*
 * Stealing mode (PW__S_*, shard/steal_task.c): Tokio's task state word,
 * the task's whole scheduling state and its reference count (bits 6..63)
 * for every thread alike: the scheduler's reference until COMPLETE, the
 * join handle's, each owned waker's and each pin's.
 */
#define PW__S_RUNNING	0x01ull /* being polled */
#define PW__S_NOTIFIED	0x02ull /* queued, or to be queued after its poll */
#define PW__S_COMPLETE	0x04ull /* finished; the result may be read */
#define PW__S_ABORT	0x08ull /* abort requested */
#define PW__S_JOINW	0x10ull /* task->joiner is set (owned by the task) */
#define PW__S_REF_ONE	0x40ull /* one reference */
#define PW__S_REF_SHIFT 6

/* Inbox node kinds. */
#define PW__MSG_TASK	 1u /* a task's own node: remote wake or drop */
#define PW__MSG_SPAWN	 2u /* a spawn from another thread */
#define PW__MSG_BLOCKING 3u /* a blocking job's result */
#define PW__MSG_FREE	 4u /* stealing mode: a task block to free */

struct pw__shard;

/*
 * The first cache line holds what the shard-mode paths read and write on
 * every spawn, poll, finish and join (the run queue link, the poll call,
 * the join hand-off, the reference counts and flags); the second holds
 * what only some tasks use (the drop hook, the pin count, the stealing
 * mode's binding, the inbox node), and the copied state follows. A joined
 * task is then finished and freed through its first line alone.
 */
struct pw__task {
	/* ---- first cache line ---- */
	struct pw__task *next;	 /* run queue link */
	struct pw__shard *shard; /* owner (never PW__SLAB_FREE_MARK); in
				    stealing mode the slab's shard, or NULL
				    for a task made on another thread */
	pw_poll_fn fn;		 /* poll function */
	void *state;		 /* copied state (below) or borrowed */
	struct pw__task *joiner; /* task awaiting this one (owns a ref) */
	int64_t result;		 /* result once DONE */
	/* PW__R_* (shard mode) or PW__S_* (stealing mode): see above. */
	_Atomic uint64_t remote;
	int32_t refs;	/* owner-side references (see remote) */
	uint16_t flags; /* PW__T_* */
	int8_t cls;	/* slab class of this block */
	uint8_t steal;	/* stealing mode: set once at creation */
	/* ---- second cache line ---- */
	pw_drop_fn drop; /* drop hook or NULL (shard mode: PW__T_DROP) */
	/* Kernel operations, timers and calls pointing into the state.
	 * Written by one shard only (relaxed load + store): the owner, or
	 * in stealing mode the worker they were registered on (bound),
	 * with release so a worker that reads it with acquire sees the
	 * results they left. In shard mode PW__T_PINNED says it is not
	 * zero. */
	_Atomic uint32_t pins;
	/* Stealing mode: runs on `bound` only from now on. Written by the
	 * worker running the task; read by whoever queues or pops it,
	 * ordered by the state word's CAS or the queue's release. */
	bool fixed;
	/* Bytes of the output area at the start of the block (after this
	 * header, before the state; pw_spawn_out()), 0 for none. Set once
	 * when the task is made, before any other thread sees it. */
	uint16_t out_size;
	struct pw__shard *bound;    /* stealing mode: where pins are held */
	struct pw__mpsc_node inbox; /* pushed when PW__R_QUEUED is set */
	/* 16-byte aligned state follows when copied */
};

_Static_assert(offsetof(struct pw__task, drop) == 64,
	       "the shard-mode hot fields fill the first cache line");
_Static_assert(offsetof(struct pw__task, out_size) < 80,
	       "out_size sits in the padding before bound");

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

/* ---- the shard-mode reference protocol (core/task_ref.c) ------------ */

/* The inbox brought @t's node: fold the remote delta, wake @t if asked,
 * free it if nothing keeps it. Owner shard only. */
void pw__task_remote_event(struct pw__shard *s, struct pw__task *t);
/* Free @t if it is done and nothing keeps it. Owner shard only. */
void pw__task_maybe_free(struct pw__shard *s, struct pw__task *t);
/* @t's owner-side count has just reached zero: fold in the remote
 * delta and free @t if nothing else keeps it. Owner shard only. */
void pw__task_unref_last(struct pw__shard *s, struct pw__task *t);
/* End @t with @res: drop hook, wake the joiner, drop the scheduler's
 * reference. Owner shard only. */
void pw__task_finish(struct pw__shard *s, struct pw__task *t, int64_t res,
		     bool cancelled);
/* From a thread that is not @t's owner: take one more reference (the
 * caller holds one); wake @t holding an extra reference of @cur's
 * (pw_waker_wake_by_ref()); or give up the caller's reference, waking
 * @t first if @wake. @cur: the calling thread's shard, or NULL. */
void pw__task_ref_remote(struct pw__task *t);
void pw__task_wake_remote(struct pw__task *t, struct pw__shard *cur);
void pw__task_release_remote(struct pw__task *t, struct pw__shard *cur,
			     bool wake);

/* ---- fibers (core/fiber.c) -------------------------------------------- */

/* @t (PW__T_FIBER) is being freed: nothing points into its fiber's stack
 * any more, so the stack goes back to the calling shard's pool (unmapped
 * off a shard). Called by the free paths of both modes, on the thread
 * that frees @t, before the block is released. */
void pw__fiber_task_free(struct pw__task *t);

/* ---- spawning (core/task.c) -------------------------------------------- */

/* Make a task on shard @s (queued in shard mode; in stealing mode
 * pw__task_start() queues it). 0, -EINVAL or -ENOMEM. Shard thread. */
int pw__task_new(struct pw__shard *s, struct pw__task **tp, pw_poll_fn fn,
		 const void *state, size_t size, pw_drop_fn drop);
/* Fill in a task's header; the block is @t, of slab class @cls. */
void pw__task_init(struct pw__task *t, struct pw__shard *home, int cls,
		   pw_poll_fn fn, const void *state, size_t size,
		   pw_drop_fn drop, bool steal);
/* Give @t, just made with @size bytes of block from pw__task_new() or
 * pw__steal_spawn_foreign() (a NULL state), an output area of @out bytes
 * (zeroed) at the start of the block and the state after it: @size
 * bytes of @state copied, or @state borrowed when @size is 0. The
 * block must hold pw__task_out_block(@out, @size) bytes. */
void pw__task_out_layout(struct pw__task *t, size_t out, const void *state,
			 size_t size);
/* Bytes of block a task with an output area of @out bytes and @size
 * bytes of copied state needs after its header. */
static inline size_t pw__task_out_block(size_t out, size_t size)
{
	return ((out + 15) & ~(size_t)15) + size;
}
/* Copy the first @n bytes of finished task @t's output area to @out.
 * The joining side, after it saw @t completed. */
void pw__task_out_copy(const struct pw__task *t, void *out, size_t n);

/* Queue a task made by pw__task_new() once its state is complete: in
 * shard mode it is queued already; in stealing mode it goes to the
 * worker's LIFO slot now. */
void pw__task_start(struct pw__task *t);
/* pw__task_start() after handing the task's join handle to @join (NULL:
 * detached), as pw_spawn() does. Shard thread, @t new. */
void pw__task_launch(struct pw__task *t, struct pw_join *join);

/* Stealing mode: @t runs only on @s from now on: pw_spawn_on() and
 * pw_call() tasks (the program placed them), and a task once it uses
 * the network layer (its sockets' buffers belong to @s). Called while
 * @t is new or running on @s. No effect in shard mode. */
static inline void pw__task_fix(struct pw__task *t, struct pw__shard *s)
{
	if (t->steal && !t->fixed) {
		t->fixed = true;
		t->bound = s;
	}
}

static inline uint32_t pw__pins(const struct pw__task *t)
{
	/* acquire: pairs with the release store that dropped a pin, so
	 * what the operation left is visible to whoever runs the task. */
	return atomic_load_explicit(&t->pins, memory_order_acquire);
}

/* The shard running on this thread, or NULL. initial-exec: one load
 * from the thread pointer, no __tls_get_addr call, in the .so too. */
extern _Thread_local struct pw__shard *pw__cur_shard
	__attribute__((tls_model("initial-exec")));

#endif /* PW_CORE_TASK_INT_H */
