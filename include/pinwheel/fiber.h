/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/fiber.h - stackful fibers: plain C functions run as tasks,
 * with blocking-style calls that suspend only the fiber.
 *
 * A fiber is a task whose poll function switches onto the fiber's own
 * stack and runs it until a blocking-style call (pw_fiber_sleep(),
 * pw_fiber_recv(), pw_fiber_await() of any poll function, ...) finds the
 * leaf future it polls PW_PENDING: the fiber then switches back and the
 * task's poll returns PW_PENDING, its waker registered by that leaf. The
 * next poll of the task resumes the fiber inside the call, which polls
 * the leaf again. Every call here is a thin wrapper over the poll API;
 * fibers, poll functions and the straight-line macros interoperate (a
 * fiber joins a poll task, a poll task joins a fiber).
 *
 * Errors: calls return -errno as the rest of the library. Called from a
 * thread that is not running a fiber, every blocking-style call gives
 * -EPERM. Two errors belong to the fiber rather than to the call:
 *
 *   - -ETIMEDOUT once the fiber's deadline (pw_fiber_set_deadline()) has
 *     passed: every later blocking call fails with it at once, until the
 *     deadline is moved or cleared;
 *   - -ECANCELED once the fiber's task is aborted (pw_join_abort()) or
 *     the runtime stops: the call the fiber is blocked in cancels its
 *     leaf and returns it, and every later blocking call returns it at
 *     once without suspending, so the fiber's cleanup code runs to the
 *     end of its function.
 *
 * Memory: a fiber's stack (64 KiB by default, with a guard page; an
 * overflow ends the process naming the fiber) comes from a per-shard
 * pool and goes back to it once the fiber has returned and no kernel
 * operation, timer or blocking job still points into the task. Leaves a
 * fiber declares (struct pw_recv, pw_send, pw_accept) may leave scope
 * only when idle: declare them in the fiber function's own frame.
 *
 * Threads: a fiber runs on its task's shard; in stealing mode it may
 * resume on another worker after any blocking call: it must not keep a
 * thread-local's address, pw_shard_id() or a lock across one.
 * See docs/fiber.md.
 */
#ifndef PINWHEEL_FIBER_H
#define PINWHEEL_FIBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "export.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pw_runtime;
struct pw_channel;
struct pw_accept;
struct pw_recv;
struct pw_send;
struct pw_sendv;
struct pw_reader;
struct iovec;
struct pw_net_addr;
struct pw_udp_recv;
struct pw_udp_send;
struct pw_udp_batch;
struct pw_udp_out;
struct pw_udp_dgram;

/* The stack a fiber gets when its options do not say. */
#ifndef PW_FIBER_STACK_DEFAULT
#define PW_FIBER_STACK_DEFAULT (64 * 1024)
#endif

/* The largest stack a fiber may ask for. */
#define PW_FIBER_STACK_MAX (64u * 1024 * 1024)

/* A fiber's body: its return value is the task's result. */
typedef int64_t (*pw_fiber_fn)(void *arg);

/* Options of one fiber; a NULL pointer or zero fields take the defaults. */
struct pw_fiber_opts {
	size_t stack_size; /* usable bytes, rounded up to pages; 0: 64 KiB */
	const char *name;  /* named by the overflow report; NULL: "fiber" */
};

/**
 * pw_fiber_spawn - run @fn(@arg) as a fiber, a task of the calling shard.
 * @join: receives the join handle (pw_join_poll(), pw_fiber_join()), or
 *        NULL to detach.
 * @opts: stack size and name, or NULL for the defaults.
 *
 * The task is queued like pw_spawn()'s; its stack is taken from the
 * shard's pool at its first poll (a failure then finishes the task with
 * -ENOMEM). A fiber aborted before its first poll never runs.
 * Return: 0; -EINVAL for a NULL @fn or a stack size above
 * PW_FIBER_STACK_MAX; and pw_spawn()'s errors (-EPERM off a shard,
 * -ENOMEM, -ESHUTDOWN).
 * Context: a shard thread (a poll function or a fiber).
 */
PW_API int pw_fiber_spawn(struct pw_join *join, pw_fiber_fn fn, void *arg,
			  const struct pw_fiber_opts *opts);

