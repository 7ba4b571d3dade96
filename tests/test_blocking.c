/* SPDX-License-Identifier: MIT */
/*
 * test_blocking.c - the blocking pool: results come back to the spawning
 * shard, the thread cap queues the rest FIFO, idle threads expire, the
 * paused clock holds still while a job runs, and bad input.
 */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "tests/common.h"
#include "shard/shard_int.h"

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
	pw_test_config_init(&cfg);
	cfg.shards = 1;
	cfg.max_blocking_threads = 2;
	cr_assert_eq(pw_runtime_create(&RT, &cfg), 0);
	static struct six s;
	pthread_t th;
	pthread_create(&th, NULL, six_thread, &s);
	struct pw_blocking_stats st = { 0 };
	PW_TEST_WAIT_UNTIL(pw_runtime_blocking_stats(RT, &st) == 0 &&
				   atomic_load(&running_now) == 2 &&
				   st.blocking_queue_depth == 4,
			   PW_TEST_WAIT_SECS,
			   "%d jobs running, %llu queued; 2 and 4 expected",
			   atomic_load(&running_now),
			   (unsigned long long)st.blocking_queue_depth);
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
	pw_test_config_init(&cfg);
	cfg.shards = 1;
	cfg.blocking_keep_alive_ns = 20 * MS;
	struct pw_runtime *rt;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	struct one o = { 0 };
	cr_assert_eq(pw_test_block_on(rt, one_poll, &o), 42);
	struct pw_blocking_stats st = { 0 };
	PW_TEST_WAIT_UNTIL(pw_runtime_blocking_stats(rt, &st) == 0 &&
				   st.num_blocking_threads == 0,
			   PW_TEST_WAIT_SECS,
			   "%llu pool threads still alive after keep-alive",
			   (unsigned long long)st.num_blocking_threads);
	cr_assert_eq(st.num_idle_blocking_threads, 0);
	cr_assert_eq(st.jobs_run, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/*
 * Under the paused clock a running job holds the time jump back: the job
 * lasts until the shard has gone idle with the sleeper's timer pending,
 * the moment the clock would have jumped without it.
 */
static struct pw_runtime *held_rt;

static int64_t slow(void *arg)
{
	(void)arg;
	PW_TEST_WAIT_UNTIL(atomic_load(&held_rt->shards[0]->asleep),
			   PW_TEST_WAIT_SECS,
			   "the shard never went idle while the job ran");
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
		/* The shard went idle; virtual time did not move. */
		cr_assert_eq(pw_time_now(), 0);
		h->step = 2;
	}
	if (pw_join_poll(cx, &h->j, &v) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, v);
}

