/* SPDX-License-Identifier: MIT */
/*
 * oneshot.c - the one-shot channel: one atomic state word and two waker
 * slots in a block the two handles share.
 *
 * Bits of the state: COMPLETE (the sender sent or dropped), VALUE (it
 * sent), CLOSED (the receiver closed or dropped), RX_TASK and TX_TASK (a
 * waker is registered in rx_waker / tx_waker). This is Tokio's protocol:
 * a side writes its waker only while its TASK bit is clear, then sets the
 * bit; the other side reads (wakes by reference) that waker only after
 * the bit-setting read-modify-write of its own event saw the TASK bit.
 * To replace a waker a side clears its bit first; if the event it waits
 * for arrived meanwhile, it sets the bit back and leaves the waker alone
 * (the other side may be waking it). Registered wakers are dropped when
 * the block is freed.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pinwheel/oneshot.h"

#define OS_COMPLETE 1u
#define OS_VALUE    2u
#define OS_CLOSED   4u
#define OS_RX_TASK  8u
#define OS_TX_TASK  16u

struct pw_oneshot {
	_Atomic uint32_t state;
	_Atomic uint32_t refs; /* live handles */
	struct pw_waker rx_waker, tx_waker;
	size_t size;
	_Alignas(16) unsigned char value[];
};

int pw_oneshot_open(size_t size, struct pw_oneshot_tx *tx,
		    struct pw_oneshot_rx *rx)
{
	if (!tx || !rx || size > PW_ONESHOT_VALUE_MAX)
		return -EINVAL;
	struct pw_oneshot *o = calloc(1, sizeof(*o) + size);
	if (!o)
		return -ENOMEM;
	atomic_init(&o->state, 0);
	atomic_init(&o->refs, 2);
	o->size = size;
	tx->o = o;
	rx->o = o;
	rx->done = false;
	return 0;
}

static void put_ref(struct pw_oneshot *o)
{
	/* acq_rel: the last drop sees the other side's writes. */
	if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1)
		return;
	/* relaxed: both handles are gone; the fetch_sub ordered it all. */
	uint32_t s = atomic_load_explicit(&o->state, memory_order_relaxed);
	if (s & OS_RX_TASK)
		pw_waker_drop(&o->rx_waker);
	if (s & OS_TX_TASK)
		pw_waker_drop(&o->tx_waker);
	free(o);
}

/* The sender's last act: set COMPLETE (with @bits), wake the receiver.
 * Return: 0, or -EPIPE when the receiver had closed. */
static int complete(struct pw_oneshot_tx *tx, uint32_t bits)
{
	struct pw_oneshot *o = tx->o;
	/* acq_rel: releases the value to the receiver's acquire load;
	 * acquires its waker when RX_TASK is seen set. */
	uint32_t s = atomic_fetch_or_explicit(&o->state, OS_COMPLETE | bits,
					      memory_order_acq_rel);

	if ((s & OS_RX_TASK) && !(s & OS_CLOSED))
		pw_waker_wake_by_ref(&o->rx_waker);
	tx->o = NULL;
	put_ref(o);
	return s & OS_CLOSED ? -EPIPE : 0;
}

int pw_oneshot_send(struct pw_oneshot_tx *tx, const void *value)
{
	if (!tx || !tx->o || (!value && tx->o->size))
		return -EINVAL;
	/* relaxed: a hint; complete() decides. Saves the copy. */
	if (atomic_load_explicit(&tx->o->state, memory_order_relaxed) &
	    OS_CLOSED)
		return complete(tx, 0);
	if (tx->o->size)
		memcpy(tx->o->value, value, tx->o->size);
	return complete(tx, OS_VALUE);
}

void pw_oneshot_tx_drop(struct pw_oneshot_tx *tx)
{
	if (tx && tx->o)
		complete(tx, 0);
}

bool pw_oneshot_is_closed(const struct pw_oneshot_tx *tx)
{
	/* acquire: pairs with the fetch_or in pw_oneshot_close(). */
	return !tx || !tx->o ||
	       (atomic_load_explicit(&tx->o->state, memory_order_acquire) &
		OS_CLOSED);
}

/*
 * Register the current task in @slot under @task_bit until @event is
 * set. Return: true when @event is set (now or meanwhile), false when
 * registered; *@err gets -ENOMEM if the waker could not be cloned.
 */
