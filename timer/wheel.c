/* SPDX-License-Identifier: MIT */
/*
 * timer/wheel.c - the per-shard hierarchical timer wheel.
 *
 * Why: a shard arms and disarms a timer for nearly every I/O with a
 * timeout, and almost all of them are cancelled long before they fire.
 * A wheel makes arm, re-arm and cancel O(1) list operations on a node
 * embedded in the caller's struct, and finds the next expiry from six
 * 64-bit masks. Each shard owns its wheel, so there is no lock.
 *
 * Layout: 6 levels of 64 slots. A slot of level l covers 64^l ticks, so
 * level l covers 64^(l+1) ticks. For a tick of 1 ms:
 *
 *	level	slot span		level range
 *	0	1 ms			64 ms
 *	1	64 ms			4.1 s
 *	2	4.1 s			4.4 min
 *	3	4.4 min			4.7 h
 *	4	4.7 h			12.4 days
 *	5	12.4 days		2.2 years (2^36 ticks), then a ring
 *
 * Placement: a timer is filed under its slot_when, a tick > elapsed. The
 * level is the 6-bit digit where slot_when first differs from elapsed,
 * level = (63 - clz((elapsed ^ slot_when) | 63)) / 6, and the slot is
 * digit `level` of slot_when. So a slot of level l > 0 holds timers that
 * are due within its span and starts after elapsed; when elapsed reaches
 * that start the slot "expires": its timers fire if due or are re-filed
 * from their true deadline, which lands them at a lower level (a
 * cascade). Nothing cascades more than five times.
 *
 * Far deadlines: a deadline outside elapsed's aligned 2^36-tick block
 * cannot be told apart by six digits. It is filed with slot_when = the
 * first tick of the next block, which is level 5 slot 0 (slot 0 of level
 * 5 never holds a timer of the current block, whose level 5 digit is
 * larger than elapsed's). Level 5 thus acts as a ring. When that slot
 * expires it holds the only timers left in the wheel, so advance jumps
 * straight to min(earliest deadline there, target tick) instead of
 * walking block by block: a jump to 2^60 costs O(timers), not O(2^24).
 *
 * Reset to a later tick only stores the new deadline: slot_when stays
 * and the timer is re-filed when its slot expires. An earlier one
 * re-files at once.
 *
 * Armed already due (deadline <= elapsed), a timer goes to the due list
 * and fires at the next advance. During an advance, timers found due in
 * expired slots go to the expired list, then move to an on-stack batch
 * of up to 32 (state FIRING, no longer counted) whose fns are called in
 * order. So while a fn runs the wheel is whole, and cancel or re-arm of a
 * FIRING timer unlinks it from the batch, which skips it.
 *
 * Walking a slot: with many timers an expiry's walk is a chain of cache
 * misses, each node's address in the node before. Every timer holds a
 * hint, a timer about PW__WHEEL_HINT places nearer its slot's head; the
 * walk goes from the tail and prefetches each hint, so that many misses
 * overlap. Hints come from a per-slot ring of recent filings; they may be
 * stale and are only ever prefetched (expire_slot() has the details).
 * Firing walks the expired list once more, front to back; there a due
 * timer's hint is the one PW__WHEEL_HINT places behind it in the list.
 *
 * Invariants between calls (pw__wheel_check() tests them all):
 *  - a PENDING timer in slots[l][s] has level l, slot s, elapsed <
 *    slot_when <= deadline, and either slot_when is in elapsed's 2^36
 *    block with l, s as placement says, or l = 5, s = 0 and slot_when is
 *    the first tick of the next block;
 *  - bit s of occupied[l] is set iff slots[l][s] is not empty;
 *  - timers in the due and expired lists are PENDING, level
 *    PW__TIMER_LEVEL_DUE, deadline <= elapsed;
 *  - count is the number of PENDING timers;
 *  - an empty slot's hint ring counts no filing.
 * It follows that occupied slots of a lower level all start before those
 * of a higher one, so the next expiry is in the lowest non-empty level:
 * rotate its mask to just past elapsed's digit, count trailing zeros.
 */