Test(blocking, paused_clock_waits_for_the_pool)
{
	struct pw_runtime *rt = held_rt = pw_test_paused_runtime(1);
	struct held h = { 0 };
	cr_assert_eq(pw_test_block_on(rt, held_poll, &h), (int64_t)(10 * MS));
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- refused jobs -------------------------------------------------------- */

static _Atomic int refused_runs;

static int64_t refused(void *arg)
{
	(void)arg;
	atomic_fetch_add(&refused_runs, 1);
	return -1;
}

/*
 * While pw_runtime_destroy() stops the pool (a job still running holds
 * it there, the shards still run), a task's pw_spawn_blocking() is
 * refused with -ESHUTDOWN: the job never runs and @b stays idle.
 */
static struct pw_runtime *stop_rt;
static _Atomic bool held_running, second_tried;
static int stop_fds[2];
static int second_err;
static uint8_t second_state;

static bool pool_stopping(void)
{
	pthread_mutex_lock(&stop_rt->pool.mu);
	bool v = stop_rt->pool.stopping;
	pthread_mutex_unlock(&stop_rt->pool.mu);
	return v;
}

static int64_t held_job(void *arg)
{
	(void)arg;
	atomic_store(&held_running, true);
	PW_TEST_WAIT_UNTIL(pool_stopping(), PW_TEST_WAIT_SECS,
			   "pw_runtime_destroy() never stopped the pool");
	cr_assert_eq(write(stop_fds[1], "x", 1), 1);
	PW_TEST_WAIT_UNTIL(atomic_load(&second_tried), PW_TEST_WAIT_SECS,
			   "the task never tried its second job");
	return 5;
}

struct stopper {
	int step;
	char buf[1];
	struct pw_op op;
	struct pw_blocking held, second;
};

static void prep_stop_read(struct io_uring_sqe *sqe, void *arg)
{
	struct stopper *st = arg;
	io_uring_prep_read(sqe, stop_fds[0], st->buf, sizeof(st->buf), 0);
}

static enum pw_poll stopper_poll(struct pw_cx *cx, void *state)
{
	struct stopper *st = state;
	int32_t res;
	int64_t v;

	if (st->step == 0) {
		pw_op_init(&st->op);
		cr_assert_eq(pw_spawn_blocking(&st->held, held_job, NULL), 0);
		st->step = 1;
	}
	if (st->step == 1) {
		/* Until the held job says the pool is stopping. */
		if (pw_op_poll(cx, &st->op, prep_stop_read, st, &res) ==
		    PW_PENDING)
			return PW_PENDING;
		second_err = pw_spawn_blocking(&st->second, refused, NULL);
		second_state = st->second.state;
		atomic_store(&second_tried, true);
		st->step = 2;
	}
	if (pw_blocking_poll(cx, &st->held, &v) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, v);
}

Test(blocking, spawn_while_the_pool_stops_is_eshutdown)
{
	pw_test_time_limit(120);
	struct stopper st = { 0 };

	cr_assert_eq(pipe(stop_fds), 0);
	stop_rt = pw_test_runtime(1);
	cr_assert_eq(pw_runtime_spawn(stop_rt, 0, stopper_poll, &st, sizeof(st),
				      NULL),
		     0);
	PW_TEST_WAIT_UNTIL(atomic_load(&held_running), PW_TEST_WAIT_SECS,
			   "the held job never started");
	cr_assert_eq(pw_runtime_destroy(stop_rt), 0);
	cr_assert(atomic_load(&second_tried));
	cr_assert_eq(second_err, -ESHUTDOWN);
	cr_assert_eq(second_state, PW_BLOCKING_IDLE);
	cr_assert_eq(atomic_load(&refused_runs), 0);
	close(stop_fds[0]);
	close(stop_fds[1]);
}

/*
 * With no pool thread alive and none that can start (the default thread
 * stack made larger than the address space), pw_spawn_blocking() is
 * -EAGAIN: nothing is queued, the job never runs, the task holds no
 * memory, and the pool works once threads can start again.
 */
static int eagain_err;
static uint8_t eagain_state;

static enum pw_poll eagain_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	struct pw_blocking b = { 0 };
	eagain_err = pw_spawn_blocking(&b, refused, NULL);
	eagain_state = b.state;
	return pw_ready(cx, 0);
}

Test(blocking, no_thread_can_start_is_eagain)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	pthread_attr_t def, huge;
	struct pw_blocking_stats st;

	cr_assert_eq(pthread_getattr_default_np(&def), 0);
	cr_assert_eq(pthread_attr_init(&huge), 0);
	cr_assert_eq(pthread_attr_setstacksize(&huge, (size_t)1 << 47), 0);
	cr_assert_eq(pthread_setattr_default_np(&huge), 0);
	pw_test_block_on(rt, eagain_poll, NULL);
	cr_assert_eq(pthread_setattr_default_np(&def), 0);
	pthread_attr_destroy(&huge);
	pthread_attr_destroy(&def);
	cr_assert_eq(eagain_err, -EAGAIN);
	cr_assert_eq(eagain_state, PW_BLOCKING_IDLE);
	cr_assert_eq(pw_runtime_blocking_stats(rt, &st), 0);
	cr_assert_eq(st.num_blocking_threads, 0);
	cr_assert_eq(st.blocking_queue_depth, 0);
	cr_assert_eq(st.jobs_run, 0);
	cr_assert_eq(pw_test_wait_live(rt, 0, 0).live_tasks, 0);

	struct one o = { 0 };
	cr_assert_eq(pw_test_block_on(rt, one_poll, &o), 42);
	cr_assert_eq(pw_runtime_blocking_stats(rt, &st), 0);
	cr_assert_eq(st.jobs_run, 1, "only the later job ran");
	cr_assert_eq(atomic_load(&refused_runs), 0);
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
	pw_test_config_init(&cfg);
	cfg.max_blocking_threads = 0;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), -EINVAL);
}
