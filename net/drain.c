/* SPDX-License-Identifier: MIT */
/*
 * drain.c - the graceful stop of a server (pinwheel/serve.h): a stop flag
 * every acceptor sees, the count of live connections over all shards,
 * and the wait that aborts what is left at a deadline.
 *
 * Everything sits under one mutex: connections start and end on every
 * shard (and in stealing mode on any worker), far less often than they
 * move bytes, and a lock keeps the count, the stop and the wakes in one
 * order. Waits are one-shot: a change wakes and unlinks every wait (each
 * registers again when it returns PW_PENDING once more). Tokens stay
 * linked for the connection's life: an abort wakes them without
 * unlinking, and pw_drain_done() unlinks.
 *
 * A connection looks at the drain on every poll (pw_drain_watch()), so
 * that look takes no lock: the aborting flag is read with an atomic
 * load, and whether the token is linked is the token's own flag, written
 * only by its task. The stop flag is read the same way by acceptors.
 * (The flags are plain bools in the public struct, reached through the
 * compiler's __atomic builtins: the header stays usable from C++.)
 */
#include <errno.h>
#include <string.h>

#include "pinwheel/serve.h"

static bool linked(const struct pw_list *n)
{
	return n->next && n->next != n;
}

int pw_drain_init(struct pw_drain *d, uint64_t max_conns)
{
	if (!d)
		return -EINVAL;
	memset(d, 0, sizeof(*d));
	pthread_mutex_init(&d->lock, NULL);
	pw_list_init(&d->watch);
	pw_list_init(&d->waits);
	d->max = max_conns;
	return 0;
}

void pw_drain_destroy(struct pw_drain *d)
{
	if (d)
		pthread_mutex_destroy(&d->lock);
}

/* Wake and unlink every wait of @d. Under d->lock. */
static void wake_waits(struct pw_drain *d)
{
	while (!pw_list_empty(&d->waits)) {
		struct pw_drain_wait *w = pw_list_first_entry(
			&d->waits, struct pw_drain_wait, node);

		pw_list_del_init(&w->node);
		pw_waker_wake(&w->waker);
	}
}

int pw_drain_stop(struct pw_drain *d)
{
	if (!d)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	/* Release: pairs with the acquire load in pw_drain_stopping(). */
	__atomic_store_n(&d->stopping, true, __ATOMIC_RELEASE);
	wake_waits(d);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/* Read one field under the lock: every reader is a stop check or a
 * counter, never a hot path. */
#define DRAIN_READ(d, expr)                       \
	({                                        \
		__typeof__(expr) v_;              \
		pthread_mutex_lock(&(d)->lock);   \
		v_ = (expr);                      \
		pthread_mutex_unlock(&(d)->lock); \
		v_;                               \
	})

bool pw_drain_stopping(struct pw_drain *d)
{
	/* Acquire: pairs with the release store in pw_drain_stop(). */
	return d && __atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE);
}

uint64_t pw_drain_live(struct pw_drain *d)
{
	return d ? DRAIN_READ(d, d->live) : 0;
}

uint64_t pw_drain_total(struct pw_drain *d)
{
	return d ? DRAIN_READ(d, d->total) : 0;
}

bool pw_drain_full(struct pw_drain *d)
{
	return d && DRAIN_READ(d, d->max && d->live >= d->max);
}

void pw_drain_token_init(struct pw_drain_token *t)
{
	if (t)
		memset(t, 0, sizeof(*t));
}

void pw_drain_add(struct pw_drain *d, struct pw_drain_token *t)
{
	if (!d || !t)
		return;
	memset(t, 0, sizeof(*t));
	t->d = d;
	t->counted = true;
	pthread_mutex_lock(&d->lock);
	d->live++;
	d->total++;
	pthread_mutex_unlock(&d->lock);
}

bool pw_drain_watch(struct pw_cx *cx, struct pw_drain *d,
		    struct pw_drain_token *t)
{
	bool abort;

