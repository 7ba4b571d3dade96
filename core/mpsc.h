/* SPDX-License-Identifier: MIT */
/*
 * mpsc.h - intrusive multi-producer single-consumer queue (the inbox).
 *
 * Any thread pushes; only the owning shard pops. A push is one atomic
 * exchange plus one store (wait-free); a pop touches no atomic RMW. The
 * queue keeps a stub node so it is never structurally empty. Between a
 * producer's exchange and its link store the queue is momentarily
 * "inconsistent": pw__mpsc_pop() then returns NULL although
 * pw__mpsc_empty() is false; the consumer retries on its next loop turn
 * (it must not sleep while !pw__mpsc_empty()).
 *
 * A node may be pushed again only after it was popped.
 */
#ifndef PW_CORE_MPSC_H
#define PW_CORE_MPSC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct pw__mpsc_node {
	_Atomic(struct pw__mpsc_node *) next;
	unsigned kind; /* what the node is embedded in (user's tag) */
};

struct pw__mpsc {
	/* Producers' end, on its own cache line. */
	_Alignas(64) _Atomic(struct pw__mpsc_node *) head;
	/* Consumer's end and the stub, on another. */
	_Alignas(64) struct pw__mpsc_node *tail;
	struct pw__mpsc_node stub;
};

static inline void pw__mpsc_init(struct pw__mpsc *q)
{
	atomic_init(&q->stub.next, NULL);
	q->stub.kind = 0;
	atomic_init(&q->head, &q->stub);
	q->tail = &q->stub;
}

/**
 * pw__mpsc_push - append @n. Any thread.
 *
 * The exchange is seq_cst: it pairs with the consumer's seq_cst store of
 * its "asleep" flag followed by its seq_cst pw__mpsc_empty() check (the
 * Dekker pattern of the wake-up protocol): either the consumer sees this
 * node, or the producer sees the flag and wakes it.
 */
static inline void pw__mpsc_push(struct pw__mpsc *q, struct pw__mpsc_node *n)
{
	atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
	/* seq_cst exchange: see above; also releases @n's contents. */
	struct pw__mpsc_node *prev = atomic_exchange(&q->head, n);
	/* release: publishes @n to the consumer; pairs with the acquire
	 * load of ->next in pw__mpsc_pop(). */
	atomic_store_explicit(&prev->next, n, memory_order_release);
}

/**
 * pw__mpsc_empty - true when every pushed node has been popped.
 * The consumer's tail names the next node to return, or the stub; with
 * the tail on the stub, the queue is empty exactly when no producer moved
 * the head off the stub. The seq_cst load pairs with the exchange in
 * pw__mpsc_push() (see there). Consumer only.
 */
static inline bool pw__mpsc_empty(struct pw__mpsc *q)
{
	return q->tail == &q->stub && atomic_load(&q->head) == &q->stub;
}

/**
 * pw__mpsc_pop - take the oldest node, or NULL (empty or inconsistent).
 * Consumer only.
 */
static inline struct pw__mpsc_node *pw__mpsc_pop(struct pw__mpsc *q)
{
	struct pw__mpsc_node *tail = q->tail;
	/* acquire: pairs with the release link store in push. */
	struct pw__mpsc_node *next =
		atomic_load_explicit(&tail->next, memory_order_acquire);

	if (tail == &q->stub) {
		if (!next)
			return NULL;
		q->tail = next;
		tail = next;
		next = atomic_load_explicit(&next->next, memory_order_acquire);
	}
	if (next) {
		q->tail = next;
		return tail;
	}
	/* acquire: pairs with the producers' exchange on head. */
	if (tail != atomic_load_explicit(&q->head, memory_order_acquire))
		return NULL; /* a producer is between exchange and link */
	pw__mpsc_push(q, &q->stub);
	next = atomic_load_explicit(&tail->next, memory_order_acquire);
	if (next) {
		q->tail = next;
		return tail;
	}
	return NULL;
}

#endif /* PW_CORE_MPSC_H */
