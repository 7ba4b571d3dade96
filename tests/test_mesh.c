/* SPDX-License-Identifier: MIT */
/*
 * test_mesh.c - many shards: exactly-once in-order delivery over the mesh
 * with rings forced full, cross-shard calls (bounded), spawns and wakes,
 * a flooded shard that keeps its own schedule, shutdown that drains the
 * mesh, and bad input.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "common.h"

#define MS PW_NSEC_PER_MSEC

static struct pw_runtime *mesh_runtime(unsigned shards, unsigned slots,
				       uint32_t flags)
{
	struct pw_config cfg;
	struct pw_runtime *rt;
	pw_config_init(&cfg);
	cfg.shards = shards;
	cfg.mesh_slots = slots;
	cfg.flags = flags | PW_CONFIG_OVERSUBSCRIBE; /* small machines too */
	int err = pw_runtime_create(&rt, &cfg);
	cr_assert_eq(err, 0, "create: %d", err);
	return rt;
}

static void wait_for(_Atomic uint64_t *v, uint64_t want, int seconds)
{
	for (int i = 0; i < seconds * 1000 && atomic_load(v) < want; i++)
		usleep(1000);
	cr_assert_eq(atomic_load(v), want, "got %llu of %llu",
		     (unsigned long long)atomic_load(v),
		     (unsigned long long)want);
}

/* ---- exactly once, in order, per pair --------------------------------- */

#define NS 2
static uint64_t next_seq[NS][NS]; /* [dst][src]: touched by dst only */
static _Atomic uint64_t misordered;
/* Per receiving shard, on its own line: no shared counter in the path. */
static struct {
	_Alignas(64) _Atomic uint64_t n;
} delivered[NS];
static uint64_t per_pair;

static void seq_handler(void *arg)
{
	uint64_t v = (uint64_t)(uintptr_t)arg;
	unsigned src = (unsigned)(v >> 56), dst = (unsigned)pw_shard_id();
	uint64_t seq = v & ((1ull << 56) - 1);

	if (seq != next_seq[dst][src]++)
		atomic_fetch_add(&misordered, 1);
	/* relaxed: a count the owner alone writes; read by the test
	 * thread for progress only, then exactly after destroy. */
	atomic_store_explicit(&delivered[dst].n,
			      atomic_load_explicit(&delivered[dst].n,
						   memory_order_relaxed) +
				      1,
			      memory_order_relaxed);
}

struct sender {
	uint64_t sent[NS];
	unsigned seed;
};

static enum pw_poll sender_poll(struct pw_cx *cx, void *state)
{
	struct sender *s = state;
	uint64_t src = (uint64_t)pw_shard_id();
	bool done = true;

	/* A random burst to a random shard per turn, then yield, so the
	 * stage, the ring and the overflow all see traffic. */
	for (int burst = 0; burst < 3; burst++) {
		unsigned d = (unsigned)rand_r(&s->seed) % NS;
		unsigned k = 1 + (unsigned)rand_r(&s->seed) % 64;
		for (unsigned i = 0; i < k && s->sent[d] < per_pair; i++) {
			uint64_t v = (src << 56) | s->sent[d];
			int err = pw_submit_to(d, seq_handler,
					       (void *)(uintptr_t)v);
			cr_assert_eq(err, 0, "submit: %d", err);
			s->sent[d]++;
		}
	}
	for (unsigned d = 0; d < NS; d++)
		done &= s->sent[d] == per_pair;
	return done ? pw_ready(cx, 0) : pw_yield(cx);
}

Test(mesh, exactly_once_in_order_with_full_rings)
{
	PW_TEST_SHARD_ONLY();
	pw_test_time_limit(240);
	per_pair = (uint64_t)(1e8 * pw_test_scale()) / (NS * NS);
#if defined(__SANITIZE_THREAD__)
	per_pair /= 10; /* a smaller run under TSan: 10^6 messages */
#endif
	struct pw_runtime *rt = mesh_runtime(NS, 64, 0);
	for (unsigned sh = 0; sh < NS; sh++) {
		struct sender s = { .seed = 7 + sh };
		cr_assert_eq(pw_runtime_spawn(rt, sh, sender_poll, &s,
					      sizeof(s), NULL),
			     0);
	}
	for (int i = 0; i < 200000; i++) {
		uint64_t got = 0;
		for (unsigned d = 0; d < NS; d++)
			got += atomic_load(&delivered[d].n);
		if (got == per_pair * NS * NS)
			break;
		usleep(1000);
	}
	cr_assert_eq(atomic_load(&misordered), 0);
	uint64_t ovf = 0, recv = 0;
	for (unsigned sh = 0; sh < NS; sh++) {
		struct pw_shard_stats st;
		pw_runtime_stats(rt, sh, &st);
		ovf += st.mesh_overflowed;
		recv += st.mesh_received;
	}
	cr_assert_gt(ovf, 0, "the rings were never full");
	/* Counters are published once per turn: at most the total. */
	cr_assert_leq(recv, per_pair * NS * NS);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	for (unsigned d = 0; d < NS; d++)
		for (unsigned s = 0; s < NS; s++)
			cr_assert_eq(next_seq[d][s], per_pair);
}

