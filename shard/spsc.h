/* SPDX-License-Identifier: MIT */
/*
 * spsc.h - bounded lock-free single-producer single-consumer message ring.
 *
 * Shards talk to each other through these rings: one ring per ordered pair
 * of shards, written by exactly one thread and read by exactly one other.
 * A message is a 32-byte record (a function and three arguments) copied
 * into caller-provided slot memory, so the runtime can place that memory
 * on the consumer's NUMA node. Indices are free-running 32-bit counters
 * that wrap modulo 2^32; a slot is index & mask. Capacity rule: a ring of
 * N slots holds N messages (full when tail - head == N, empty when equal),
 * so N is a power of two from 2 to 2^31. Each index lives alone on its
 * cache line, written by its owner and read by the other side; each side
 * works from a private line holding its own index, a cached copy of the
 * other side's index and the ring geometry, and reads the other side's
 * line only when that cached view cannot satisfy the request (for a single
 * message: ring full, ring empty). A hot ring therefore moves index lines
 * once per batch, not once per message, and a side polling the other's
 * index never takes away the line its owner works from (measured on AMD
 * Zen 3: keeping the owner's fields beside its polled index cost about one
 * extra line transfer per hop, 2.5x instead of 1.8x the one-line floor). The
 * producer publishes a batch with one release store of its index, the
 * consumer frees one with one release store of its own; there is no
 * read-modify-write and no seq_cst. A sleep/wake protocol built on top
 * (asleep flag + pw__spsc_empty_consumer()) must add its own seq_cst
 * fences on both sides: acquire/release alone does not order a store
 * before a later load.
 */
#ifndef PW_SHARD_SPSC_H
#define PW_SHARD_SPSC_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PW__SPSC_LINE	      64
#define PW__SPSC_MAX_CAPACITY ((size_t)1 << 31)

/* One message. Ownership of whatever it points to moves with it. */
struct pw__msg {
	void (*fn)(void *a0, uint64_t a1, uint64_t a2); /* run by consumer */
	void *a0;					/* first argument */
	uint64_t a1, a2;				/* two more */
};

/* One side's private state; the other side never touches this line. */
struct pw__spsc_end {
	uint32_t pos;	       /* own index (the shared copy once published) */
	uint32_t peer;	       /* last value read of the other side's index */
	uint32_t mask;	       /* capacity - 1 */
	struct pw__msg *slots; /* the slot array */
};

/*
 * Four lines, 256 bytes, 128-byte aligned (allocate with aligned_alloc or
 * embed). Adjacent-line prefetchers fetch 128-byte pairs, so each shared
 * index is paired with the private line of the side that polls it: a
 * prefetch triggered by that side's miss brings in its own line only.
 */
struct pw__spsc {
	/* Next slot to fill; stored by the producer, polled by the consumer. */
	_Alignas(2 * PW__SPSC_LINE) _Atomic uint32_t tail;
	_Alignas(PW__SPSC_LINE) struct pw__spsc_end cons; /* consumer only */
	/* Next slot to read; stored by the consumer, read by the producer
	 * when it finds the ring full. */
	_Alignas(PW__SPSC_LINE) _Atomic uint32_t head;
	_Alignas(PW__SPSC_LINE) struct pw__spsc_end prod; /* producer only */
};

/**
 * pw__spsc_init - make @r an empty ring over @slots.
 * @slots: @capacity messages of caller-owned memory; must outlive @r.
 * @capacity: a power of two, 2 <= @capacity <= 2^31.
 * Return: 0, or -EINVAL for a bad capacity or NULL @r / @slots.
 * Context: before the ring is shared; the threads that then use it must
 * learn of it through a release/acquire pair (e.g. pthread_create).
 */
static inline int pw__spsc_init(struct pw__spsc *r, struct pw__msg *slots,
				size_t capacity)
{
	if (!r || !slots || capacity < 2 || capacity > PW__SPSC_MAX_CAPACITY ||
	    (capacity & (capacity - 1)))
		return -EINVAL;
	atomic_init(&r->tail, 0);
	atomic_init(&r->head, 0);
	r->prod.pos = r->prod.peer = 0;
	r->cons.pos = r->cons.peer = 0;
	r->prod.mask = r->cons.mask = (uint32_t)(capacity - 1);
	r->prod.slots = r->cons.slots = slots;
	return 0;
}