static bool register_waker(struct pw_cx *cx, struct pw_oneshot *o,
			   struct pw_waker *slot, uint32_t task_bit,
			   uint32_t event, int *err)
{
	/* acquire: pairs with the other side's acq_rel event RMW. */
	uint32_t s = atomic_load_explicit(&o->state, memory_order_acquire);
	struct pw_waker cur = pw_cx_waker(cx);

	*err = 0;
	if (s & event)
		return true;
	if (s & task_bit) {
		if (pw_waker_will_wake(slot, &cur))
			return false;
		/* acq_rel: takes the waker back from the other side. */
		s = atomic_fetch_and_explicit(&o->state, ~task_bit,
					      memory_order_acq_rel);
		if (s & event) {
			/* The other side may be waking it: leave it. */
			atomic_fetch_or_explicit(&o->state, task_bit,
						 memory_order_relaxed);
			return true;
		}
		pw_waker_drop(slot);
	}
	*err = pw_waker_clone(slot, &cur);
	if (*err)
		return true;
	/* acq_rel: publishes the waker to the other side's event RMW. */
	s = atomic_fetch_or_explicit(&o->state, task_bit, memory_order_acq_rel);
	return s & event;
}

enum pw_poll pw_oneshot_closed_poll(struct pw_cx *cx, struct pw_oneshot_tx *tx)
{
	int err;

	if (!cx || !cx->task || !tx || !tx->o)
		return PW_READY;
	return register_waker(cx, tx->o, &tx->o->tx_waker, OS_TX_TASK,
			      OS_CLOSED, &err) ?
		       PW_READY :
		       PW_PENDING;
}

/* The outcome, once COMPLETE is seen in @s. */
static int outcome(struct pw_oneshot_rx *rx, uint32_t s, void *value)
{
	rx->done = true;
	if (!(s & OS_VALUE))
		return -EPIPE;
	if (rx->o->size)
		memcpy(value, rx->o->value, rx->o->size);
	return 0;
}

static bool rx_valid(const struct pw_oneshot_rx *rx, const void *value)
{
	return rx && rx->o && (value || !rx->o->size);
}

enum pw_poll pw_oneshot_recv_poll(struct pw_cx *cx, struct pw_oneshot_rx *rx,
				  void *value, int *res)
{
	int err;

	if (!res)
		return PW_READY;
	if (!cx || !cx->task || !rx_valid(rx, value)) {
		*res = -EINVAL;
		return PW_READY;
	}
	if (rx->done) {
		*res = -EALREADY;
		return PW_READY;
	}
	struct pw_oneshot *o = rx->o;
	if (!register_waker(cx, o, &o->rx_waker, OS_RX_TASK, OS_COMPLETE, &err))
		return PW_PENDING;
	if (err) {
		*res = err;
		return PW_READY;
	}
	/* acquire: pairs with the acq_rel fetch_or in complete(). */
	*res = outcome(rx,
		       atomic_load_explicit(&o->state, memory_order_acquire),
		       value);
	return PW_READY;
}

int pw_oneshot_try_recv(struct pw_oneshot_rx *rx, void *value)
{
	if (!rx_valid(rx, value))
		return -EINVAL;
	if (rx->done)
		return -EALREADY;
	/* acquire: pairs with the acq_rel fetch_or in complete(). */
	uint32_t s = atomic_load_explicit(&rx->o->state, memory_order_acquire);
	if (!(s & OS_COMPLETE))
		return -EAGAIN;
	return outcome(rx, s, value);
}

int pw_oneshot_close(struct pw_oneshot_rx *rx)
{
	if (!rx || !rx->o)
		return -EINVAL;
	struct pw_oneshot *o = rx->o;
	/* acq_rel: releases the close to is_closed()'s acquire; acquires
	 * the sender's waker when TX_TASK is seen set. */
	uint32_t s = atomic_fetch_or_explicit(&o->state, OS_CLOSED,
					      memory_order_acq_rel);

	if (s & OS_CLOSED)
		return -EALREADY;
	if ((s & OS_TX_TASK) && !(s & OS_COMPLETE))
		pw_waker_wake_by_ref(&o->tx_waker);
	return 0;
}

void pw_oneshot_rx_drop(struct pw_oneshot_rx *rx)
{
	if (!rx || !rx->o)
		return;
	pw_oneshot_close(rx);
	put_ref(rx->o);
	rx->o = NULL;
}
