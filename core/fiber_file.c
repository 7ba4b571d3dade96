/* SPDX-License-Identifier: MIT */
/*
 * fiber_file.c - the fiber's blocking-style calls over files
 * (pinwheel/file.h), built like those of core/fiber_io.c: a request on
 * the call's frame, a step polling it, one pw__fiber_wait().
 *
 * Each call takes the fiber's deadline into the request itself (the
 * request cancels its call when it passes and still waits for the final
 * completion), so when a call returns, even with -ETIMEDOUT, the kernel
 * is done with its frame and the caller's buffer. A cancelled fiber
 * cannot wait, and its frames are reused as it unwinds: its call cancels
 * the request synchronously (pw__file_cancel_wait()), which returns only
 * once the kernel no longer touches the buffer. The streaming reader
 * needs none of that: it owns its buffers and frees them itself.
 *
 * They live in core/ beside the other fiber calls, because the wait they
 * share (core/fiber_int.h) is private to core/; they reach fs/ through
 * the one call its private header offers them.
 */
#include <errno.h>

#include "core/fiber_int.h"
#include "fs/file_int.h"

struct file_wait {
	struct pw_file_req r;
	uint64_t deadline;
	int32_t res;
};

static enum pw_poll file_step(struct pw_cx *cx, void *st)
{
	struct file_wait *w = st;

	return pw_file_poll(cx, &w->r, w->deadline, &w->res);
}

static void file_cancel(void *st)
{
	struct file_wait *w = st;

	pw__file_cancel_wait(&w->r);
}

/* Run @w's request (its init done) to its end in the fiber @f. */
static int64_t file_run(struct pw__fiber *f, struct file_wait *w)
{
	w->deadline = f->deadline;
	int err = pw__fiber_wait(f, file_step, w, file_cancel, false);
	return err ? err : w->res;
}

/* The calling fiber, or NULL with *@err set. */
static struct pw__fiber *fiber_or(int64_t *err)
{
	struct pw__fiber *f = pw__fiber_cur();

	*err = !f ? -EPERM : (f->flags & PW__F_CANCELLED) ? -ECANCELED : 0;
	return *err ? NULL : f;
}

int pw_fiber_file_open(int dfd, const char *path, int flags, mode_t mode)
{
	int64_t err;
	struct pw__fiber *f = fiber_or(&err);
	struct file_wait w;

	if (!f)
		return (int)err;
	pw_file_open_init(&w.r, dfd, path, flags, mode);
	return (int)file_run(f, &w);
}

int pw_fiber_file_openat2(int dfd, const char *path, int flags, mode_t mode,
			  uint64_t resolve)
{
	int64_t err;
	struct pw__fiber *f = fiber_or(&err);
	struct file_wait w;

	if (!f)
		return (int)err;
	pw_file_openat2_init(&w.r, dfd, path, flags, mode, resolve);
	return (int)file_run(f, &w);
}

int64_t pw_fiber_file_read(int fd, void *buf, size_t len, uint64_t off)
{
	int64_t err;
	struct pw__fiber *f = fiber_or(&err);
	struct file_wait w;

	if (!f)
		return err;
	pw_file_read_init(&w.r, fd, buf, len, off);
	return file_run(f, &w);
}

int64_t pw_fiber_file_readv(int fd, const struct iovec *iov, int iovcnt,
			    uint64_t off)
{
	int64_t err;
	struct pw__fiber *f = fiber_or(&err);
	struct file_wait w;

	if (!f)
		return err;
	pw_file_readv_init(&w.r, fd, iov, iovcnt, off);
	return file_run(f, &w);
}

int64_t pw_fiber_file_read_fixed(int fd, const struct pw_file_fixed *fx,
				 size_t at, size_t len, uint64_t off)
{
	int64_t err;
	struct pw__fiber *f = fiber_or(&err);
	struct file_wait w;

	if (!f)
		return err;
	pw_file_read_fixed_init(&w.r, fd, fx, at, len, off);
	return file_run(f, &w);
}

int64_t pw_fiber_file_write(int fd, const void *buf, size_t len, uint64_t off)
{
	int64_t err;
	struct pw__fiber *f = fiber_or(&err);
	struct file_wait w;

	if (!f)
		return err;
	pw_file_write_init(&w.r, fd, buf, len, off);
	return file_run(f, &w);
}

int64_t pw_fiber_file_writev(int fd, const struct iovec *iov, int iovcnt,
			     uint64_t off)
{
	int64_t err;
	struct pw__fiber *f = fiber_or(&err);
	struct file_wait w;

	if (!f)
		return err;
	pw_file_writev_init(&w.r, fd, iov, iovcnt, off);
	return file_run(f, &w);
}

int pw_fiber_file_fsync(int fd, bool datasync)
{
	int64_t err;
	struct pw__fiber *f = fiber_or(&err);
	struct file_wait w;

	if (!f)
		return (int)err;
	if (datasync)
		pw_file_fdatasync_init(&w.r, fd);
	else
		pw_file_fsync_init(&w.r, fd);
	return (int)file_run(f, &w);
}

int pw_fiber_file_statx(int dfd, const char *path, int flags, unsigned mask,
			struct statx *out)
{
	int64_t err;
	struct pw__fiber *f = fiber_or(&err);
	struct file_wait w;

	if (!f)
		return (int)err;
	pw_file_statx_init(&w.r, dfd, path, flags, mask, out);
	return (int)file_run(f, &w);
}

int pw_fiber_file_close(int fd)
{
	int64_t err;
	struct pw__fiber *f = fiber_or(&err);
	struct file_wait w;

	if (!f)
		return (int)err;
	pw_file_close_init(&w.r, fd);
	return (int)file_run(f, &w);
}

int pw_fiber_file_rename(int olddfd, const char *oldpath, int newdfd,
			 const char *newpath, unsigned flags)
{
	int64_t err;
	struct pw__fiber *f = fiber_or(&err);
	struct file_wait w;

	if (!f)
		return (int)err;
	pw_file_rename_init(&w.r, olddfd, oldpath, newdfd, newpath, flags);
	return (int)file_run(f, &w);
}

int pw_fiber_file_unlink(int dfd, const char *path, int flags)
{
	int64_t err;
	struct pw__fiber *f = fiber_or(&err);
	struct file_wait w;

	if (!f)
		return (int)err;
	pw_file_unlink_init(&w.r, dfd, path, flags);
	return (int)file_run(f, &w);
}

struct stream_wait {
	struct pw_file_stream *st;
	struct pw_file_chunk *out;
	uint64_t deadline;
	int32_t res;
};

static enum pw_poll stream_step(struct pw_cx *cx, void *st)
{
	struct stream_wait *w = st;

	return pw_file_stream_poll(cx, w->st, w->deadline, w->out, &w->res);
}

static void stream_cancel(void *st)
{
	struct stream_wait *w = st;

	pw_file_stream_cancel(w->st);
}

int64_t pw_fiber_file_stream_read(struct pw_file_stream *st,
				  struct pw_file_chunk *out)
{
	int64_t err;
	struct pw__fiber *f = fiber_or(&err);

	if (!f)
		return err;
	if (!st || !out)
		return -EINVAL;
	struct stream_wait w = { st, out, f->deadline, 0 };
	err = pw__fiber_wait(f, stream_step, &w, stream_cancel, false);
	return err ? err : w.res;
}
