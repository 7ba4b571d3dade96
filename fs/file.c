/* SPDX-License-Identifier: MIT */
/*
 * file.c - the one-shot file calls (see pinwheel/file.h): each init
 * records a call's arguments in a struct pw_file_req, and pw_file_poll()
 * submits it as one pw_op whose SQE file_prep() writes from them.
 *
 * The request is a pw_op, so it pins its task from submission to the
 * final completion, like every other operation: memory in the task's
 * state outlives the call even when the state is dropped mid-flight. A
 * deadline that passes cancels the call, and the poll still waits for
 * the final completion, so PW_READY always means the kernel is done.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>

#include "fs/file_int.h"
#include "shard/op_int.h"

_Static_assert(sizeof(struct open_how) ==
		       sizeof(((struct pw_file_req *)0)->how),
	       "pw_file_req.how holds a struct open_how");

/* See fs/file_int.h. */
bool pw__file_req_reset(struct pw_file_req *r, uint8_t kind, int fd)
{
	if (!r)
		return false;
	memset(r, 0, sizeof(*r));
	pw_op_init(&r->op);
	pw_sleep_init_at(&r->timer, PW_TIME_NEVER);
	r->kind = kind;
	r->fd = fd;
	r->fd2 = -1;
	return true;
}

void pw_file_open_init(struct pw_file_req *r, int dfd, const char *path,
		       int flags, mode_t mode)
{
	if (!pw__file_req_reset(r, path ? PW__FK_OPEN : PW__FK_BAD, dfd))
		return;
	r->path = path;
	r->flags = flags | O_CLOEXEC;
	r->mode = (uint32_t)mode;
}

void pw_file_openat2_init(struct pw_file_req *r, int dfd, const char *path,
			  int flags, mode_t mode, uint64_t resolve)
{
	if (!pw__file_req_reset(r, path ? PW__FK_OPENAT2 : PW__FK_BAD, dfd))
		return;
	r->path = path;
	/* struct open_how's three fields, in its order. */
	r->how[0] = (uint64_t)(unsigned)(flags | O_CLOEXEC);
	r->how[1] = (uint64_t)mode;
	r->how[2] = resolve;
}

static void rw_init(struct pw_file_req *r, uint8_t kind, int fd, void *buf,
		    size_t len, uint64_t off)
{
	bool ok = fd >= 0 && (buf || !len) && len <= INT32_MAX;

	if (!pw__file_req_reset(r, ok ? kind : PW__FK_BAD, fd))
		return;
	r->buf = buf;
	r->len = (uint32_t)len;
	r->off = off;
}

void pw_file_read_init(struct pw_file_req *r, int fd, void *buf, size_t len,
		       uint64_t off)
{
	rw_init(r, PW__FK_READ, fd, buf, len, off);
}

void pw_file_write_init(struct pw_file_req *r, int fd, const void *buf,
			size_t len, uint64_t off)
{
	rw_init(r, PW__FK_WRITE, fd, (void *)(uintptr_t)buf, len, off);
}

/* Whether @iov is a vector the kernel takes: at most IOV_MAX entries,
 * at most INT32_MAX bytes in all. */
static bool iov_ok(const struct iovec *iov, int iovcnt)
{
	uint64_t total = 0;

	if (iovcnt < 0 || iovcnt > IOV_MAX || (!iov && iovcnt))
		return false;
	for (int i = 0; i < iovcnt; i++) {
		if (!iov[i].iov_base && iov[i].iov_len)
			return false;
		total += iov[i].iov_len;
		if (total > INT32_MAX)
			return false;
	}
	return true;
}

static void rwv_init(struct pw_file_req *r, uint8_t kind, int fd,
		     const struct iovec *iov, int iovcnt, uint64_t off)
{
	bool ok = fd >= 0 && iov_ok(iov, iovcnt);

	if (!pw__file_req_reset(r, ok ? kind : PW__FK_BAD, fd))
		return;
	r->buf = (void *)(uintptr_t)iov;
	r->len = (uint32_t)iovcnt;
	r->off = off;
}

void pw_file_readv_init(struct pw_file_req *r, int fd, const struct iovec *iov,
			int iovcnt, uint64_t off)
{
	rwv_init(r, PW__FK_READV, fd, iov, iovcnt, off);
}

