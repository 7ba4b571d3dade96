/* SPDX-License-Identifier: MIT */
/*
 * spsc.h - bounded lock-free single-producer single-consumer message ring.
 *
 * Shards talk to each other through these rings: one ring per ordered pair
 * of shards, written by exactly one thread and read by exactly one other.
 * A message is a 48-byte record (a function and five argument words)
 * copied into caller-provided slot memory, so the runtime can place that
 * memory on the consumer's NUMA node.
 *
 * One line per hop. Each slot is one 64-byte cache line holding a message
 * and a 32-bit sequence word. Positions are free-running 32-bit counters
 * that wrap modulo 2^32; position p lives in slot p & mask. The producer
 * writes the message of position p, then stores p + 1 into that slot's
 * sequence word with release; the consumer at position p polls that same
 * word and takes the message once it reads p + 1 with acquire. Handing a
 * message over therefore moves exactly the one line the consumer is about
 * to read, the floor set by a single line flipped between two cores. A
 * design with a separate published tail index moves two lines per hop,
 * the index and then the slot.
 *
 * Giving slots back. The consumer publishes its position (head) with one
 * release store per batch released, alone on its own line. The producer
 * keeps a cached copy of head and re-reads the shared one only when that
 * copy shows too little room, so a ring that is not full moves the head
 * line about once per lap, not once per message. Capacity rule: a ring of
 * N slots holds N messages (full when the producer is N positions past
 * head), so N is a power of two from 2 to 2^31.
 *
 * Each side works from a private line holding its own position, its
 * cached view of the other side and the ring geometry; the other side
 * never touches it. There is no read-modify-write and no seq_cst. A
 * sleep/wake protocol built on top (asleep flag +
 * pw__spsc_empty_consumer()) must add its own seq_cst fences on both
 * sides: acquire/release alone does not order a store before a later
 * load.
 */
#ifndef PW_SHARD_SPSC_H
#define PW_SHARD_SPSC_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#define PW__SPSC_LINE	      64
#define PW__SPSC_MAX_CAPACITY ((size_t)1 << 31)

/* A spin-wait hint to the CPU (yields the core to an SMT sibling). */
static inline void pw__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/*
 * One message. Ownership of whatever it points to moves with it. The
 * consumer runs fn(m) with m pointing at the message where it lies (in
 * its slot, or in a copy), valid only during the call: a handler that
 * needs a word later copies it out.
 */
struct pw__msg {
	void (*fn)(const struct pw__msg *m); /* run by the consumer */
	void *a0;			     /* first argument */
	uint64_t a1, a2, a3, a4;	     /* four more */
};

/*
 * One slot, one cache line: a 56-byte slot (the 48-byte message, the
 * 4-byte seq, padding) would straddle two lines for most positions. seq is the position whose
 * message the slot holds, plus one, once that message is published.
 *
 * Why the consumer at position p cannot mistake an old word for p + 1:
 * the producer writes position p only after the consumer released
 * p - N, and cannot write p + N before the consumer releases p, so while
 * the consumer waits at p the slot holds either the word of position
 * p - N (p - N + 1), the word of p (p + 1), or, in the first lap, the
 * word pw__spsc_init_at() stored (the start position s, with
 * s <= p < s + N). Modulo 2^32 neither p - N + 1 nor s equals p + 1,
 * because 0 < N <= 2^31 < 2^32 and 0 <= p - s < N: the check needs no
 * lap count and survives the wrap of the positions past 2^32. A ring
 * started at 0 therefore starts with every seq 0, which no position of
 * the first lap (1..N expected) can match, including position 2^32 - 1
 * (0 expected), which is never in the first lap.
 */
struct pw__spsc_slot {
	_Alignas(PW__SPSC_LINE) struct pw__msg msg;
	_Atomic uint32_t seq;
};
_Static_assert(sizeof(struct pw__spsc_slot) == PW__SPSC_LINE,
	       "a slot is exactly one cache line");

/* The consumer's private line; the producer never touches it. */
struct pw__spsc_cons {
	uint32_t pos;		     /* next position to read */
	uint32_t ready;		     /* positions before this are published */
	uint32_t mask;		     /* capacity - 1 */
	struct pw__spsc_slot *slots; /* the slot array */
};

/* The producer's private line; the consumer never touches it. */
struct pw__spsc_prod {
	uint32_t pos;		     /* next position to write */
	uint32_t peer;		     /* last value read of head */
	uint32_t mask;		     /* capacity - 1 */
	bool prefetchw;		     /* the processor has PREFETCHW */
	struct pw__spsc_slot *slots; /* the slot array */
};

/* Whether this x86-64 processor has PREFETCHW (CPUID 0x80000001, ECX bit
 * 8); false elsewhere. Asked once: CPUID may exit to the hypervisor. */
