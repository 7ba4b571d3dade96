/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/file.h - files over io_uring: open, read and write at an
 * offset (one buffer or iovecs), fsync, fdatasync, statx, close, rename,
 * unlink and splice; reads into registered buffers; aligned buffers for
 * O_DIRECT; and a streaming reader that keeps several reads in flight.
 *
 * Every call is a leaf future, like pw_op: a struct pw_file_req in the
 * task's state, made ready for one call by that call's *_init(), driven
 * by pw_file_poll() and stopped by pw_file_cancel(). One request can make
 * one call after another: init it again once a poll returned PW_READY.
 * The fiber forms are pw_fiber_file_*() (pinwheel/fiber.h); the async
 * macros await pw_file_poll() like any other poll (PW_AWAIT).
 *
 * Memory the kernel reads or writes (buffers, iovecs, paths, the statx
 * record) belongs to the request from its first poll to its PW_READY,
 * and stays the kernel's after a cancel until the final completion: a
 * task whose state is dropped with a request in flight keeps its memory
 * until then, so buffers in the task's state are always safe; a buffer
 * allocated elsewhere may be freed once pw_file_in_flight() is false.
 * The streaming reader owns its buffers and frees them itself at the
 * final completion of its last read.
 *
 * Short reads are results, never errors: a read that reaches the end of
 * the file returns the bytes it read (0 at or past the end).
 *
 * Errors are -errno, as everywhere in pinwheel; a request is always
 * polled by the same task, on the same shard. An init starts afresh
 * (the struct may hold anything before): never init a request whose
 * call is in flight; poll it to its end (or cancel it and poll it to
 * its end) first.
 */
#ifndef PINWHEEL_FILE_H
#define PINWHEEL_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "export.h"
#include "op.h"
#include "task.h"
#include "time.h"