#include "timer/wheel.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SLOT_MASK  ((uint64_t)PW__WHEEL_SLOTS - 1)
#define TOP_LEVEL  (PW__WHEEL_LEVELS - 1)
#define RANGE_BITS (PW__WHEEL_LEVELS * PW__WHEEL_SLOT_BITS) /* 36 */
#define RANGE_MASK ((UINT64_C(1) << RANGE_BITS) - 1)
#define RING_SLOT  0 /* level 5 slot of the next block's first tick */

_Static_assert(PW__WHEEL_SLOTS == 1 << PW__WHEEL_SLOT_BITS, "slot bits");
_Static_assert(PW__WHEEL_SLOTS == 64, "occupied masks are 64 bits");
_Static_assert(RANGE_BITS < 64, "the wheel must not cover 64 bits");
_Static_assert(PW__TIMER_LEVEL_DUE < 256, "level is a uint8_t");
_Static_assert((PW__WHEEL_HINT & (PW__WHEEL_HINT - 1)) == 0,
	       "the hint ring's size is a power of 2");

static inline unsigned level_for(uint64_t elapsed, uint64_t when)
{
	uint64_t masked = (elapsed ^ when) | SLOT_MASK;
	unsigned level = (63 - __builtin_clzll(masked)) / PW__WHEEL_SLOT_BITS;

	return level > TOP_LEVEL ? TOP_LEVEL : level;
}

static inline unsigned slot_for(uint64_t when, unsigned level)
{
	return (when >> (level * PW__WHEEL_SLOT_BITS)) & SLOT_MASK;
}

/* Whether @when is in @elapsed's 2^36-tick block (the wheel's range). */
static inline bool in_range(uint64_t elapsed, uint64_t when)
{
	return ((elapsed ^ when) >> RANGE_BITS) == 0;
}

/*
 * The first tick of the block after @elapsed's. Only called when some
 * deadline lies beyond that block, so @elapsed is not in the last block
 * and this does not wrap.
 */
static inline uint64_t ring_tick(uint64_t elapsed)
{
	return (elapsed | RANGE_MASK) + 1;
}

static inline uint64_t rotr64(uint64_t x, unsigned r)
{
	return (x >> r) | (x << ((64 - r) & 63));
}

/*
 * The start tick of the first occupied slot of level @l (occupied[l] must
 * not be 0), and that slot in *@slot. Slots come after elapsed's digit:
 * rotating the mask right by digit + 1 puts the next one at bit 0, so the
 * distance is ctz + 1, from 1 to 64 (64 only for the ring slot when
 * elapsed's level 5 digit is 0).
 */
static inline uint64_t level_next(const struct pw__wheel *w, unsigned l,
				  unsigned *slot)
{
	unsigned shift = l * PW__WHEEL_SLOT_BITS;
	uint64_t pos = w->elapsed >> shift;
	unsigned cur = pos & SLOT_MASK;
	uint64_t rot = rotr64(w->occupied[l], (cur + 1) & SLOT_MASK);
	unsigned dist = (unsigned)__builtin_ctzll(rot) + 1;

	*slot = (cur + dist) & SLOT_MASK;
	return (pos + dist) << shift;
}

/* Forget the hint ring of slots[@l][@s], which has just emptied. */
static inline void recent_clear(struct pw__wheel *w, unsigned l, unsigned s)
{
	w->recent_links[l][s] = 0;
	w->head_filled[l] &= ~(UINT64_C(1) << s);
}

/*
 * Choose the slot of PENDING @t, deadline > elapsed: set its slot_when,
 * level and slot. Links nothing.
 */
static inline void choose_slot(const struct pw__wheel *w, struct pw__timer *t)
{
	uint64_t when = t->deadline;
	unsigned level;

	if (!in_range(w->elapsed, when))
		when = ring_tick(w->elapsed);
	level = level_for(w->elapsed, when);
	t->slot_when = when;
	t->level = (uint8_t)level;
	t->slot = (uint8_t)slot_for(when, level);
}