/**
 * pw__spsc_capacity - number of slots (all usable).
 * Context: any thread; it reads the producer's private line, so keep it
 * off the consumer's hot path.
 */
static inline uint32_t pw__spsc_capacity(const struct pw__spsc *r)
{
	return r->prod.mask + 1;
}

/*
 * pw__spsc_free - slots the producer may fill: at least @want if that many
 * are free. Re-reads head only when the cached view shows fewer than
 * @want. Producer only.
 */
static inline uint32_t pw__spsc_free(struct pw__spsc *r, uint32_t want)
{
	struct pw__spsc_end *p = &r->prod;
	uint32_t free = p->mask + 1 - (p->pos - p->peer);

	if (free < want) {
		/* acquire: pairs with the release stores of head in
		 * pw__spsc_release() and pw__spsc_pop_batch(); the
		 * consumer's reads of the slots it gave back happen
		 * before we overwrite them. */
		p->peer = atomic_load_explicit(&r->head, memory_order_acquire);
		free = p->mask + 1 - (p->pos - p->peer);
	}
	return free;
}

/*
 * pw__spsc_avail - messages the consumer may read: at least @want if that
 * many are published. Re-reads tail only when the cached view shows fewer
 * than @want. Consumer only.
 */
static inline uint32_t pw__spsc_avail(struct pw__spsc *r, uint32_t want)
{
	struct pw__spsc_end *c = &r->cons;
	uint32_t avail = c->peer - c->pos;

	if (avail < want) {
		/* acquire: pairs with the release stores of tail in
		 * pw__spsc_commit() and pw__spsc_push_batch(); the slot
		 * writes made before them are visible to our reads. */
		c->peer = atomic_load_explicit(&r->tail, memory_order_acquire);
		avail = c->peer - c->pos;
	}
	return avail;
}

/**
 * pw__spsc_reserve - free slots the producer may write in place.
 * @first: set to the first free slot, or NULL when 0 is returned.
 * @max: the most slots wanted.
 * Return: n <= @max contiguous slots from *@first; the run stops at the
 * end of the slot array, so a second call (after pw__spsc_commit())
 * continues after the wrap. The consumer sees none of them before
 * pw__spsc_commit().
 * Context: producer only.
 */
static inline uint32_t pw__spsc_reserve(struct pw__spsc *r,
					struct pw__msg **first, uint32_t max)
{
	struct pw__spsc_end *p = &r->prod;
	uint32_t idx = p->pos & p->mask;
	uint32_t run = p->mask + 1 - idx;
	uint32_t n = pw__spsc_free(r, max < run ? max : run);

	if (n > max)
		n = max;
	if (n > run)
		n = run;
	*first = n ? &p->slots[idx] : NULL;
	return n;
}

/**
 * pw__spsc_commit - publish the next @n slots, written in place, with one
 * store.
 * @n: at most what the last pw__spsc_reserve() returned.
 * Context: producer only.
 */
static inline void pw__spsc_commit(struct pw__spsc *r, uint32_t n)
{
	r->prod.pos += n;
	/* release: publishes the slot writes; pairs with the acquire load
	 * of tail in pw__spsc_avail(). */
	atomic_store_explicit(&r->tail, r->prod.pos, memory_order_release);
}

/**
 * pw__spsc_push_batch - copy up to @k messages in and publish them with
 * one store.
 * Return: how many of @msgs (a prefix) were pushed; fewer than @k only
 * when fewer slots were free, 0 when the ring was full.
 * Context: producer only.
 */
static inline uint32_t
pw__spsc_push_batch(struct pw__spsc *r, const struct pw__msg *msgs, uint32_t k)
{
	struct pw__spsc_end *p = &r->prod;
	uint32_t n = pw__spsc_free(r, k);

	if (n > k)
		n = k;
	if (!n)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		p->slots[(p->pos + i) & p->mask] = msgs[i];
	p->pos += n;
	/* release: publishes the n slot writes above; pairs with the
	 * acquire load of tail in pw__spsc_avail(). */
	atomic_store_explicit(&r->tail, p->pos, memory_order_release);
	return n;
}