/* pw_fiber_spawn() with default options and the function's own name. */
#define PW_FIBER_SPAWN(join, fn, arg)       \
	pw_fiber_spawn((join), (fn), (arg), \
		       &(const struct pw_fiber_opts){ .name = #fn })

/**
 * pw_fiber_spawn_on - run @fn(@arg) as a detached fiber on @shard of @rt
 * (PW_SHARD_ANY: as pw_runtime_spawn() chooses).
 * Return: 0; -EINVAL for a bad argument; pw_runtime_spawn()'s errors.
 * Context: any thread.
 */
PW_API int pw_fiber_spawn_on(struct pw_runtime *rt, unsigned shard,
			     pw_fiber_fn fn, void *arg,
			     const struct pw_fiber_opts *opts);

/**
 * pw_fiber_block_on - run @fn(@arg) as a fiber on @rt and wait for it:
 * how a program's main becomes a fiber.
 * @result: receives @fn's return value (-ECANCELED when the fiber was
 *          cancelled, -ENOMEM when it could not start), or NULL.
 * Return: 0; pw_block_on()'s errors (-EINVAL, -EDEADLK on a shard,
 * -ESHUTDOWN, -ENOMEM).
 * Context: any thread that is not a shard of @rt.
 */
PW_API int pw_fiber_block_on(struct pw_runtime *rt, pw_fiber_fn fn, void *arg,
			     int64_t *result);

/**
 * pw_fiber_is_running - true when the caller is a fiber.
 * Context: any thread.
 */
PW_API bool pw_fiber_is_running(void);

/**
 * pw_fiber_cx - the poll context of the calling fiber's task, valid until
 * its next blocking call: for calling a poll function by hand once, or
 * pw_task_id(). NULL outside a fiber (and while it is being cancelled).
 * Context: a fiber.
 */
PW_API struct pw_cx *pw_fiber_cx(void);

/**
 * pw_fiber_await - poll @fn(cx, @state) until it is ready, suspending the
 * fiber while it is pending.
 * @cancel: called with @state if the wait ends before @fn is ready
 *          (cancellation, deadline), so @fn's leaves are cancelled; NULL
 *          when there is nothing to cancel.
 *
 * Return: the result @fn set with pw_ready(); -ETIMEDOUT, -ECANCELED (see
 * the top of this file) and -EPERM from a thread that is not a fiber.
 * Context: a fiber.
 */
PW_API int64_t pw_fiber_await(pw_poll_fn fn, void *state, pw_drop_fn cancel);

/**
 * pw_fiber_yield - let the other ready tasks run, then go on.
 * Return: 0; -ECANCELED; -EPERM.
 * Context: a fiber.
 */
PW_API int pw_fiber_yield(void);

/**
 * pw_fiber_sleep - suspend the fiber for @ns nanoseconds (from the
 * shard's now; rounded up to a tick).
 * Return: 0; -ETIMEDOUT when the fiber's deadline comes first (the call
 * returns at the deadline); -ECANCELED; -EPERM.
 * Context: a fiber.
 */
PW_API int pw_fiber_sleep(uint64_t ns);

/**
 * pw_fiber_sleep_until - suspend the fiber until @deadline (ns since the
 * runtime started). Return: as pw_fiber_sleep().
 * Context: a fiber.
 */
PW_API int pw_fiber_sleep_until(uint64_t deadline);

/**
 * pw_fiber_join - wait for the task behind @j (a fiber or a poll task of
 * the same shard) and consume the handle.
 * Return: the task's result (-ECANCELED when it was aborted, with
 * @j->cancelled set); -EINVAL for an empty handle; -ETIMEDOUT or
 * -ECANCELED when the wait ends first (@j stays valid); -EPERM.
 * Context: a fiber.
 */
PW_API int64_t pw_fiber_join(struct pw_join *j);

/**
 * pw_fiber_set_deadline - every later blocking call of the calling fiber
 * fails with -ETIMEDOUT once @deadline (ns since the runtime started)
 * has passed; PW_TIME_NEVER clears it. One timer per fiber, armed only
 * while the fiber waits. A network call that times out leaves its leaf
 * armed (nothing is lost): the next call may go on with it.
 * Return: 0; -EPERM.
 * Context: a fiber.
 */
PW_API int pw_fiber_set_deadline(uint64_t deadline);

/**
 * pw_fiber_timeout - pw_fiber_set_deadline() @ns from the shard's now.
 * Return: 0; -EPERM.
 * Context: a fiber.
 */
PW_API int pw_fiber_timeout(uint64_t ns);

/**
 * pw_fiber_deadline - the calling fiber's deadline (PW_TIME_NEVER for
 * none, and outside a fiber). Context: a fiber.
 */
PW_API uint64_t pw_fiber_deadline(void);

/**
 * pw_fiber_cancelled - true once the calling fiber is being cancelled.
 * Context: a fiber.
 */
PW_API bool pw_fiber_cancelled(void);

/* ---- channels and the blocking pool (core/fiber_io.c) ------------------ */

/**
 * pw_fiber_channel_send - send @item on @ch, waiting while it is full.
 * Return: 0; pw_channel_send_poll()'s errors (-EPIPE once closed, -EXDEV,
 * -EINVAL); -ETIMEDOUT, -ECANCELED (the item was not sent); -EPERM.
 * Context: a fiber on the channel's shard.
 */
PW_API int pw_fiber_channel_send(struct pw_channel *ch, const void *item);

/**
 * pw_fiber_channel_recv - take the oldest item of @ch into @item,
 * waiting while it is empty.
 * Return: 1 (an item), 0 (closed and drained), pw_channel_recv_poll()'s
 * errors, -ETIMEDOUT, -ECANCELED, -EPERM.
 * Context: a fiber on the channel's shard.
 */
PW_API int pw_fiber_channel_recv(struct pw_channel *ch, void *item);

/**
 * pw_fiber_blocking - run @fn(@arg) on the runtime's blocking pool and
 * wait for its return value.
 * A job that is already running cannot be stopped: after -ETIMEDOUT or
 * -ECANCELED it runs on and its result is dropped (the job's record is
 * part of the fiber's task, which stays alive for it); the fiber's next
 * pw_fiber_blocking() first waits for it.
 * Return: @fn's value; pw_spawn_blocking()'s errors; -ETIMEDOUT;
 * -ECANCELED; -EPERM.
 * Context: a fiber.
 */
PW_API int64_t pw_fiber_blocking(int64_t (*fn)(void *arg), void *arg);

/* ---- sockets (core/fiber_io.c, over pinwheel/net.h) ---------------------- */

/**
 * pw_fiber_accept - the next connection of @a (pw_accept_init()), which
 * stays armed between calls; pw_accept_cancel() it when done.
 * Return: the new socket (owned by the caller); pw_accept_poll()'s
 * errors; -ETIMEDOUT (the accept stays armed); -ECANCELED (@a is
 * cancelled); -EPERM.
 * Context: a fiber.
 */
PW_API int pw_fiber_accept(struct pw_accept *a);

/**
 * pw_fiber_connect - open a stream socket connected to @addr.
 * Return: the socket (owned by the caller); pw_connect_poll()'s errors;
 * -ETIMEDOUT; -ECANCELED; -EPERM. Nothing is left open or in flight
 * when it fails (unless cancelled: see docs/fiber.md).
 * Context: a fiber.
 */
PW_API int pw_fiber_connect(const struct pw_net_addr *addr);

/**
 * pw_fiber_recv - receive up to @len bytes into @buf through @r
 * (pw_recv_init() on the socket; it stays armed between calls, so
 * pw_recv_cancel() it when done). Bytes of a received chunk beyond @len
 * stay in @r for the next call.
 * Return: the bytes copied (> 0); 0 at the end of the stream;
 * pw_recv_poll()'s errors; -ETIMEDOUT (nothing lost); -ECANCELED (@r is
 * cancelled); -ENOMEM when the rest of a chunk cannot be kept (it is
 * lost); -EINVAL for a NULL or zero-length buffer; -EPERM.
 * Context: a fiber.
 */
PW_API int64_t pw_fiber_recv(struct pw_recv *r, void *buf, size_t len);

/**
 * pw_fiber_send - send all @len bytes at @buf through @s (pw_send_init()
 * on the socket).
 * When it returns, @buf is the caller's again (no request is in flight)
 * except after -ECANCELED.
 * Return: @len; pw_send_poll()'s errors (bytes may have been partly sent:
 * close the socket); -ETIMEDOUT; -ECANCELED; -EPERM.
 * Context: a fiber.
 */
PW_API int64_t pw_fiber_send(struct pw_send *s, const void *buf, size_t len);

/**
 * pw_fiber_read_until - read a line through @rd (pinwheel/reader.h:
 * pw_reader_init() on the socket): the bytes up to and including the
 * first @delim (0..255), at most @cap. The reader's receive stays armed
 * between calls: pw_reader_cancel() it when done.
 * Return: the line's length with its delimiter (the last line of a
 * stream may lack it); 0 at the end of the stream; -EMSGSIZE for a line
 * longer than @cap (its first @cap bytes are in @out, the rest comes
 * next); pw_read_until_poll()'s errors; -ETIMEDOUT (the fiber's
 * deadline; the bytes read so far stay in @out: call again with the
 * same @out to go on);
 * -ECANCELED (@rd is cancelled); -EINVAL; -EPERM.
 * Context: a fiber.
 */
PW_API int64_t pw_fiber_read_until(struct pw_reader *rd, int delim, void *out,
				   size_t cap);

/**
 * pw_fiber_read_exact - read exactly @n bytes through @rd.
 * Return: @n; at the end of the stream the bytes that came before it
 * (0 when none); errors as pw_fiber_read_until().
 * Context: a fiber.
 */
PW_API int64_t pw_fiber_read_exact(struct pw_reader *rd, void *out, size_t n);

/**
 * pw_fiber_sendv - send every byte of the @iovcnt buffers of @iov, in
 * order, through @v (pw_sendv_init() on the socket). When it returns the
 * buffers are the caller's again, except after -ECANCELED.
 * Return: the total bytes; pw_sendv_poll()'s errors (bytes may have been
 * partly sent: close the socket); -ETIMEDOUT; -ECANCELED; -EPERM.
 * Context: a fiber.
 */
PW_API int64_t pw_fiber_sendv(struct pw_sendv *v, const struct iovec *iov,
			      int iovcnt);

/**
 * pw_fiber_close - cancel what is in flight on @fd and close it.
 * Runs to the end even past the deadline; a cancelled fiber closes @fd
 * with close(2) at once. The caller's leaves on @fd (pw_recv, pw_accept)
 * must still be cancelled.
 * Return: 0 or -errno of the close; -EPERM.
 * Context: a fiber.
 */
PW_API int pw_fiber_close(int fd);

/* ---- UDP (core/fiber_io.c, over pinwheel/net.h) -------------------------- */

/**
 * pw_fiber_udp_recv - the next datagram through @r (pw_udp_recv_init();
 * it stays armed between calls, so pw_udp_recv_cancel() it when done),
 * lent in *@d: pw_udp_dgram_release() it.
 * Return: @d->len (>= 0; @d->flags tells a truncated one);
 * pw_udp_recv_poll()'s errors; -ETIMEDOUT (nothing lost); -ECANCELED
 * (@r is cancelled); -EINVAL; -EPERM.
 * Context: a fiber.
 */
PW_API int64_t pw_fiber_udp_recv(struct pw_udp_recv *r, struct pw_udp_dgram *d);

/**
 * pw_fiber_udp_recv_from - the next datagram through @r, copied: at most
 * @len bytes into @buf, its sender into *@from and PW_UDP_TRUNC into
 * *@flags when it did not fit (either may be NULL).
 * Return: the datagram's real length (more than @len when cut); errors
 * as pw_fiber_udp_recv().
 * Context: a fiber.
 */
PW_API int64_t pw_fiber_udp_recv_from(struct pw_udp_recv *r, void *buf,
				      size_t len, struct pw_net_addr *from,
				      uint32_t *flags);

/**
 * pw_fiber_udp_send_to - send @len bytes at @buf as one datagram through
 * @s (pw_udp_send_init()) to @to (NULL on a connected socket). When it
 * returns @buf is the caller's again, except after -ECANCELED.
 * Return: @len; pw_udp_send_poll()'s errors; -ETIMEDOUT; -ECANCELED;
 * -EPERM.
 * Context: a fiber.
 */
PW_API int64_t pw_fiber_udp_send_to(struct pw_udp_send *s, const void *buf,
				    size_t len, const struct pw_net_addr *to);

/**
 * pw_fiber_udp_sendv - send one datagram made of the @iovcnt buffers of
 * @iov through @s to @to (NULL when connected).
 * Return: its length; errors as pw_fiber_udp_send_to().
 * Context: a fiber.
 */
PW_API int64_t pw_fiber_udp_sendv(struct pw_udp_send *s,
				  const struct iovec *iov, int iovcnt,
				  const struct pw_net_addr *to);

/**
 * pw_fiber_udp_send_segs - send @len bytes at @buf as datagrams of @seg
 * bytes (UDP_SEGMENT where the kernel has it: pw_udp_send_segs_poll()).
 * Return: @len; errors as pw_fiber_udp_send_to().
 * Context: a fiber.
 */
PW_API int64_t pw_fiber_udp_send_segs(struct pw_udp_send *s, const void *buf,
				      size_t len, uint32_t seg,
				      const struct pw_net_addr *to);

/**
 * pw_fiber_udp_batch - send the @n datagrams of @msgs through @b
 * (pw_udp_batch_init()), all in one submission.
 * Return: the count sent (@msgs[i].res each); pw_udp_batch_poll()'s
 * errors; -ETIMEDOUT; -ECANCELED; -EPERM.
 * Context: a fiber.
 */
PW_API int64_t pw_fiber_udp_batch(struct pw_udp_batch *b,
				  struct pw_udp_out *msgs, unsigned n);

/* ---- files (pinwheel/file.h) ------------------------------------------ */

struct iovec;
struct statx;
struct pw_file_fixed;
struct pw_file_stream;
struct pw_file_chunk;

/*
 * The file calls of pinwheel/file.h, blocking-style. Each takes the
 * fiber's deadline: past it the call is cancelled and returns -ETIMEDOUT
 * (a call that finished anyway returns its result). When any of them
 * returns, -ECANCELED and -ETIMEDOUT included, the kernel is done with
 * the caller's buffer, iovecs, path and statx record: they may live on
 * the fiber's stack. Errors as for the poll forms, plus -ETIMEDOUT,
 * -ECANCELED and -EPERM (not in a fiber). Context: a fiber.
 */

/** pw_fiber_file_open - openat(@dfd, @path, @flags | O_CLOEXEC, @mode).
 * Return: the new descriptor or -errno. */
PW_API int pw_fiber_file_open(int dfd, const char *path, int flags,
			      mode_t mode);

/** pw_fiber_file_openat2 - openat2() with RESOLVE_* flags
 * (pw_file_openat2_init()). Return: the new descriptor or -errno. */
PW_API int pw_fiber_file_openat2(int dfd, const char *path, int flags,
				 mode_t mode, uint64_t resolve);

/** pw_fiber_file_read - read up to @len bytes at @off (PW_FILE_POS: the
 * file's position). Return: the bytes read, short only at the end of
 * the file (0 at or past it), or -errno. */
PW_API int64_t pw_fiber_file_read(int fd, void *buf, size_t len, uint64_t off);

/** pw_fiber_file_readv - pw_fiber_file_read() into iovecs, in order. */
PW_API int64_t pw_fiber_file_readv(int fd, const struct iovec *iov, int iovcnt,
				   uint64_t off);

/** pw_fiber_file_read_fixed - read up to @len bytes at @off into the
 * registered buffer @fx at byte @at (on @fx's shard). */
PW_API int64_t pw_fiber_file_read_fixed(int fd, const struct pw_file_fixed *fx,
					size_t at, size_t len, uint64_t off);

/** pw_fiber_file_write - write @len bytes at @off. Return: the bytes
 * written (short only when the device is full) or -errno. */
PW_API int64_t pw_fiber_file_write(int fd, const void *buf, size_t len,
				   uint64_t off);

/** pw_fiber_file_writev - pw_fiber_file_write() from iovecs, in order. */
PW_API int64_t pw_fiber_file_writev(int fd, const struct iovec *iov, int iovcnt,
				    uint64_t off);

/** pw_fiber_file_fsync - fsync(@fd), or fdatasync(@fd) with @datasync.
 * Return: 0 or -errno. */
PW_API int pw_fiber_file_fsync(int fd, bool datasync);

/** pw_fiber_file_statx - statx(@dfd, @path, @flags, @mask, @out).
 * Return: 0 with @out filled, or -errno. */
PW_API int pw_fiber_file_statx(int dfd, const char *path, int flags,
			       unsigned mask, struct statx *out);

/** pw_fiber_file_close - close(@fd) through the ring. Return: 0 or
 * -errno. */
PW_API int pw_fiber_file_close(int fd);

/** pw_fiber_file_rename - renameat2(@olddfd, @oldpath, @newdfd,
 * @newpath, @flags). Return: 0 or -errno. */
PW_API int pw_fiber_file_rename(int olddfd, const char *oldpath, int newdfd,
				const char *newpath, unsigned flags);

/** pw_fiber_file_unlink - unlinkat(@dfd, @path, @flags); AT_REMOVEDIR
 * for an empty directory. Return: 0 or -errno. */
PW_API int pw_fiber_file_unlink(int dfd, const char *path, int flags);

/**
 * pw_fiber_file_stream_read - the next chunk of @st
 * (pw_file_stream_init()), lent in *@out until the next call or
 * pw_file_stream_cancel(). A cancelled fiber's call cancels the stream
 * (it frees its buffers itself once the kernel is done); call
 * pw_file_stream_cancel() at the end all the same.
 * Return: the chunk's bytes; 0 at the end of the range or file; -errno
 * of a read; -ETIMEDOUT (the reads stay in flight: call again);
 * -ECANCELED; -EINVAL; -EPERM.
 */
PW_API int64_t pw_fiber_file_stream_read(struct pw_file_stream *st,
					 struct pw_file_chunk *out);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_FIBER_H */
