/* SPDX-License-Identifier: MIT */
/*
 * test_steal.c - stealing mode: Tokio's countable behaviours, exactly.
 *
 * The queues themselves are tested alone in test_queue.c. These tests
 * check what a program sees: spawn placement and depths while a task
 * runs, foreign spawns, the LIFO slot and its poll cap, notification, bad
 * options, and a stress run that checks every task runs once and every
 * wake-up arrives.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/common.h"
#include "shard/shard_int.h"
#include "shard/steal.h"

/* ---- a real runtime ----------------------------------------------------- */

static struct pw_runtime *steal_runtime(unsigned workers, uint32_t flags)
{
	struct pw_config cfg;
	struct pw_runtime *rt = NULL;

	pw_config_init(&cfg);
	cfg.shards = workers;
	cfg.sched = PW_SCHED_STEAL;
	cfg.flags |= flags | PW_CONFIG_OVERSUBSCRIBE;
	int err = pw_runtime_create(&rt, &cfg);
	cr_assert_eq(err, 0, "create: %d", err);
	return rt;
}

static _Atomic uint64_t ran;

static enum pw_poll noop_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	atomic_fetch_add(&ran, 1);
	return pw_ready(cx, 0);
}

static void wait_ran(uint64_t n)
{
	PW_TEST_WAIT_UNTIL(atomic_load(&ran) >= n, PW_TEST_WAIT_SECS,
			   "%llu tasks ran, %llu expected",
			   (unsigned long long)atomic_load(&ran),
			   (unsigned long long)n);
	cr_assert_eq(atomic_load(&ran), n);
}

static struct pw_metrics_worker worker_metrics(struct pw_runtime *rt,
					       unsigned i)
{
	struct pw_metrics_worker w;

	cr_assert_eq(pw_metrics_worker(rt, i, &w), 0);
	return w;
}

struct spawner {
	int n;
	uint32_t local, overflows;
	uint64_t global;
	bool lifo;
};

static enum pw_poll spawner_poll(struct pw_cx *cx, void *state)
{
	struct spawner *sp = state;
	struct pw__shard *s = pw__cur_shard;

	for (int i = 0; i < sp->n; i++)
		cr_assert_eq(pw_spawn(NULL, noop_poll, NULL, 0, NULL), 0);
	sp->local = pw__steal_local_len(s);
	sp->global = pw__steal_global_len(s->rt);
	sp->lifo = s->w->lifo != NULL;
	sp->overflows = (uint32_t)s->w->overflows;
	return pw_ready(cx, 0);
}

/* N spawns from a running task on one worker: N-1 queued locally, the
 * last in the LIFO slot, 129 to the inject queue per overflow. */
Test(steal, spawn_counts_from_a_running_task)
{
	int ns[] = { 8, 257, 300, 387 };
	uint32_t want_local[] = { 7, 256, 170, 128 };
	uint64_t want_global[] = { 0, 0, 129, 258 };
	uint32_t want_ovf[] = { 0, 0, 1, 2 };

	for (int k = 0; k < 4; k++) {
		struct pw_runtime *rt = steal_runtime(1, 0);
		struct spawner sp = { .n = ns[k] };
		atomic_store(&ran, 0);
		cr_assert_eq(pw_test_block_on(rt, spawner_poll, &sp), 0);
		cr_assert(sp.lifo, "N=%d: the last spawn sits in the LIFO slot",
			  ns[k]);
		cr_assert_eq(sp.local, want_local[k], "N=%d local", ns[k]);
		cr_assert_eq(sp.global, want_global[k], "N=%d global", ns[k]);
		cr_assert_eq(sp.overflows, want_ovf[k], "N=%d overflows",
			     ns[k]);
		wait_ran((uint64_t)ns[k]);
		/* The worker publishes its counters in batches: once they
		 * show the spawner's poll and the N others. */
		PW_TEST_WAIT_UNTIL(
			worker_metrics(rt, 0).poll_count == (uint64_t)ns[k] + 1,
			PW_TEST_WAIT_SECS, "N=%d: %llu polls published", ns[k],
			(unsigned long long)worker_metrics(rt, 0).poll_count);
		cr_assert_eq(worker_metrics(rt, 0).overflow_count, want_ovf[k],
			     "N=%d published overflows", ns[k]);
		cr_assert_eq(pw_runtime_destroy(rt), 0);
	}
}

static _Atomic int busy_state; /* 1: spinning, 2: released */

