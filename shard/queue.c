/* SPDX-License-Identifier: MIT */
/*
 * queue.c - the stealing scheduler's run queues (queue.h): the local
 * queue's overflow, steal and batch fill, and the inject queue.
 */
#include "core/task_int.h"
#include "shard/queue.h"

void pw__inject_init(struct pw__inject *inj)
{
	pthread_mutex_init(&inj->mu, NULL);
	inj->head = inj->tail = NULL;
	atomic_init(&inj->len, 0);
}

void pw__inject_destroy(struct pw__inject *inj)
{
	pthread_mutex_destroy(&inj->mu);
}

void pw__inject_push(struct pw__inject *inj, struct pw__task *first,
		     struct pw__task *last, uint64_t n)
{
	last->next = NULL;
	pthread_mutex_lock(&inj->mu);
	if (inj->tail)
		inj->tail->next = first;
	else
		inj->head = first;
	inj->tail = last;
	/* relaxed: a depth read outside the lock; see queue.h. */
	atomic_store_explicit(
		&inj->len,
		atomic_load_explicit(&inj->len, memory_order_relaxed) + n,
		memory_order_relaxed);
	pthread_mutex_unlock(&inj->mu);
}

/* pw__inject_pop() once the hint says the queue is not empty. */
uint32_t pw__inject_pop_locked(struct pw__inject *inj, uint32_t n,
			       struct pw__task **first)
{
	uint32_t got = 0;
	struct pw__task *h, *t = NULL;

	pthread_mutex_lock(&inj->mu);
	h = inj->head;
	for (struct pw__task *c = h; c && got < n; c = c->next) {
		t = c;
		got++;
	}
	if (got) {
		inj->head = t->next;
		if (!inj->head)
			inj->tail = NULL;
		t->next = NULL;
		/* relaxed: see pw__inject_push(). */
		atomic_store_explicit(
			&inj->len,
			atomic_load_explicit(&inj->len, memory_order_relaxed) -
				got,
			memory_order_relaxed);
	}
	pthread_mutex_unlock(&inj->mu);
	*first = h;
	return got;
}

/*
 * The queue is full and no thief is active: move the newest 128 tasks and
 * @t to the inject queue in one batch (Tokio 1.5x; 1.24 and Go move the
 * oldest). A thief that read the queue shorter could claim into its
 * newest half, so the owner first shuts thieves out the way a thief does:
 * it moves the steal position off the real head with a compare-and-swap
 * (which fails if a thief moved head first), takes the newest half back
 * by lowering tail, and puts the steal position back. false: head moved,
 * look again.
 */
static bool overflow(struct pw__lq *q, struct pw__inject *inj,
		     struct pw__task *t, uint64_t h, uint32_t tail)
{
	uint32_t real = pw__lq_h_real(h), from = tail - PW__LQ_HALF;

	/* acq_rel CAS: pairs with the thieves' CASes on head; while steal
	 * != real every thief backs off (pw__lq_steal_into()). */
	if (!atomic_compare_exchange_strong_explicit(
		    &q->head, &h, pw__lq_pack(real - 1, real),
		    memory_order_acq_rel, memory_order_acquire))
		return false;
	struct pw__task *first = pw__lq_get(q, from), *prev = first;
	for (uint32_t i = from + 1; i < tail; i++) {
		struct pw__task *c = pw__lq_get(q, i);
		prev->next = c;
		prev = c;
	}
	prev->next = t;
	/* release: thieves that read tail from now on see the shorter
	 * queue; then the steal position comes back (release: pairs with
	 * the thieves' acquire of head). */
	atomic_store_explicit(&q->tail, from, memory_order_release);
	atomic_store_explicit(&q->head, pw__lq_pack(real, real),
			      memory_order_release);
	pw__inject_push(inj, first, t, PW__LQ_HALF + 1);
	return true;
}

