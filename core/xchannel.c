/* SPDX-License-Identifier: MIT */
/*
 * xchannel.c - the cross-shard bounded channel: a semaphore of slots in
 * front of a lock-free multi-producer ring, one receiving task.
 *
 * The semaphore is one atomic word: free permits << 2, a CLOSED bit and
 * a WAITERS bit. WAITERS is set and cleared only under the channel's
 * mutex, and is set exactly while the waiting list is non-empty; it is
 * set only when no permit is free, and while it is set a returned permit
 * is handed to the head waiter instead of being added, so WAITERS implies
 * zero free permits. The fast acquire (a compare-and-swap) fails while
 * either bit is set, which sends the caller to the mutex: that is the
 * whole of the FIFO rule. Tokio's batch semaphore does the same.
 *
 * The ring is Dmitry Vyukov's bounded queue, used with one consumer: a
 * power-of-two array of slots, each with a sequence word. A producer that
 * holds a permit claims position p with a fetch-add on the tail, writes
 * its item into slot p & mask and stores p + 1 into that slot's word
 * (release); the consumer at p takes the item once it reads p + 1
 * (acquire) and frees the slot by storing p + size. A permit is held from
 * before the claim until the consumer has taken the item, and there are
 * capacity <= size permits, so a claimed slot is always already free.
 *
 * The receiver's waker is an atomic task pointer holding an owned clone:
 * the receiver parks by exchanging its clone in, then re-checks the ring
 * and the semaphore; a producer publishes (its item's sequence word, a
 * returned permit, the CLOSED bit), then looks at the pointer and, if one
 * is there, exchanges it out and wakes it. Every one of those four steps
 * is a seq_cst operation, so they form a Dekker pair: either the receiver
 * sees what was published or the producer sees the waker. (Operations,
 * not fences: ThreadSanitizer does not model fences.) A busy receiver
 * costs producers one load.
 *
 * End of stream: closed, and every permit back (free in the word): no
 * sender holds a slot it has yet to fill, so the ring is empty for good.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/task_int.h"
#include "pinwheel/xchannel.h"

#define SEM_WAITERS 1ull
#define SEM_CLOSED  2ull
#define SEM_ONE	    4ull

/* States of a sender handle (its `state` word). */
enum { TX_IDLE, TX_WAITING, TX_GRANTED, TX_REFUSED };

struct slot_hdr {
	_Atomic uint64_t seq;
};

struct pw_xchan {
	/* Producers' claim counter, on a line of its own. */
	_Alignas(64) _Atomic uint64_t tail;
	/* The semaphore and the slow path. */
	_Alignas(64) _Atomic uint64_t sem;
	pthread_mutex_t mu;	/* guards waiters and nwaiting */
	struct pw_list waiters; /* waiting senders, oldest first */
	uint32_t nwaiting;	/* under mu */
	_Atomic uint64_t full_waits;
	_Atomic uint32_t ntx;  /* live sender handles */
	_Atomic uint32_t refs; /* live handles of both kinds */
	_Atomic bool tx_closed, rx_closed;
	/* The parked receiver: an owned waker's task, or NULL. */
	_Alignas(64) _Atomic(struct pw__task *) rx_task;
	/* Consumer-only fields. */
	_Alignas(64) uint64_t head;
	size_t item_size, stride;
	uint32_t cap, mask;
	_Alignas(64) unsigned char slots[];
};

static enum pw_poll stream_poll_next(struct pw_cx *cx, struct pw_stream *s,
				     void *item, int *res);
static void stream_drop(struct pw_stream *s);

static const struct pw_stream_ops xchan_stream_ops = {
	.poll_next = stream_poll_next,
	.drop = stream_drop,
};

static inline struct slot_hdr *slot_at(struct pw_xchan *ch, uint64_t pos)
{
	return (struct slot_hdr *)(ch->slots +
				   (size_t)(pos & ch->mask) * ch->stride);
}

/* The handle's state word, shared with the thread that grants or
 * refuses it (always under the mutex). */
static inline uint32_t tx_state(const struct pw_xchan_tx *tx)
{
	/* acquire: pairs with the release store in set_state(), so the
	 * granter's or closer's writes (the waker taken) are seen. */
	return __atomic_load_n(&tx->state, __ATOMIC_ACQUIRE);
}