static enum pw_poll busy_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	atomic_store(&busy_state, 1);
	PW_TEST_WAIT_UNTIL(atomic_load(&busy_state) == 2, PW_TEST_WAIT_SECS,
			   "the busy task was never released");
	return pw_ready(cx, 0);
}

/* Spawns from another thread while the only worker is busy: all of them
 * wait in the inject queue. */
Test(steal, foreign_spawns_wait_in_the_inject_queue)
{
	struct pw_runtime *rt = steal_runtime(1, 0);
	atomic_store(&busy_state, 0);
	atomic_store(&ran, 0);
	cr_assert_eq(pw_runtime_spawn(rt, PW_SHARD_ANY, busy_poll, NULL, 0,
				      NULL),
		     0);
	PW_TEST_WAIT_UNTIL(atomic_load(&busy_state) == 1, PW_TEST_WAIT_SECS,
			   "the busy task never started");
	for (int i = 0; i < 100; i++)
		cr_assert_eq(pw_runtime_spawn(rt, PW_SHARD_ANY, noop_poll, NULL,
					      0, NULL),
			     0);
	cr_assert_eq(pw__steal_global_len(rt), 100);
	cr_assert_eq(atomic_load(&rt->steal->remote_schedules), 101);
	atomic_store(&busy_state, 2);
	wait_ran(100);
	cr_assert_eq(pw__steal_global_len(rt), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- run order: the LIFO slot and its cap ------------------------------ */

static _Atomic int order[16], norder;

static void note(int v)
{
	order[atomic_fetch_add(&norder, 1)] = v;
}

struct chain {
	int id, next; /* spawn @next (if > 0) when polled */
};

static enum pw_poll chain_poll(struct pw_cx *cx, void *state)
{
	struct chain *c = state;

	note(c->id);
	if (c->next) {
		struct chain n = { c->next, c->next < 4 ? c->next + 1 : 0 };
		cr_assert_eq(pw_spawn(NULL, chain_poll, &n, sizeof(n), NULL),
			     0);
	}
	return pw_ready(cx, 0);
}

enum { R = 10, X = 20 };

static enum pw_poll root_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	struct chain x = { X, 0 }, a = { 1, 2 };

	note(R);
	cr_assert_eq(pw_spawn(NULL, chain_poll, &x, sizeof(x), NULL), 0);
	cr_assert_eq(pw_spawn(NULL, chain_poll, &a, sizeof(a), NULL), 0);
	return pw_ready(cx, 0);
}

/*
 * R spawns X then A: A takes the LIFO slot, X goes to the queue. After R,
 * the LIFO chain runs A, B, C; the third LIFO poll disables the slot, so
 * D, spawned by C, goes behind X: R A B C X D.
 */
Test(steal, lifo_slot_runs_at_most_three_in_a_row)
{
	struct pw_runtime *rt = steal_runtime(1, 0);
	int want[] = { R, 1, 2, 3, X, 4 };

	atomic_store(&norder, 0);
	cr_assert_eq(pw_test_block_on(rt, root_poll, NULL), 0);
	PW_TEST_WAIT_UNTIL(atomic_load(&norder) >= 6, PW_TEST_WAIT_SECS,
			   "%d of 6 polls", atomic_load(&norder));
	cr_assert_eq(atomic_load(&norder), 6);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(atomic_load(&order[i]), want[i], "event %d: %d", i,
			     atomic_load(&order[i]));
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Without the LIFO slot every spawn queues FIFO: R X A B C D. */
Test(steal, without_lifo_spawns_run_fifo)
{
	struct pw_runtime *rt = steal_runtime(1, PW_CONFIG_NO_LIFO);
	int want[] = { R, X, 1, 2, 3, 4 };

	atomic_store(&norder, 0);
	cr_assert_eq(pw_test_block_on(rt, root_poll, NULL), 0);
	PW_TEST_WAIT_UNTIL(atomic_load(&norder) >= 6, PW_TEST_WAIT_SECS,
			   "%d of 6 polls", atomic_load(&norder));
	cr_assert_eq(atomic_load(&norder), 6);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(atomic_load(&order[i]), want[i], "event %d", i);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- notification --------------------------------------------------- */

struct pair_spawner {
	int n;
};

/* Whether worker @id is on the idle set's stack of parked workers: it
 * parked and no notifier has taken it out since. */
static bool in_sleepers(struct pw_runtime *rt, unsigned id)
{
	struct pw__steal *g = rt->steal;
	bool found = false;

	pthread_mutex_lock(&g->idle_mu);
	for (unsigned i = 0; i < g->nsleepers; i++)
		found = found || g->sleepers[i] == id;
	pthread_mutex_unlock(&g->idle_mu);
	return found;
}

/*
 * Wait until worker @i is parked, its park published: on the sleepers'
 * stack with at least @parks parks counted (the count is published after
 * it joins the stack, before it sleeps).
 */
static void wait_parked(struct pw_runtime *rt, unsigned i, uint64_t parks)
{
	PW_TEST_WAIT_UNTIL(
		in_sleepers(rt, i) && worker_metrics(rt, i).park_count >= parks,
		PW_TEST_WAIT_SECS,
		"worker %u: not parked with %llu parks (%llu)", i,
		(unsigned long long)parks,
		(unsigned long long)worker_metrics(rt, i).park_count);
}

/* What the holding task saw of worker 1 right after its spawns. */
static _Atomic bool other_still_parked, other_unpark_flag;

static enum pw_poll hold_poll(struct pw_cx *cx, void *state)
{
	struct pair_spawner *p = state;
	struct pw_runtime *rt = pw__cur_shard->rt;
	uint64_t r0 = atomic_load(&ran);

	for (int i = 0; i < p->n; i++)
		cr_assert_eq(pw_spawn(NULL, noop_poll, NULL, 0, NULL), 0);
	/* A notification happens inside pw_spawn(), on this thread. */
	atomic_store(&other_still_parked, in_sleepers(rt, 1));
	atomic_store(&other_unpark_flag,
		     atomic_load(&rt->shards[1]->w->unpark));
	/* With two spawns the queued one runs elsewhere while this worker
	 * is busy here: the notified worker stole it. */
	if (p->n > 1)
		PW_TEST_WAIT_UNTIL(atomic_load(&ran) > r0, PW_TEST_WAIT_SECS,
				   "the queued task did not run elsewhere");
	return pw_ready(cx, 0);
}

/* One spawn fills the LIFO slot and wakes nobody; a second pushes the
 * first to the queue and notifies the parked worker, which steals it. */
Test(steal, one_spawn_wakes_no_one_two_do)
{
	struct pw_runtime *rt = steal_runtime(2, 0);
	struct pair_spawner one = { 1 }, two = { 2 };

	wait_parked(rt, 0, 1);
	wait_parked(rt, 1, 1);
	atomic_store(&ran, 0);
	struct pw_metrics_worker w1 = worker_metrics(rt, 1);
	uint64_t parks0 = worker_metrics(rt, 0).park_count;

	/* The holder is bound to worker 0: its arrival wakes worker 0 only. */
	cr_assert_eq(
		pw_runtime_spawn(rt, 0, hold_poll, &one, sizeof(one), NULL), 0);
	wait_ran(1);
	wait_parked(rt, 0, parks0 + 1);
	cr_assert(atomic_load(&other_still_parked),
		  "one spawn took worker 1 off the parked stack");
	cr_assert(!atomic_load(&other_unpark_flag), "worker 1 was notified");
	cr_assert(in_sleepers(rt, 1), "worker 1 stayed parked");
	cr_assert_eq(worker_metrics(rt, 1).park_unpark_count,
		     w1.park_unpark_count, "worker 1 stayed parked");

	cr_assert_eq(
		pw_runtime_spawn(rt, 0, hold_poll, &two, sizeof(two), NULL), 0);
	wait_ran(3);
	wait_parked(rt, 1, w1.park_count + 1);
	struct pw_metrics_worker after = worker_metrics(rt, 1);
	/* One unpark and one park since. */
	cr_assert_eq(after.park_unpark_count, w1.park_unpark_count + 2,
		     "worker 1 was notified once: %llu -> %llu",
		     (unsigned long long)w1.park_unpark_count,
		     (unsigned long long)after.park_unpark_count);
	cr_assert_eq(after.park_count, w1.park_count + 1);
	cr_assert_eq(after.steal_count, 1, "it stole the queued task");
	cr_assert_eq(after.steal_operations, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- a bound task beside the others ------------------------------------ */

#define YIELDS_MAX 1000

static _Atomic uint32_t yields, yields_seen;
static _Atomic bool unbound_ran, yielder_done;

static enum pw_poll unbound_poll(struct pw_cx *cx, void *state);

/* Bound to its worker (pw_spawn_on): spawns two tasks on its first poll
 * (the second takes the LIFO slot and pushes the first to the local
 * queue), then yields until the first ran. */
static enum pw_poll bound_yielder_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	if (atomic_load(&yields) == 0) {
		for (int i = 0; i < 2; i++)
			cr_assert_eq(pw_spawn(NULL, unbound_poll, &i, sizeof(i),
					      NULL),
				     0);
	}
	if (atomic_load(&unbound_ran) || atomic_load(&yields) == YIELDS_MAX) {
		atomic_store(&yielder_done, true);
		return pw_ready(cx, 0);
	}
	atomic_fetch_add(&yields, 1);
	return pw_yield(cx);
}

/* Task 0 waits in the local queue; task 1 runs from the LIFO slot. */
static enum pw_poll unbound_poll(struct pw_cx *cx, void *state)
{
	if (*(int *)state == 0) {
		atomic_store(&yields_seen, atomic_load(&yields));
		atomic_store(&unbound_ran, true);
	}
	return pw_ready(cx, 0);
}

static enum pw_poll start_yielder_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	cr_assert_eq(pw_spawn_on(0, bound_yielder_poll, NULL, 0, NULL), 0);
	return pw_ready(cx, 0);
}

/* A bound task that keeps yielding and the worker's other queues take
 * turns: the task in the local queue runs after the yielder's first poll
 * and the LIFO slot's task, not after the yielder gives up. */
Test(steal, a_yielding_bound_task_does_not_starve_the_others)
{
	struct pw_runtime *rt = steal_runtime(1, 0);
	int64_t res = -1;

	cr_assert_eq(pw_block_on(rt, start_yielder_poll, NULL, &res), 0);
	PW_TEST_WAIT_UNTIL(atomic_load(&yielder_done), PW_TEST_WAIT_SECS,
			   "the yielder did not finish");
	cr_assert(atomic_load(&unbound_ran));
	cr_assert_eq(atomic_load(&yields_seen), 1,
		     "the other task ran after %u yields",
		     (unsigned)atomic_load(&yields_seen));
	cr_assert_eq(atomic_load(&yields), 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- bad options -------------------------------------------------------- */

Test(steal, bad_options)
{
	struct pw_config cfg;
	struct pw_runtime *rt = NULL;

	pw_config_init(&cfg);
	cfg.sched = PW_SCHED_STEAL;
	cfg.shards = 1;
	cfg.event_interval = 0;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), -EINVAL);
	cfg.event_interval = 61;
	cfg.global_queue_interval = 0;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), -EINVAL);
	cfg.global_queue_interval = PW_INTERVAL_AUTO;
	cfg.shards = 0;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), -EINVAL);
	cfg.shards = 1;
	cfg.sched = (enum pw_sched)7;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), -EINVAL);
	cfg.sched = PW_SCHED_STEAL;
	cfg.shards = 64; /* more than this machine's CPUs */
	cfg.flags &= ~PW_CONFIG_OVERSUBSCRIBE;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 64)
		cr_assert_eq(pw_runtime_create(&rt, &cfg), -E2BIG);
	cr_assert_null(rt);
	/* A fixed interval is accepted. */
	cfg.shards = 1;
	cfg.global_queue_interval = 31;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- stress ---------------------------------------------------------------
 *
 * A root joins P parents; each parent spawns C children with join
 * handles and joins them. Children yield a few times and pair up: an even
 * child parks until its odd sibling signals it through a waker, wherever
 * each of them runs. Every child marks itself; at the end every mark is
 * exactly 1 and the join sums are exact.
 */
