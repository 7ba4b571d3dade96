/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/reader.h - buffered reading of a stream socket: a line (up to
 * a delimiter) or an exact number of bytes, over a pw_recv it owns.
 * Tokio's AsyncBufReadExt::read_until and AsyncReadExt::read_exact.
 *
 * The reader copies bytes from the receive's chunks into the caller's
 * memory and holds no ring buffer between reads: a chunk it has not
 * used up when a read completes goes back with pw_recv_unread() (its
 * rest moves into the receive's own memory, once; the next reads take
 * it from there without another copy). So a connection that reads lines
 * holds no more of the shard's ring than PW_NET_RECV_SHARE buffers,
 * queued in its receive. A task about to wait on something else (its
 * send) calls pw_reader_park(), as it would pw_recv_park().
 *
 * A read that returns PW_PENDING, or -ETIMEDOUT, keeps what it has put
 * in the caller's memory: poll it again with the same memory to go on.
 */
#ifndef PINWHEEL_READER_H
#define PINWHEEL_READER_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "net.h"
#include "task.h"
#include "time.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A buffered reader (the fields are the runtime's). */
struct pw_reader {
	struct pw_recv rx;
	struct pw_net_buf buf; /* the chunk being read, when have */
	uint32_t off;	       /* its bytes already taken */
	bool have;
	size_t got; /* bytes of the read in progress in the caller's memory */
};

/** pw_reader_init - an idle reader of @fd. Context: any thread. */
PW_API void pw_reader_init(struct pw_reader *rd, int fd);

/**
 * pw_read_until_poll - read a line: bytes up to and including the first
 * @delim, into @out (at most @cap bytes).
 * Return: PW_READY with *@res
 *   - the line's length, @delim included as its last byte;
 *   - at end of stream, the bytes before it (a last line without @delim,
 *     > 0), then 0 on every later read;
 *   - -EMSGSIZE when @cap bytes came without @delim: @out holds them,
 *     the line's first @cap bytes; nothing is lost, the next read goes
 *     on with the rest of the line (whose end it then returns);
 *   - -ETIMEDOUT when @deadline passed (the bytes read so far stay in
 *     @out: call again with the same @out to go on);
 *   - another -errno for a socket error; -EINVAL for bad arguments
 *     (@cap 0 among them).
 * PW_PENDING otherwise.
 * Context: a task on a shard; the same task for one reader.
 */
PW_API enum pw_poll pw_read_until_poll(struct pw_cx *cx, struct pw_reader *rd,
				       int delim, void *out, size_t cap,
				       pw_time_t deadline, int64_t *res);

/**
 * pw_read_exact_poll - read exactly @n bytes into @out.
 * Return: PW_READY with *@res @n; at end of stream the bytes that came
 * before it (fewer than @n, 0 when none); -ETIMEDOUT when @deadline
 * passed (the bytes so far stay in @out: call again to go on); another
 * -errno for a socket error; -EINVAL for bad arguments. PW_PENDING
 * otherwise.
 * Context: a task on a shard; the same task for one reader.
 */
PW_API enum pw_poll pw_read_exact_poll(struct pw_cx *cx, struct pw_reader *rd,
				       void *out, size_t n, pw_time_t deadline,
				       int64_t *res);

/**
 * pw_reader_park - the task waits on something else: give back the chunk
 * held (none after a completed read) and park the receive
 * (pw_recv_park()). Harmless when idle.
 * Context: the shard that polled @rd.
 */
PW_API void pw_reader_park(struct pw_reader *rd);

/**
 * pw_reader_cancel - stop receiving and give back every buffer (a drop
 * hook's call; harmless when idle). The socket stays open: closing it is
 * the caller's.
 * Context: the shard that polled @rd.
 */
PW_API void pw_reader_cancel(struct pw_reader *rd);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_READER_H */