#ifdef __cplusplus
extern "C" {
#endif

struct statx;

/* An offset meaning "the file's current position" (then advanced), for
 * files that have none, like pipes, or appends in order. */
#define PW_FILE_POS ((uint64_t)-1)

/* ---- one request ------------------------------------------------------ */

/* One file call in flight (the fields are the runtime's). */
struct pw_file_req {
	struct pw_op op;
	struct pw_sleep timer; /* the poll's deadline */
	uint8_t kind;	       /* which call the last init set up */
	bool timed_out;	       /* the deadline cancelled the request */
	uint16_t buf_index;    /* read_fixed: the registered buffer */
	int fd;		       /* the file, or the directory of a path */
	int fd2;	       /* rename: the new path's directory */
	int flags;	       /* open, statx, unlink, rename, fsync flags */
	uint32_t mode;	       /* open: mode; statx: mask */
	const char *path, *path2;
	void *buf;    /* buffer, iovec array or struct statx */
	uint32_t len; /* bytes, or iovecs */
	uint64_t off;
	const struct pw_file_fixed *fixed; /* read_fixed: the buffer */
	uint64_t how[3]; /* openat2: its struct open_how (flags, mode,
			    resolve), read by the kernel at submission */
};

/**
 * pw_file_open_init - openat(@dfd, @path, @flags | O_CLOEXEC, @mode):
 * @dfd is a directory descriptor or AT_FDCWD, used when @path is
 * relative. @path must stay valid until PW_READY. Any thread.
 */
PW_API void pw_file_open_init(struct pw_file_req *r, int dfd, const char *path,
			      int flags, mode_t mode);

/**
 * pw_file_openat2_init - openat2(@dfd, @path, {@flags | O_CLOEXEC, @mode,
 * @resolve}): pw_file_open_init() with RESOLVE_* flags
 * (<linux/openat2.h>) that bound the path's resolution: RESOLVE_BENEATH
 * refuses a path leaving @dfd (absolute, "..", a symlink out) with
 * -EXDEV, RESOLVE_NO_SYMLINKS any symlink with -ELOOP, RESOLVE_IN_ROOT
 * resolves as if @dfd were "/". How a server opens files under a root
 * folder safely. @path must stay valid until PW_READY. Any thread.
 */
PW_API void pw_file_openat2_init(struct pw_file_req *r, int dfd,
				 const char *path, int flags, mode_t mode,
				 uint64_t resolve);

/**
 * pw_file_read_init - read up to @len bytes of @fd at offset @off
 * (PW_FILE_POS: at the file's position) into @buf. The result is the
 * bytes read, fewer than @len only at the end of the file (or for a pipe
 * or socket, what was there); 0 at or past the end. @len above
 * INT32_MAX is refused (-EINVAL at the poll). Any thread.
 */
PW_API void pw_file_read_init(struct pw_file_req *r, int fd, void *buf,
			      size_t len, uint64_t off);

/**
 * pw_file_readv_init - pw_file_read_init() into the @iovcnt buffers of
 * @iov, filled in order (a preadv2). The vector and its buffers belong
 * to the request until PW_READY. More than IOV_MAX iovecs, or more than
 * INT32_MAX bytes in all, is refused with -EINVAL. Any thread.
 */
PW_API void pw_file_readv_init(struct pw_file_req *r, int fd,
			       const struct iovec *iov, int iovcnt,
			       uint64_t off);

/**
 * pw_file_write_init - write @len bytes at @buf to @fd at offset @off
 * (PW_FILE_POS: at the file's position, or its end with O_APPEND). The
 * result is the bytes written: fewer than @len only when the device is
 * full or a limit is reached (RLIMIT_FSIZE); the caller writes the rest
 * or reports it. Any thread.
 */
PW_API void pw_file_write_init(struct pw_file_req *r, int fd, const void *buf,
			       size_t len, uint64_t off);

/** pw_file_writev_init - pw_file_write_init() from iovecs (a pwritev2),
 * checked as pw_file_readv_init()'s. Any thread. */
PW_API void pw_file_writev_init(struct pw_file_req *r, int fd,
				const struct iovec *iov, int iovcnt,
				uint64_t off);

/** pw_file_fsync_init - fsync(@fd): data and metadata reach the device.
 * Any thread. */
PW_API void pw_file_fsync_init(struct pw_file_req *r, int fd);

/** pw_file_fdatasync_init - fdatasync(@fd): the data, and the metadata
 * needed to read it back (the size), reach the device. Any thread. */
PW_API void pw_file_fdatasync_init(struct pw_file_req *r, int fd);

/**
 * pw_file_statx_init - statx(@dfd, @path, @flags, @mask, @out): @flags
 * are AT_* (AT_EMPTY_PATH with @path "" describes @dfd itself,
 * AT_SYMLINK_NOFOLLOW...), @mask the STATX_* fields wanted. @path and
 * @out belong to the request until PW_READY; the result is 0 with @out
 * filled. Any thread.
 */
PW_API void pw_file_statx_init(struct pw_file_req *r, int dfd, const char *path,
			       int flags, unsigned mask, struct statx *out);

/**
 * pw_file_close_init - close(@fd) through the ring. Cancel or finish the
 * file's other requests first: they keep their own reference to the
 * file, so closing does not end them. Any thread.
 */
PW_API void pw_file_close_init(struct pw_file_req *r, int fd);

/**
 * pw_file_rename_init - renameat2(@olddfd, @oldpath, @newdfd, @newpath,
 * @flags): @flags 0, RENAME_NOREPLACE, RENAME_EXCHANGE or RENAME_WHITEOUT.
 * The paths belong to the request until PW_READY. Any thread.
 */
PW_API void pw_file_rename_init(struct pw_file_req *r, int olddfd,
				const char *oldpath, int newdfd,
				const char *newpath, unsigned flags);

/**
 * pw_file_unlink_init - unlinkat(@dfd, @path, @flags): a file, or with
 * AT_REMOVEDIR an empty directory. Any thread.
 */
PW_API void pw_file_unlink_init(struct pw_file_req *r, int dfd,
				const char *path, int flags);

/* pw_file_splice_init() flags: the kernel's SPLICE_F_* values. */
#define PW_FILE_SPLICE_MOVE	0x1u /* a hint: move pages, not copy */
#define PW_FILE_SPLICE_NONBLOCK 0x2u /* the pipe side does not wait */
#define PW_FILE_SPLICE_MORE	0x4u /* more follows (a socket: MSG_MORE) */

/**
 * pw_file_splice_init - splice(@fd_in, @off_in, @fd_out, @off_out, @len,
 * @flags): move up to @len bytes between two descriptors inside the
 * kernel, one of them a pipe; an offset is PW_FILE_POS for the pipe (or
 * a socket), else where to read or write the file. A file into a pipe,
 * then the pipe into a socket, is how a server sends a file's pages
 * without copying them through user space (sendfile(2)).
 * The result is the bytes moved: fewer than @len when the pipe fills
 * (into a pipe), the file ends (0 at or past its end), or the pipe holds
 * fewer (out of a pipe: once some moved, it does not wait for more);
 * without PW_FILE_SPLICE_NONBLOCK an empty pipe is waited on (give it a
 * writer that writes, or a deadline), a blocking socket too.
 * The kernel always runs a splice in its worker threads and looks the
 * two descriptors up there: keep both open, under the same numbers,
 * until PW_READY (pw_file_in_flight() false), cancelled or not.
 * @len above INT32_MAX, unknown flags or a negative descriptor are
 * refused (-EINVAL at the poll). Any thread.
 */
PW_API void pw_file_splice_init(struct pw_file_req *r, int fd_in,
				uint64_t off_in, int fd_out, uint64_t off_out,
				size_t len, unsigned flags);

/**
 * pw_file_poll - drive the call @r was made ready for.
 *
 * The first poll submits it. If @deadline (absolute, on the runtime's
 * clock; PW_TIME_NEVER for none) passes first, the request is cancelled
 * and the poll still waits for its final completion: once PW_READY is
 * returned the kernel is done with the call's memory, always.
 * Return: PW_READY with *@res the call's result: a descriptor (open),
 * a byte count (read, write, splice), 0 (the others), or -errno; -ETIMEDOUT
 * when the deadline cancelled the call before it finished (a call that
 * finished anyway returns its result); -ECANCELED after pw_file_cancel()
 * (-EINTR when the cancel interrupted a splice already running);
 * -EINVAL for bad arguments or a request never initialised. @r is then
 * idle, ready for another init. PW_PENDING otherwise.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_file_poll(struct pw_cx *cx, struct pw_file_req *r,
				 pw_time_t deadline, int32_t *res);

/**
 * pw_file_cancel - ask the kernel to cancel @r's call if it is in
 * flight. Its final completion still comes (-ECANCELED, or the result
 * when the call finished first); the next pw_file_poll() returns it.
 * Until then the call's memory is the kernel's (pw_file_in_flight()).
 * Safe from a drop hook; harmless when idle.
 * Context: the shard that polled @r.
 */
PW_API void pw_file_cancel(struct pw_file_req *r);

/**
 * pw_file_cancel_sync - pw_file_cancel() that returns only once the
 * kernel is done with @r's call: its memory and its descriptors (a
 * synchronous cancel; the shard waits the moment the kernel takes to
 * stop a running splice). For a drop hook about to close or reuse what
 * a call in flight uses, such as a splice's pipe, whose descriptors the
 * kernel looks up only when its worker starts the call. The final
 * completion is still reaped by the shard later; harmless when idle.
 * Context: the shard that polled @r.
 */
PW_API void pw_file_cancel_sync(struct pw_file_req *r);

/**
 * pw_file_in_flight - whether the kernel may still use @r's memory (its
 * buffer, iovecs, path, statx record): true from the first poll until
 * the final completion, cancelled or not. False for NULL.
 * Context: the shard that polls @r.
 */
PW_API bool pw_file_in_flight(const struct pw_file_req *r);

/* ---- registered buffers ------------------------------------------------ */

/* Registered buffers one shard holds at most. */
#define PW_FILE_FIXED_MAX 64

/*
 * A buffer registered with one shard's ring (io_uring_register_buffers):
 * the kernel pins its pages once, so each read into it skips the page
 * lookup (READ_FIXED), which counts on large, repeated reads. The memory
 * is the caller's; the record is filled by pw_file_fixed_register().
 */
struct pw_file_fixed {
	void *base;
	size_t len;
	struct pw__shard *shard; /* the shard whose table holds it */
	int index;		 /* its slot there; -1 when not registered */
};

/**
 * pw_file_fixed_register - register @len bytes at @mem (at most 1 GiB)
 * with the ring of @cx's shard, in one of its PW_FILE_FIXED_MAX slots.
 * Reads into it must run on that shard: in stealing mode the calling
 * task is fixed to it from now on, and a task elsewhere gets -EXDEV.
 * The pages count against RLIMIT_MEMLOCK (without CAP_IPC_LOCK).
 * Return: 0; -EINVAL for NULL or a bad length; -ENOSPC when every slot
 * is taken; -ENOMEM (the memlock limit); other -errno of the kernel.
 * Context: a task on a shard.
 */
PW_API int pw_file_fixed_register(struct pw_cx *cx, struct pw_file_fixed *fx,
				  void *mem, size_t len);

/**
 * pw_file_fixed_unregister - free @fx's slot. Call it only when no read
 * into it is in flight; the memory is then the caller's to free.
 * Return: 0; -EINVAL for NULL or a record not registered; -EXDEV off its
 * shard.
 * Context: the shard that registered it.
 */
PW_API int pw_file_fixed_unregister(struct pw_file_fixed *fx);

/**
 * pw_file_read_fixed_init - read up to @len bytes of @fd at @off into
 * @fx's buffer at byte @at (READ_FIXED); the result as for
 * pw_file_read_init(). A range outside the buffer is refused (-EINVAL
 * at the poll). Any thread; the poll on @fx's shard.
 */
PW_API void pw_file_read_fixed_init(struct pw_file_req *r, int fd,
				    const struct pw_file_fixed *fx, size_t at,
				    size_t len, uint64_t off);

/* ---- buffers for O_DIRECT --------------------------------------------- */

/* The alignment of pw_file_buf_alloc()'s buffers: a page, enough for
 * O_DIRECT on every Linux filesystem (memory, offsets and lengths). */
#define PW_FILE_ALIGN 4096u

/**
 * pw_file_buf_alloc - @size bytes (rounded up to PW_FILE_ALIGN), aligned
 * to PW_FILE_ALIGN, from the calling thread's heap (on a shard, its
 * NUMA-bound arena); free with pw_file_buf_free().
 * Return: the buffer; NULL for @size 0 or out of memory.
 * Context: any thread.
 */
PW_API void *pw_file_buf_alloc(size_t size);

/** pw_file_buf_free - free a pw_file_buf_alloc() buffer; NULL is a no-op.
 * Context: any thread. */
PW_API void pw_file_buf_free(void *buf);

/**
 * pw_file_direct - turn O_DIRECT on (@on) or off for @fd (fcntl
 * F_SETFL; it changes the open file description, shared by dup()s).
 * With it, reads bypass the page cache: buffers, offsets and lengths
 * must be aligned (PW_FILE_ALIGN is always enough).
 * Return: 0; -EINVAL when the filesystem has no direct I/O (tmpfs on
 * older kernels); other -errno of fcntl.
 * Context: any thread.
 */
PW_API int pw_file_direct(int fd, bool on);

/* ---- the streaming reader ---------------------------------------------- */

/* Reads one stream keeps in flight at most. */
#define PW_FILE_STREAM_MAX 32
/* A length meaning "to the end of the file". */
#define PW_FILE_TO_EOF UINT64_MAX
/* pw_file_stream_init() flag: read with O_DIRECT (pw_file_direct()). */
#define PW_FILE_STREAM_DIRECT 0x1u
/* pw_file_stream_init() flag: register the stream's buffers with the
 * shard's ring at the first poll and read with READ_FIXED (the task is
 * then fixed to that shard in stealing mode); when no slot is free, the
 * buffers exceed 1 GiB or RLIMIT_MEMLOCK refuses, plain reads. */
#define PW_FILE_STREAM_FIXED 0x2u

/* A chunk of the stream, lent until the next poll or cancel. */
struct pw_file_chunk {
	const void *data;
	uint32_t len;
	uint64_t off; /* its offset in the file */
};

struct pw__fs_stream; /* the reads and buffers: the stream's own memory */

/*
 * A sequential reader of a range of a file that does its own read-ahead
 * instead of the kernel's: @depth reads of @chunk bytes in flight, at
 * increasing offsets, their chunks handed out in file order, each
 * buffer read into again once its chunk is given back.
 */
struct pw_file_stream {
	struct pw__fs_stream *m;
	struct pw_sleep timer;
	int fd;
	int32_t err;	/* sticky error, or 0 */
	uint32_t chunk; /* bytes per read */
	uint32_t depth; /* reads in flight at most */
	uint32_t head;	/* slot of the next chunk to hand out */
	uint32_t busy;	/* slots in flight or filled, from head on */
	bool lent;	/* the slot before head is lent out */
	bool eof;	/* a short read was seen: no more reads */
	uint64_t next;	/* offset of the next read to submit */
	uint64_t end;	/* end of the range */
};

/**
 * pw_file_stream_init - a stream over @len bytes of @fd from @off
 * (PW_FILE_TO_EOF: to the end of the file), @depth reads of @chunk bytes
 * in flight (@chunk a multiple of PW_FILE_ALIGN, 4 KiB..64 MiB; @depth
 * 1..PW_FILE_STREAM_MAX; @off a multiple of PW_FILE_ALIGN with
 * PW_FILE_STREAM_DIRECT). Allocates the buffers (aligned, from the
 * calling thread's heap). The first poll starts the reads.
 * Return: 0; -EINVAL for bad arguments; -EBUSY when @st still has reads
 * (pw_file_stream_cancel() it first); -ENOMEM; pw_file_direct()'s
 * errors with PW_FILE_STREAM_DIRECT (nothing allocated then).
 * Context: any thread.
 */
PW_API int pw_file_stream_init(struct pw_file_stream *st, int fd, uint64_t off,
			       uint64_t len, uint32_t chunk, uint32_t depth,
			       unsigned flags);

/**
 * pw_file_stream_poll - the next chunk of the range, in file order.
 *
 * Gives back the chunk lent by the previous poll (its buffer is read
 * into again) and keeps @depth reads in flight.
 * Return: PW_READY with *@res > 0 bytes in *@out (lent until the next
 * poll or cancel); *@res = 0 at the end of the range or of the file
 * (from then on); -errno of a read (from then on); -ETIMEDOUT when
 * @deadline passed first (the reads stay in flight: poll again);
 * -EINVAL for bad arguments or a stream not initialised. PW_PENDING
 * otherwise.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_file_stream_poll(struct pw_cx *cx,
					struct pw_file_stream *st,
					pw_time_t deadline,
					struct pw_file_chunk *out,
					int32_t *res);

/**
 * pw_file_stream_cancel - end the stream: cancel its reads in flight and
 * free its buffers, now or, for the reads in flight, at their final
 * completions (the kernel never writes into freed memory). Call it once
 * done with a stream, after its end as well; safe from a drop hook;
 * harmless on a stream already cancelled. The descriptor stays open.
 * Context: the shard that polled @st (any thread if it never was).
 */
PW_API void pw_file_stream_cancel(struct pw_file_stream *st);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_FILE_H */