#define KIDS 500

struct slot {
	_Atomic int st; /* 0 empty, 1 waker stored, 2 signalled */
	struct pw_waker w;
};

struct kid {
	uint32_t id;
	uint8_t yields, step;
	struct slot *slot;
};

struct parent {
	uint32_t first, step, n;
	int64_t sum;
	struct pw_join j[KIDS];
	struct slot slots[KIDS / 2];
};

static _Atomic uint8_t *seen;

static enum pw_poll kid_poll(struct pw_cx *cx, void *state)
{
	struct kid *k = state;

	if (k->yields) {
		k->yields--;
		return pw_yield(cx);
	}
	if (k->id & 1) {
		if (atomic_exchange(&k->slot->st, 2) == 1)
			pw_waker_wake(&k->slot->w);
	} else if (k->step == 0) {
		struct pw_waker me = pw_cx_waker(cx);
		k->step = 1;
		cr_assert_eq(pw_waker_clone(&k->slot->w, &me), 0);
		int exp = 0;
		if (atomic_compare_exchange_strong(&k->slot->st, &exp, 1))
			return PW_PENDING;
		pw_waker_drop(&k->slot->w); /* signalled already */
	} else if (atomic_load(&k->slot->st) != 2) {
		return PW_PENDING;
	}
	atomic_fetch_add(&seen[k->id], 1);
	return pw_ready(cx, (int64_t)k->id + 1);
}

