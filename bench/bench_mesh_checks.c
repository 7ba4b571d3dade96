/* SPDX-License-Identifier: MIT */
/*
 * bench_mesh_checks.c - the timings that the mesh and op unit tests
 * check only as behaviour, measured here on the real clock:
 *
 *   bm_flooded_shard_timer_lateness  2 ms sleeps on a shard that another
 *				      shard floods through a full 64-slot
 *				      ring: time per sleep, and lateness
 *				      (median and worst, in microseconds)
 *   bm_idle_poll_call_kernel_waits   call round trips with a 1 s idle
 *				      poll: kernel waits and MSG_RING
 *				      wake-ups per call (0 on an unloaded
 *				      machine)
 *   bm_idle_poll_timer		      a 5 ms sleep on a shard that would
 *				      idle-poll for 1 s: about 5 ms, not 1 s
 *   bm_batch_wait_timer	      a 5 ms sleep on a shard whose kernel
 *				      waits gather completions for 1 s
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench/bench.h"
#include "pinwheel.h"

#define MS PW_NSEC_PER_MSEC

static struct pw_runtime *make_runtime(struct pw_bench *b, unsigned shards,
				       unsigned slots, uint64_t idle_poll_ns,
				       uint64_t batch_wait_ns)
{
	struct pw_config cfg;
	struct pw_runtime *rt = NULL;

	pw_config_init(&cfg);
	cfg.shards = shards;
	cfg.flags = PW_CONFIG_OVERSUBSCRIBE;
	if (slots)
		cfg.mesh_slots = slots;
	cfg.idle_poll_ns = idle_poll_ns;
	cfg.batch_wait_ns = batch_wait_ns;
	int err = pw_runtime_create(&rt, &cfg);
	if (err) {
		pw_bench_skip(b, pw_strerror_setup(err));
		return NULL;
	}
	return rt;
}

/* ---- a flooded shard's timers ----------------------------------------- */

#define FLOOD_BACKLOG 16384u
#define LATE_MAX      (1u << 16)

static _Atomic uint64_t flood_got, flood_sent;
static _Atomic bool flooding;

static void flood_handler(void *arg)
{
	(void)arg;
	/* relaxed: a count for the flooder's pacing. */
	atomic_fetch_add_explicit(&flood_got, 1, memory_order_relaxed);
}

/* Floods shard 0 while flooding holds, FLOOD_BACKLOG ahead at most. */
static enum pw_poll flooder_poll(struct pw_cx *cx, void *state)
{
	uint64_t sent = atomic_load(&flood_sent);

	(void)state;
	if (!atomic_load(&flooding))
		return pw_ready(cx, 0);
	for (int i = 0;
	     i < 2048 && sent - atomic_load(&flood_got) < FLOOD_BACKLOG;
	     i++, sent++)
		if (pw_submit_to(0, flood_handler, NULL) < 0)
			break;
	atomic_store(&flood_sent, sent);
	return pw_yield(cx);
}

struct late {
	struct pw_bench *b;
	bool armed;
	uint32_t n;
	int64_t *lateness;
	struct pw_sleep sl;
};

static enum pw_poll late_poll(struct pw_cx *cx, void *state)
{
	struct late *l = state;

	for (;;) {
		if (!l->armed) {
			if (!pw_bench_run(l->b, 1)) {
				atomic_store(&flooding, false);
				return pw_ready(cx, 0);
			}
			pw_sleep_init(&l->sl, 2 * MS);
			l->armed = true;
		}
		if (pw_sleep_poll(cx, &l->sl) == PW_PENDING)
			return PW_PENDING;
		l->armed = false;
		if (l->n < LATE_MAX)
			l->lateness[l->n++] =
				(int64_t)(pw_time_now() - l->sl.deadline);
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static void bm_flooded_shard_timer_lateness(struct pw_bench *b)
{
	struct pw_runtime *rt = make_runtime(b, 2, 64, 0, 0);
	struct late l = { .b = b };
	int64_t res;

	if (!rt)
		return;
	l.lateness = calloc(LATE_MAX, sizeof(*l.lateness));
	atomic_store(&flooding, true);
	pw_runtime_spawn(rt, 1, flooder_poll, NULL, 0, NULL);
	pw_block_on(rt, late_poll, &l, &res);
	if (l.n) {
		qsort(l.lateness, l.n, sizeof(*l.lateness), cmp_i64);
		pw_bench_counter(b, "late_median_us",
				 (double)l.lateness[l.n / 2] / 1e3, false);
		pw_bench_counter(b, "late_max_us",
				 (double)l.lateness[l.n - 1] / 1e3, false);
	}
	free(l.lateness);
	pw_runtime_destroy(rt);
}
PW_BENCH(bm_flooded_shard_timer_lateness);

/* ---- idle poll: calls without kernel waits ---------------------------- */

static void bm_idle_poll_call_kernel_waits(struct pw_bench *b)
{
	struct pw_runtime *rt = make_runtime(b, 2, 0, PW_IDLE_POLL_MAX_NS, 0);
	struct pw_shard_stats s0, s1, e0, e1;

	if (!rt)
		return;
	pw_runtime_stats(rt, 0, &s0);
	pw_runtime_stats(rt, 1, &s1);
	pw_bench_call_roundtrips(b, rt, false);
	pw_runtime_stats(rt, 0, &e0);
	pw_runtime_stats(rt, 1, &e1);
	pw_bench_counter(b, "kernel_waits",
			 (double)(e0.kernel_waits - s0.kernel_waits +
				  e1.kernel_waits - s1.kernel_waits),
			 false);
	pw_bench_counter(b, "msg_rings",
			 (double)(e0.msg_rings - s0.msg_rings + e1.msg_rings -
				  s1.msg_rings),
			 false);
	pw_runtime_destroy(rt);
}
PW_BENCH(bm_idle_poll_call_kernel_waits);

/* ---- timers under idle poll and batch wait ---------------------------- */

struct naps {
	struct pw_bench *b;
	bool armed;
	struct pw_sleep sl;
};

/* One 5 ms sleep per iteration. */
static enum pw_poll naps_poll(struct pw_cx *cx, void *state)
{
	struct naps *n = state;

	for (;;) {
		if (!n->armed) {
			if (!pw_bench_run(n->b, 1))
				return pw_ready(cx, 0);
			pw_sleep_init(&n->sl, 5 * MS);
			n->armed = true;
		}
		if (pw_sleep_poll(cx, &n->sl) == PW_PENDING)
			return PW_PENDING;
		n->armed = false;
	}
}

static void run_naps(struct pw_bench *b, uint64_t idle_poll_ns,
		     uint64_t batch_wait_ns)
{
	struct pw_runtime *rt =
		make_runtime(b, 1, 0, idle_poll_ns, batch_wait_ns);
	struct naps n = { .b = b };
	int64_t res;

	if (!rt)
		return;
	pw_block_on(rt, naps_poll, &n, &res);
	pw_runtime_destroy(rt);
}

static void bm_idle_poll_timer(struct pw_bench *b)
{
	run_naps(b, PW_IDLE_POLL_MAX_NS, 0);
}
PW_BENCH(bm_idle_poll_timer);

static void bm_batch_wait_timer(struct pw_bench *b)
{
	run_naps(b, 0, PW_BATCH_WAIT_MAX_NS);
}
PW_BENCH(bm_batch_wait_timer);
