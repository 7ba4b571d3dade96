/* SPDX-License-Identifier: MIT */
/*
 * test_spsc.c - the SPSC message ring: exact single-thread behaviour
 * (capacity, FIFO, the first lap over slots in any prior state, wrap of
 * slots and of the 32-bit positions, partial batches, in-place
 * peek/release and reserve/commit across the wrap point) and pinned
 * two-thread stress tests that check exactly-once, in-order delivery
 * through a small, often full ring.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tests/common.h"

#include "shard/spsc.h"

static void spsc_mark(const struct pw__msg *m)
{
	(void)m;
}

/* Message number @seq: every field derived from it, so a torn or stale
 * slot is caught, not only a wrong sequence number. */
static struct pw__msg spsc_msg(uint64_t seq)
{
	struct pw__msg m = {
		.fn = spsc_mark,
		.a0 = (void *)(uintptr_t)(seq * 8 + 8),
		.a1 = seq,
		.a2 = ~seq,
		.a3 = seq * 3 + 1,
		.a4 = seq ^ 0x5555555555555555ull,
	};
	return m;
}

static bool spsc_msg_ok(const struct pw__msg *m, uint64_t seq)
{
	return m->fn == spsc_mark &&
	       m->a0 == (void *)(uintptr_t)(seq * 8 + 8) && m->a1 == seq &&
	       m->a2 == ~seq && m->a3 == seq * 3 + 1 &&
	       m->a4 == (seq ^ 0x5555555555555555ull);
}

static void spsc_expect(const struct pw__msg *m, uint64_t seq)
{
	cr_assert(spsc_msg_ok(m, seq), "expected message %llu, got a1=%llu",
		  (unsigned long long)seq, (unsigned long long)m->a1);
}

