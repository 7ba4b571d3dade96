/* SPDX-License-Identifier: MIT */
/*
 * op_int.h - the shard's hand-off to pw_op (op.c). Private to the library.
 */
#ifndef PW_SHARD_OP_INT_H
#define PW_SHARD_OP_INT_H

#include <liburing.h>
#include <stdbool.h>

#include "pinwheel/op.h"

struct pw__shard;

/*
 * An operation whose owner may give it up while it is in flight: the
 * memory it reads or writes (and the op itself) is the owner's, freed
 * by @release at the final completion instead of by the owner. The
 * file module's streaming reader keeps its requests and buffers so.
 */
struct pw__op_owned {
	struct pw_op op;
	void (*release)(struct pw__op_owned *o);
};

/* The state of an owned op given up by pw__op_orphan(): its final
 * completion calls release() and stores nothing. */
#define PW__OP_ORPHANED 0x80u

/*
 * pw__op_orphan - give up @o: if it is in flight, cancel it and have its
 * final completion call @o->release(@o) (the last access to @o) instead
 * of storing a result. Safe from a drop hook.
 * Return: true when the release is left to the completion; false when
 * nothing was in flight (@o is idle or done: the caller frees it now).
 * Context: the shard that submitted @o.
 */
bool pw__op_orphan(struct pw__op_owned *o);

/* A CQE for @op arrived. Shard thread only. */
void pw__op_complete(struct pw__shard *s, struct pw_op *op,
		     const struct io_uring_cqe *cqe);

#endif /* PW_SHARD_OP_INT_H */