/*
 * Link @t, its slot chosen, at the tail of that slot. Its hint is the
 * timer filed there PW__WHEEL_HINT filings ago, now that many places
 * nearer the head unless some were cancelled (then the hint is only
 * wasted). Only the pointer is copied: that timer may be long gone,
 * and the place may even predate the slot's last emptying.
 */
static inline void link_tail(struct pw__wheel *w, struct pw__timer *t)
{
	unsigned l = t->level, s = t->slot;
	uint32_t n = w->recent_links[l][s]++;
	unsigned i = n & (PW__WHEEL_HINT - 1);

	t->hint = w->recent[l][s][i];
	w->recent[l][s][i] = t;
	pw_list_add_tail(&t->node, &w->slots[l][s]);
	w->occupied[l] |= UINT64_C(1) << s;
}

/*
 * Link @t, its slot chosen, at the head of that slot, during an expiry
 * that found the slot empty. The timer linked there PW__WHEEL_HINT links
 * ago, now that many places nearer the tail, gets @t as its hint; it is
 * alive, as the slot was empty when the expiry began, so every filing
 * since recent_clear() is the expiry's own (recent_links counts them).
 * The first PW__WHEEL_HINT are also kept in first[]: they end up at the
 * tail, where the walk of this slot will start.
 */
static inline void link_head(struct pw__wheel *w, struct pw__timer *t)
{
	unsigned l = t->level, s = t->slot;
	uint32_t n = w->recent_links[l][s]++;
	unsigned i = n & (PW__WHEEL_HINT - 1);

	if (n >= PW__WHEEL_HINT) {
		w->recent[l][s][i]->hint = t;
	} else {
		w->first[l][s][n] = t;
		w->head_filled[l] |= UINT64_C(1) << s;
	}
	t->hint = NULL;
	w->recent[l][s][i] = t;
	pw_list_add(&t->node, &w->slots[l][s]);
	w->occupied[l] |= UINT64_C(1) << s;
}

/* File PENDING @t, deadline > elapsed, in the slot its deadline selects. */
static inline void place(struct pw__wheel *w, struct pw__timer *t)
{
	choose_slot(w, t);
	link_tail(w, t);
}

/* Take @t out of whatever list holds it; it is then in no list. */
static inline void detach(struct pw__wheel *w, struct pw__timer *t)
{
	if (t->state == PW__TIMER_PENDING) {
		pw_list_del_init(&t->node);
		w->count--;
		if (t->level < PW__WHEEL_LEVELS &&
		    pw_list_empty(&w->slots[t->level][t->slot])) {
			w->occupied[t->level] &= ~(UINT64_C(1) << t->slot);
			recent_clear(w, t->level, t->slot);
		}
	} else if (t->state == PW__TIMER_FIRING) {
		pw_list_del_init(&t->node);
	}
}

void pw__wheel_init(struct pw__wheel *w, uint64_t now_tick)
{
	w->elapsed = now_tick;
	memset(w->recent, 0, sizeof(w->recent));
	memset(w->first, 0, sizeof(w->first));
	for (unsigned l = 0; l < PW__WHEEL_LEVELS; l++) {
		w->occupied[l] = 0;
		for (unsigned s = 0; s < PW__WHEEL_SLOTS; s++) {
			pw_list_init(&w->slots[l][s]);
			recent_clear(w, l, s);
		}
	}
	w->count = 0;
	w->expiries = 0;
	w->refiled = 0;
	pw_list_init(&w->due);
	pw_list_init(&w->expired);
}

void pw__timer_init(struct pw__timer *t, pw__timer_fn fn)
{
	pw_list_init(&t->node);
	t->deadline = 0;
	t->slot_when = 0;
	t->fn = fn;
	t->hint = NULL;
	t->level = 0;
	t->slot = 0;
	t->state = PW__TIMER_IDLE;
}

