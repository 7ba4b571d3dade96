/* SPDX-License-Identifier: MIT */
/*
 * rjoin.c - join handles for tasks spawned from outside the runtime
 * (pw_runtime_spawn_join()): a plain thread waits for such a task's
 * result and output without semaphores of its own.
 *
 * The task runs inside a wrapper: its state is a struct rj_task (the
 * handle, the user's poll function and drop hook) followed by the user's
 * state. The wrapper's poll calls the user's; on PW_READY it stores the
 * result and copies the output area into the handle. Its drop hook runs
 * the user's, then marks the handle finished and wakes the waiter (a
 * futex on h->done), so a waiter returns after the task's state is
 * dropped, as a Tokio JoinHandle does. That one drop hook is called in
 * every way a task can end: completed, aborted, dropped at runtime
 * shutdown, or never made (shard mode: no memory on its shard).
 *
 * Abort from another thread: h->abort, then a wake through the task's
 * waker, which the wrapper hands to the handle at its first poll. The
 * mutex orders the hand-over against the abort and the drop, so a waker
 * is never woken after it was dropped. The handle is freed by the last
 * of its two references: the task's (given up in the drop hook) and the
 * caller's (pw_rjoin_wait() or pw_rjoin_detach()).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/task_int.h"
#include "shard/rjoin.h"

struct pw_rjoin {
	/* 0 while the task lives, 1 once its drop hook ran: the futex
	 * word. release store in rj_drop(); acquire loads in
	 * pw_rjoin_wait() and pw_rjoin_abort(). */
	_Atomic uint32_t done;
	/* The task's reference and the caller's. acq_rel decrements: the
	 * last acquires the other's uses before the free. */
	_Atomic uint32_t refs;
	/* Abort requested: seq_cst store in pw_rjoin_abort(), before its
	 * locked look at the waker; seq_cst load in rj_poll(), after its
	 * locked hand-over of the waker (one of the two sees the other). */
	_Atomic bool abort;
	bool have;	       /* completed: result and out are set */
	pthread_mutex_t mu;    /* guards waker */
	struct pw_waker waker; /* the task's, from its first poll to its drop */
	int64_t result;	       /* the task's result when have */
	size_t out_size;       /* bytes of out */
	_Alignas(16) unsigned char out[]; /* the output, when have */
};

/* The wrapper task's state; the user's copied state follows. */
struct rj_task {
	struct pw_rjoin *h;
	pw_poll_fn fn;
	pw_drop_fn drop;
	void *borrowed; /* the user's state when size is 0 */
	size_t size;	/* bytes of the user's state copied below */
	bool armed;	/* the handle holds the task's waker */
	_Alignas(16) unsigned char data[];
};

static void *user_state(struct rj_task *w)
{
	return w->size ? (void *)w->data : w->borrowed;
}

static void rj_unref(struct pw_rjoin *h)
{
	/* acq_rel: see struct pw_rjoin.refs. */
	if (atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) == 1) {
		pthread_mutex_destroy(&h->mu);
		free(h);
	}
}

/* Give the handle the task's waker, for pw_rjoin_abort(). */
static void rj_arm(struct pw_cx *cx, struct rj_task *w)
{
	struct pw_waker me = pw_cx_waker(cx);

	w->armed = true;
	pthread_mutex_lock(&w->h->mu);
	pw_waker_clone(&w->h->waker, &me);
	pthread_mutex_unlock(&w->h->mu);
}

static enum pw_poll rj_poll(struct pw_cx *cx, void *state)
{
	struct rj_task *w = state;
	struct pw_rjoin *h = w->h;

	if (!w->armed)
		rj_arm(cx, w);
	if (atomic_load(&h->abort)) /* seq_cst: see struct pw_rjoin */
		return pw_ready(cx, -ECANCELED);
	if (w->fn(cx, user_state(w)) == PW_PENDING)
		return PW_PENDING;
	h->result = cx->result;
	if (h->out_size)
		memcpy(h->out, pw_task_output(cx), h->out_size);
	h->have = true;
	return PW_READY;
}

