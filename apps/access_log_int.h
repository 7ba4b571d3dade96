/* SPDX-License-Identifier: MIT */
/*
 * access_log_int.h - what apps/access_log.c (the API, the records, the
 * close's last writes) and apps/access_log_task.c (the flushers, the
 * SIGHUP reader, the tasks that ask for a flush or a stop) share: the
 * log, a shard's slot, an opening of the file.
 */
#ifndef PW_APPS_ACCESS_LOG_INT_H
#define PW_APPS_ACCESS_LOG_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pinwheel.h"
#include "pinwheel/list.h"
#include "apps/access_log.h"

/* The flushers' period, and the time a write that cannot finish gets
 * once the log stops. */
#define AL_PERIOD_NS	(100 * 1000000ull)
#define AL_STOP_WAIT_NS (2000 * 1000000ull)
/* Room past each buffer's capacity for one "N records dropped" line. */
#define AL_SAY 96

/*
 * One opening of the file (one per SIGHUP). The flusher of each shard
 * writes to one opening at a time and moves on to the next one once no
 * write of its own is in flight; the log holds the newest. The last of
 * them to let go of an opening closes its descriptor. Openings are freed
 * with the log.
 */
struct al_file {
	int fd;	   /* -1 once closed (by the last holder) */
	bool pipe; /* not a regular file: writes of whole lines of at
		      most PIPE_BUF bytes, which a pipe never splits */
	/* One per shard, plus the log's while it is the newest. acq_rel
	 * fetch_sub in al_file_put(): each holder's writes on fd happen
	 * before the last one's close. */
	_Atomic unsigned refs;
	/* The opening after it. Release store by the SIGHUP reader once
	 * the node is whole; acquire load by the flushers. */
	_Atomic(struct al_file *) next;
	struct al_file *older; /* the list of every opening, newest first
				  (the SIGHUP reader's, then the close's) */
};

/*
 * A shard's buffers. Every plain field is touched only by the thread of
 * that shard: pw_access_log_add() and the tasks fixed to that shard (its
 * flusher, the flush and stop requests), or by the close once the
 * runtime is gone.
 */
struct al_slot {
	char *buf[2];  /* capacity cap + AL_SAY each */
	size_t len[2]; /* bytes in each */
	unsigned cur;  /* the buffer records are appended to */
	bool out_busy; /* buf[!cur] is the flusher's: out_off..
				 out_len still to write */
	size_t out_off, out_len;
	bool out_say;		 /* it ends with a "records dropped" line */
	uint64_t unsaid;	 /* drops not yet written as a line */
	uint64_t added, done;	 /* bytes appended, bytes written or dropped:
				 a flush waits for done >= added */
	uint64_t want;		 /* a flush waits for done to reach it */
	bool stopping;		 /* pw_access_log_stop() asked for the end */
	bool ended;		 /* the flusher ended: nothing is written
				 before the close */
	struct pw_waker flusher; /* wakes the flusher while it runs */
	struct pw_list waiters;	 /* the flush requests waiting (al_kick) */
	struct al_file *file;	 /* the opening the flusher writes to */
	/* Written by this shard's thread alone (a load and a store), read
	 * by any thread: relaxed, they are counts. */
	_Atomic uint64_t records, dropped, wdropped, werrors;
} __attribute__((aligned(64)));

struct pw_access_log {
	char *path; /* NULL: standard output */
	struct pw_runtime *rt;
	size_t cap;
	unsigned nslots;
	struct al_slot *slot;
	struct pw_rjoin **flushers; /* one per shard, until the stop */
	struct pw_rjoin *rotator;   /* the SIGHUP reader, or NULL */
	struct al_file *last;	    /* the newest opening: the SIGHUP
				       reader's, then the close's */
	bool stopped;		    /* pw_access_log_stop() ran */
	/* Shard 0's, for the SIGHUP reader and its stop request. */
	bool rot_stop;
	struct pw_waker rot_waker;
	/* Whether a failure was reported on stderr since the last opening.
	 * Relaxed exchange: only the flag itself is shared. */
	_Atomic bool err_said;
	/* Relaxed: counts (records added off a shard; reopens and their
	 * failures, by the SIGHUP reader). */
	_Atomic uint64_t lost, reopens, rerrors;
};

/* Add @v to the count @c that only the calling thread writes. */
static inline void al_count(_Atomic uint64_t *c, uint64_t v)
{
	/* Relaxed: a count with one writer (see struct al_slot). */
	atomic_store_explicit(c,
			      atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

/**
 * al_file_new - an opening of @fd held @refs times (the shards' and the
 * log's), @pipe when it is not a regular file; clears O_NONBLOCK on a
 * descriptor of our own (@own), so that a write to a pipe nobody reads
 * waits in the kernel instead of failing.
 * Return: the node; NULL without memory (@fd is left open).
 * Context: any thread.
 */
struct al_file *al_file_new(int fd, unsigned refs, bool own, bool pipe);

/**
 * al_file_put - let go of one hold of @f.
 * Return: true when it was the last one: the caller closes f->fd.
 * Context: any thread.
 */
bool al_file_put(struct al_file *f);

/**
 * al_say_error - report a failure (errno @err) on stderr, once until the
 * next opening of the file; the caller counts it.
 * Context: any thread.
 */
void al_say_error(struct pw_access_log *l, int err);

/**
 * al_hand_out - give @s's current buffer to the flusher (with a line
 * telling the drops not said yet), and append to the other one.
 * Context: @s's shard, when !s->out_busy.
 */
void al_hand_out(struct al_slot *s);

/**
 * al_lost - the records in the last @n bytes of @s's handed-out buffer
 * (its newlines, less the one of a "records dropped" line).
 * Context: @s's shard, or the close.
 */
uint64_t al_lost(const struct al_slot *s, size_t n);

/**
 * al_tasks_start - spawn the flusher of each shard and, with @sighup,
 * the SIGHUP reader on shard 0.
 * Return: 0; the -errno of a spawn (the tasks spawned are stopped).
 * Context: any thread that is not a shard, from pw_access_log_open().
 */
int al_tasks_start(struct pw_access_log *l, bool sighup);

/**
 * al_tasks_stop - end the SIGHUP reader, then have every flusher write
 * what its shard holds and end; wait for all of them.
 * Context: any thread that is not a shard, from pw_access_log_stop().
 */
void al_tasks_stop(struct pw_access_log *l);

/**
 * al_tasks_reap - free the handles of tasks the runtime's stop dropped
 * (no al_tasks_stop() came before it).
 * Context: any thread that is not a shard, once the runtime is destroyed.
 */
void al_tasks_reap(struct pw_access_log *l);

/**
 * al_tasks_flush - ask every flusher to write what its shard holds and
 * wait up to @timeout_ns for it.
 * Return: 0; -ETIMEDOUT; -ESHUTDOWN when the runtime stops.
 * Context: any thread that is not a shard, from pw_access_log_flush().
 */
int al_tasks_flush(struct pw_access_log *l, uint64_t timeout_ns);

/**
 * al_open_sync - open @path (NULL: a copy of standard output) through
 * the file API on a shard of @rt, and wait for it; *@pipe tells whether
 * it is not a regular file.
 * Return: the descriptor; -errno.
 * Context: any thread that is not a shard of @rt.
 */
int al_open_sync(struct pw_runtime *rt, const char *path, bool *pipe);

#endif /* PW_APPS_ACCESS_LOG_INT_H */