void pw__wheel_insert(struct pw__wheel *w, struct pw__timer *t,
		      uint64_t deadline)
{
	detach(w, t);
	t->deadline = deadline;
	t->state = PW__TIMER_PENDING;
	w->count++;
	if (deadline <= w->elapsed) {
		t->slot_when = deadline;
		t->level = PW__TIMER_LEVEL_DUE;
		t->slot = 0;
		t->hint = NULL;
		pw_list_add_tail(&t->node, &w->due);
		return;
	}
	place(w, t);
}

void pw__wheel_reset(struct pw__wheel *w, struct pw__timer *t,
		     uint64_t deadline)
{
	if (t->state == PW__TIMER_PENDING && t->level < PW__WHEEL_LEVELS &&
	    deadline >= t->slot_when) {
		t->deadline = deadline;
		return;
	}
	pw__wheel_insert(w, t, deadline);
}

bool pw__wheel_cancel(struct pw__wheel *w, struct pw__timer *t)
{
	if (t->state != PW__TIMER_PENDING && t->state != PW__TIMER_FIRING)
		return false;
	detach(w, t);
	t->state = PW__TIMER_IDLE;
	return true;
}

uint64_t pw__wheel_next(const struct pw__wheel *w)
{
	unsigned slot;

	if (!pw_list_empty(&w->due) || !pw_list_empty(&w->expired))
		return w->elapsed;
	for (unsigned l = 0; l < PW__WHEEL_LEVELS; l++)
		if (w->occupied[l])
			return level_next(w, l, &slot);
	return UINT64_MAX;
}

/*
 * Fire the expired list in batches. Each batch leaves the wheel (FIRING,
 * uncounted) before any of its fns runs; a fn that cancels or re-arms a
 * later member of the batch unlinks it, so it is skipped.
 */
static size_t fire_expired(struct pw__wheel *w)
{
	struct pw_list batch, *first, *cut;
	struct pw__timer *t;
	size_t calls = 0, n;

	while (!pw_list_empty(&w->expired)) {
		/* Cut the first PW__WHEEL_BATCH timers off as one segment. */
		first = w->expired.next;
		cut = first;
		for (n = 1;; n++) {
			t = pw_list_entry(cut, struct pw__timer, node);
			if (t->hint)
				__builtin_prefetch(t->hint, 1, 3);
			t->state = PW__TIMER_FIRING;
			if (n == PW__WHEEL_BATCH || cut->next == &w->expired)
				break;
			cut = cut->next;
		}
		w->count -= n;
		w->expired.next = cut->next;
		cut->next->prev = &w->expired;
		batch.next = first;
		first->prev = &batch;
		batch.prev = cut;
		cut->next = &batch;

		while (!pw_list_empty(&batch)) {
			t = pw_list_first_entry(&batch, struct pw__timer, node);
			pw_list_del_init(&t->node);
			t->state = PW__TIMER_FIRED;
			calls++;
			/* fn may free t's container: t is not touched again. */
			t->fn(t);
		}
	}
	return calls;
}

/*
 * Expire slots[@l][@slot], which starts at @start <= @now: move elapsed
 * there, send due timers to the expired list and re-file the others.
 *
 * The slot's chain is detached whole and walked without unlinking node by
 * node (no fn runs meanwhile, so nobody sees it). A long chain is mostly
 * cold, and each hop's address comes from the node before, so a plain
 * walk waits for one miss at a time. Each timer's hint names the timer
 * PW__WHEEL_HINT places nearer the head, so the walk goes from the tail
 * and prefetches every visited timer's hint: about that many misses are
 * in flight. The first ones come from the slot's ring of recent filings
 * or, for a slot an expiry filled from the head, from its first filings.
 *
 * Walking backwards keeps every order of a forward walk. The slots of
 * lower levels and the expired list are empty when a slot of level @l
 * expires (the next expiry is always in the lowest occupied level), so
 * timers bound there are linked at the head, and each list ends in the
 * order a forward walk appending at the tail would give. The rare timer
 * bound for level @l or above (its deadline reset later, or the ring
 * slot's jump) may join a non-empty slot: such timers are set aside and
 * appended in forward order after the walk.
 */