static void rj_drop(void *state)
{
	struct rj_task *w = state;
	struct pw_rjoin *h = w->h;
	struct pw_waker wk;

	if (w->drop)
		w->drop(user_state(w));
	pthread_mutex_lock(&h->mu);
	wk = h->waker;
	h->waker.task = NULL;
	pthread_mutex_unlock(&h->mu);
	pw_waker_drop(&wk);
	/* release: publishes result, out and have to the waiter. */
	atomic_store_explicit(&h->done, 1, memory_order_release);
	syscall(SYS_futex, &h->done, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL,
		0);
	rj_unref(h);
}

/* A handle for a task with an output area of @out_size bytes. */
static struct pw_rjoin *rj_new(size_t out_size)
{
	struct pw_rjoin *h = calloc(1, sizeof(*h) + out_size);

	if (!h)
		return NULL;
	atomic_init(&h->done, 0);
	atomic_init(&h->refs, 2);
	atomic_init(&h->abort, false);
	pthread_mutex_init(&h->mu, NULL);
	h->out_size = out_size;
	return h;
}

int pw_runtime_spawn_join(struct pw_runtime *rt, unsigned shard, pw_poll_fn fn,
			  const void *state, size_t size, pw_drop_fn drop,
			  size_t out_size, struct pw_rjoin **hp)
{
	if (hp)
		*hp = NULL;
	if (!hp || !fn || out_size > PW_TASK_STATE_MAX ||
	    size > PW_TASK_STATE_MAX - out_size || (size && !state))
		return -EINVAL;
	struct pw_rjoin *h = rj_new(out_size);
	struct rj_task *w = malloc(sizeof(*w) + size);
	if (!h || !w) {
		free(h);
		free(w);
		return -ENOMEM;
	}
	*w = (struct rj_task){ .h = h, .fn = fn, .drop = drop, .size = size };
	if (size)
		memcpy(w->data, state, size);
	else
		w->borrowed = (void *)state;
	int err = pw__runtime_spawn_out(rt, shard, rj_poll, w,
					sizeof(*w) + size, rj_drop, out_size);
	free(w);
	if (err) {
		pthread_mutex_destroy(&h->mu);
		free(h);
		return err;
	}
	*hp = h;
	return 0;
}

int pw_rjoin_wait(struct pw_rjoin *h, int64_t *result, void *out,
		  size_t out_size)
{
	if (!h || (out_size && (!out || out_size > h->out_size)))
		return -EINVAL;
	if (pw__cur_shard)
		return -EDEADLK;
	/* acquire: pairs with the release store in rj_drop(). */
	while (!atomic_load_explicit(&h->done, memory_order_acquire))
		syscall(SYS_futex, &h->done, FUTEX_WAIT_PRIVATE, 0, NULL, NULL,
			0);
	int err = h->have ? 0 : -ECANCELED;
	if (result)
		*result = h->have ? h->result : -ECANCELED;
	if (h->have && out_size)
		memcpy(out, h->out, out_size);
	rj_unref(h);
	return err;
}

int pw_rjoin_abort(struct pw_rjoin *h)
{
	if (!h)
		return -EINVAL;
	/* acquire: pairs with the release store in rj_drop(). */
	if (atomic_load_explicit(&h->done, memory_order_acquire))
		return -EALREADY;
	atomic_store(&h->abort, true); /* seq_cst: see struct pw_rjoin */
	pthread_mutex_lock(&h->mu);
	pw_waker_wake_by_ref(&h->waker);
	pthread_mutex_unlock(&h->mu);
	return 0;
}

void pw_rjoin_detach(struct pw_rjoin *h)
{
	if (h)
		rj_unref(h);
}

bool pw_rjoin_is_finished(const struct pw_rjoin *h)
{
	/* acquire: pairs with the release store in rj_drop(). */
	return h && atomic_load_explicit(&h->done, memory_order_acquire);
}