void pw_file_writev_init(struct pw_file_req *r, int fd, const struct iovec *iov,
			 int iovcnt, uint64_t off)
{
	rwv_init(r, PW__FK_WRITEV, fd, iov, iovcnt, off);
}

void pw_file_read_fixed_init(struct pw_file_req *r, int fd,
			     const struct pw_file_fixed *fx, size_t at,
			     size_t len, uint64_t off)
{
	bool ok = fd >= 0 && fx && fx->index >= 0 && at <= fx->len &&
		  len <= fx->len - at && len <= INT32_MAX;

	if (!pw__file_req_reset(r, ok ? PW__FK_READ_FIXED : PW__FK_BAD, fd))
		return;
	r->fixed = fx;
	r->buf = ok ? (char *)fx->base + at : NULL;
	r->len = (uint32_t)len;
	r->off = off;
	r->buf_index = ok ? (uint16_t)fx->index : 0;
}

void pw_file_fsync_init(struct pw_file_req *r, int fd)
{
	pw__file_req_reset(r, fd >= 0 ? PW__FK_FSYNC : PW__FK_BAD, fd);
}

void pw_file_fdatasync_init(struct pw_file_req *r, int fd)
{
	if (pw__file_req_reset(r, fd >= 0 ? PW__FK_FSYNC : PW__FK_BAD, fd))
		r->flags = IORING_FSYNC_DATASYNC;
}

void pw_file_statx_init(struct pw_file_req *r, int dfd, const char *path,
			int flags, unsigned mask, struct statx *out)
{
	if (!pw__file_req_reset(r, path && out ? PW__FK_STATX : PW__FK_BAD,
				dfd))
		return;
	r->path = path;
	r->flags = flags;
	r->mode = mask;
	r->buf = out;
}

void pw_file_close_init(struct pw_file_req *r, int fd)
{
	pw__file_req_reset(r, fd >= 0 ? PW__FK_CLOSE : PW__FK_BAD, fd);
}

void pw_file_rename_init(struct pw_file_req *r, int olddfd, const char *oldpath,
			 int newdfd, const char *newpath, unsigned flags)
{
	bool ok = oldpath && newpath && flags <= INT_MAX;

	if (!pw__file_req_reset(r, ok ? PW__FK_RENAME : PW__FK_BAD, olddfd))
		return;
	r->path = oldpath;
	r->fd2 = newdfd;
	r->path2 = newpath;
	r->flags = (int)flags;
}

void pw_file_unlink_init(struct pw_file_req *r, int dfd, const char *path,
			 int flags)
{
	if (!pw__file_req_reset(r, path ? PW__FK_UNLINK : PW__FK_BAD, dfd))
		return;
	r->path = path;
	r->flags = flags;
}

/* Writes the SQE of @arg's call (pw_op_poll()'s prep). */
static void file_prep(struct io_uring_sqe *sqe, void *arg)
{
	struct pw_file_req *r = arg;

	switch (r->kind) {
	case PW__FK_OPEN:
		io_uring_prep_openat(sqe, r->fd, r->path, r->flags, r->mode);
		break;
	case PW__FK_OPENAT2:
		io_uring_prep_openat2(sqe, r->fd, r->path,
				      (struct open_how *)(void *)r->how);
		break;
	case PW__FK_READ:
		io_uring_prep_read(sqe, r->fd, r->buf, r->len, r->off);
		break;
	case PW__FK_READV:
		io_uring_prep_readv(sqe, r->fd, r->buf, r->len, r->off);
		break;
	case PW__FK_READ_FIXED:
		io_uring_prep_read_fixed(sqe, r->fd, r->buf, r->len, r->off,
					 r->buf_index);
		break;
	case PW__FK_WRITE:
		io_uring_prep_write(sqe, r->fd, r->buf, r->len, r->off);
		break;
	case PW__FK_WRITEV:
		io_uring_prep_writev(sqe, r->fd, r->buf, r->len, r->off);
		break;
	case PW__FK_FSYNC:
		io_uring_prep_fsync(sqe, r->fd, (unsigned)r->flags);
		break;
	case PW__FK_STATX:
		io_uring_prep_statx(sqe, r->fd, r->path, r->flags, r->mode,
				    r->buf);
		break;
	case PW__FK_CLOSE:
		io_uring_prep_close(sqe, r->fd);
		break;
	case PW__FK_RENAME:
		io_uring_prep_renameat(sqe, r->fd, r->path, r->fd2, r->path2,
				       (unsigned)r->flags);
		break;
	case PW__FK_SPLICE:
		pw__file_splice_prep(sqe, r);
		break;
	default: /* PW__FK_UNLINK: pw_file_poll() lets no other kind by */
		io_uring_prep_unlinkat(sqe, r->fd, r->path, r->flags);
		break;
	}
}

