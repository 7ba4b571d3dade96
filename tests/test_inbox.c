/* SPDX-License-Identifier: MIT */
/*
 * test_inbox.c - other threads spawning onto a shard and waking its tasks
 * through the external inbox: nothing is lost while the shard alternates
 * between running and sleeping in the kernel.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/common.h"
#include "shard/shard_int.h"

#define WAKERS 2

static _Atomic uint64_t produced;
static uint64_t total;
static _Atomic(struct pw__task *) published;
static struct pw_waker shared_waker;
static struct pw_runtime *inbox_rt;
/* A waking thread's failure, or NULL; it then wakes the watcher, which
 * ends so that the test reports it instead of waiting. */
static _Atomic(const char *) waker_failed;

struct watcher {
	uint64_t seen, polls;
};

static enum pw_poll watcher_poll(struct pw_cx *cx, void *state)
{
	struct watcher *w = state;
	w->polls++;
	if (!shared_waker.task) {
		struct pw_waker me = pw_cx_waker(cx);
		cr_assert_eq(pw_waker_clone(&shared_waker, &me), 0);
		/* release: publishes the clone to the waking threads;
		 * pairs with their acquire load. */
		atomic_store_explicit(&published, shared_waker.task,
				      memory_order_release);
	}
	if (atomic_load(&waker_failed))
		return pw_ready(cx, -1);
	/* acquire: pairs with the release increments of the wakers, made
	 * before each wake. */
	w->seen = atomic_load_explicit(&produced, memory_order_acquire);
	if (w->seen == total)
		return pw_ready(cx, (int64_t)w->seen);
	return PW_PENDING;
}

/* Give up on @why: the watcher is woken to see it. */
static void *waker_fail(struct pw_waker *w, const char *why)
{
	atomic_store(&waker_failed, why);
	if (w->task)
		pw_waker_wake_by_ref(w);
	return NULL;
}

static void *waker_thread(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct pw_waker w = { NULL };
	uint64_t dl = pw_test_now_ns() + PW_TEST_WAIT_SECS * 1000000000ull;

	/* acquire: pairs with the release store of the watcher. */
	while (!(w.task = atomic_load_explicit(&published,
					       memory_order_acquire)))
		if (!pw_test_wait_step(dl))
			return waker_fail(&w, "the watcher never started");
	for (uint64_t i = 0; i < total / WAKERS; i++) {
		/* release: the watcher must see this count once woken. */
		atomic_fetch_add_explicit(&produced, 1, memory_order_release);
		pw_waker_wake_by_ref(&w);
		/* Now and then wait until the shard, out of work, sleeps
		 * in the kernel, so that the next wake must rouse it. */
		if ((rand_r(&seed) & 1023) == 0)
			/* seq_cst: the flag the shard raises before its
			 * kernel wait. */
			while (!atomic_load(&inbox_rt->shards[0]->asleep))
				if (!pw_test_wait_step(dl))
					return waker_fail(
						&w, "the shard never slept");
	}
	return NULL;
}

/* Two threads wake a shard's task a million times in all, now and then
 * waiting for the shard to fall asleep first: the task sees every count
 * (no wake lost), is polled at most once per wake, the sleeping shard is
 * roused, and dropping the last waker frees the task. */
