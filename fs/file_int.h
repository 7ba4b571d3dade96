/* SPDX-License-Identifier: MIT */
/*
 * file_int.h - what the files of fs/ share, and the one call the fiber
 * forms (core/fiber_file.c) need beyond the public API. Private to the
 * library.
 */
#ifndef PW_FS_FILE_INT_H
#define PW_FS_FILE_INT_H

#include "pinwheel/file.h"
#include "shard/sched.h"

/* Kinds of request (pw_file_req.kind); 0 is a request never set up. */
enum {
	PW__FK_NONE = 0,
	PW__FK_OPEN,
	PW__FK_OPENAT2,
	PW__FK_READ,
	PW__FK_READV,
	PW__FK_READ_FIXED,
	PW__FK_WRITE,
	PW__FK_WRITEV,
	PW__FK_FSYNC,
	PW__FK_STATX,
	PW__FK_CLOSE,
	PW__FK_RENAME,
	PW__FK_UNLINK,
	PW__FK_SPLICE,
	PW__FK_BAD, /* an init refused its arguments: the poll says -EINVAL */
};

/*
 * pw__file_req_reset - start an init of @r (idle, or never used) for a
 * call of @kind on @fd: everything else cleared.
 * Return: false for a NULL @r. Any thread.
 */
bool pw__file_req_reset(struct pw_file_req *r, uint8_t kind, int fd);

struct io_uring_sqe;

/* Write the SQE of splice request @r (fs/splice.c). Shard thread. */
void pw__file_splice_prep(struct io_uring_sqe *sqe,
			  const struct pw_file_req *r);

/*
 * The shard's slot of registered buffer @fx, checked against @s: its
 * index, or -EXDEV (another shard's), -EINVAL (not registered).
 * Shard thread.
 */
int pw__fs_fixed_slot(struct pw__shard *s, const struct pw_file_fixed *fx);

/*
 * pw__file_cancel_wait - cancel @r's call if it is in flight and return
 * only once the kernel is done with its memory (a synchronous cancel,
 * after submitting what is queued). For a fiber unwinding from a wait:
 * its frame, which may hold the buffer, is about to be reused. The final
 * completion is still reaped later, as for any cancel.
 * Context: the shard that polled @r.
 */
void pw__file_cancel_wait(struct pw_file_req *r);

#endif /* PW_FS_FILE_INT_H */
