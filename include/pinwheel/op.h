/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/op.h - one io_uring operation as a leaf future.
 *
 * A struct pw_op lives in the task's state. The first pw_op_poll() takes an
 * SQE from the shard's ring, lets the caller prepare it and queues it; the
 * shard submits queued SQEs in batches. When the CQE arrives the task is
 * woken and the next poll returns cqe->res. Networking and file operations
 * are built on it.
 *
 * Cancellation: pw_op_cancel() asks the kernel to cancel an operation in
 * flight. The operation still owns its buffers until its final CQE; a task
 * whose state is dropped with operations in flight keeps its memory until
 * every one of them has completed, so the kernel never writes into freed
 * memory. An operation must therefore live in a copied task state (the
 * pw_spawn() default) or in memory that stays valid until the task's
 * memory is released, as pw_block_on()'s state does.
 */
#ifndef PINWHEEL_OP_H
#define PINWHEEL_OP_H

#include <stdint.h>

#include "export.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

struct io_uring_sqe;

/* States of an operation. */
enum pw_op_state {
	PW_OP_IDLE = 0,	  /* not submitted (or its result was taken) */
	PW_OP_INFLIGHT,	  /* SQE queued or submitted, no CQE yet */
	PW_OP_CANCELLING, /* cancel requested, final CQE not yet seen */
	PW_OP_DONE,	  /* CQE seen, result not yet taken */
};

/* An io_uring operation embedded in a task's state. */
struct pw_op {
	struct pw__task *task; /* the task to wake on completion */
	int32_t res;	       /* cqe->res once DONE */
	uint32_t cqe_flags;    /* cqe->flags once DONE */
	uint8_t state;	       /* enum pw_op_state */
};

/* Prepares @sqe (an io_uring_prep_* call). user_data is the runtime's:
 * it is overwritten after the call. */
typedef void (*pw_op_prep_fn)(struct io_uring_sqe *sqe, void *arg);

/**
 * pw_op_init - make @op idle. Context: any.
 */
static inline void pw_op_init(struct pw_op *op)
{
	op->task = (struct pw__task *)0;
	op->res = 0;
	op->cqe_flags = 0;
	op->state = PW_OP_IDLE;
}

/**
 * pw_op_poll - drive @op.
 * @prep: called once, with @arg, to prepare the SQE on the first poll.
 * @res: receives cqe->res when ready (a count or -errno).
 *
 * Return: PW_PENDING while the operation is in flight (the task is woken
 * when its CQE arrives); PW_READY with *@res set, leaving @op idle for
 * reuse. A NULL @cx, @op, @prep or @res gives PW_READY with *@res =
 * -EINVAL (when @res is not NULL). A full submission queue is flushed
 * first; the operation is never dropped. Counts against the budget.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_op_poll(struct pw_cx *cx, struct pw_op *op,
			       pw_op_prep_fn prep, void *arg, int32_t *res);

/**
 * pw_op_cancel - cancel @op if it is in flight.
 *
 * The final CQE still arrives (usually -ECANCELED, or the real result if
 * the operation completed first); a later pw_op_poll() returns it. Safe
 * from a drop hook: the task's memory outlives the operation.
 * Return: 0 when a cancel was issued; -EALREADY when @op was not in flight
 * (idle, done or already cancelling); -EINVAL for NULL.
 * Context: the shard that submitted @op.
 */
PW_API int pw_op_cancel(struct pw_op *op);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_OP_H */
