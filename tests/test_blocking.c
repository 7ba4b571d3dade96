/* SPDX-License-Identifier: MIT */
/*
 * test_blocking.c - the blocking pool: results come back to the spawning
 * shard, the thread cap queues the rest FIFO, idle threads expire, the
 * paused clock holds still while a job runs, and bad input.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "common.h"

#define MS PW_NSEC_PER_MSEC

static int64_t triple(void *arg)
{
	return 3 * (int64_t)(intptr_t)arg;
}

struct one {
	int step;
	int shard;
	struct pw_blocking b;
};

static enum pw_poll one_poll(struct pw_cx *cx, void *state)
{
	struct one *o = state;
	int64_t v;
	if (o->step == 0) {
		o->shard = pw_shard_id();
		cr_assert_eq(pw_spawn_blocking(&o->b, triple, (void *)14), 0);
		cr_assert_eq(pw_spawn_blocking(&o->b, triple, (void *)1),
			     -EINVAL, "already queued");
		o->step = 1;
	}
	if (pw_blocking_poll(cx, &o->b, &v) == PW_PENDING)
		return PW_PENDING;
	cr_assert_eq(pw_shard_id(), o->shard, "the result came back home");
	return pw_ready(cx, v);
}

Test(blocking, result_returns_to_the_spawning_task)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	struct one o = { 0 };
	cr_assert_eq(pw_test_block_on(rt, one_poll, &o), 42);
	struct pw_blocking_stats st;
	cr_assert_eq(pw_runtime_blocking_stats(rt, &st), 0);
	cr_assert_eq(st.jobs_run, 1);
	cr_assert_eq(st.num_blocking_threads, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Six long jobs under a cap of two: two run, four wait, FIFO. */
static _Atomic int running_now, running_max, order_n;
static int order[6];
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_open;

static int64_t gated(void *arg)
{
	int now = atomic_fetch_add(&running_now, 1) + 1;
	int m = atomic_load(&running_max);
	while (now > m && !atomic_compare_exchange_weak(&running_max, &m, now))
		;
	order[atomic_fetch_add(&order_n, 1)] = (int)(intptr_t)arg;
	pthread_mutex_lock(&gate_mu);
	while (!gate_open)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
	atomic_fetch_sub(&running_now, 1);
	return (int64_t)(intptr_t)arg;
}

struct six {
	int step, got;
	int64_t sum;
	struct pw_blocking b[6];
};

static enum pw_poll six_poll(struct pw_cx *cx, void *state)
{
	struct six *s = state;
	if (s->step == 0) {
		for (intptr_t i = 0; i < 6; i++)
			cr_assert_eq(pw_spawn_blocking(&s->b[i], gated,
						       (void *)(i + 1)),
				     0);
		s->step = 1;
	}
	for (; s->got < 6; s->got++) {
		int64_t v;
		if (pw_blocking_poll(cx, &s->b[s->got], &v) == PW_PENDING)
			return PW_PENDING;
		s->sum += v;
	}
	return pw_ready(cx, s->sum);
}

static struct pw_runtime *RT;
static int64_t six_result;

static void *six_thread(void *arg)
{
	six_result = pw_test_block_on(RT, six_poll, arg);
	return NULL;
}

Test(blocking, cap_of_two_runs_two_and_queues_four)
{
	struct pw_config cfg;
	pw_config_init(&cfg);
	cfg.shards = 1;
	cfg.max_blocking_threads = 2;
	cr_assert_eq(pw_runtime_create(&RT, &cfg), 0);
	static struct six s;
	pthread_t th;
	pthread_create(&th, NULL, six_thread, &s);
	struct pw_blocking_stats st;
	for (int i = 0; i < 5000; i++) {
		pw_runtime_blocking_stats(RT, &st);
		if (atomic_load(&running_now) == 2 &&
		    st.blocking_queue_depth == 4)
			break;
		usleep(1000);
	}
	cr_assert_eq(atomic_load(&running_now), 2);
	cr_assert_eq(st.blocking_queue_depth, 4);
	cr_assert_eq(st.num_blocking_threads, 2);
	cr_assert_eq(st.num_idle_blocking_threads, 0);
	pthread_mutex_lock(&gate_mu);
	gate_open = true;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
	pthread_join(th, NULL);
	cr_assert_eq(six_result, 21);
	cr_assert_eq(atomic_load(&running_max), 2);
	/* FIFO: the queued four started in the order they were spawned. */
	for (int i = 2; i < 6; i++)
		cr_assert_eq(order[i], i + 1);
	pw_runtime_blocking_stats(RT, &st);
	cr_assert_eq(st.jobs_run, 6);
	cr_assert_eq(st.blocking_queue_depth, 0);
	cr_assert_eq(pw_runtime_destroy(RT), 0);
}