static inline bool pw__spsc_cpu_prefetchw(void)
{
#if defined(__x86_64__)
	static _Atomic int known; /* 0 not asked yet, 1 no, 2 yes */
	unsigned a, b, c, d;
	/* relaxed: a cache of a constant; a thread that finds it unset asks
	 * the processor itself and stores the same answer. */
	int k = atomic_load_explicit(&known, memory_order_relaxed);

	if (!k) {
		bool has = __get_cpuid(0x80000001u, &a, &b, &c, &d) &&
			   (c & (1u << 8));
		k = has ? 2 : 1;
		/* relaxed: see the load above. */
		atomic_store_explicit(&known, k, memory_order_relaxed);
	}
	return k == 2;
#else
	return false;
#endif
}

/*
 * Four lines, 256 bytes, 128-byte aligned (allocate with aligned_alloc or
 * embed). Adjacent-line prefetchers fetch 128-byte pairs: head is paired
 * with the producer's line, so the producer's miss on head prefetches only
 * its own line, and the consumer's line has a pair of its own, so no
 * prefetch by the producer ever takes it away.
 */
struct pw__spsc {
	_Alignas(2 * PW__SPSC_LINE) struct pw__spsc_cons cons; /* consumer */
	/* Next position to read; stored by the consumer, read by the
	 * producer when its cached copy shows too little room. */
	_Alignas(2 * PW__SPSC_LINE) _Atomic uint32_t head;
	_Alignas(PW__SPSC_LINE) struct pw__spsc_prod prod; /* producer */
};

/**
 * pw__spsc_init_at - make @r an empty ring over @slots whose positions
 * start at @start instead of 0. For tests: the wrap of the 32-bit
 * positions past 2^32 is reached without pushing 2^32 messages.
 * Otherwise as pw__spsc_init().
 */
static inline int pw__spsc_init_at(struct pw__spsc *r,
				   struct pw__spsc_slot *slots, size_t capacity,
				   uint32_t start)
{
	if (!r || !slots || capacity < 2 || capacity > PW__SPSC_MAX_CAPACITY ||
	    (capacity & (capacity - 1)))
		return -EINVAL;
	/* No position of the first lap expects @start (see struct
	 * pw__spsc_slot), whatever the slots held before. */
	for (size_t i = 0; i < capacity; i++)
		atomic_init(&slots[i].seq, start);
	atomic_init(&r->head, start);
	r->prod.pos = r->prod.peer = start;
	r->cons.pos = r->cons.ready = start;
	r->prod.mask = r->cons.mask = (uint32_t)(capacity - 1);
	r->prod.prefetchw = pw__spsc_cpu_prefetchw();
	r->prod.slots = r->cons.slots = slots;
	return 0;
}

/**
 * pw__spsc_init - make @r an empty ring over @slots.
 * @slots: @capacity slots of caller-owned memory, in any state (init
 * writes every slot's sequence word); must outlive @r.
 * @capacity: a power of two, 2 <= @capacity <= 2^31.
 * Return: 0, or -EINVAL for a bad capacity or NULL @r / @slots.
 * Context: before the ring is shared; the threads that then use it must
 * learn of it through a release/acquire pair (e.g. pthread_create).
 */