static inline void set_state(struct pw_xchan_tx *tx, uint32_t st)
{
	/* release: pairs with the acquire load in tx_state(). */
	__atomic_store_n(&tx->state, st, __ATOMIC_RELEASE);
}

static void futex_wake(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* ---- the receiver's waker ------------------------------------------- */

/* Wake the parked receiver, if any. Any thread. */
static void wake_rx(struct pw_xchan *ch)
{
	/* seq_cst: after the caller's seq_cst publish (an item's sequence
	 * word, a returned permit, the CLOSED bit); pairs with the seq_cst
	 * exchange in park_rx() and its seq_cst re-checks (see the top). */
	if (!atomic_load(&ch->rx_task))
		return;
	/* acq_rel: takes the clone the receiver published with its
	 * exchange in park_rx(). */
	struct pw_waker w = { atomic_exchange_explicit(&ch->rx_task, NULL,
						       memory_order_acq_rel) };
	pw_waker_wake(&w);
}

/* Drop the receiver's parked waker, if any. */
static void unpark_rx(struct pw_xchan *ch)
{
	/* acq_rel: pairs with the exchange in park_rx(). */
	struct pw_waker w = { atomic_exchange_explicit(&ch->rx_task, NULL,
						       memory_order_acq_rel) };
	pw_waker_drop(&w);
}

/* Publish an owned clone of the current task's waker. */
static int park_rx(struct pw_cx *cx, struct pw_xchan *ch)
{
	if (atomic_load_explicit(&ch->rx_task, memory_order_relaxed) !=
	    cx->task) {
		struct pw_waker cur = pw_cx_waker(cx), w;
		int err = pw_waker_clone(&w, &cur);

		if (err)
			return err;
		/* seq_cst: publishes the clone to wake_rx()'s exchange,
		 * before the seq_cst re-checks of the ring (take()) and the
		 * semaphore (ended()); pairs with the load in wake_rx(). */
		struct pw_waker old = { atomic_exchange(&ch->rx_task, w.task) };
		pw_waker_drop(&old);
	}
	return 0;
}

/* ---- the semaphore --------------------------------------------------- */

/* Take a free permit without the mutex: 1, 0 (none, or others wait), or
 * -EPIPE (closed). */
static int try_acquire(struct pw_xchan *ch)
{
	uint64_t s = atomic_load_explicit(&ch->sem, memory_order_relaxed);

	for (;;) {
		if (s & SEM_CLOSED)
			return -EPIPE;
		if ((s & SEM_WAITERS) || s < SEM_ONE)
			return 0;
		/* acquire: pairs with the release that returned the permit
		 * (return_permit()), after which its slot is free. */
		if (atomic_compare_exchange_weak_explicit(
			    &ch->sem, &s, s - SEM_ONE, memory_order_acquire,
			    memory_order_relaxed))
			return 1;
	}
}

/* Under the mutex: take a permit (1), or queue @tx as waiting (0), or
 * -EPIPE. @tx's waker (or blocking flag) is set by the caller. */
static int acquire_or_wait(struct pw_xchan *ch, struct pw_xchan_tx *tx)
{
	uint64_t s = atomic_load_explicit(&ch->sem, memory_order_relaxed);

	for (;;) {
		if (s & SEM_CLOSED)
			return -EPIPE;
		if (!(s & SEM_WAITERS) && s >= SEM_ONE) {
			/* acquire: as in try_acquire(). */
			if (atomic_compare_exchange_weak_explicit(
				    &ch->sem, &s, s - SEM_ONE,
				    memory_order_acquire, memory_order_relaxed))
				return 1;
			continue;
		}
		if (s & SEM_WAITERS)
			break;
		/* relaxed: WAITERS is only read to choose a path; the
		 * list it stands for is read under the mutex. A release
		 * that raced in makes this fail and retry. */
		if (atomic_compare_exchange_weak_explicit(
			    &ch->sem, &s, s | SEM_WAITERS, memory_order_relaxed,
			    memory_order_relaxed))
			break;
	}
	pw_list_add_tail(&tx->node, &ch->waiters);
	ch->nwaiting++;
	/* relaxed: a statistics counter. */
	atomic_fetch_add_explicit(&ch->full_waits, 1, memory_order_relaxed);
	set_state(tx, TX_WAITING);
	return 0;
}

/* Under the mutex: unlink @tx; clear WAITERS if the list empties. */
static void unlink_waiter(struct pw_xchan *ch, struct pw_xchan_tx *tx)
{
	pw_list_del_init(&tx->node);
	if (--ch->nwaiting == 0)
		/* relaxed: as the set in acquire_or_wait(). */
		atomic_fetch_and_explicit(&ch->sem, ~SEM_WAITERS,
					  memory_order_relaxed);
}

/* Under the mutex: end @tx's wait with @st, handing its waker (or a
 * futex wake) to the caller's *@w, to be woken after the unlock. */
static void end_wait(struct pw_xchan *ch, struct pw_xchan_tx *tx, uint32_t st,
		     struct pw_waker *w)
{
	bool blocking = tx->blocking;

	unlink_waiter(ch, tx);
	*w = tx->waker;
	tx->waker.task = NULL;
	/* A task's handle may be reused or freed as soon as it sees @st:
	 * nothing of it is touched after this store. A blocked thread
	 * takes the mutex before it goes on, so its wake is safe. */
	set_state(tx, st);
	if (blocking)
		futex_wake(&tx->state);
}

/* Give a permit back: to the head waiter if there is one. @wake: wake
 * the receiver when closed (a sender's return may end the stream). */
static void return_permit(struct pw_xchan *ch, bool wake)
{
	uint64_t s = atomic_load_explicit(&ch->sem, memory_order_relaxed);

	while (!(s & SEM_WAITERS)) {
		/* seq_cst (a release at least): pairs with the acquire CAS
		 * in try_acquire(), publishing the freed slot's sequence
		 * word; and with park_rx() before wake_rx() (see the top). */
		if (atomic_compare_exchange_weak_explicit(
			    &ch->sem, &s, s + SEM_ONE, memory_order_seq_cst,
			    memory_order_relaxed)) {
			if (wake && (s & SEM_CLOSED))
				wake_rx(ch);
			return;
		}
	}
	struct pw_waker w = { NULL };
	pthread_mutex_lock(&ch->mu);
	if (ch->nwaiting) {
		struct pw_xchan_tx *tx = pw_list_first_entry(
			&ch->waiters, struct pw_xchan_tx, node);
		end_wait(ch, tx, TX_GRANTED, &w);
	} else {
		/* seq_cst: as above (the list emptied meanwhile). */
		s = atomic_fetch_add(&ch->sem, SEM_ONE);
	}
	pthread_mutex_unlock(&ch->mu);
	pw_waker_wake(&w);
	if (wake && (s & SEM_CLOSED))
		wake_rx(ch);
}

/* Close the semaphore: refuse every waiter and wake the receiver. */
static void close_all(struct pw_xchan *ch)
{
	pthread_mutex_lock(&ch->mu);
	/* seq_cst: the CLOSED bit is seen by every later acquire (they
	 * all read the word) and by the receiver after wake_rx(). */
	atomic_fetch_or(&ch->sem, SEM_CLOSED);
	while (ch->nwaiting) {
		struct pw_xchan_tx *tx = pw_list_first_entry(
			&ch->waiters, struct pw_xchan_tx, node);
		struct pw_waker w;

		end_wait(ch, tx, TX_REFUSED, &w);
		pw_waker_wake(&w);
	}
	pthread_mutex_unlock(&ch->mu);
	wake_rx(ch);
}

/* ---- the ring -------------------------------------------------------- */

/* Store @item; the caller holds a permit. Wakes the receiver. */
static void push(struct pw_xchan *ch, const void *item)
{
	/* relaxed: positions only need to be unique; the permit carries
	 * the ordering with the consumer. */
	uint64_t pos =
		atomic_fetch_add_explicit(&ch->tail, 1, memory_order_relaxed);
	struct slot_hdr *sl = slot_at(ch, pos);

	/* acquire: pairs with the consumer's release in take(); the slot
	 * is free already (see the top), the loop is a guard only. */
	while (atomic_load_explicit(&sl->seq, memory_order_acquire) != pos)
		sched_yield();
	memcpy(sl + 1, item, ch->item_size);
	/* seq_cst (a release at least): publishes the item to take()'s
	 * load, before wake_rx()'s load (see the top). */
	atomic_store(&sl->seq, pos + 1);
	wake_rx(ch);
}

/* Take the item at the head into @item: true, or false when not there. */
static bool take(struct pw_xchan *ch, void *item)
{
	struct slot_hdr *sl = slot_at(ch, ch->head);

	/* seq_cst (an acquire at least): pairs with the store in push();
	 * after park_rx()'s exchange when it re-checks (see the top). */
	if (atomic_load(&sl->seq) != ch->head + 1)
		return false;
	memcpy(item, sl + 1, ch->item_size);
	/* release: frees the slot; pairs with the acquire in push(). */
	atomic_store_explicit(&sl->seq, ch->head + ch->mask + 1,
			      memory_order_release);
	ch->head++;
	return_permit(ch, false);
	return true;
}

/* True once closed with every permit back: nothing more can come. */
static bool ended(struct pw_xchan *ch)
{
	/* seq_cst (an acquire at least): pairs with the returns of the
	 * permits and the close; after park_rx()'s exchange (see the top). */
	uint64_t s = atomic_load(&ch->sem);

	return (s & SEM_CLOSED) && (s >> 2) == ch->cap;
}

/* ---- handles --------------------------------------------------------- */

static void put_ref(struct pw_xchan *ch)
{
	/* acq_rel: the last drop sees every other handle's writes. */
	if (atomic_fetch_sub_explicit(&ch->refs, 1, memory_order_acq_rel) != 1)
		return;
	unpark_rx(ch);
	pthread_mutex_destroy(&ch->mu);
	free(ch);
}

static void tx_init(struct pw_xchan_tx *tx, struct pw_xchan *ch)
{
	memset(tx, 0, sizeof(*tx));
	tx->ch = ch;
	pw_list_init(&tx->node);
}

int pw_xchan_open(size_t item_size, size_t capacity, struct pw_xchan_tx *tx,
		  struct pw_xchan_rx *rx)
{
	if (!tx || !rx || !item_size || item_size > PW_XCHAN_ITEM_MAX ||
	    !capacity || capacity > PW_XCHAN_CAP_MAX)
		return -EINVAL;
	size_t size = 1, stride = sizeof(struct slot_hdr) +
				  ((item_size + 7) & ~(size_t)7);
	while (size < capacity)
		size <<= 1;
	struct pw_xchan *ch = aligned_alloc(
		64, (sizeof(*ch) + size * stride + 63) & ~(size_t)63);
	if (!ch)
		return -ENOMEM;
	memset(ch, 0, sizeof(*ch));
	if (pthread_mutex_init(&ch->mu, NULL)) {
		free(ch);
		return -ENOMEM;
	}
	pw_list_init(&ch->waiters);
	ch->item_size = item_size;
	ch->stride = stride;
	ch->cap = (uint32_t)capacity;
	ch->mask = (uint32_t)(size - 1);
	for (size_t i = 0; i < size; i++)
		atomic_init(&slot_at(ch, i)->seq, i);
	atomic_init(&ch->sem, (uint64_t)capacity * SEM_ONE);
	atomic_init(&ch->ntx, 1);
	atomic_init(&ch->refs, 2);
	tx_init(tx, ch);
	rx->s.ops = &xchan_stream_ops;
	rx->s.item_size = item_size;
	rx->ch = ch;
	return 0;
}

int pw_xchan_tx_clone(struct pw_xchan_tx *dst, const struct pw_xchan_tx *src)
{
	if (!dst || !src || !src->ch)
		return -EINVAL;
	/* relaxed: the source handle keeps the channel alive meanwhile. */
	atomic_fetch_add_explicit(&src->ch->ntx, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&src->ch->refs, 1, memory_order_relaxed);
	tx_init(dst, src->ch);
	return 0;
}

/* Mark @flag closed; -EALREADY if it was. */
static int close_side(struct pw_xchan *ch, _Atomic bool *flag)
{
	/* relaxed: the flag only answers -EALREADY and stats; close_all()
	 * orders the closing itself. */
	if (atomic_exchange_explicit(flag, true, memory_order_relaxed))
		return -EALREADY;
	close_all(ch);
	return 0;
}

void pw_xchan_tx_drop(struct pw_xchan_tx *tx)
{
	if (!tx || !tx->ch)
		return;
	struct pw_xchan *ch = tx->ch;

	pw_xchan_send_cancel(tx);
	/* acq_rel: the last sender's close follows every other sender's
	 * sends. */
	if (atomic_fetch_sub_explicit(&ch->ntx, 1, memory_order_acq_rel) == 1)
		close_side(ch, &ch->tx_closed);
	tx->ch = NULL;
	put_ref(ch);
}

int pw_xchan_close_tx(struct pw_xchan_tx *tx)
{
	if (!tx || !tx->ch)
		return -EINVAL;
	return close_side(tx->ch, &tx->ch->tx_closed);
}

bool pw_xchan_is_closed(const struct pw_xchan_tx *tx)
{
	if (!tx || !tx->ch)
		return true;
	/* acquire: pairs with the seq_cst fetch_or in close_all(). */
	return atomic_load_explicit(&tx->ch->sem, memory_order_acquire) &
	       SEM_CLOSED;
}

/* ---- sending --------------------------------------------------------- */

/* A send that has no permit yet: queue under the mutex or take one. */
static enum pw_poll send_slow(struct pw_cx *cx, struct pw_xchan_tx *tx,
			      const void *item, int *res)
{
	struct pw_xchan *ch = tx->ch;
	struct pw_waker cur = pw_cx_waker(cx);
	int err = pw_waker_clone(&tx->waker, &cur);

	if (err) {
		*res = err;
		return PW_READY;
	}
	tx->blocking = 0;
	pthread_mutex_lock(&ch->mu);
	err = acquire_or_wait(ch, tx);
	pthread_mutex_unlock(&ch->mu);
	if (err == 0)
		return PW_PENDING; /* the waker is the list's now */
	pw_waker_drop(&tx->waker);
	if (err < 0) {
		*res = err;
		return PW_READY;
	}
	push(ch, item);
	*res = 0;
	return PW_READY;
}

enum pw_poll pw_xchan_send_poll(struct pw_cx *cx, struct pw_xchan_tx *tx,
				const void *item, int *res)
{
	if (!res)
		return PW_READY;
	if (!cx || !cx->task || !tx || !tx->ch || !item) {
		*res = -EINVAL;
		return PW_READY;
	}
	struct pw_xchan *ch = tx->ch;

	switch (tx_state(tx)) {
	case TX_WAITING:
		return PW_PENDING;
	case TX_REFUSED:
		tx->state = TX_IDLE;
		*res = -EPIPE;
		return PW_READY;
	case TX_GRANTED:
		if (!pw_coop_proceed(cx))
			return PW_PENDING;
		tx->state = TX_IDLE;
		if (pw_xchan_is_closed(tx)) {
			return_permit(ch, true);
			*res = -EPIPE;
			return PW_READY;
		}
		push(ch, item);
		*res = 0;
		return PW_READY;
	default:
		break;
	}
	if (!pw_coop_proceed(cx))
		return PW_PENDING;
	int got = try_acquire(ch);
	if (got < 0) {
		*res = got;
		return PW_READY;
	}
	if (!got)
		return send_slow(cx, tx, item, res);
	push(ch, item);
	*res = 0;
	return PW_READY;
}

int pw_xchan_send_cancel(struct pw_xchan_tx *tx)
{
	if (!tx || !tx->ch)
		return -EINVAL;
	struct pw_xchan *ch = tx->ch;
	uint32_t st = tx_state(tx);

	if (st == TX_IDLE)
		return -EALREADY;
	if (st == TX_WAITING) {
		pthread_mutex_lock(&ch->mu);
		st = tx_state(tx);
		if (st == TX_WAITING) {
			unlink_waiter(ch, tx);
			pw_waker_drop(&tx->waker);
		}
		pthread_mutex_unlock(&ch->mu);
	}
	tx->state = TX_IDLE;
	if (st == TX_GRANTED)
		return_permit(ch, true);
	return 0;
}

int pw_xchan_try_send(struct pw_xchan_tx *tx, const void *item)
{
	if (!tx || !tx->ch || !item)
		return -EINVAL;
	int got = try_acquire(tx->ch);

	if (got <= 0)
		return got ? got : -EAGAIN;
	push(tx->ch, item);
	return 0;
}

int pw_xchan_send_blocking(struct pw_xchan_tx *tx, const void *item)
{
	if (!tx || !tx->ch || !item || tx_state(tx) != TX_IDLE)
		return -EINVAL;
	if (pw__cur_shard)
		return -EPERM;
	struct pw_xchan *ch = tx->ch;
	int got = try_acquire(ch);

	if (got == 0) {
		tx->blocking = 1;
		pthread_mutex_lock(&ch->mu);
		got = acquire_or_wait(ch, tx);
		pthread_mutex_unlock(&ch->mu);
		while (got == 0 && tx_state(tx) == TX_WAITING)
			syscall(SYS_futex, &tx->state, FUTEX_WAIT_PRIVATE,
				TX_WAITING, NULL, NULL, 0);
		if (got == 0) {
			/* The waker woke us under the mutex: let it finish
			 * with this handle before it is reused. */
			pthread_mutex_lock(&ch->mu);
			pthread_mutex_unlock(&ch->mu);
			got = tx_state(tx) == TX_GRANTED ? 1 : -EPIPE;
			tx->state = TX_IDLE;
			if (got > 0 && pw_xchan_is_closed(tx)) {
				return_permit(ch, true);
				got = -EPIPE;
			}
		}
		tx->blocking = 0;
	}
	if (got < 0)
		return got;
	push(ch, item);
	return 0;
}

/* ---- receiving ------------------------------------------------------- */

enum pw_poll pw_xchan_recv_poll(struct pw_cx *cx, struct pw_xchan_rx *rx,
				void *item, int *res)
{
	if (!res)
		return PW_READY;
	if (!cx || !cx->task || !rx || !rx->ch || !item) {
		*res = -EINVAL;
		return PW_READY;
	}
	struct pw_xchan *ch = rx->ch;

	for (int parked = 0;; parked = 1) {
		if (!pw_coop_proceed(cx))
			return PW_PENDING;
		if (take(ch, item)) {
			if (parked)
				unpark_rx(ch);
			*res = 1;
			return PW_READY;
		}
		pw_coop_unspend(cx);
		if (ended(ch)) {
			unpark_rx(ch);
			*res = 0;
			return PW_READY;
		}
		if (parked)
			return PW_PENDING;
		int err = park_rx(cx, ch);
		if (err) {
			*res = err;
			return PW_READY;
		}
	}
}

int pw_xchan_try_recv(struct pw_xchan_rx *rx, void *item)
{
	if (!rx || !rx->ch || !item)
		return -EINVAL;
	if (take(rx->ch, item))
		return 1;
	return ended(rx->ch) ? 0 : -EAGAIN;
}

struct pw_stream *pw_xchan_stream(struct pw_xchan_rx *rx)
{
	return rx && rx->ch ? &rx->s : NULL;
}

int pw_xchan_close_rx(struct pw_xchan_rx *rx)
{
	if (!rx || !rx->ch)
		return -EINVAL;
	return close_side(rx->ch, &rx->ch->rx_closed);
}

void pw_xchan_rx_drop(struct pw_xchan_rx *rx)
{
	if (!rx || !rx->ch)
		return;
	struct pw_xchan *ch = rx->ch;

	close_side(ch, &ch->rx_closed);
	unpark_rx(ch);
	rx->ch = NULL;
	put_ref(ch);
}

int pw_xchan_stats(const struct pw_xchan_rx *rx, struct pw_xchan_stats *out)
{
	if (!rx || !rx->ch || !out)
		return -EINVAL;
	struct pw_xchan *ch = rx->ch;

	/* relaxed loads: a snapshot of counters. */
	out->sent = atomic_load_explicit(&ch->tail, memory_order_relaxed);
	out->received = ch->head;
	out->full_waits =
		atomic_load_explicit(&ch->full_waits, memory_order_relaxed);
	out->len = (uint32_t)(out->sent - out->received);
	out->capacity = ch->cap;
	pthread_mutex_lock(&ch->mu);
	out->waiting = ch->nwaiting;
	pthread_mutex_unlock(&ch->mu);
	out->senders = atomic_load_explicit(&ch->ntx, memory_order_relaxed);
	out->tx_closed =
		atomic_load_explicit(&ch->tx_closed, memory_order_relaxed);
	out->rx_closed =
		atomic_load_explicit(&ch->rx_closed, memory_order_relaxed);
	return 0;
}

/* ---- the receiver as a pw_stream ------------------------------------- */

static enum pw_poll stream_poll_next(struct pw_cx *cx, struct pw_stream *s,
				     void *item, int *res)
{
	return pw_xchan_recv_poll(cx, pw_container_of(s, struct pw_xchan_rx, s),
				  item, res);
}

static void stream_drop(struct pw_stream *s)
{
	pw_xchan_rx_drop(pw_container_of(s, struct pw_xchan_rx, s));
}
