/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/mesh.h - talking to other shards.
 *
 * Shards share nothing. Between every ordered pair of shards there is one
 * bounded single-producer single-consumer ring; work and results cross
 * only through it, and a shard drains its incoming rings every loop turn
 * (a bounded number of messages per ring, so no peer starves the others
 * or the shard's own tasks). A full ring never blocks and never drops:
 * messages wait, in order, in the producer shard's overflow list.
 *
 * Messages sent during a loop turn are published in one batch per
 * destination at the end of the turn; a destination asleep in the kernel
 * is woken with one IORING_OP_MSG_RING, and an awake one costs no system
 * call. Wakers work across shards the same way: waking a task of another
 * shard sends a message to its owner, which alone touches its run queue.
 */
#ifndef PINWHEEL_MESH_H
#define PINWHEEL_MESH_H

#include <stdint.h>

#include "export.h"
#include "pinwheel/list.h"
#include "task.h"
#include "topo.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * pw_shard_count - number of shards of the caller's runtime.
 * Return: the count, or -EPERM off a shard. Context: a shard thread.
 */
PW_API int pw_shard_count(void);

struct pw_runtime;

/**
 * pw_mesh_distance - how much hardware shards @a and @b of @rt share,
 * from the topology of the CPUs they are placed on (the planned CPUs
 * under PW_CONFIG_NO_PIN): an enum pw_distance. A shard and itself, or
 * two shards on one core, are PW_DIST_SAME_CORE; without NUMA support
 * (numa_available() < 0) there is no PW_DIST_OTHER_NODE.
 * Return: the distance; -EINVAL for a bad @rt; -ENODEV for a shard out of
 * range.
 * Context: any thread.
 */
PW_API int pw_mesh_distance(struct pw_runtime *rt, unsigned a, unsigned b);

/**
 * pw_submit_to - run @fn(@arg) on @shard, fire and forget.
 * @fn runs in @shard's loop (not as a task: it must not block; it may
 * spawn). Ownership of what @arg points to moves with it. Messages from
 * one shard to another run in the order they were submitted.
 * Return: 0; -EINVAL for a NULL @fn; -ENODEV for a shard out of range;
 * -EPERM off a shard; -ESHUTDOWN when the runtime stops; -ENOMEM when a
 * full ring's overflow cannot grow.
 * Context: a shard thread.
 */
PW_API int pw_submit_to(unsigned shard, void (*fn)(void *arg), void *arg);

/**
 * pw_spawn_on - spawn a detached task on @shard.
 * @state: @size bytes copied now (at most PW_TASK_STATE_MAX); with @size
 * 0 the pointer itself is passed and must stay valid for the task.
 * Return: as pw_submit_to(), plus -EINVAL for a bad @size.
 * Context: a shard thread.
 */
PW_API int pw_spawn_on(unsigned shard, pw_poll_fn fn, const void *state,
		       size_t size, pw_drop_fn drop);

/* States of a call (the runtime's). */
enum pw_call_state {
	PW_CALL_IDLE = 0, /* initialised, not sent */
	PW_CALL_WAITING,  /* waiting for a slot under the in-flight bound */
	PW_CALL_SENT,	  /* running on the target */
	PW_CALL_DONE,	  /* result arrived, not yet taken */
};

/*
 * A call: run a task on another shard and deliver its result to the
 * calling task. Embedded in the caller's state; while sent it keeps the
 * caller's memory alive (like an operation in flight), so aborting the
 * caller is safe: the call runs to completion and its reply is dropped.
 */
struct pw_call {
	pw_poll_fn fn;	       /* target task */
	pw_drop_fn drop;       /* its drop hook */
	const void *arg;       /* its state, read when the call starts */
	size_t size;	       /* bytes of state to copy (0: pass pointer) */
	struct pw__task *task; /* the caller, while waiting or sent */
	struct pw_list wait;   /* in the waiters for a slot */
	int64_t result;	       /* the target task's result */
	unsigned shard;	       /* target shard */
	uint8_t state;	       /* enum pw_call_state */
};

/**
 * pw_call_init - prepare a call of @fn on @shard.
 * @state/@size/@drop: the target task's, as pw_spawn(). @state is read on
 * the target when the call starts there: it must stay valid until
 * pw_call_poll() returns PW_READY (memory in the caller's own copied
 * state does, even if the caller is aborted).
 * Context: any.
 */
PW_API void pw_call_init(struct pw_call *c, unsigned shard, pw_poll_fn fn,
			 const void *state, size_t size, pw_drop_fn drop);

/**
 * pw_call_poll - drive the call.
 * The first poll sends it (or queues it FIFO when the caller's shard has
 * PW_CONFIG max_calls calls in flight to that shard already).
 * Return: PW_PENDING until the reply arrives; PW_READY with *@result the
 * target task's result, or -ECANCELED if the target dropped it (abort or
 * shutdown), -ENODEV for a shard out of range, -EINVAL for bad
 * arguments or a size too large, -ESHUTDOWN when the runtime stops.
 * Counts against the budget.
 * Context: a task on a shard; a call to the caller's own shard works.
 */
PW_API enum pw_poll pw_call_poll(struct pw_cx *cx, struct pw_call *c,
				 int64_t *result);

/**
 * pw_call_cancel - give up a call that waits for a slot (it is never
 * sent). A call already sent runs to completion; its reply is ignored
 * once the caller is gone. Safe from a drop hook.
 * Return: 0 when a waiting call was withdrawn; -EALREADY otherwise.
 * Context: the caller's shard.
 */
PW_API int pw_call_cancel(struct pw_call *c);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_MESH_H */