	if (!cx || !d || !t)
		return false;
	/* Acquire: pairs with the release store in drain_abort(). */
	if (__atomic_load_n(&d->aborting, __ATOMIC_ACQUIRE))
		return true;
	if (t->linked || !t->counted)
		return false;
	pthread_mutex_lock(&d->lock);
	abort = d->aborting; /* under the lock: no abort passes unseen */
	if (!abort) {
		struct pw_waker w = pw_cx_waker(cx);

		if (!pw_waker_clone(&t->waker, &w)) {
			pw_list_add_tail(&t->node, &d->watch);
			t->linked = true;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return abort;
}

void pw_drain_done(struct pw_drain *d, struct pw_drain_token *t)
{
	if (!d || !t || !t->counted)
		return;
	pthread_mutex_lock(&d->lock);
	if (t->linked)
		pw_list_del_init(&t->node);
	t->linked = false;
	pw_waker_drop(&t->waker);
	t->counted = false;
	d->live--;
	/* The last one ends a wait; one below the cap frees an acceptor. */
	if (!d->live || (d->max && d->live + 1 == d->max))
		wake_waits(d);
	pthread_mutex_unlock(&d->lock);
}

void pw_drain_wake_me(struct pw_cx *cx, struct pw_drain *d,
		      struct pw_drain_wait *w)
{
	if (!cx || !d || !w)
		return;
	pthread_mutex_lock(&d->lock);
	if (!linked(&w->node)) {
		struct pw_waker cw = pw_cx_waker(cx);

		if (!pw_waker_clone(&w->waker, &cw)) {
			w->d = d;
			pw_list_add_tail(&w->node, &d->waits);
		}
	}
	pthread_mutex_unlock(&d->lock);
}

void pw_drain_wait_cancel(struct pw_drain_wait *w)
{
	struct pw_drain *d = w ? w->d : NULL;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	if (linked(&w->node))
		pw_list_del_init(&w->node);
	pw_waker_drop(&w->waker);
	pthread_mutex_unlock(&d->lock);
	pw_sleep_cancel(&w->timer);
	w->d = NULL;
}

/* The deadline passed: tell every live connection to abort. Under the
 * lock. The ones not yet watched see d->aborting at their first poll. */
static void drain_abort(struct pw_drain *d)
{
	struct pw_list *n;

	if (d->aborting)
		return;
	/* Release: pairs with the acquire load in pw_drain_watch(). */
	__atomic_store_n(&d->aborting, true, __ATOMIC_RELEASE);
	d->aborted = d->live;
	pw_list_for_each (n, &d->watch) {
		struct pw_drain_token *t =
			pw_list_entry(n, struct pw_drain_token, node);

		pw_waker_wake_by_ref(&t->waker);
	}
}

enum pw_poll pw_drain_wait_poll(struct pw_cx *cx, struct pw_drain *d,
				struct pw_drain_wait *w, pw_time_t deadline,
				int64_t *aborted)
{
	bool expired;

	if (!aborted)
		return PW_READY;
	if (!cx || !d || !w) {
		*aborted = -EINVAL;
		return PW_READY;
	}
	if (w->d != d) {
		memset(w, 0, sizeof(*w));
		pw_sleep_init_at(&w->timer, deadline);
	}
	pw_drain_stop(d);
	pw_drain_wake_me(cx, d, w); /* before the check: no lost wake */
	expired = pw_sleep_poll(cx, &w->timer) == PW_READY;
	pthread_mutex_lock(&d->lock);
	if (expired && d->live)
		drain_abort(d);
	if (d->live) {
		pthread_mutex_unlock(&d->lock);
		return PW_PENDING;
	}
	*aborted = (int64_t)d->aborted;
	pthread_mutex_unlock(&d->lock);
	pw_drain_wait_cancel(w);
	return PW_READY;
}