Test(spsc, init_rejects_bad_capacity)
{
	static struct pw__spsc_slot slots[8];
	struct pw__spsc r;
	const size_t bad[] = {
		0, 1, 3, 6, 7, 12, ((size_t)1 << 31) + 1, (size_t)1 << 32
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(pw__spsc_init(&r, slots, bad[i]), -EINVAL,
			     "capacity %zu", bad[i]);
	cr_assert_eq(pw__spsc_init(&r, NULL, 8), -EINVAL);
	cr_assert_eq(pw__spsc_init(NULL, slots, 8), -EINVAL);
	cr_assert_eq(pw__spsc_init(&r, slots, 2), 0);
	cr_assert_eq(pw__spsc_capacity(&r), 2);
	cr_assert_eq(pw__spsc_init(&r, slots, 8), 0);
	cr_assert_eq(pw__spsc_capacity(&r), 8);
	/* init writes every slot, so the largest capacity (2^31 slots, 128
	 * GiB) is checked only by the rejections just above it. */
}

Test(spsc, layout_one_line_per_slot_and_separate_sides)
{
	static struct pw__spsc_slot slots[4];

	cr_assert_eq(sizeof(struct pw__msg), 48);
	/* A slot is one whole line: message and sequence word together,
	 * every slot starting on a line boundary. */
	cr_assert_eq(sizeof(struct pw__spsc_slot), 64);
	cr_assert_eq(_Alignof(struct pw__spsc_slot), 64);
	cr_assert_lt(offsetof(struct pw__spsc_slot, seq), 64);
	cr_assert_eq((uintptr_t)&slots[1] % 64, 0);
	/* The consumer's line alone in its 128-byte pair; head paired with
	 * the producer's line. */
	cr_assert_leq(sizeof(struct pw__spsc_cons), 64);
	cr_assert_leq(sizeof(struct pw__spsc_prod), 64);
	cr_assert_eq(offsetof(struct pw__spsc, cons), 0);
	cr_assert_eq(offsetof(struct pw__spsc, head), 128);
	cr_assert_eq(offsetof(struct pw__spsc, prod), 192);
	cr_assert_eq(sizeof(struct pw__spsc), 256);
	cr_assert_eq(_Alignof(struct pw__spsc), 128);
}

Test(spsc, fills_to_capacity_then_refuses)
{
	static struct pw__spsc_slot slots[8];
	struct pw__spsc r;
	struct pw__msg m;

	cr_assert_eq(pw__spsc_init(&r, slots, 8), 0);
	cr_assert(pw__spsc_empty_consumer(&r));
	cr_assert_not(pw__spsc_pop(&r, &m));
	for (uint64_t i = 0; i < 8; i++) {
		m = spsc_msg(i);
		cr_assert(pw__spsc_push(&r, &m), "push %llu",
			  (unsigned long long)i);
		cr_assert_eq(pw__spsc_size_approx(&r), i + 1);
	}
	m = spsc_msg(99);
	cr_assert_not(pw__spsc_push(&r, &m));
	cr_assert_eq(pw__spsc_push_batch(&r, &m, 1), 0);
	cr_assert_eq(pw__spsc_size_approx(&r), 8);
	cr_assert_not(pw__spsc_empty_consumer(&r));
	for (uint64_t i = 0; i < 8; i++) {
		cr_assert(pw__spsc_pop(&r, &m));
		spsc_expect(&m, i);
	}
	cr_assert_not(pw__spsc_pop(&r, &m));
	cr_assert(pw__spsc_empty_consumer(&r));
	cr_assert_eq(pw__spsc_size_approx(&r), 0);
	/* One slot freed is one push allowed again. */
	m = spsc_msg(8);
	cr_assert(pw__spsc_push(&r, &m));
}

Test(spsc, fifo_across_many_wraps)
{
	static struct pw__spsc_slot slots[4];
	struct pw__spsc r;
	struct pw__msg m, out[4];
	uint64_t in = 0, got = 0;

	cr_assert_eq(pw__spsc_init(&r, slots, 4), 0);
	/* Uneven push and pop counts move the wrap point every round. */
	for (int round = 0; round < 10000; round++) {
		uint32_t k = 1 + (uint32_t)(round % 3);

		for (uint32_t i = 0; i < k; i++) {
			m = spsc_msg(in);
			if (pw__spsc_push(&r, &m))
				in++;
		}
		uint32_t n = pw__spsc_pop_batch(&r, out, 1 + (round % 2));
		for (uint32_t i = 0; i < n; i++)
			spsc_expect(&out[i], got++);
		cr_assert_eq(pw__spsc_size_approx(&r), in - got);
	}
	while (pw__spsc_pop(&r, &m))
		spsc_expect(&m, got++);
	cr_assert_eq(got, in);
	cr_assert_gt(in, 10000);
}

Test(spsc, batch_push_partial_fit)
{
	static struct pw__spsc_slot slots[8];
	struct pw__spsc r;
	struct pw__msg msgs[16], out[16];

	for (uint64_t i = 0; i < 16; i++)
		msgs[i] = spsc_msg(i);
	cr_assert_eq(pw__spsc_init(&r, slots, 8), 0);
	cr_assert_eq(pw__spsc_push_batch(&r, msgs, 5), 5);
	cr_assert_eq(pw__spsc_push_batch(&r, msgs + 5, 5), 3);
	cr_assert_eq(pw__spsc_push_batch(&r, msgs + 8, 5), 0);
	cr_assert_eq(pw__spsc_pop_batch(&r, out, 3), 3);
	/* Three freed slots: a batch of 8 gets exactly 3, across the wrap. */
	cr_assert_eq(pw__spsc_push_batch(&r, msgs + 8, 8), 3);
	cr_assert_eq(pw__spsc_pop_batch(&r, out + 3, 16), 8);
	for (uint64_t i = 0; i < 11; i++)
		spsc_expect(&out[i], i);
	cr_assert_eq(pw__spsc_pop_batch(&r, out, 16), 0);
	cr_assert_eq(pw__spsc_push_batch(&r, msgs, 0), 0);
}

Test(spsc, peek_release_across_wrap)
{
	static struct pw__spsc_slot slots[8];
	struct pw__spsc r;
	struct pw__msg msgs[8], out[8];
	struct pw__spsc_slot *first = NULL;

	cr_assert_eq(pw__spsc_init(&r, slots, 8), 0);
	for (uint64_t i = 0; i < 8; i++)
		msgs[i] = spsc_msg(i);
	/* Move both sides to slot 6. */
	cr_assert_eq(pw__spsc_push_batch(&r, msgs, 6), 6);
	cr_assert_eq(pw__spsc_pop_batch(&r, out, 6), 6);
	cr_assert_eq(pw__spsc_peek(&r, &first, 8), 0);
	cr_assert_null(first);

	for (uint64_t i = 0; i < 8; i++)
		msgs[i] = spsc_msg(100 + i);
	cr_assert_eq(pw__spsc_push_batch(&r, msgs, 8), 8);
	/* The run stops at the end of the array: slots 6 and 7. */
	cr_assert_eq(pw__spsc_peek(&r, &first, 8), 2);
	cr_assert_eq(first, &slots[6]);
	spsc_expect(&first[0].msg, 100);
	spsc_expect(&first[1].msg, 101);
	/* Peeking again without release sees the same messages. */
	cr_assert_eq(pw__spsc_peek(&r, &first, 1), 1);
	cr_assert_eq(first, &slots[6]);
	pw__spsc_release(&r, 2);
	cr_assert_eq(pw__spsc_size_approx(&r), 6);
	/* A released slot is the producer's again. */
	cr_assert_eq(pw__spsc_push_batch(&r, msgs, 1), 1);
	cr_assert_eq(pw__spsc_peek(&r, &first, 8), 7);
	cr_assert_eq(first, &slots[0]);
	for (uint64_t i = 0; i < 6; i++)
		spsc_expect(&first[i].msg, 102 + i);
	spsc_expect(&first[6].msg, 100);
	/* Release in two steps. */
	pw__spsc_release(&r, 3);
	cr_assert_eq(pw__spsc_peek(&r, &first, 8), 4);
	cr_assert_eq(first, &slots[3]);
	spsc_expect(&first[0].msg, 105);
	pw__spsc_release(&r, 4);
	cr_assert(pw__spsc_empty_consumer(&r));
}

Test(spsc, reserve_commit_across_wrap)
{
	static struct pw__spsc_slot slots[8];
	struct pw__spsc r;
	struct pw__msg msgs[8], out[8];
	struct pw__spsc_slot *first = NULL;

	cr_assert_eq(pw__spsc_init(&r, slots, 8), 0);
	for (uint64_t i = 0; i < 8; i++)
		msgs[i] = spsc_msg(i);
	cr_assert_eq(pw__spsc_push_batch(&r, msgs, 5), 5);
	cr_assert_eq(pw__spsc_pop_batch(&r, out, 5), 5);

	/* Slots 5..7, then 0..4 after the wrap. */
	cr_assert_eq(pw__spsc_reserve(&r, &first, 8), 3);
	cr_assert_eq(first, &slots[5]);
	for (uint64_t i = 0; i < 3; i++)
		first[i].msg = spsc_msg(200 + i);
	/* Written but not committed: invisible to the consumer. */
	cr_assert(pw__spsc_empty_consumer(&r));
	pw__spsc_commit(&r, 3);
	cr_assert_eq(pw__spsc_size_approx(&r), 3);
	cr_assert_eq(pw__spsc_reserve(&r, &first, 8), 5);
	cr_assert_eq(first, &slots[0]);
	for (uint64_t i = 0; i < 5; i++)
		first[i].msg = spsc_msg(203 + i);
	pw__spsc_commit(&r, 5);
	first = NULL;
	cr_assert_eq(pw__spsc_reserve(&r, &first, 8), 0);
	cr_assert_null(first);
	cr_assert_eq(pw__spsc_pop_batch(&r, out, 8), 8);
	for (uint64_t i = 0; i < 8; i++)
		spsc_expect(&out[i], 200 + i);
	/* A partial commit publishes only the prefix. */
	cr_assert_eq(pw__spsc_reserve(&r, &first, 4), 3);
	first[0].msg = spsc_msg(300);
	first[1].msg = spsc_msg(301);
	pw__spsc_commit(&r, 1);
	cr_assert_eq(pw__spsc_pop_batch(&r, out, 8), 1);
	spsc_expect(&out[0], 300);
}

/* The first lap: no earlier write vouches for a slot, and the slot
 * memory may hold anything (here, words that claim the very positions
 * the new ring expects, as a ring that used the memory before left them).
 * init rewrites every sequence word, so each message is seen exactly when
 * it is pushed, and the second lap does not mistake the first lap's
 * words for its own. */
Test(spsc, first_lap_over_stale_slots)
{
	static struct pw__spsc_slot slots[8];
	struct pw__spsc r;
	struct pw__spsc_slot *first;
	struct pw__msg m, out[8];

	memset(slots, 0xff, sizeof(slots));
	for (uint32_t i = 0; i < 8; i++)
		atomic_store(&slots[i].seq, i + 1);
	cr_assert_eq(pw__spsc_init(&r, slots, 8), 0);
	cr_assert(pw__spsc_empty_consumer(&r));
	cr_assert_eq(pw__spsc_size_approx(&r), 0);
	cr_assert_eq(pw__spsc_peek(&r, &first, 8), 0);
	for (uint64_t i = 0; i < 8; i++) {
		m = spsc_msg(i);
		cr_assert(pw__spsc_push(&r, &m));
		/* Unreleased, so every call probes the same slots again. */
		cr_assert_eq(pw__spsc_peek(&r, &first, 8), i + 1);
		cr_assert_eq(first, &slots[0]);
		cr_assert_eq(pw__spsc_size_approx(&r), i + 1);
	}
	cr_assert_eq(pw__spsc_pop_batch(&r, out, 8), 8);
	for (uint64_t i = 0; i < 8; i++)
		spsc_expect(&out[i], i);
	/* Second lap: slot i holds position i's word, i + 1; position i + 8
	 * expects i + 9. */
	cr_assert(pw__spsc_empty_consumer(&r));
	cr_assert_eq(pw__spsc_size_approx(&r), 0);
	for (uint64_t i = 8; i < 11; i++) {
		m = spsc_msg(i);
		cr_assert(pw__spsc_push(&r, &m));
	}
	cr_assert_eq(pw__spsc_peek(&r, &first, 8), 3);
	for (uint64_t i = 0; i < 3; i++)
		spsc_expect(&first[i].msg, 8 + i);
	pw__spsc_release(&r, 3);
	cr_assert(pw__spsc_empty_consumer(&r));
}

/* Positions are free-running uint32_t: full/empty must stay exact when
 * they wrap past 2^32. pw__spsc_init_at() starts both sides just below
 * the wrap, so the first lap contains position 2^32 - 1, whose published
 * word is 0: the word init stores must not be 0 there. */
Test(spsc, positions_wrap_past_2_32)
{
	static struct pw__spsc_slot slots[8];
	struct pw__spsc r;
	struct pw__spsc_slot *first;
	struct pw__msg msgs[8], out[8];
	const uint32_t start = UINT32_MAX - 2;

	cr_assert_eq(pw__spsc_init_at(&r, slots, 8, start), 0);
	cr_assert(pw__spsc_empty_consumer(&r));
	cr_assert_eq(pw__spsc_size_approx(&r), 0);
	/* Positions 2^32 - 3 and 2^32 - 2: the next slot, that of
	 * 2^32 - 1, is not yet published. */
	for (uint64_t i = 0; i < 8; i++)
		msgs[i] = spsc_msg(i);
	cr_assert_eq(pw__spsc_push_batch(&r, msgs, 2), 2);
	cr_assert_eq(pw__spsc_peek(&r, &first, 8), 2);
	cr_assert_eq(first, &slots[start & 7]);
	cr_assert_eq(pw__spsc_size_approx(&r), 2);
	/* Position 2^32 - 1 (word 0) in the last slot, in place: written,
	 * not yet committed, so still not seen. */
	cr_assert_eq(pw__spsc_reserve(&r, &first, 2), 1);
	cr_assert_eq(first, &slots[7]);
	first[0].msg = spsc_msg(2);
	cr_assert_eq(pw__spsc_peek(&r, &first, 8), 2);
	pw__spsc_commit(&r, 1);
	cr_assert_eq(atomic_load(&slots[7].seq), 0);
	cr_assert_eq(pw__spsc_peek(&r, &first, 8), 3);
	/* Position 0 (word 1), past the wrap of slots and positions. */
	cr_assert_eq(pw__spsc_reserve(&r, &first, 2), 2);
	cr_assert_eq(first, &slots[0]);
	first[0].msg = spsc_msg(3);
	pw__spsc_commit(&r, 1);
	cr_assert_eq(pw__spsc_size_approx(&r), 4);
	cr_assert_eq(pw__spsc_pop_batch(&r, out, 8), 4);
	for (uint64_t i = 0; i < 4; i++)
		spsc_expect(&out[i], i);
	cr_assert(pw__spsc_empty_consumer(&r));

	for (uint64_t round = 0; round < 4; round++) {
		for (uint64_t i = 0; i < 8; i++)
			msgs[i] = spsc_msg(round * 8 + i);
		cr_assert_eq(pw__spsc_push_batch(&r, msgs, 8), 8);
		cr_assert_eq(pw__spsc_size_approx(&r), 8);
		cr_assert_eq(pw__spsc_push_batch(&r, msgs, 1), 0);
		cr_assert_eq(pw__spsc_pop_batch(&r, out, 3), 3);
		cr_assert_eq(pw__spsc_size_approx(&r), 5);
		cr_assert_eq(pw__spsc_pop_batch(&r, out + 3, 8), 5);
		for (uint64_t i = 0; i < 8; i++)
			spsc_expect(&out[i], round * 8 + i);
		cr_assert(pw__spsc_empty_consumer(&r));
		cr_assert_eq(pw__spsc_size_approx(&r), 0);
	}
	cr_assert_lt(atomic_load(&r.head), start);
}

/* ---- two threads ---- */

#define STRESS_SLOTS 64
#define STRESS_BATCH 64

struct stress {
	struct pw__spsc ring;
	uint64_t total;
	/* false: the producer pushes batches, the consumer pops batches or
	 * peeks and releases all it saw. true: every call of the API, with
	 * partial commits and partial releases. */
	bool mixed;
	/* producer's results */
	uint64_t full_hits;
	/* consumer's results */
	uint64_t received;
	uint64_t bad_seq; /* first wrong message's position, or UINT64_MAX */
	uint64_t bad_got;
	/* Raised by the consumer when it gives up on a wrong message, so
	 * the producer stops instead of waiting for room forever. */
	_Atomic bool stop;
};

static struct pw__spsc_slot stress_slots[STRESS_SLOTS];
static struct stress stress;

static void spsc_relax(unsigned *spins)
{
	pw__cpu_relax();
	/* Let a descheduled peer run if the CPUs are oversubscribed. */
	if (++*spins % 4096 == 0)
		sched_yield();
}

static void spsc_pin(int cpu)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* Best effort: a restricted cpuset just runs unpinned. */
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Publish messages [@seq, @seq + @k) one way or another; how many went
 * in (a prefix), 0 when the ring had no room. */
static uint32_t stress_push(struct stress *s, unsigned *seed,
			    const struct pw__msg *batch, uint64_t seq,
			    uint32_t k)
{
	struct pw__spsc_slot *first;
	uint32_t n;

	switch (s->mixed ? rand_r(seed) % 3 : 0) {
	case 0:
		return pw__spsc_push_batch(&s->ring, batch, k);
	case 1:
		return pw__spsc_push(&s->ring, batch) ? 1 : 0;
	default:
		/* In place; commit a random prefix of what was written,
		 * possibly none (those slots are written again later). */
		n = pw__spsc_reserve(&s->ring, &first, k);
		for (uint32_t i = 0; i < n; i++)
			first[i].msg = spsc_msg(seq + i);
		n = n ? (uint32_t)(rand_r(seed) % (n + 1)) : 0;
		pw__spsc_commit(&s->ring, n);
		return n;
	}
}

static void *stress_producer(void *arg)
{
	struct stress *s = arg;
	struct pw__msg batch[STRESS_BATCH];
	unsigned seed = 12345, spins = 0;
	uint64_t seq = 0;

	spsc_pin(0);
	/* relaxed: the flag alone; the main thread reads the consumer's
	 * findings after joining both threads. */
	while (seq < s->total &&
	       !atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		uint32_t k = 1 + (uint32_t)(rand_r(&seed) % STRESS_BATCH);

		if (k > s->total - seq)
			k = (uint32_t)(s->total - seq);
		for (uint32_t i = 0; i < k; i++)
			batch[i] = spsc_msg(seq + i);
		uint32_t done = 0;
		while (done < k &&
		       !atomic_load_explicit(&s->stop, memory_order_relaxed)) {
			uint32_t n = stress_push(s, &seed, batch + done,
						 seq + done, k - done);
			done += n;
			if (!n) {
				s->full_hits++;
				spsc_relax(&spins);
			}
		}
		seq += k;
	}
	return NULL;
}

/* Is @m the message expected @ahead after the last one received? If not,
 * record it for the main thread to report. */
static bool stress_check(struct stress *s, const struct pw__msg *m,
			 uint32_t ahead)
{
	if (spsc_msg_ok(m, s->received + ahead))
		return true;
	s->bad_seq = s->received + ahead;
	s->bad_got = m->a1;
	return false;
}

/* Take some messages one way or another; how many were consumed, or
 * UINT32_MAX on a wrong one. */
static uint32_t stress_pop(struct stress *s, unsigned *seed)
{
	struct pw__msg out[STRESS_BATCH];
	struct pw__spsc_slot *first;
	uint32_t max = 1 + (uint32_t)(rand_r(seed) % STRESS_BATCH);
	uint32_t n, keep = 0;

	switch (rand_r(seed) % (s->mixed ? 3 : 2)) {
	case 0:
		n = pw__spsc_pop_batch(&s->ring, out, max);
		for (uint32_t i = 0; i < n; i++)
			if (!stress_check(s, &out[i], i))
				return UINT32_MAX;
		return n;
	case 1:
		/* In place; in the mixed test some of what was seen stays
		 * unreleased, to be seen again by the next call. */
		n = pw__spsc_peek(&s->ring, &first, max);
		for (uint32_t i = 0; i < n; i++)
			if (!stress_check(s, &first[i].msg, i))
				return UINT32_MAX;
		if (s->mixed && n)
			keep = (uint32_t)(rand_r(seed) % (n + 1));
		if (n - keep)
			pw__spsc_release(&s->ring, n - keep);
		return n - keep;
	default:
		if (!pw__spsc_pop(&s->ring, out))
			return 0;
		return stress_check(s, out, 0) ? 1 : UINT32_MAX;
	}
}

static void *stress_consumer(void *arg)
{
	struct stress *s = arg;
	unsigned seed = 54321, spins = 0;

	spsc_pin(1);
	while (s->received < s->total) {
		uint32_t n = stress_pop(s, &seed);

		if (n == UINT32_MAX) {
			/* relaxed: see stress_producer(). */
			atomic_store_explicit(&s->stop, true,
					      memory_order_relaxed);
			return NULL;
		}
		s->received += n;
		if (!n)
			spsc_relax(&spins);
	}
	/* Nothing may follow the last message. */
	if (!pw__spsc_empty_consumer(&s->ring)) {
		s->bad_seq = s->received;
		s->bad_got = UINT64_MAX;
	}
	return NULL;
}

/* @total messages (scaled) through a ring of @slots; with @across_wrap
 * its positions start half of them below 2^32. */
static void stress_run(uint32_t slots, bool across_wrap, bool mixed,
		       double total)
{
	pw_test_time_limit(120);
	struct stress *s = &stress;
	pthread_t prod, cons;

	s->total = (uint64_t)(total * pw_test_scale());
	if (s->total < 1000)
		s->total = 1000;
	uint32_t start = across_wrap ? (uint32_t)(0 - s->total / 2) : 0;
	cr_assert_eq(pw__spsc_init_at(&s->ring, stress_slots, slots, start), 0);
	s->mixed = mixed;
	s->full_hits = 0;
	s->received = 0;
	s->bad_seq = UINT64_MAX;
	s->bad_got = 0;
	atomic_store(&s->stop, false);
	/* pthread_create orders the set-up above before both threads. */
	cr_assert_eq(pthread_create(&cons, NULL, stress_consumer, s), 0);
	cr_assert_eq(pthread_create(&prod, NULL, stress_producer, s), 0);
	cr_assert_eq(pthread_join(prod, NULL), 0);
	cr_assert_eq(pthread_join(cons, NULL), 0);

	cr_assert_eq(s->bad_seq, UINT64_MAX,
		     "message %llu: got sequence %llu (or trailing junk)",
		     (unsigned long long)s->bad_seq,
		     (unsigned long long)s->bad_got);
	cr_assert_eq(s->received, s->total, "received %llu of %llu",
		     (unsigned long long)s->received,
		     (unsigned long long)s->total);
	cr_assert_gt(s->full_hits, 0, "the producer never found the ring full");
	cr_assert_eq(pw__spsc_size_approx(&s->ring), 0);
}

Test(spsc, two_threads_exactly_once_in_order)
{
	stress_run(STRESS_SLOTS, false, false, 1e7);
}

/* Every producer call (push_batch, push, reserve + partial commit)
 * against every consumer call (pop_batch, pop, peek + partial release)
 * through a 16-slot ring whose positions cross 2^32 while both threads
 * run. */
Test(spsc, two_threads_mixed_calls_across_the_wrap)
{
	stress_run(16, true, true, 5e6);
}