static inline int pw__spsc_init(struct pw__spsc *r, struct pw__spsc_slot *slots,
				size_t capacity)
{
	return pw__spsc_init_at(r, slots, capacity, 0);
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
	struct pw__spsc_prod *p = &r->prod;
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
 * many are published (never more than the capacity). Probes the slots
 * after the last one known published, in order, and stops at the first
 * that is not or once @want are known, so it reads only lines the
 * consumer is about to read anyway, plus at most the one it must poll.
 * Consumer only.
 *
 * Probing one slot after another suffices because the producer publishes
 * in position order: its release store of position q's word is sequenced
 * after its stores of every earlier position (message and word), so our
 * acquire load that reads q + 1 synchronizes with it and makes all of
 * them visible to our later reads. A slot found published stays so until
 * we release it: the producer cannot reuse it before. The probe needs no
 * bound of its own: with all N slots published and unreleased, the slot
 * of position pos + N holds pos + 1, not pos + N + 1, so it stops there
 * whatever @want is.
 */
static inline uint32_t pw__spsc_avail(struct pw__spsc *r, uint32_t want)
{
	struct pw__spsc_cons *c = &r->cons;
	uint32_t pos = c->pos, ready = c->ready;

	while (ready - pos < want) {
		/* acquire: pairs with the release store of this word in
		 * pw__spsc_commit() or pw__spsc_push_batch(); the message
		 * (and every earlier one) is visible to our reads. */
		if (atomic_load_explicit(&c->slots[ready & c->mask].seq,
					 memory_order_acquire) != ready + 1)
			break;
		ready++;
	}
	c->ready = ready;
	return ready - pos;
}

/*
 * pw__spsc_prefetch_write - ask for the line of the producer's next slot
 * with intent to write, if the processor has PREFETCHW (x86-64; nothing
 * elsewhere, where it was not measured). A hint: no effect on what either
 * side sees.
 *
 * The producer calls it right after a publish, when its cached view shows
 * the next slot free (a slot not yet released may still be read by the
 * consumer), so fetching that line for writing overlaps the consumer's
 * read of what was just published instead of delaying the next publish.
 * On the development machine (AMD EPYC, two vCPUs) it took about a tenth
 * off a round trip; a read prefetch there gained nothing.
 */
static inline void pw__spsc_prefetch_write(const struct pw__spsc_prod *p)
{
#if defined(__x86_64__)
	if (p->prefetchw)
		__asm__("prefetchw %0"
			:
			: "m"(*(const char *)&p->slots[p->pos & p->mask]));
#else
	(void)p;
#endif
}

/**
 * pw__spsc_reserve - free slots the producer may write in place.
 * @first: set to the first free slot, or NULL when 0 is returned.
 * @max: the most slots wanted.
 * Return: n <= @max contiguous slots from *@first (write their .msg
 * only); the run stops at the end of the slot array, so a second call
 * (after pw__spsc_commit()) continues after the wrap. The consumer sees
 * none of them before pw__spsc_commit().
 * Context: producer only.
 */
static inline uint32_t
pw__spsc_reserve(struct pw__spsc *r, struct pw__spsc_slot **first, uint32_t max)
{
	struct pw__spsc_prod *p = &r->prod;
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
 * pw__spsc_commit - publish the next @n slots, written in place, in order.
 * @n: at most what the last pw__spsc_reserve() returned.
 * Context: producer only.
 */
static inline void pw__spsc_commit(struct pw__spsc *r, uint32_t n)
{
	struct pw__spsc_prod *p = &r->prod;
	uint32_t pos = p->pos;

	for (uint32_t i = 0; i < n; i++, pos++)
		/* release: publishes this slot's message and every earlier
		 * one; pairs with the acquire load in pw__spsc_avail(). */
		atomic_store_explicit(&p->slots[pos & p->mask].seq, pos + 1,
				      memory_order_release);
	p->pos = pos;
	/* See pw__spsc_prefetch_write(). */
	if (n && pos - p->peer <= p->mask)
		pw__spsc_prefetch_write(p);
}

/**
 * pw__spsc_push_batch - copy up to @k messages in and publish them, in
 * order.
 * Return: how many of @msgs (a prefix) were pushed; fewer than @k only
 * when fewer slots were free, 0 when the ring was full.
 * Context: producer only.
 */
static inline uint32_t
pw__spsc_push_batch(struct pw__spsc *r, const struct pw__msg *msgs, uint32_t k)
{
	struct pw__spsc_prod *p = &r->prod;
	uint32_t free = pw__spsc_free(r, k), pos = p->pos;
	uint32_t n = k < free ? k : free;

	for (uint32_t i = 0; i < n; i++, pos++) {
		struct pw__spsc_slot *s = &p->slots[pos & p->mask];

		s->msg = msgs[i];
		/* release: publishes the message above (and every earlier
		 * one); pairs with the acquire load in pw__spsc_avail(). */
		atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
	}
	p->pos = pos;
	/* The next slot is free too: see pw__spsc_prefetch_write(). */
	if (free > n)
		pw__spsc_prefetch_write(p);
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
 * pw__spsc_known - messages the consumer has already seen published and
 * not yet released: what pw__spsc_peek() can return without loading a
 * slot it has not read before.
 * Context: consumer only.
 */
static inline uint32_t pw__spsc_known(const struct pw__spsc *r)
{
	return r->cons.ready - r->cons.pos;
}

/**
 * pw__spsc_peek - published messages the consumer may read in place.
 * @first: set to the oldest message's slot, or NULL when 0 is returned.
 * @max: the most messages wanted.
 * Return: n <= @max contiguous slots from *@first (read their .msg); the
 * run stops at the end of the slot array, so after pw__spsc_release() a
 * second call continues after the wrap. The slots stay valid until
 * released.
 * Context: consumer only.
 */
static inline uint32_t pw__spsc_peek(struct pw__spsc *r,
				     struct pw__spsc_slot **first, uint32_t max)
{
	struct pw__spsc_cons *c = &r->cons;
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
	struct pw__spsc_cons *c = &r->cons;
	uint32_t n = pw__spsc_avail(r, max);

	if (n > max)
		n = max;
	if (!n)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		out[i] = c->slots[(c->pos + i) & c->mask].msg;
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
 * Loads the oldest unread slot's sequence word only when no message is
 * known published; false is exact, true was true at the moment of that
 * load.
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
 * Context: any thread; it reads head and then every published slot's
 * sequence word, taking lines from both sides, so it is for statistics
 * and tests, not for hot paths.
 */
static inline uint32_t pw__spsc_size_approx(struct pw__spsc *r)
{
	const struct pw__spsc_prod *p = &r->prod;
	/* acquire: pairs with the release stores of head; positions before
	 * it were consumed. */
	uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	uint32_t n = 0;

	/* relaxed: only a count is derived, no message is read. The scan
	 * stops early if the producer has meanwhile lapped a slot. */
	while (n <= p->mask &&
	       atomic_load_explicit(&p->slots[(head + n) & p->mask].seq,
				    memory_order_relaxed) == head + n + 1)
		n++;
	return n;
}

#endif /* PW_SHARD_SPSC_H */
