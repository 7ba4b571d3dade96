/* SPDX-License-Identifier: MIT */
/*
 * access_log.h - one line per closed connection, written off the data
 * path: the access log of `pinwheel proxy --access-log FILE`.
 *
 * Each shard formats its records into its own bounded buffer, under a
 * lock of that buffer alone (taken by the shard for the copy of one
 * line and by the writer for a pointer swap: no lock is shared between
 * shards). A writer thread swaps each buffer for an empty one at least
 * every 100 ms and writes the full one with write(2). When the writer
 * falls behind (a slow disk, a pipe nobody reads) a full buffer drops its
 * records and counts them; the writer then writes "N records dropped" in
 * the file once it catches up. A write error is reported on stderr once
 * and counted. Closing the log writes every record added before it.
 * docs/proxy.md documents the line, field by field.
 */
#ifndef PW_APPS_ACCESS_LOG_H
#define PW_APPS_ACCESS_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "pinwheel/net.h"

/* Default bytes of each shard's buffer (records beyond it are dropped). */
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
	uint64_t dropped;      /* records lost: a full buffer, a write
				  error, or the close's deadline */
	uint64_t write_errors; /* write(2) or reopen failures */
	uint64_t reopens;      /* files reopened (SIGHUP) */
};

struct pw_access_log;

/**
 * pw_access_log_open - open @path for appending (created 0644; "-" is
 * standard output) with @nslots buffers of @buf_size bytes (0: the
 * default), and start the writer thread.
 * Return: 0 with *@lp set; -EINVAL for NULL or @nslots 0; the -errno of
 * open(2), malloc or pthread_create (nothing is left open).
 * Context: any thread that is not a shard.
 */
int pw_access_log_open(struct pw_access_log **lp, const char *path,
		       unsigned nslots, size_t buf_size);

/**
 * pw_access_log_add - format @r and append it to buffer @slot (taken
 * modulo the slot count); dropped and counted when the buffer is full.
 * Never blocks on I/O.
 * Context: any thread; a shard passes its own id, so that shards never
 * share a buffer.
 */
void pw_access_log_add(struct pw_access_log *l, unsigned slot,
		       const struct pw_access_rec *r);

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
 * pw_access_log_flush - wake the writer and wait up to @timeout_ns until
 * every record added before the call is written (or dropped).
 * Return: 0; -ETIMEDOUT.
 * Context: any thread that is not a shard.
 */
int pw_access_log_flush(struct pw_access_log *l, uint64_t timeout_ns);

/**
 * pw_access_log_close - write what the buffers hold (waiting up to 2 s
 * for a writer that cannot write: the rest is counted as dropped), stop
 * the writer, close the file and free @l, after copying its final
 * counters to @final when not NULL. NULL @l is a no-op.
 * Context: any thread that is not a shard, once no thread adds records.
 */
void pw_access_log_close(struct pw_access_log *l,
			 struct pw_access_log_stats *final);

/**
 * pw_access_log_sighup_init - make SIGHUP reopen every access log's file
 * (log rotation): installs a handler that only notes the signal, and
 * blocks SIGHUP in the calling thread, so that the threads started
 * later inherit the block and only the writer threads, which unblock it,
 * take it.
 * Return: 0; the -errno of sigaction or pthread_sigmask.
 * Context: the main thread, before any other thread starts.
 */
int pw_access_log_sighup_init(void);

#endif /* PW_APPS_ACCESS_LOG_H */