/* ---- calls ------------------------------------------------------------ */

static _Atomic int running, max_running;

struct square {
	int64_t n;
	int yields;
	bool started;
};

static enum pw_poll square_poll(struct pw_cx *cx, void *state)
{
	struct square *q = state;
	if (!q->started) {
		q->started = true;
		int now = atomic_fetch_add(&running, 1) + 1;
		int m = atomic_load(&max_running);
		while (now > m &&
		       !atomic_compare_exchange_weak(&max_running, &m, now))
			;
	}
	if (q->yields-- > 0)
		return pw_yield(cx);
	atomic_fetch_sub(&running, 1);
	return pw_ready(cx, q->n * q->n + pw_shard_id());
}

struct caller {
	int n, done;
	int64_t sum;
	struct square args[32];
	struct pw_call calls[32];
};

static enum pw_poll caller_poll(struct pw_cx *cx, void *state)
{
	struct caller *c = state;
	if (c->done == 0 && c->calls[0].fn == NULL)
		for (int i = 0; i < c->n; i++) {
			c->args[i] = (struct square){ i, 3, false };
			pw_call_init(&c->calls[i], (unsigned)(i % 2),
				     square_poll, &c->args[i],
				     sizeof(c->args[i]), NULL);
		}
	/* Poll them all each time, so they run concurrently. */
	int left = 0;
	for (int i = 0; i < c->n; i++) {
		int64_t v;
		if (c->calls[i].fn == NULL)
			continue;
		if (pw_call_poll(cx, &c->calls[i], &v) == PW_PENDING) {
			left++;
			continue;
		}
		c->sum += v;
		c->calls[i].fn = NULL;
		c->done++;
	}
	return left ? PW_PENDING : pw_ready(cx, c->sum);
}

