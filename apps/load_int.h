/* SPDX-License-Identifier: MIT */
/*
 * load_int.h - what the load generator's run (apps/load.c) shares with
 * the tasks of its protocols in other files (apps/load_udp.c): the run,
 * each shard's numbers and a connection's slot, and the calls a task
 * makes to count and pace its requests. The rules of the run (which
 * thread writes what, the snapshot and interval hand-overs) are at the
 * top of apps/load.c.
 */
#ifndef PW_APPS_LOAD_INT_H
#define PW_APPS_LOAD_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pinwheel.h"
#include "pinwheel/hist.h"
#include "apps/load.h"

/* The longest wait of a task before it looks at the stop flag again. */
#define STOP_SLICE_NS (50 * PW_NSEC_PER_MSEC)
/* The pause after a failed connect (or socket) before the next one. */
#define BACKOFF_NS (10 * PW_NSEC_PER_MSEC)
/* A slot without a request count. */
#define NO_QUOTA UINT64_MAX

/* One shard's numbers; written by that shard's thread only. */
struct load_shard {
	_Alignas(64) struct pw_hist lat, svc;
	uint64_t requests, answers, connects, errors, bad_status;
	struct pw_load_errors err;
	uint64_t bytes_sent, bytes_recv;
	struct pw_load_udp_stats udp; /* --proto udp only */
	uint64_t last_done; /* CLOCK_MONOTONIC of the last measured answer */
	uint64_t served;    /* the last snap_req this shard answered */
	/* The progress snapshot (see the top of the file). */
	struct pw_hist snap;
	uint64_t snap_requests, snap_errors, snap_answers;
	/* release: publishes the snapshot above; pairs with the acquire load
	 * in take_snapshot(). */
	_Atomic uint64_t snap_done;
	/* The interval mailbox (see the top of the file): ivl is the
	 * shard's, ivl_out the mailbox's. */
	struct pw_hist ivl, ivl_out;
	uint64_t ivl_served; /* the last ivl_req this shard answered */
	/* release by the shard (ivl_out filled), acquire in
	 * take_intervals(); release by the caller's thread (ivl_out
	 * emptied), acquire in hand_interval(). */
	atomic_bool ivl_full;
};

struct load_run {
	const struct pw_load_config *cfg;
	char *msg; /* the request or echo payload (malloc'd) */
	size_t msg_len;
	bool head_only;		      /* HEAD: an answer ends with its head */
	uint64_t start, measure, end; /* CLOCK_MONOTONIC ns */
	uint64_t interval;	      /* open loop: ns between one
					 connection's requests; 0 closed */
	unsigned nshards;
	struct load_shard *shards;
	/* relaxed: a bare flag the tasks poll; nothing is published with
	 * it (the results travel with live). */
	atomic_bool stop;
	/* release (fetch_sub in conn_drop): publishes the dropping task's
	 * writes to its shard's numbers; pairs with the acquire loads in
	 * pw_load_run(). */
	atomic_uint live;
	/* release in take_snapshot(), acquire in maybe_snapshot(): a new
	 * request hands the snapshots back to the shards. */
	_Atomic uint64_t snap_req;
	/* relaxed: a request number alone; the mailbox's ivl_full carries
	 * the data both ways. */
	_Atomic uint64_t ivl_req;
	bool intervals;		/* cfg->interval is set */
	struct pw_hist ivl_sum; /* the caller's thread's: this interval */
	uint64_t ivl_next;	/* the index of the next interval */
	uint64_t wall_measure;	/* CLOCK_REALTIME of run->measure */
};

/* What a connection carries over to its next socket. */
struct load_slot {
	struct load_run *run;
	unsigned idx;
	uint64_t quota; /* measured requests left, or NO_QUOTA */
	uint64_t due;	/* open loop: when the next request is due */
};

/**
 * pw__load_shard - the numbers of the shard the caller runs on (shard 0's
 * off a shard of the run).
 * Context: a task of the run.
 */
struct load_shard *pw__load_shard(const struct load_run *run);

/**
 * pw__load_deadline - the runtime deadline CLOCK_MONOTONIC time @at maps
 * to, cut at @slice from now when @slice is not 0.
 * Context: a task of the run.
 */
uint64_t pw__load_deadline(uint64_t at, uint64_t slice);

/**
 * pw__load_stopping - whether the caller of pw_load_run() asked the run
 * to stop. Context: any thread.
 */
bool pw__load_stopping(const struct load_run *run);

/**
 * pw__load_ended - a request has ended on shard @sh: hand the interval
 * histogram over when asked, count the end for the progress rate, with
 * @ok record its latency (from @t_due) and service time (from @t_sent)
 * at @now, then copy the shard's numbers for the progress when asked.
 * The caller counts the request's outcome in @sh first.
 * Context: a task of the run, on the shard of @sh.
 */
void pw__load_ended(struct load_run *run, struct load_shard *sh, bool ok,
		    uint64_t t_due, uint64_t t_sent, uint64_t now);

#endif /* PW_APPS_LOAD_INT_H */
