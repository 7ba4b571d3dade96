/* SPDX-License-Identifier: MIT */
/*
 * http_static.h - the files of `pinwheel http --root DIR` (internal to
 * the pinwheel command): the request target turned into a path that
 * cannot leave the root, the file opened beneath the root's descriptor,
 * the response's head, and its body sent through the ring.
 *
 * apps/http.c calls it at three points of a connection's life: a whole
 * request (pw_http_static_begin(), then pw_http_static_poll() as the
 * request's job, which writes the response into the connection's output
 * buffer), the body after that buffer is sent
 * (pw_http_static_body_poll()), and the end (pw_http_static_end()).
 *
 * Paths. The target's query is dropped, it is percent-decoded once, and
 * refused with 403 when it holds a ".." or "." segment, an empty segment
 * ("//"), a backslash, an encoded slash (%2F), a NUL or another control
 * byte; a target that is not a path ("*", "http://...") or a bad
 * escape is a 400. The kernel enforces the root again: the path is
 * opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) relative
 * to the root's descriptor, so a symlink is refused (403) even when it
 * points inside the root. Only regular files are served (statx); a
 * directory gets its index.html, else 404.
 *
 * Bodies. A body that fits in the output buffer behind its head is read
 * into it (one send for head and body, pipelined responses batched);
 * a larger one is sent after the head: up to SPLICE_MIN by reads into
 * the output buffer, above by splice through a pipe of the shard's pool
 * (file to pipe, pipe to socket: no copy through user space), or by
 * reads when the pool is spent. A file that gets shorter while sent
 * cuts the connection (its Content-Length cannot be honoured); an
 * unlinked file is sent whole (the open descriptor keeps it).
 *
 * Threads: a server's record is read by every shard; each shard's part
 * (pools, counters) is written only by that shard's thread.
 */
#ifndef PW_APPS_HTTP_STATIC_H
#define PW_APPS_HTTP_STATIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pinwheel/runtime.h"
#include "apps/http_parse.h"

/* The statuses other than 200 a file server answers, counted apiece. */
#define PW_HTTP_STATIC_STATUSES              \
	{                                    \
		304, 400, 403, 404, 405, 500 \
	}
#define PW_HTTP_STATIC_NSTATUS 6

/* Counters of one shard. */
struct pw_http_static_stats {
	uint64_t files;	       /* 200 answers with a file (GET and HEAD) */
	uint64_t file_bytes;   /* body bytes of files sent */
	uint64_t not_modified; /* 304 answers (If-Modified-Since) */
	uint64_t spliced;      /* bodies sent by splice */
	uint64_t copied;       /* bodies sent by reads after their head */
	uint64_t truncated;    /* sends cut: the file got shorter */
	uint64_t status[PW_HTTP_STATIC_NSTATUS];
};

struct pw_http_static;
struct pw_http_file;

/**
 * pw_http_static_create - a file server for @root (a directory), for
 * runtimes of up to @nshards shards.
 * Return: 0 with *@sp set; -EINVAL for NULL or 0 shards; -ENOMEM; the
 * error of opening @root (-ENOENT, -ENOTDIR, -EACCES...).
 * Context: any thread.
 */
int pw_http_static_create(struct pw_http_static **sp, const char *root,
			  unsigned nshards);

/**
 * pw_http_static_destroy - close the root and the pools' pipes, free
 * @st. Call it when no task uses it any more (after the runtime).
 * NULL is a no-op. Context: any thread.
 */
void pw_http_static_destroy(struct pw_http_static *st);

/**
 * pw_http_static_path - the path to open for request target @target
 * (NUL-terminated) into @out (@cap bytes): relative, without a leading
 * slash, "." for the root, a trailing slash kept.
 * Return: its length; -400 for a target that is not a path or holds a
 * bad escape; -403 for a refused one (see above); -414 when @out is too
 * small. Context: any thread.
 */
int pw_http_static_path(const char *target, char *out, size_t cap);

/**
 * pw_http_static_ims - the If-Modified-Since date of the request head
 * @head (@len bytes, as received), in seconds since the epoch; -1 when
 * it has none or the date is not an IMF-fixdate. Context: any thread.
 */
int64_t pw_http_static_ims(const char *head, size_t len);

/**
 * pw_http_static_begin - the answer to request @req of a connection on
 * socket @sock: a record from the calling shard's pool. @head and
 * @head_len are the request's head as received, or NULL when it came in
 * several reads (If-Modified-Since is then not looked at). @keep tells
 * whether the connection stays open after it; @file_ns bounds each file
 * call, @send_ns (0: none) each send of the body.
 * Return: the record; NULL when memory is short.
 * Context: a shard's thread.
 */
struct pw_http_file *pw_http_static_begin(struct pw_http_static *st, int sock,
					  const struct pw_http_req *req,
					  const char *head, size_t head_len,
					  bool keep, uint64_t file_ns,
					  uint64_t send_ns);

/**
 * pw_http_static_poll - open and describe the file and append the
 * response to @out (*@len bytes used of @cap, at least
 * PW_HTTP_CANNED_MAX free): its head, and its body when it fits. @date
 * is the Date to send. The kernel may write into @out while PW_PENDING:
 * keep it until PW_READY (or until pw_http_static_end()).
 * Return: PW_READY with the status answered in *@status (0: nothing
 * appended, the file shrank as it was read: the connection must close);
 * PW_PENDING while a file call is in flight.
 * Context: the task that owns @f.
 */
enum pw_poll pw_http_static_poll(struct pw_cx *cx, struct pw_http_file *f,
				 char *out, uint32_t *len, uint32_t cap,
				 const char *date, int *status);

/** pw_http_static_body_left - whether @f's body is still to be sent
 * after the output buffer (pw_http_static_body_poll()). Context: its
 * task. */
bool pw_http_static_body_left(const struct pw_http_file *f);

/** pw_http_static_closes - whether the connection must close after @f's
 * response (a 400, or the request did not keep it). Context: its task. */
bool pw_http_static_closes(const struct pw_http_file *f);

/**
 * pw_http_static_body_poll - send @f's body on its socket, once its head
 * is sent: by splice, or through @buf (@cap bytes, idle while this runs).
 * Return: PW_READY with *@res 0 when the body went out whole, or -errno:
 * the connection must be cut (a reset): -ETIMEDOUT (a send or a file
 * read timed out), -EPIPE (the file got shorter), a socket's error.
 * PW_PENDING otherwise.
 * Context: the task that owns @f.
 */
enum pw_poll pw_http_static_body_poll(struct pw_cx *cx, struct pw_http_file *f,
				      char *buf, uint32_t cap, int32_t *res);

/**
 * pw_http_static_end - give @f back: with no call in flight (after a
 * PW_READY) at no cost; else (a connection dropped mid-call) the calls
 * are cancelled synchronously first, so that neither the output buffer
 * nor the descriptors are used by the kernel afterwards. NULL is a
 * no-op. Context: the task that owns @f (or its drop hook).
 */
void pw_http_static_end(struct pw_http_file *f);

/**
 * pw_http_static_stats - shard @shard's counters.
 * Return: 0; -EINVAL for NULL; -ENODEV for a shard out of range.
 * Context: any thread.
 */
int pw_http_static_stats(const struct pw_http_static *st, unsigned shard,
			 struct pw_http_static_stats *out);

#endif /* PW_APPS_HTTP_STATIC_H */
