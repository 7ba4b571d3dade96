/* SPDX-License-Identifier: MIT */
/*
 * op.c - io_uring operations as leaf futures (see pinwheel/op.h).
 *
 * user_data of an operation's SQE is the struct pw_op itself; the op lives
 * in its task's state, and every in-flight op "pins" its task (pins++), so
 * the task's memory outlives the drop of its state until the final CQE
 * (pw__op_complete() unpins). The shard counts every SQE it expects a CQE
 * for in s->inflight, which shutdown waits to see reach zero.
 *
 * An owned op (struct pw__op_owned, op_int.h) lives in memory its leaf
 * allocated; once given up (pw__op_orphan()) its final completion calls
 * its release function, which frees that memory, instead of storing the
 * result in it.
 */
#include <errno.h>

#include "shard/op_int.h"
#include "shard/sched.h"

struct io_uring_sqe *pw__shard_sqe(struct pw__shard *s)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);

	if (__builtin_expect(!sqe, 0)) {
		/* Full: hand what is queued to the kernel and retry. */
		int n = io_uring_submit(&s->ring);
		if (n > 0)
			PW__STAT_ADD(s, sqes_submitted, (uint64_t)n);
		s->sq_dirty = 0;
		sqe = io_uring_get_sqe(&s->ring);
	}
	if (sqe)
		s->sq_dirty++;
	return sqe;
}

enum pw_poll pw_op_poll(struct pw_cx *cx, struct pw_op *op, pw_op_prep_fn prep,
			void *arg, int32_t *res)
{
	if (!cx || !op || !prep || !res) {
		if (res)
			*res = -EINVAL;
		return PW_READY;
	}
	struct pw__shard *s = cx->shard;

	switch (op->state) {
	case PW_OP_DONE:
		if (!pw__coop_proceed(cx))
			return PW_PENDING;
		*res = op->res;
		op->state = PW_OP_IDLE;
		op->task = NULL;
		return PW_READY;
	case PW_OP_INFLIGHT:
	case PW_OP_CANCELLING:
		return PW_PENDING;
	default:
		break;
	}
	struct io_uring_sqe *sqe = pw__shard_sqe(s);
	if (!sqe) {
		/* The kernel took nothing: try again on the next turn. */
		cx->task->flags |= PW__T_NOTIFIED;
		return PW_PENDING;
	}
	prep(sqe, arg);
	io_uring_sqe_set_data(sqe, op);
	op->task = cx->task;
	op->res = 0;
	op->cqe_flags = 0;
	op->state = PW_OP_INFLIGHT;
	pw__task_pin(s, cx->task);
	s->inflight++;
	return PW_PENDING;
}

int pw_op_cancel(struct pw_op *op)
{
	if (!op)
		return -EINVAL;
	if (op->state != PW_OP_INFLIGHT)
		return -EALREADY;
	struct pw__shard *s = pw__cur_shard; /* the one that submitted it */
	if (!s)
		return -EPERM;
	struct io_uring_sqe *sqe = pw__shard_sqe(s);

	op->state = PW_OP_CANCELLING;
	if (!sqe) {
		/* No SQE can be had: cancel synchronously instead. */
		struct io_uring_sync_cancel_reg reg = {
			.addr = (uint64_t)(uintptr_t)op,
			.fd = -1,
			.timeout = { -1, -1 },
		};
		int err = io_uring_register_sync_cancel(&s->ring, &reg);
		return err == -ENOENT || err == -EALREADY ? 0 : err;
	}
	io_uring_prep_cancel(sqe, op, 0);
	io_uring_sqe_set_data64(sqe, PW__UD_IGNORE);
	s->inflight++;
	return 0;
}

bool pw__op_orphan(struct pw__op_owned *o)
{
	uint8_t st = o->op.state;

	if (st != PW_OP_INFLIGHT && st != PW_OP_CANCELLING)
		return false;
	if (st == PW_OP_INFLIGHT)
		(void)pw_op_cancel(&o->op);
	o->op.state = PW__OP_ORPHANED;
	return true;
}

void pw__op_complete(struct pw__shard *s, struct pw_op *op,
		     const struct io_uring_cqe *cqe)
{
	struct pw__task *t = op->task;

	s->inflight--;
	if (__builtin_expect(op->state == PW__OP_ORPHANED, 0)) {
		/* Given up by its owner: release frees it, op included. */
		struct pw__op_owned *o =
			pw_container_of(op, struct pw__op_owned, op);
		o->release(o);
	} else if (!(t->flags & PW__T_DONE)) {
		/* A finished task's state was dropped: only its memory
		 * waited. */
		op->res = cqe->res;
		op->cqe_flags = cqe->flags;
		op->state = PW_OP_DONE;
	}
	pw__task_unpin_wake(s, t);
}