static enum pw_poll parent_poll(struct pw_cx *cx, void *state)
{
	struct parent *p = state;

	if (p->step == 0) {
		for (uint32_t i = 0; i < p->n; i++) {
			uint32_t id = p->first + i;
			struct kid k = { id,
					 (uint8_t)((id * 2654435761u) >> 30), 0,
					 &p->slots[i / 2] };
			atomic_init(&p->slots[i / 2].st, 0);
			cr_assert_eq(pw_spawn(&p->j[i], kid_poll, &k, sizeof(k),
					      NULL),
				     0);
		}
		p->step = 1;
	}
	for (; p->step <= p->n; p->step++) {
		int64_t r;
		if (pw_join_poll(cx, &p->j[p->step - 1], &r) == PW_PENDING)
			return PW_PENDING;
		p->sum += r;
	}
	return pw_ready(cx, p->sum);
}

struct root {
	uint32_t parents, step;
	int64_t sum;
	struct pw_join *j;
};

/* The worker that ran the probe, or -1. */
static _Atomic int probe_worker;

static enum pw_poll probe_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	atomic_store(&probe_worker, pw_shard_id());
	return pw_ready(cx, 0);
}

static enum pw_poll stress_root_poll(struct pw_cx *cx, void *state)
{
	struct root *r = state;