static void expire_slot(struct pw__wheel *w, unsigned l, unsigned slot,
			uint64_t start, uint64_t now)
{
	struct pw_list *head = &w->slots[l][slot];
	struct pw_list *first = head->next, *pos = head->prev, *prev;
	struct pw_list aside;
	struct pw__timer *t, **ring, *due[PW__WHEEL_HINT];
	uint32_t links, ndue = 0;
	bool done;

	links = w->recent_links[l][slot];
	ring = (w->head_filled[l] >> slot) & 1 ? w->first[l][slot] :
						 w->recent[l][slot];
	for (uint32_t i = 0; i < links && i < PW__WHEEL_HINT; i++)
		__builtin_prefetch(ring[i], 1, 3);
	pw_list_init(head);
	recent_clear(w, l, slot);
	pw_list_init(&aside);
	w->occupied[l] &= ~(UINT64_C(1) << slot);
	w->elapsed = start;
	w->expiries++;
	if (l == TOP_LEVEL && slot == RING_SLOT) {
		/*
		 * The ring slot expires last of all slots: these are the only
		 * timers left, so time may jump to the earliest of them (or to
		 * now) without passing any other slot.
		 */
		uint64_t min = now;
		struct pw_list *p = first;

		for (;;) {
			t = pw_list_entry(p, struct pw__timer, node);
			if (t->deadline < min)
				min = t->deadline;
			if (p == pos)
				break;
			p = p->next;
		}
		w->elapsed = min;
	}
	do {
		/* pos and everything before it back to first are untouched. */
		t = pw_list_entry(pos, struct pw__timer, node);
		prev = pos->prev;
		done = pos == first;
		if (t->hint)
			__builtin_prefetch(t->hint, 1, 3);
		if (t->deadline <= w->elapsed) {
			/* The due timer met PW__WHEEL_HINT due timers ago
			 * lies that many places behind t in the expired
			 * list: firing, which walks it forwards, prefetches
			 * it from here. */
			unsigned i = ndue++ & (PW__WHEEL_HINT - 1);

			t->hint = ndue > PW__WHEEL_HINT ? due[i] : NULL;
			due[i] = t;
			t->level = PW__TIMER_LEVEL_DUE;
			t->slot = 0;
			pw_list_add(&t->node, &w->expired);
		} else {
			choose_slot(w, t);
			if (t->level < l)
				link_head(w, t);
			else
				pw_list_add(&t->node, &aside);
			w->refiled++;
		}
		pos = prev;
	} while (!done);
	while (!pw_list_empty(&aside)) {
		t = pw_list_first_entry(&aside, struct pw__timer, node);
		pw_list_del(&t->node);
		link_tail(w, t);
	}
}

size_t pw__wheel_advance(struct pw__wheel *w, uint64_t now_tick)
{
	size_t calls;
	uint64_t start;
	unsigned l, slot;

	if (now_tick < w->elapsed)
		now_tick = w->elapsed;
	/* Timers armed due before this call; ones armed by fns wait. */
	calls = 0;
	if (!pw_list_empty(&w->due)) {
		pw_list_splice_tail_init(&w->due, &w->expired);
		calls = fire_expired(w);
	}
	for (;;) {
		for (l = 0; l < PW__WHEEL_LEVELS && !w->occupied[l]; l++)
			;
		if (l == PW__WHEEL_LEVELS)
			break;
		start = level_next(w, l, &slot);
		if (start > now_tick)
			break;
		expire_slot(w, l, slot, start, now_tick);
		if (!pw_list_empty(&w->expired))
			calls += fire_expired(w);
	}
	w->elapsed = now_tick;
	return calls;
}

