/* SPDX-License-Identifier: MIT */
/*
 * access_log.h - one line per closed connection, written off the data
 * path through the file API (pinwheel/file.h): the access log of
 * `pinwheel proxy --access-log FILE`.
 *
 * Each shard formats its records into its own buffer, with no lock: the
 * buffer is touched by that shard's thread alone. A flusher task on each
 * shard writes the buffer with one io_uring write (O_APPEND: whole
 * buffers of whole lines, so the lines of two shards never mix) at
 * least every 100 ms and whenever it fills; while that write is in
 * flight the shard fills its second buffer, and when both are full the
 * records are dropped and counted, and "N records dropped" is written
 * once the flusher catches up. A short write goes on from where it
 * stopped; a write error is reported on stderr once and counted, its
 * lines counted as dropped. SIGHUP reopens the file (a task on shard 0
 * reads it from a signalfd), each flusher moves to the new file at its
 * next write, and the old one is closed once no write on it is in
 * flight. docs/proxy.md documents the line, field by field.
 *
 * The life of a log follows its runtime's: open on a running runtime,
 * add records from its shards, pw_access_log_stop() before the runtime
 * stops (every record written, the flushers ended), then
 * pw_access_log_close() once it has stopped (the records the stop
 * itself gave, a connection cut at the drain deadline, are written then).
 */
#ifndef PW_APPS_ACCESS_LOG_H
#define PW_APPS_ACCESS_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "pinwheel/net.h"
#include "pinwheel/runtime.h"

/* Default bytes of each of a shard's two buffers. */
#define PW_ACCESS_LOG_BUF (256 * 1024)
/* Longest line pw_access_log_format() writes, with its newline. */
#define PW_ACCESS_LOG_LINE 512

/* One closed connection. */
struct pw_access_rec {
	uint64_t end_ns;		    /* CLOCK_REALTIME at its end */
	const struct pw_net_addr *client;   /* after --accept-proxy */
	const struct pw_net_addr *listener; /* the address it came to */
	const struct pw_net_addr *upstream; /* NULL or len 0: none */
	int64_t connect_ns;		    /* accept to upstream connected;
						 -1: not connected */
	uint64_t duration_ns;		    /* accept to close */
	uint64_t bytes_up, bytes_down;	    /* client to upstream, back */
	const char *code;		    /* the two-letter end code */
};

/* The log's counters. */
struct pw_access_log_stats {
	uint64_t records;      /* lines added to the buffers */
	uint64_t dropped;      /* records lost: both buffers full, a write
				  error, the stop's deadline, or added
				  off the runtime's shards */
	uint64_t write_errors; /* failed writes and reopens */
	uint64_t reopens;      /* files reopened (SIGHUP) */
};

struct pw_access_log;

/**
 * pw_access_log_open - open @path for appending (created 0644, through
 * the file API on @rt; "-" is standard output) with two buffers of
 * @buf_size bytes (0: the default; at least PW_ACCESS_LOG_LINE) per
 * shard of @rt, and start a flusher task on each shard, plus the SIGHUP
 * reader on shard 0 when pw_access_log_sighup_init() was called and
 * @path is a file.
 * Return: 0 with *@lp set; -EINVAL for NULL arguments; the -errno of the
 * open (-ENXIO: a FIFO nobody reads), of an allocation or of a spawn
 * (nothing is left open).
 * Context: any thread that is not a shard of @rt, while @rt runs.
 */
int pw_access_log_open(struct pw_access_log **lp, struct pw_runtime *rt,
		       const char *path, size_t buf_size);

/**
 * pw_access_log_add - format @r and append it to the buffer of the
 * calling shard; dropped and counted when both its buffers are full (or
 * off the runtime's shards). Never blocks, takes no lock.
 * Context: a shard of the log's runtime (a task, or a drop hook).
 */
void pw_access_log_add(struct pw_access_log *l, const struct pw_access_rec *r);

/**
 * pw_access_log_format - write @r as one log line, newline included.
 * Return: its length (below PW_ACCESS_LOG_LINE when @size is at least
 * that); what snprintf() returns otherwise.
 * Context: any thread.
 */
int pw_access_log_format(char *buf, size_t size, const struct pw_access_rec *r);

/**
 * pw_access_log_stats - read @l's counters.
 * Context: any thread.
 */
void pw_access_log_stats(const struct pw_access_log *l,
			 struct pw_access_log_stats *out);

/**
 * pw_access_log_flush - have every shard write what it added before the
 * call, and wait up to @timeout_ns until it is written (or dropped).
 * Return: 0; -ETIMEDOUT; -ESHUTDOWN after pw_access_log_stop() or when
 * the runtime stops; -EINVAL for NULL.
 * Context: any thread that is not a shard, while the runtime runs.
 */
int pw_access_log_flush(struct pw_access_log *l, uint64_t timeout_ns);

/**
 * pw_access_log_stop - write every record added so far (a write that
 * cannot finish gets 2 s, then its lines count as dropped), wait for
 * the final completions and end the log's tasks. Records added later
 * stay in the buffers for pw_access_log_close(). Harmless twice; NULL
 * is a no-op.
 * Context: any thread that is not a shard, before the runtime stops.
 */
void pw_access_log_stop(struct pw_access_log *l);

/**
 * pw_access_log_close - write what the buffers still hold (records of
 * connections the runtime's stop cut; with write(2), a writer that
 * cannot write gets 2 s), close the file and free @l, after copying its
 * final counters to @final when not NULL. Without a
 * pw_access_log_stop() before, a write the runtime's stop cancelled
 * counts its lines as dropped. NULL @l is a no-op.
 * Context: any thread that is not a shard, once the log's runtime is
 * destroyed.
 */
void pw_access_log_close(struct pw_access_log *l,
			 struct pw_access_log_stats *final);

/**
 * pw_access_log_sighup_init - make SIGHUP reopen the access log's file
 * (log rotation): blocks SIGHUP in the calling thread, so that the
 * threads started later (the shards) inherit the block, and each log
 * opened afterwards reads it from a signalfd on shard 0 of its runtime
 * (one log at a time: a signal goes to one reader).
 * Return: 0; the -errno of pthread_sigmask.
 * Context: the main thread, before any other thread starts.
 */
int pw_access_log_sighup_init(void);

#endif /* PW_APPS_ACCESS_LOG_H */
