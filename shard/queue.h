/* SPDX-License-Identifier: MIT */
/*
 * queue.h - the stealing scheduler's two run queues: a worker's bounded
 * local queue (Tokio's 256-slot queue, stolen from by other workers) and
 * the runtime's inject queue (a locked FIFO). Private to the library.
 *
 * The queues hold tasks and know nothing else of them but ->next (the
 * inject queue's link): no worker, shard or runtime record. The LIFO slot
 * is not here; the scheduler keeps it (steal.c). The owner's hot
 * operations (length, pop, push when there is room) are inline here; the
 * rest is in queue.c.
 */
#ifndef PW_SHARD_QUEUE_H
#define PW_SHARD_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct pw__task;

#define PW__LQ_CAP  256u /* local queue slots */
#define PW__LQ_MASK 255u
#define PW__LQ_HALF 128u /* tasks moved by an overflow */

/*
 * A worker's local run queue: Tokio's bounded queue. head packs the
 * stealer's position (high 32 bits) and the real head (low 32); the two
 * differ while a thief copies tasks out. Only the owner writes tail and
 * the slots; thieves move head with compare-and-swap. All zero is an
 * empty queue.
 */
struct pw__lq {
	_Alignas(64) _Atomic uint64_t head;
	_Alignas(64) _Atomic uint32_t tail;
	struct pw__task *_Atomic buf[PW__LQ_CAP];
};

/* The inject (global) queue: a FIFO list through task->next. */
struct pw__inject {
	pthread_mutex_t mu;
	struct pw__task *head, *tail; /* under mu */
	/* Written under mu; read without it (relaxed) for the depth and
	 * the emptiness hint, which pops re-check under the lock. */
	_Atomic uint64_t len;
};

/* What pw__lq_push() did with the task. */
enum pw__lq_put_res {
	PW__LQ_PUSHED,	   /* into a free slot */
	PW__LQ_OVERFLOWED, /* queue full: its newest half and the task went
			      to the inject queue */
	PW__LQ_INJECTED,   /* queue full while a thief copied: the task
			      alone went to the inject queue */
};

static inline uint64_t pw__lq_pack(uint32_t steal, uint32_t real)
{
	return ((uint64_t)steal << 32) | real;
}

static inline uint32_t pw__lq_h_steal(uint64_t h)
{
	return (uint32_t)(h >> 32);
}

static inline uint32_t pw__lq_h_real(uint64_t h)
{
	return (uint32_t)h;
}

/* Tasks in @q, as seen now. Any thread. */
static inline uint32_t pw__lq_len(struct pw__lq *q)
{
	/* acquire: pairs with the thieves' and owner's releases of head. */
	uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);
	uint32_t t = atomic_load_explicit(&q->tail, memory_order_acquire);

	return t - pw__lq_h_real(h);
}

static inline void pw__lq_put(struct pw__lq *q, uint32_t pos,
			      struct pw__task *t)
{
	/* relaxed: published by the release store of tail. */
	atomic_store_explicit(&q->buf[pos & PW__LQ_MASK], t,
			      memory_order_relaxed);
}

static inline struct pw__task *pw__lq_get(struct pw__lq *q, uint32_t pos)
{
	/* relaxed: ordered by the acquire of tail or head before it. */
	return atomic_load_explicit(&q->buf[pos & PW__LQ_MASK],
				    memory_order_relaxed);
}

/* Free slots of @q (slots a thief still copies from count as taken).
 * Owner thread only. */
static inline uint32_t pw__lq_room(struct pw__lq *q)
{
	uint32_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
	/* acquire: pairs with the thieves' release of head. */
	uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);

	return PW__LQ_CAP - (tail - pw__lq_h_steal(h));
}

/* Pop the oldest task of @q, or NULL. Owner thread only. */
static inline struct pw__task *pw__lq_pop(struct pw__lq *q)
{
	uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);
	uint32_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);

	for (;;) {
		uint32_t real = pw__lq_h_real(h), st = pw__lq_h_steal(h);
		if (real == tail)
			return NULL;
		uint64_t next = st == real ? pw__lq_pack(real + 1, real + 1) :
					     pw__lq_pack(st, real + 1);
		/* acq_rel CAS: pairs with the thieves' CASes on head. */
		if (atomic_compare_exchange_weak_explicit(&q->head, &h, next,
							  memory_order_acq_rel,
							  memory_order_acquire))
			return pw__lq_get(q, real);
	}
}

/* The full-queue half of pw__lq_push() (queue.c). */
enum pw__lq_put_res pw__lq_push_full(struct pw__lq *q, struct pw__inject *inj,
				     struct pw__task *t);

/*
 * Push @t at the back of @q; a full queue sends tasks to @inj (see enum
 * pw__lq_put_res). Owner thread only.
 */
static inline enum pw__lq_put_res
pw__lq_push(struct pw__lq *q, struct pw__inject *inj, struct pw__task *t)
{
	uint32_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
	/* acquire: pairs with the thieves' release of head. */
	uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);

	if (__builtin_expect(tail - pw__lq_h_steal(h) < PW__LQ_CAP, 1)) {
		pw__lq_put(q, tail, t);
		/* release: publishes the slot to thieves. */
		atomic_store_explicit(&q->tail, tail + 1, memory_order_release);
		return PW__LQ_PUSHED;
	}
	return pw__lq_push_full(q, inj, t);
}

/*
 * Steal half of @src's tasks (rounded up, at most 128) into @dst, owned
 * by the calling thread, and return the last of them to run, or NULL (a
 * thief already at work, @src empty, or @dst more than half full).
 * *@moved gets the count taken, the returned task included. Tokio's
 * steal_into. Any thread owning @dst.
 */
struct pw__task *pw__lq_steal_into(struct pw__lq *dst, struct pw__lq *src,
				   uint32_t *moved);

/* Append @n (<= pw__lq_room()) tasks chained through ->next to @q.
 * Owner thread only. */
void pw__lq_fill(struct pw__lq *q, struct pw__task *first, uint32_t n);

/* Set up and free an inject queue (no task is freed). */
void pw__inject_init(struct pw__inject *inj);
void pw__inject_destroy(struct pw__inject *inj);

/* Append a chain of @n tasks, @first to @last through ->next. Any
 * thread. */
void pw__inject_push(struct pw__inject *inj, struct pw__task *first,
		     struct pw__task *last, uint64_t n);

/* Tasks in @inj: a hint (relaxed), exact once the pushers are done. */
static inline uint64_t pw__inject_len(struct pw__inject *inj)
{
	/* relaxed: a hint; pops re-check under the lock. */
	return atomic_load_explicit(&inj->len, memory_order_relaxed);
}

uint32_t pw__inject_pop_locked(struct pw__inject *inj, uint32_t n,
			       struct pw__task **first);

/*
 * Pop up to @n of the oldest tasks of @inj into a chain through ->next
 * (the last one's NULL); *@first gets it. Return: the count taken. Any
 * thread.
 */
static inline uint32_t pw__inject_pop(struct pw__inject *inj, uint32_t n,
				      struct pw__task **first)
{
	if (!pw__inject_len(inj))
		return 0;
	return pw__inject_pop_locked(inj, n, first);
}

#endif /* PW_SHARD_QUEUE_H */