Test(blocking, idle_threads_exit_after_keep_alive)
{
	struct pw_config cfg;
	pw_config_init(&cfg);
	cfg.shards = 1;
	cfg.blocking_keep_alive_ns = 20 * MS;
	struct pw_runtime *rt;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	struct one o = { 0 };
	cr_assert_eq(pw_test_block_on(rt, one_poll, &o), 42);
	struct pw_blocking_stats st;
	for (int i = 0; i < 2000; i++) {
		pw_runtime_blocking_stats(rt, &st);
		if (!st.num_blocking_threads)
			break;
		usleep(1000);
	}
	cr_assert_eq(st.num_blocking_threads, 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Under the paused clock a running job holds the time jump back. */
static int64_t slow(void *arg)
{
	(void)arg;
	usleep(50000);
	return 7;
}

struct held {
	int step;
	struct pw_blocking b;
	struct pw_sleep sl;
	struct pw_join j;
};

static enum pw_poll sleeper_poll(struct pw_cx *cx, void *state)
{
	struct pw_sleep *sl = state;
	if (pw_sleep_poll(cx, sl) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, pw_time_now());
}

static enum pw_poll held_poll(struct pw_cx *cx, void *state)
{
	struct held *h = state;
	int64_t v;
	if (h->step == 0) {
		pw_sleep_init(&h->sl, 10 * MS);
		cr_assert_eq(pw_spawn(&h->j, sleeper_poll, &h->sl,
				      sizeof(h->sl), NULL),
			     0);
		cr_assert_eq(pw_spawn_blocking(&h->b, slow, NULL), 0);
		h->step = 1;
	}
	if (h->step == 1) {
		if (pw_blocking_poll(cx, &h->b, &v) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(v, 7);
		/* 50 ms of real time passed; virtual time did not move. */
		cr_assert_eq(pw_time_now(), 0);
		h->step = 2;
	}
	if (pw_join_poll(cx, &h->j, &v) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, v);
}

Test(blocking, paused_clock_waits_for_the_pool)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct held h = { 0 };
	cr_assert_eq(pw_test_block_on(rt, held_poll, &h), (int64_t)(10 * MS));
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

static enum pw_poll bad_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	struct pw_blocking b = { 0 };
	int64_t v = 0;
	cr_assert_eq(pw_spawn_blocking(NULL, triple, NULL), -EINVAL);
	cr_assert_eq(pw_spawn_blocking(&b, NULL, NULL), -EINVAL);
	cr_assert_eq(pw_blocking_poll(cx, &b, &v), PW_READY);
	cr_assert_eq(v, -EINVAL, "never spawned");
	cr_assert_eq(pw_blocking_poll(cx, NULL, &v), PW_READY);
	cr_assert_eq(pw_blocking_poll(NULL, &b, NULL), PW_READY);
	return pw_ready(cx, 0);
}

Test(blocking, bad_input)
{
	struct pw_blocking b = { 0 };
	cr_assert_eq(pw_spawn_blocking(&b, triple, NULL), -EPERM);
	struct pw_runtime *rt = pw_test_runtime(1);
	pw_test_block_on(rt, bad_poll, NULL);
	cr_assert_eq(pw_runtime_blocking_stats(rt, NULL), -EINVAL);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	struct pw_blocking_stats st;
	cr_assert_eq(pw_runtime_blocking_stats(rt, &st), -EINVAL);
	struct pw_config cfg;
	pw_config_init(&cfg);
	cfg.max_blocking_threads = 0;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), -EINVAL);
}
