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

#include "common.h"

#define WAKERS 2

static _Atomic uint64_t produced;
static uint64_t total;
static _Atomic(struct pw__task *) published;
static struct pw_waker shared_waker;

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
	/* acquire: pairs with the release increments of the wakers, made
	 * before each wake. */
	w->seen = atomic_load_explicit(&produced, memory_order_acquire);
	if (w->seen == total)
		return pw_ready(cx, (int64_t)w->seen);
	return PW_PENDING;
}

static void *waker_thread(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct pw_waker w;
	/* acquire: pairs with the release store of the watcher. */
	while (!(w.task = atomic_load_explicit(&published,
					       memory_order_acquire)))
		usleep(100);
	for (uint64_t i = 0; i < total / WAKERS; i++) {
		/* release: the watcher must see this count once woken. */
		atomic_fetch_add_explicit(&produced, 1, memory_order_release);
		pw_waker_wake_by_ref(&w);
		/* Pause now and then so the shard goes to sleep. */
		if ((rand_r(&seed) & 1023) == 0)
			usleep(rand_r(&seed) % 200);
	}
	return NULL;
}

Test(inbox, million_foreign_wakes_none_lost)
{
	pw_test_time_limit(120);
	total = (uint64_t)(1000000 * pw_test_scale()) / WAKERS * WAKERS;
	struct pw_runtime *rt = pw_test_runtime(1);
	pthread_t th[WAKERS];
	for (uintptr_t i = 0; i < WAKERS; i++)
		pthread_create(&th[i], NULL, waker_thread, (void *)(i + 1));
	struct watcher w = { 0 };
	cr_assert_eq(pw_test_block_on(rt, watcher_poll, &w), (int64_t)total);
	for (int i = 0; i < WAKERS; i++)
		pthread_join(th[i], NULL);
	struct pw_shard_stats st;
	pw_runtime_stats(rt, 0, &st);
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
		pthread_create(&th[i], NULL, spawn_thread, &sp);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 60000 && atomic_load(&ran) < (uint64_t)(2 * n); i++)
		usleep(1000);
	struct pw_shard_stats st;
	pw_runtime_stats(rt, 0, &st);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	/* Each ran once: none lost, none twice. */
	cr_assert_eq(atomic_load(&ran), (uint64_t)(2 * n));
	if (!pw_test_steal()) /* stealing mode: made by the spawning thread */
		cr_assert_geq(st.spawned, (uint64_t)(2 * n));
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