enum pw__lq_put_res pw__lq_push_full(struct pw__lq *q, struct pw__inject *inj,
				     struct pw__task *t)
{
	uint32_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);

	for (;;) {
		/* acquire: pairs with the thieves' release of head. */
		uint64_t h =
			atomic_load_explicit(&q->head, memory_order_acquire);
		if (tail - pw__lq_h_steal(h) < PW__LQ_CAP) {
			pw__lq_put(q, tail, t);
			/* release: publishes the slot to thieves. */
			atomic_store_explicit(&q->tail, tail + 1,
					      memory_order_release);
			return PW__LQ_PUSHED;
		}
		if (pw__lq_h_steal(h) != pw__lq_h_real(h)) {
			/* A thief is at work: this task alone goes. */
			pw__inject_push(inj, t, t, 1);
			return PW__LQ_INJECTED;
		}
		if (overflow(q, inj, t, h, tail))
			return PW__LQ_OVERFLOWED;
	}
}

/* Claim half of @src (rounded up) for a thief: 0 if there is nothing to
 * take or another thief is at work; *@prev gets head before the claim. */
static uint32_t claim(struct pw__lq *src, uint64_t *prev)
{
	uint64_t h = atomic_load_explicit(&src->head, memory_order_acquire);

	for (;;) {
		uint32_t st = pw__lq_h_steal(h), real = pw__lq_h_real(h);
		if (st != real)
			return 0; /* another thief is at work */
		/* acquire: pairs with the victim's release of tail. */
		uint32_t stail =
			atomic_load_explicit(&src->tail, memory_order_acquire);
		uint32_t n = stail - real;
		n -= n / 2;
		if (!n)
			return 0;
		/* acq_rel CAS: claims [real, real + n); pairs with the
		 * owner's pops and other thieves. */
		if (atomic_compare_exchange_weak_explicit(
			    &src->head, &h, pw__lq_pack(st, real + n),
			    memory_order_acq_rel, memory_order_acquire)) {
			*prev = h;
			return n;
		}
	}
}

struct pw__task *pw__lq_steal_into(struct pw__lq *dst, struct pw__lq *src,
				   uint32_t *moved)
{
	uint32_t dtail = atomic_load_explicit(&dst->tail, memory_order_relaxed);
	uint64_t dh = atomic_load_explicit(&dst->head, memory_order_acquire);
	uint64_t prev;
	uint32_t n;

	*moved = 0;
	if (dtail - pw__lq_h_steal(dh) > PW__LQ_CAP / 2)
		return NULL; /* our own queue is more than half full */
	if (!(n = claim(src, &prev)))
		return NULL;
	uint32_t first = pw__lq_h_steal(prev);
	for (uint32_t i = 0; i < n; i++)
		pw__lq_put(dst, dtail + i, pw__lq_get(src, first + i));
	/* Done copying: let the owner reuse the slots (steal = real). */
	prev = pw__lq_pack(first, first + n);
	for (;;) {
		uint32_t real = pw__lq_h_real(prev);
		/* acq_rel CAS: pairs with the owner's pop CAS. */
		if (atomic_compare_exchange_weak_explicit(
			    &src->head, &prev, pw__lq_pack(real, real),
			    memory_order_acq_rel, memory_order_acquire))
			break;
	}
	*moved = n;
	n--;
	struct pw__task *ret = pw__lq_get(dst, dtail + n);
	if (n)
		/* release: publishes the copied slots. */
		atomic_store_explicit(&dst->tail, dtail + n,
				      memory_order_release);
	return ret;
}

void pw__lq_fill(struct pw__lq *q, struct pw__task *first, uint32_t n)
{
	uint32_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);

	/* Only the owner adds to its queue: the room the caller saw is
	 * still there. */
	for (uint32_t i = 0; i < n; i++, first = first->next)
		pw__lq_put(q, tail + i, first);
	if (n)
		/* release: publishes the slots to thieves. */
		atomic_store_explicit(&q->tail, tail + n, memory_order_release);
}