	if (r->step == 0) {
		/* A steal, whatever the scheduling: the probe goes to this
		 * worker's queue behind a LIFO filler, which notifies the
		 * other worker; this one stays here until the probe ran,
		 * so the other stole it. */
		atomic_store(&probe_worker, -1);
		cr_assert_eq(pw_spawn(NULL, probe_poll, NULL, 0, NULL), 0);
		cr_assert_eq(pw_spawn(NULL, noop_poll, NULL, 0, NULL), 0);
		PW_TEST_WAIT_UNTIL(atomic_load(&probe_worker) >= 0,
				   PW_TEST_WAIT_SECS,
				   "the probe was not stolen");
		cr_assert_neq(atomic_load(&probe_worker), pw_shard_id());
		for (uint32_t i = 0; i < r->parents; i++) {
			struct parent *p = calloc(1, sizeof(*p));
			p->first = i * KIDS;
			p->n = KIDS;
			cr_assert_eq(pw_spawn(&r->j[i], parent_poll, p,
					      sizeof(*p), NULL),
				     0);
			free(p);
		}
		r->step = 1;
	}
	for (; r->step <= r->parents; r->step++) {
		int64_t v;
		if (pw_join_poll(cx, &r->j[r->step - 1], &v) == PW_PENDING)
			return PW_PENDING;
		r->sum += v;
	}
	return pw_ready(cx, r->sum);
}

Test(steal, stress_every_task_once_no_wake_lost)
{
	pw_test_time_limit(240); /* one pass only: tests/one_pass.txt */
	uint64_t total = (uint64_t)(1e7 * pw_test_scale());
#if defined(__SANITIZE_THREAD__)
	total /= 10;
#endif
	struct root r = { 0 };
	r.parents = (uint32_t)(total / KIDS);
	total = (uint64_t)r.parents * KIDS;
	r.j = calloc(r.parents, sizeof(*r.j));
	seen = calloc(total, 1);
	struct pw_runtime *rt = steal_runtime(2, 0);
	int64_t sum = pw_test_block_on(rt, stress_root_poll, &r);
	cr_assert_eq((uint64_t)sum, total * (total + 1) / 2);
	for (uint64_t i = 0; i < total; i++)
		cr_assert_eq(seen[i], 1, "task %lu ran %u times",
			     (unsigned long)i, seen[i]);
	/* The probe's steal at least, once the thief has published it. */
	unsigned thief = (unsigned)atomic_load(&probe_worker);
	PW_TEST_WAIT_UNTIL(worker_metrics(rt, thief).steal_count > 0,
			   PW_TEST_WAIT_SECS,
			   "worker %u stole the probe; no steal published",
			   thief);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	free(seen);
	free(r.j);
}