/**
 * pw__spsc_push - copy one message in and publish it.
 * Return: true if pushed, false if the ring was full.
 * Context: producer only.
 */
static inline bool pw__spsc_push(struct pw__spsc *r, const struct pw__msg *m)
{
	return pw__spsc_push_batch(r, m, 1) == 1;
}

/**
 * pw__spsc_peek - published messages the consumer may read in place.
 * @first: set to the oldest message, or NULL when 0 is returned.
 * @max: the most messages wanted.
 * Return: n <= @max contiguous messages from *@first; the run stops at the
 * end of the slot array, so after pw__spsc_release() a second call
 * continues after the wrap. The slots stay valid until released.
 * Context: consumer only.
 */
static inline uint32_t pw__spsc_peek(struct pw__spsc *r, struct pw__msg **first,
				     uint32_t max)
{
	struct pw__spsc_end *c = &r->cons;
	uint32_t idx = c->pos & c->mask;
	uint32_t run = c->mask + 1 - idx;
	uint32_t n = pw__spsc_avail(r, max < run ? max : run);

	if (n > max)
		n = max;
	if (n > run)
		n = run;
	*first = n ? &c->slots[idx] : NULL;
	return n;
}

/**
 * pw__spsc_release - give the @n oldest messages' slots back with one store.
 * @n: at most what the last pw__spsc_peek() returned; the caller is done
 * with those slots (consumed or copied them).
 * Context: consumer only.
 */
static inline void pw__spsc_release(struct pw__spsc *r, uint32_t n)
{
	r->cons.pos += n;
	/* release: our reads of the released slots happen before the
	 * producer reuses them; pairs with the acquire load of head in
	 * pw__spsc_free(). */
	atomic_store_explicit(&r->head, r->cons.pos, memory_order_release);
}

/**
 * pw__spsc_pop_batch - copy out up to @max of the oldest messages and free
 * their slots with one store.
 * Return: how many were copied to @out (0 when empty).
 * Context: consumer only.
 */
static inline uint32_t pw__spsc_pop_batch(struct pw__spsc *r,
					  struct pw__msg *out, uint32_t max)
{
	struct pw__spsc_end *c = &r->cons;
	uint32_t n = pw__spsc_avail(r, max);

	if (n > max)
		n = max;
	if (!n)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		out[i] = c->slots[(c->pos + i) & c->mask];
	c->pos += n;
	/* release: the slot reads above happen before the producer reuses
	 * the slots; pairs with the acquire load of head in
	 * pw__spsc_free(). */
	atomic_store_explicit(&r->head, c->pos, memory_order_release);
	return n;
}

/**
 * pw__spsc_pop - copy out the oldest message and free its slot.
 * Return: true if a message was copied to @out, false if empty.
 * Context: consumer only.
 */
static inline bool pw__spsc_pop(struct pw__spsc *r, struct pw__msg *out)
{
	return pw__spsc_pop_batch(r, out, 1) == 1;
}

/**
 * pw__spsc_empty_consumer - true when no published message is waiting.
 * Reads the producer's index only when the cached view says empty; false
 * is exact, true was true at the moment of that load.
 * Context: consumer only.
 */
static inline bool pw__spsc_empty_consumer(struct pw__spsc *r)
{
	return pw__spsc_avail(r, 1) == 0;
}

/**
 * pw__spsc_size_approx - messages in the ring at some recent moment.
 * Return: 0..capacity; exact when called by either side while the other
 * is idle, otherwise a snapshot that may already be stale.
 * Context: any thread; it reads both index lines, so it is for statistics,
 * not for hot paths.
 */
static inline uint32_t pw__spsc_size_approx(struct pw__spsc *r)
{
	/* acquire: pairs with the release stores of head; the consumer had
	 * read a tail >= this head, so the tail load below (ordered after
	 * this one) cannot return less: the difference never underflows. */
	uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	/* relaxed: only a count is derived from it, no slot is read. */
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint32_t n = tail - head;

	/* Both sides may move between the two loads. */
	return n > r->prod.mask + 1 ? r->prod.mask + 1 : n;
}

#endif /* PW_SHARD_SPSC_H */