/* The first poll of a call: checks, the deadline, the submission. */
static enum pw_poll file_start(struct pw_cx *cx, struct pw_file_req *r,
			       pw_time_t deadline, int32_t *res)
{
	int32_t v;

	if (r->kind == PW__FK_READ_FIXED) {
		int slot = pw__fs_fixed_slot(cx->shard, r->fixed);
		if (slot < 0) {
			*res = slot;
			return PW_READY;
		}
		/* Stealing mode: the buffer is this shard's ring's. */
		pw__task_fix(cx->task, cx->shard);
	}
	if (pw__deadline_passed(cx, &r->timer, deadline)) {
		*res = -ETIMEDOUT;
		return PW_READY;
	}
	r->timed_out = false;
	/* Always pending: the SQE is queued (or retried next turn). */
	return pw_op_poll(cx, &r->op, file_prep, r, &v);
}

enum pw_poll pw_file_poll(struct pw_cx *cx, struct pw_file_req *r,
			  pw_time_t deadline, int32_t *res)
{
	int32_t v;

	if (!res)
		return PW_READY;
	if (!cx || !r || r->kind == PW__FK_NONE || r->kind >= PW__FK_BAD) {
		*res = -EINVAL;
		return PW_READY;
	}
	switch (r->op.state) {
	case PW_OP_IDLE:
		return file_start(cx, r, deadline, res);
	case PW_OP_INFLIGHT:
		if (pw__deadline_passed(cx, &r->timer, deadline)) {
			r->timed_out = true;
			(void)pw_op_cancel(&r->op);
		}
		return PW_PENDING;
	case PW_OP_CANCELLING:
		return PW_PENDING;
	default:
		break;
	}
	if (pw_op_poll(cx, &r->op, file_prep, r, &v) == PW_PENDING)
		return PW_PENDING; /* out of budget: the result waits */
	pw_sleep_cancel(&r->timer);
	/* A cancel that interrupts a call a kernel worker is running (a
	 * splice waiting on a pipe or a socket) ends it with the kernel's
	 * internal -ERESTARTSYS: reported as -EINTR. */
	if (v == -512)
		v = -EINTR;
	if (r->timed_out && (v == -ECANCELED || v == -EINTR))
		v = -ETIMEDOUT;
	r->timed_out = false;
	*res = v;
	return PW_READY;
}

void pw_file_cancel(struct pw_file_req *r)
{
	if (!r)
		return;
	(void)pw_op_cancel(&r->op);
	pw_sleep_cancel(&r->timer);
}

bool pw_file_in_flight(const struct pw_file_req *r)
{
	return r && (r->op.state == PW_OP_INFLIGHT ||
		     r->op.state == PW_OP_CANCELLING);
}

void pw__file_cancel_wait(struct pw_file_req *r)
{
	struct pw__shard *s = pw__cur_shard;

	if (!r || !s)
		return;
	pw_sleep_cancel(&r->timer);
	if (!pw_file_in_flight(r))
		return;
	/* The request may still sit in the submission queue, where a
	 * synchronous cancel would not find it: hand the queue over. */
	int n = io_uring_submit(&s->ring);
	if (n > 0)
		PW__STAT_ADD(s, sqes_submitted, (uint64_t)n);
	s->sq_dirty = 0;
	struct io_uring_sync_cancel_reg reg;
	memset(&reg, 0, sizeof(reg));
	reg.addr = (uint64_t)(uintptr_t)&r->op;
	reg.fd = -1;
	reg.timeout.tv_sec = -1;
	reg.timeout.tv_nsec = -1;
	/* Returns once no request matches: cancelled or finished. */
	(void)io_uring_register_sync_cancel(&s->ring, &reg);
	r->op.state = PW_OP_CANCELLING;
}