Test(mesh, calls_return_results_from_every_shard)
{
	struct pw_runtime *rt = mesh_runtime(2, 0, 0);
	static struct caller c = { .n = 32 };
	int64_t want = 0;
	for (int i = 0; i < 32; i++)
		want += (int64_t)i * i + i % 2;
	cr_assert_eq(pw_test_block_on(rt, caller_poll, &c), want);
	cr_assert_eq(c.done, 32);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(mesh, calls_in_flight_are_bounded)
{
	struct pw_config cfg;
	struct pw_runtime *rt;
	pw_config_init(&cfg);
	cfg.shards = 2;
	cfg.flags = PW_CONFIG_OVERSUBSCRIBE; /* small machines too */
	cfg.max_calls = 2;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	static struct caller c = { .n = 32 };
	pw_test_block_on(rt, caller_poll, &c);
	cr_assert_eq(c.done, 32);
	/* 2 per destination, 2 destinations. */
	cr_assert_leq(atomic_load(&max_running), 4);
	cr_assert_geq(atomic_load(&max_running), 2);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- spawn_on ---------------------------------------------------------- */

static _Atomic uint64_t spawned_sum;

static enum pw_poll adder_poll(struct pw_cx *cx, void *state)
{
	uint64_t *v = state;
	atomic_fetch_add(&spawned_sum, *v * 10 + (uint64_t)pw_shard_id());
	return pw_ready(cx, 0);
}

static enum pw_poll spawner_poll(struct pw_cx *cx, void *state)
{
	static uint64_t shared = 5;
	(void)state;
	for (uint64_t i = 1; i <= 100; i++)
		cr_assert_eq(pw_spawn_on(1, adder_poll, &i, sizeof(i), NULL),
			     0);
	cr_assert_eq(pw_spawn_on(1, adder_poll, &shared, 0, NULL), 0);
	cr_assert_eq(pw_spawn_on(0, adder_poll, &shared, 0, NULL), 0);
	return pw_ready(cx, 0);
}

Test(mesh, spawn_on_runs_on_the_target)
{
	struct pw_runtime *rt = mesh_runtime(2, 8, 0);
	pw_test_block_on(rt, spawner_poll, NULL);
	/* 100 copies (sum 5050*10 + 100*1), one pointer on 1, one on 0 */
	uint64_t want = 50500 + 100 + 51 + 50;
	for (int i = 0; i < 2000 && atomic_load(&spawned_sum) < want; i++)
		usleep(1000);
	cr_assert_eq(atomic_load(&spawned_sum), want);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- cross-shard wakes ------------------------------------------------ */

#define PARKERS 64
static struct pw_waker parked[PARKERS];
static _Atomic int parked_ready, finished;

struct parker {
	int i, polls;
};

static enum pw_poll parker_poll(struct pw_cx *cx, void *state)
{
	struct parker *p = state;
	if (p->polls++ == 0) {
		struct pw_waker w = pw_cx_waker(cx);
		pw_waker_clone(&parked[p->i], &w);
		atomic_fetch_add(&parked_ready, 1);
		return PW_PENDING;
	}
	cr_assert_eq(pw_shard_id(), 1, "woken task runs on its own shard");
	atomic_fetch_add(&finished, 1);
	return pw_ready(cx, 0);
}

struct waker_task {
	int next;
	unsigned seed;
	struct pw_sleep sl;
	bool napping;
};

static enum pw_poll waker_poll(struct pw_cx *cx, void *state)
{
	struct waker_task *w = state;
	while (w->next < PARKERS) {
		if (w->napping) {
			if (pw_sleep_poll(cx, &w->sl) == PW_PENDING)
				return PW_PENDING;
			w->napping = false;
		}
		/* Consume the waker: the wake crosses the mesh. */
		pw_waker_wake(&parked[w->next++]);
		/* Pause now and then so shard 1 goes to sleep. */
		if (rand_r(&w->seed) % 4 == 0) {
			pw_sleep_init(&w->sl, 1 + rand_r(&w->seed) % 2000000);
			w->napping = true;
		}
	}
	return pw_ready(cx, 0);
}

Test(mesh, cross_shard_wakes_reach_sleeping_shards)
{
	PW_TEST_SHARD_ONLY();
	struct pw_runtime *rt = mesh_runtime(2, 0, 0);
	for (int i = 0; i < PARKERS; i++) {
		struct parker p = { i, 0 };
		cr_assert_eq(pw_runtime_spawn(rt, 1, parker_poll, &p, sizeof(p),
					      NULL),
			     0);
	}
	while (atomic_load(&parked_ready) < PARKERS)
		usleep(1000);
	usleep(5000); /* let shard 1 fall asleep */
	struct waker_task w = { .seed = 3 };
	pw_test_block_on(rt, waker_poll, &w);
	for (int i = 0; i < 5000 && atomic_load(&finished) < PARKERS; i++)
		usleep(1000);
	cr_assert_eq(atomic_load(&finished), PARKERS);
	struct pw_shard_stats st;
	pw_runtime_stats(rt, 0, &st);
	cr_assert_gt(st.msg_rings, 0, "no MSG_RING wake-up was needed?");
	pw_runtime_stats(rt, 1, &st);
	cr_assert_eq(st.remote_wakes, PARKERS);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- a flooded shard keeps its own schedule ---------------------------- */

static _Atomic uint64_t flood_got;
static _Atomic int flooding;

static void flood_handler(void *arg)
{
	(void)arg;
	atomic_fetch_add_explicit(&flood_got, 1, memory_order_relaxed);
}

static enum pw_poll flooder_poll(struct pw_cx *cx, void *state)
{
	uint64_t *left = state;
	for (int i = 0; i < 4096 && *left; i++, (*left)--)
		cr_assert_eq(pw_submit_to(0, flood_handler, NULL), 0);
	if (*left)
		return pw_yield(cx);
	atomic_store(&flooding, 0);
	return pw_ready(cx, 0);
}

struct victim {
	bool init;
	uint64_t spins, spins_during_flood;
	struct pw_sleep sl;
};

static enum pw_poll victim_poll(struct pw_cx *cx, void *state)
{
	struct victim *v = state;
	if (!v->init) {
		v->init = true;
		pw_sleep_init(&v->sl, 5 * MS);
	}
	/* Spin through yields while the flood lasts, counting turns. */
	if (atomic_load(&flooding)) {
		v->spins_during_flood++;
		return pw_yield(cx);
	}
	if (pw_sleep_poll(cx, &v->sl) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, pw_time_now());
}

Test(mesh, flooded_shard_keeps_its_tasks_and_timers)
{
	struct pw_runtime *rt = mesh_runtime(2, 64, PW_CONFIG_PAUSED_CLOCK);
	uint64_t n = (uint64_t)(2000000 * pw_test_scale());
	atomic_store(&flooding, 1);
	cr_assert_eq(pw_runtime_spawn(rt, 1, flooder_poll, &n, sizeof(n), NULL),
		     0);
	static struct victim v;
	/* Virtual time stands still while shard 1 floods: the sleep ends
	 * at exactly 5 ms once both shards are idle. */
	cr_assert_eq(pw_test_block_on(rt, victim_poll, &v), (int64_t)(5 * MS));
	cr_assert_gt(v.spins_during_flood, 10,
		     "the victim's own task starved during the flood");
	wait_for(&flood_got, n, 60);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- shutdown drains the mesh ------------------------------------------ */

static _Atomic uint64_t drained;

static void drain_handler(void *arg)
{
	uint64_t *owned = arg;
	atomic_fetch_add(&drained, *owned);
	free(owned); /* ownership moved with the message */
}

static enum pw_poll burst_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	for (int i = 0; i < 10000; i++) {
		uint64_t *one = malloc(sizeof(*one));
		*one = 1;
		cr_assert_eq(pw_submit_to(1, drain_handler, one), 0);
	}
	return pw_ready(cx, 0);
}

Test(mesh, shutdown_drains_messages_in_flight)
{
	struct pw_runtime *rt = mesh_runtime(2, 16, 0);
	pw_test_block_on(rt, burst_poll, NULL);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	/* Every message ran (ASan checks no payload leaked). */
	cr_assert_eq(atomic_load(&drained), 10000);
}

/* ---- bad input --------------------------------------------------------- */

static void nop_handler(void *arg)
{
	(void)arg;
}

static _Atomic int late_err;

static void late_drop(void *state)
{
	(void)state;
	atomic_store(&late_err, pw_submit_to(0, nop_handler, NULL));
}

static enum pw_poll forever_poll(struct pw_cx *cx, void *state)
{
	(void)cx;
	(void)state;
	return PW_PENDING;
}

static enum pw_poll bad_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	cr_assert_eq(pw_shard_count(), 2);
	cr_assert_eq(pw_submit_to(2, nop_handler, NULL), -ENODEV);
	cr_assert_eq(pw_submit_to(0, NULL, NULL), -EINVAL);
	cr_assert_eq(pw_spawn_on(5, forever_poll, NULL, 0, NULL), -ENODEV);
	cr_assert_eq(pw_spawn_on(1, NULL, NULL, 0, NULL), -EINVAL);
	cr_assert_eq(pw_spawn_on(1, forever_poll, NULL, 8, NULL), -EINVAL);
	struct pw_call c;
	int64_t v = 0;
	pw_call_init(&c, 9, forever_poll, NULL, 0, NULL);
	cr_assert_eq(pw_call_poll(cx, &c, &v), PW_READY);
	cr_assert_eq(v, -ENODEV);
	pw_call_init(&c, 1, NULL, NULL, 0, NULL);
	cr_assert_eq(pw_call_poll(cx, &c, &v), PW_READY);
	cr_assert_eq(v, -EINVAL);
	cr_assert_eq(pw_call_poll(cx, NULL, &v), PW_READY);
	cr_assert_eq(pw_call_cancel(&c), -EALREADY);
	cr_assert_eq(pw_call_cancel(NULL), -EALREADY);
	pw_call_init(NULL, 0, NULL, NULL, 0, NULL);
	/* A task whose drop hook submits during shutdown. */
	cr_assert_eq(pw_spawn(NULL, forever_poll, NULL, 0, late_drop), 0);
	return pw_ready(cx, 0);
}

Test(mesh, bad_input_and_calls_after_shutdown)
{
	cr_assert_eq(pw_submit_to(0, nop_handler, NULL), -EPERM);
	cr_assert_eq(pw_spawn_on(0, forever_poll, NULL, 0, NULL), -EPERM);
	cr_assert_eq(pw_shard_count(), -EPERM);
	struct pw_runtime *rt = mesh_runtime(2, 0, 0);
	pw_test_block_on(rt, bad_poll, NULL);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(atomic_load(&late_err), -ESHUTDOWN);
}

/* ---- every shard wakes every other shard's tasks ---------------------- */

#define SYM_K	   32
#define SYM_ROUNDS 50
static _Atomic(struct pw__task *) sym_slot[NS][SYM_K]; /* published wakers */
static _Atomic int sym_done[NS];

struct sym_parker {
	int shard, i, round;
};

static enum pw_poll sym_parker_poll(struct pw_cx *cx, void *state)
{
	struct sym_parker *p = state;
	cr_assert_eq(pw_shard_id(), p->shard);
	if (p->round == SYM_ROUNDS) {
		atomic_fetch_add(&sym_done[p->shard], 1);
		return pw_ready(cx, 0);
	}
	p->round++;
	struct pw_waker me = pw_cx_waker(cx), w;
	pw_waker_clone(&w, &me);
	/* release: hands the owned waker to the other shard's waker task;
	 * pairs with its acquire exchange. */
	atomic_store_explicit(&sym_slot[p->shard][p->i], w.task,
			      memory_order_release);
	return PW_PENDING;
}

struct sym_waker {
	int target;
	unsigned seed;
	bool napping;
	struct pw_sleep sl;
};

static enum pw_poll sym_waker_poll(struct pw_cx *cx, void *state)
{
	struct sym_waker *w = state;
	if (w->napping) {
		if (pw_sleep_poll(cx, &w->sl) == PW_PENDING)
			return PW_PENDING;
		w->napping = false;
	}
	if (atomic_load(&sym_done[w->target]) == SYM_K)
		return pw_ready(cx, 0);
	for (int i = 0; i < SYM_K; i++) {
		/* acquire: pairs with the parker's release store. */
		struct pw_waker k = { atomic_exchange_explicit(
			&sym_slot[w->target][i], NULL, memory_order_acquire) };
		if (k.task)
			pw_waker_wake(&k); /* crosses the mesh */
	}
	/* Now and then nap so both shards go to sleep and must be roused. */
	if (rand_r(&w->seed) % 8 == 0) {
		pw_sleep_init(&w->sl, 1 + rand_r(&w->seed) % 300000);
		w->napping = true;
		return pw_sleep_poll(cx, &w->sl) == PW_PENDING ? PW_PENDING :
								 pw_yield(cx);
	}
	return pw_yield(cx);
}

Test(mesh, every_shard_wakes_every_other_shard)
{
	PW_TEST_SHARD_ONLY();
	pw_test_time_limit(60);
	struct pw_runtime *rt = mesh_runtime(NS, 0, 0);
	for (int sh = 0; sh < NS; sh++) {
		for (int i = 0; i < SYM_K; i++) {
			struct sym_parker p = { sh, i, 0 };
			cr_assert_eq(pw_runtime_spawn(rt, (unsigned)sh,
						      sym_parker_poll, &p,
						      sizeof(p), NULL),
				     0);
		}
		/* Shard sh wakes the tasks of the next shard. */
		struct sym_waker w = { .target = (sh + 1) % NS,
				       .seed = 11u + (unsigned)sh };
		cr_assert_eq(pw_runtime_spawn(rt, (unsigned)sh, sym_waker_poll,
					      &w, sizeof(w), NULL),
			     0);
	}
	for (int i = 0; i < 30000; i++) {
		if (atomic_load(&sym_done[0]) == SYM_K &&
		    atomic_load(&sym_done[1]) == SYM_K)
			break;
		usleep(1000);
	}
	for (int sh = 0; sh < NS; sh++)
		cr_assert_eq(atomic_load(&sym_done[sh]), SYM_K, "shard %d", sh);
	uint64_t wakes = 0;
	for (unsigned sh = 0; sh < NS; sh++) {
		struct pw_shard_stats st;
		pw_runtime_stats(rt, sh, &st);
		wakes += st.remote_wakes;
	}
	cr_assert_eq(wakes, (uint64_t)NS * SYM_K * SYM_ROUNDS);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- real clock: a flooded shard's timers stay on time ---------------- */

static _Atomic int rt_flooding;

static enum pw_poll rt_flooder_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	if (!atomic_load(&rt_flooding))
		return pw_ready(cx, 0);
	for (int i = 0; i < 2048; i++)
		if (pw_submit_to(0, flood_handler, NULL) < 0)
			break;
	return pw_yield(cx);
}

#define LATE_N 50

struct late {
	bool init;
	int n;
	int64_t lateness[LATE_N];
	struct pw_sleep sl;
};

static enum pw_poll late_poll(struct pw_cx *cx, void *state)
{
	struct late *l = state;
	for (;;) {
		if (!l->init) {
			pw_sleep_init(&l->sl, 2 * MS);
			l->init = true;
		}
		if (pw_sleep_poll(cx, &l->sl) == PW_PENDING)
			return PW_PENDING;
		l->lateness[l->n] = pw_time_now() - (int64_t)l->sl.deadline;
		l->init = false;
		if (++l->n == LATE_N) {
			atomic_store(&rt_flooding, 0);
			return pw_ready(cx, 0);
		}
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

Test(mesh, flooded_shard_timers_stay_on_time_real_clock)
{
	pw_test_time_limit(60);
	struct pw_runtime *rt = mesh_runtime(2, 64, 0);
	atomic_store(&rt_flooding, 1);
	cr_assert_eq(pw_runtime_spawn(rt, 1, rt_flooder_poll, NULL, 0, NULL),
		     0);
	usleep(10000); /* the flood is on */
	static struct late l;
	cr_assert_eq(pw_test_block_on(rt, late_poll, &l), 0);
	/* 50 sleeps of 2 ms under a continuous flood: each turn takes at
	 * most 256 messages per ring, so the timers are not starved. A
	 * starved shard makes every sleep late; a shared machine may stall
	 * the thread now and then, so a few late ones are allowed, and the
	 * median must stay under 20 ms. */
	int late = 0;
	for (int i = 0; i < LATE_N; i++)
		late += l.lateness[i] >= (int64_t)(100 * MS);
	qsort(l.lateness, LATE_N, sizeof(l.lateness[0]), cmp_i64);
	cr_assert_lt(l.lateness[LATE_N / 2], (int64_t)(20 * MS),
		     "median lateness %lld ns",
		     (long long)l.lateness[LATE_N / 2]);
	cr_assert_leq(late, 5, "%d of %d sleeps at least 100 ms late", late,
		      LATE_N);
	cr_assert_gt(atomic_load(&flood_got), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- idle poll --------------------------------------------------------- */

static enum pw_poll one_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	return pw_ready(cx, 1);
}

/* 200 calls one after another from the caller's shard to the other one
 * (shard 0 to shard 1, unless stealing mode moved the caller); counts
 * what the two shards did meanwhile. */
struct pinger {
	struct pw_runtime *rt;
	int left;
	bool sent;
	int64_t sum;
	struct pw_call call;
	struct pw_shard_stats before[2], after[2];
};

static enum pw_poll pinger_poll(struct pw_cx *cx, void *state)
{
	struct pinger *p = state;
	int64_t v;

	if (p->left == 200 && !p->sent)
		for (unsigned i = 0; i < 2; i++)
			cr_assert_eq(pw_runtime_stats(p->rt, i, &p->before[i]),
				     0);
	for (;;) {
		if (p->sent) {
			if (pw_call_poll(cx, &p->call, &v) == PW_PENDING)
				return PW_PENDING;
			p->sent = false;
			p->sum += v;
		}
		if (p->left == 0)
			break;
		p->left--;
		pw_call_init(&p->call, pw_shard_id() == 1 ? 0 : 1, one_poll,
			     NULL, 0, NULL);
		p->sent = true;
	}
	for (unsigned i = 0; i < 2; i++)
		cr_assert_eq(pw_runtime_stats(p->rt, i, &p->after[i]), 0);
	return pw_ready(cx, p->sum);
}

static void ping_200(uint64_t idle_poll_ns, struct pinger *p)
{
	struct pw_config cfg;
	struct pw_runtime *rt;

	pw_config_init(&cfg);
	cfg.shards = 2;
	cfg.flags = PW_CONFIG_OVERSUBSCRIBE; /* small machines too */
	cfg.idle_poll_ns = idle_poll_ns;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	*p = (struct pinger){ .rt = rt, .left = 200 };
	cr_assert_eq(pw_test_block_on(rt, pinger_poll, p), 200);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

#define DELTA(p, i, f) ((p)->after[i].f - (p)->before[i].f)

Test(mesh, idle_poll_answers_calls_without_sleeping_or_rousing)
{
	struct pinger p;

	/* Polling for up to 1 s: neither shard sleeps between the calls, so
	 * neither has to rouse the other. A shared machine may keep a shard
	 * off the CPU for longer than that now and then: up to three tries,
	 * the last one asserted. */
	for (int try = 0; try < 3; try++) {
		ping_200(PW_IDLE_POLL_MAX_NS, &p);
		if (!DELTA(&p, 0, kernel_waits) &&
		    !DELTA(&p, 1, kernel_waits) && !DELTA(&p, 0, msg_rings) &&
		    !DELTA(&p, 1, msg_rings))
			break;
	}
	for (unsigned i = 0; i < 2; i++) {
		cr_assert_eq(DELTA(&p, i, kernel_waits), 0, "shard %u slept",
			     i);
		cr_assert_eq(DELTA(&p, i, msg_rings), 0, "shard %u roused", i);
	}
	/* Without it the caller sleeps while it waits for an answer (on
	 * whichever shard it ran). */
	ping_200(0, &p);
	cr_assert_gt(DELTA(&p, 0, kernel_waits) + DELTA(&p, 1, kernel_waits),
		     0);
}

static enum pw_poll sleeper_poll(struct pw_cx *cx, void *state)
{
	struct pw_sleep *sl = state;

	return pw_sleep_poll(cx, sl);
}

Test(mesh, idle_poll_ends_at_the_next_timer)
{
	struct pw_config cfg;
	struct pw_runtime *rt;
	struct pw_sleep sl;

	pw_config_init(&cfg);
	cfg.shards = 1;
	cfg.idle_poll_ns = PW_IDLE_POLL_MAX_NS;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	/* A 5 ms sleep on a shard that would poll for 1 s: the poll stops at
	 * the timer, which fires long before the poll would have ended.
	 * Up to three tries, the last asserted: a loaded machine may hold
	 * the thread up for half a second once, the fault would every time. */
	uint64_t took = 0;
	for (int try = 0; try < 3 && (!try || took >= 500 * MS); try++) {
		pw_sleep_init(&sl, 5 * MS);
		uint64_t t0 = pw_test_now_ns();
		pw_test_block_on(rt, sleeper_poll, &sl);
		took = pw_test_now_ns() - t0;
		cr_assert_geq(took, 5 * MS);
	}
	cr_assert_lt(took, 500 * MS, "the 5 ms sleep took %llu ns",
		     (unsigned long long)took);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Five one-hour sleeps, one after another; returns the virtual end time. */
struct hours {
	int done;
	struct pw_sleep sl;
};

static enum pw_poll hours_poll(struct pw_cx *cx, void *state)
{
	struct hours *h = state;

	while (h->done < 5) {
		if (pw_sleep_poll(cx, &h->sl) == PW_PENDING)
			return PW_PENDING;
		if (++h->done < 5)
			pw_sleep_init(&h->sl, 3600 * PW_NSEC_PER_SEC);
	}
	return pw_ready(cx, pw_time_now());
}

Test(mesh, idle_poll_does_not_hold_the_paused_clock)
{
	struct pw_config cfg;
	struct pw_runtime *rt;
	static struct hours h;

	pw_config_init(&cfg);
	cfg.shards = 2;
	cfg.flags = PW_CONFIG_PAUSED_CLOCK | PW_CONFIG_OVERSUBSCRIBE;
	cfg.idle_poll_ns = PW_IDLE_POLL_MAX_NS;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	/* The paused clock jumps only once every shard sleeps: a 1 s idle
	 * poll before each jump would make this take over 5 s. */
	pw_sleep_init(&h.sl, 3600 * PW_NSEC_PER_SEC);
	uint64_t t0 = pw_test_now_ns();
	cr_assert_eq(pw_test_block_on(rt, hours_poll, &h),
		     5 * 3600 * PW_NSEC_PER_SEC);
	uint64_t took = pw_test_now_ns() - t0;
	cr_assert_lt(took, 2500 * MS, "five jumps took %llu ns",
		     (unsigned long long)took);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(mesh, idle_poll_out_of_range_is_refused)
{
	struct pw_config cfg;
	struct pw_runtime *rt = NULL;

	pw_config_init(&cfg);
	cfg.shards = 1;
	cfg.idle_poll_ns = PW_IDLE_POLL_MAX_NS + 1;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), -EINVAL);
	cr_assert_null(rt);
}