Test(inbox, million_foreign_wakes_none_lost)
{
	pw_test_time_limit(120);
	total = (uint64_t)(1000000 * pw_test_scale()) / WAKERS * WAKERS;
	struct pw_runtime *rt = pw_test_runtime(1);
	pthread_t th[WAKERS];
	inbox_rt = rt;
	for (uintptr_t i = 0; i < WAKERS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, waker_thread,
					    (void *)(i + 1)),
			     0);
	struct watcher w = { 0 };
	int64_t seen = pw_test_block_on(rt, watcher_poll, &w);
	for (int i = 0; i < WAKERS; i++)
		cr_assert_eq(pthread_join(th[i], NULL), 0);
	cr_assert_null(atomic_load(&waker_failed), "%s",
		       atomic_load(&waker_failed));
	cr_assert_eq(seen, (int64_t)total);
	struct pw_shard_stats st;
	cr_assert_eq(pw_runtime_stats(rt, 0, &st), 0);
	cr_assert_leq(w.polls, total + 1, "polled more often than woken");
	cr_assert_gt(st.kernel_waits, 0, "the shard never slept");
	cr_assert_gt(st.wakeups_sent, 0, "no sleeping shard was roused");
	if (!pw_test_steal()) /* stealing mode wakes through the state word */
		cr_assert_gt(st.remote_wakes, 0);
	pw_waker_drop(&shared_waker);
	st = pw_test_wait_live(rt, 0, 0);
	cr_assert_eq(st.live_tasks, 0, "the dropped waker freed the task");
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Spawns from several threads: every task runs exactly once. */
static _Atomic uint64_t ran;

static enum pw_poll count_poll(struct pw_cx *cx, void *state)
{
	uint64_t *v = state;
	/* relaxed: a plain count, read after the runtime's own sync. */
	atomic_fetch_add_explicit(&ran, *v, memory_order_relaxed);
	return pw_ready(cx, 0);
}

struct spawner {
	struct pw_runtime *rt;
	int n;
};

static void *spawn_thread(void *arg)
{
	struct spawner *sp = arg;
	for (int i = 0; i < sp->n; i++) {
		uint64_t one = 1;
		int err = pw_runtime_spawn(sp->rt, 0, count_poll, &one,
					   sizeof(one), NULL);
		cr_assert_eq(err, 0);
	}
	return NULL;
}

Test(inbox, foreign_spawns_each_run_once)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	int n = (int)(20000 * pw_test_scale());
	struct spawner sp = { rt, n };
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, spawn_thread, &sp),
			     0);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_join(th[i], NULL), 0);
	PW_TEST_WAIT_UNTIL(atomic_load(&ran) >= (uint64_t)(2 * n),
			   PW_TEST_WAIT_SECS, "%llu of %d tasks ran",
			   (unsigned long long)atomic_load(&ran), 2 * n);
	/* Counted in the turn that made them, published at its end. */
	struct pw_shard_stats st = { 0 };
	if (!pw_test_steal()) /* stealing mode: made by the spawning thread */
		PW_TEST_WAIT_UNTIL(pw_runtime_stats(rt, 0, &st) == 0 &&
					   st.spawned >= (uint64_t)(2 * n),
				   PW_TEST_WAIT_SECS, "%llu spawns counted",
				   (unsigned long long)st.spawned);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	/* Each ran once: none lost, none twice. */
	cr_assert_eq(atomic_load(&ran), (uint64_t)(2 * n));
	if (!pw_test_steal())
		cr_assert_eq(st.spawned, (uint64_t)(2 * n));
}

Test(inbox, runtime_spawn_bad_input)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	uint64_t v = 1;
	cr_assert_eq(pw_runtime_spawn(rt, 1, count_poll, &v, sizeof(v), NULL),
		     -ENODEV);
	cr_assert_eq(pw_runtime_spawn(rt, 0, NULL, &v, sizeof(v), NULL),
		     -EINVAL);
	cr_assert_eq(pw_runtime_spawn(rt, 0, count_poll, NULL, 8, NULL),
		     -EINVAL);
	cr_assert_eq(pw_runtime_spawn(rt, 0, count_poll, &v,
				      PW_TASK_STATE_MAX + 1, NULL),
		     -EINVAL);
	cr_assert_eq(pw_runtime_spawn(NULL, 0, count_poll, &v, sizeof(v), NULL),
		     -EINVAL);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_runtime_spawn(rt, 0, count_poll, &v, sizeof(v), NULL),
		     -EINVAL, "a destroyed runtime is refused");
}
