/* SPDX-License-Identifier: MIT */
/*
 * splice.c - splice(2) through the ring (see pinwheel/file.h): moves
 * bytes between a file or socket and a pipe inside the kernel, the
 * io_uring way of sendfile(2) (a file into a pipe, the pipe into a
 * socket), so a server sends file pages without copying them through
 * user space.
 *
 * It is one more kind of struct pw_file_req, submitted by pw_file_poll()
 * like every other file call: the init records the arguments, fs/file.c
 * writes the SQE from them. The kernel runs every splice in one of its
 * worker threads (IORING_OP_SPLICE is always punted there) and looks up
 * both descriptors only then: they must stay open, and keep their
 * numbers, until the final completion.
 */
#include <errno.h>
#include <limits.h>

#include "fs/file_int.h"

/* The kernel's splice flags a request may carry. */
#define SPLICE_FLAGS_OK \
	(PW_FILE_SPLICE_MOVE | PW_FILE_SPLICE_NONBLOCK | PW_FILE_SPLICE_MORE)

void pw_file_splice_init(struct pw_file_req *r, int fd_in, uint64_t off_in,
			 int fd_out, uint64_t off_out, size_t len,
			 unsigned flags)
{
	bool ok = fd_in >= 0 && fd_out >= 0 && len <= INT32_MAX &&
		  !(flags & ~SPLICE_FLAGS_OK) &&
		  (off_in == PW_FILE_POS || off_in <= INT64_MAX) &&
		  (off_out == PW_FILE_POS || off_out <= INT64_MAX);

	if (!pw__file_req_reset(r, ok ? PW__FK_SPLICE : PW__FK_BAD, fd_in))
		return;
	r->fd2 = fd_out;
	r->off = off_in;
	r->how[0] = off_out; /* the output's offset (how is openat2's) */
	r->len = (uint32_t)len;
	r->flags = (int)flags;
}

void pw__file_splice_prep(struct io_uring_sqe *sqe, const struct pw_file_req *r)
{
	int64_t in = r->off == PW_FILE_POS ? -1 : (int64_t)r->off;
	int64_t out = r->how[0] == PW_FILE_POS ? -1 : (int64_t)r->how[0];

	io_uring_prep_splice(sqe, r->fd, in, r->fd2, out, r->len,
			     (unsigned)r->flags);
}

void pw_file_cancel_sync(struct pw_file_req *r)
{
	pw__file_cancel_wait(r);
}