__attribute__((format(printf, 3, 4))) static int
check_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Walk one list of @w; *@n counts timers seen, bounded to stop on a loop. */
static int check_list(const struct pw__wheel *w, const struct pw_list *head,
		      unsigned l, unsigned s, size_t *n, char *err,
		      size_t errlen)
{
	const uint64_t e = w->elapsed;
	const struct pw_list *pos;
	const struct pw__timer *t;
	uint64_t when;

	for (pos = head->next; pos != head; pos = pos->next) {
		if (++*n > w->count)
			return check_fail(err, errlen,
					  "more timers linked than count %zu",
					  w->count);
		if (pos->next->prev != pos || pos->prev->next != pos)
			return check_fail(err, errlen,
					  "broken links in list %u/%u", l, s);
		t = pw_list_entry(pos, const struct pw__timer, node);
		when = t->slot_when;
		if (t->state != PW__TIMER_PENDING)
			return check_fail(err, errlen,
					  "timer in list %u/%u has state %u", l,
					  s, t->state);
		if (t->level != l || t->slot != s)
			return check_fail(err, errlen,
					  "timer says %u/%u but is in %u/%u",
					  t->level, t->slot, l, s);
		if (when > t->deadline)
			return check_fail(err, errlen,
					  "slot_when %" PRIu64
					  " > deadline %" PRIu64,
					  when, t->deadline);
		if (l == PW__TIMER_LEVEL_DUE) {
			if (t->deadline > e)
				return check_fail(err, errlen,
						  "due deadline %" PRIu64
						  " > elapsed %" PRIu64,
						  t->deadline, e);
			continue;
		}
		if (when <= e)
			return check_fail(err, errlen,
					  "slot_when %" PRIu64
					  " <= elapsed %" PRIu64 " in %u/%u",
					  when, e, l, s);
		if (in_range(e, when)) {
			unsigned wl = level_for(e, when);

			if (wl != l || slot_for(when, l) != s)
				return check_fail(err, errlen,
						  "slot_when %" PRIu64
						  " at elapsed %" PRIu64
						  " is in %u/%u, not %u/%u",
						  when, e, l, s, wl,
						  slot_for(when, wl));
		} else if (l != TOP_LEVEL || s != RING_SLOT ||
			   when != ring_tick(e)) {
			return check_fail(err, errlen,
					  "far slot_when %" PRIu64
					  " at elapsed %" PRIu64
					  " is not the ring tick (%u/%u)",
					  when, e, l, s);
		}
	}
	return 0;
}

int pw__wheel_check(const struct pw__wheel *w, char *err, size_t errlen)
{
	size_t n = 0;
	int ret;

	for (unsigned l = 0; l < PW__WHEEL_LEVELS; l++) {
		for (unsigned s = 0; s < PW__WHEEL_SLOTS; s++) {
			const struct pw_list *head = &w->slots[l][s];
			bool bit = (w->occupied[l] >> s) & 1;

			if (bit == pw_list_empty(head))
				return check_fail(
					err, errlen,
					"slot %u/%u: occupied bit %d, list %s",
					l, s, bit, bit ? "empty" : "not empty");
			if (pw_list_empty(head) && w->recent_links[l][s])
				return check_fail(err, errlen,
						  "slot %u/%u: empty but its "
						  "hint ring counts %" PRIu32,
						  l, s, w->recent_links[l][s]);
			ret = check_list(w, head, l, s, &n, err, errlen);
			if (ret)
				return ret;
		}
	}
	ret = check_list(w, &w->due, PW__TIMER_LEVEL_DUE, 0, &n, err, errlen);
	if (ret)
		return ret;
	ret = check_list(w, &w->expired, PW__TIMER_LEVEL_DUE, 0, &n, err,
			 errlen);
	if (ret)
		return ret;
	if (n != w->count)
		return check_fail(err, errlen,
				  "count %zu but %zu timers linked", w->count,
				  n);
	return 0;
}
