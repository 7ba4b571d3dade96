/* SPDX-License-Identifier: MIT */
/*
 * op_int.h - the shard's hand-off to pw_op (op.c). Private to the library.
 */
#ifndef PW_SHARD_OP_INT_H
#define PW_SHARD_OP_INT_H

#include <liburing.h>

#include "pinwheel/op.h"

struct pw__shard;

/* A CQE for @op arrived. Shard thread only. */
void pw__op_complete(struct pw__shard *s, struct pw_op *op,
		     const struct io_uring_cqe *cqe);

#endif /* PW_SHARD_OP_INT_H */
