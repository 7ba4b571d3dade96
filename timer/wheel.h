/* SPDX-License-Identifier: MIT */
/*
 * timer/wheel.h - the per-shard hierarchical timer wheel (private).
 *
 * One wheel per shard, owned and touched by that shard's thread only, so
 * nothing here takes a lock or uses atomics. Timers are embedded in the
 * caller's structs; the wheel never allocates. Time is counted in ticks
 * (whole multiples of the runtime's tick length) since runtime start.
 *
 * See timer/wheel.c for the design and its invariants.
 */
#ifndef PW__TIMER_WHEEL_H
#define PW__TIMER_WHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pinwheel/list.h"

#define PW__WHEEL_LEVELS    6
#define PW__WHEEL_SLOTS	    64
#define PW__WHEEL_SLOT_BITS 6 /* log2(PW__WHEEL_SLOTS) */

/* Timers collected from expired slots are fired in batches of this many. */
#define PW__WHEEL_BATCH 32

/*
 * Prefetch distance of a slot walk, in timers: each slot remembers the
 * last this many timers filed in it, so a timer can point at the one this
 * many places nearer the head (see timer/wheel.c, "Walking a slot").
 */
#define PW__WHEEL_HINT 16

/*
 * pw__timer.level of a PENDING timer that is due and waits in the wheel's
 * due or expired list rather than in a slot.
 */
#define PW__TIMER_LEVEL_DUE PW__WHEEL_LEVELS

enum pw__timer_state {
	PW__TIMER_IDLE = 0, /* never armed, or cancelled */
	PW__TIMER_PENDING,  /* armed: in a slot, the due or the expired list */
	PW__TIMER_FIRING,   /* in the batch being fired, fn not yet called */
	PW__TIMER_FIRED,    /* fn called (or being called) */
};

struct pw__timer;

/* Called when the timer fires; the timer is FIRED and may be re-armed. */
typedef void (*pw__timer_fn)(struct pw__timer *t);

/* A timer, embedded in the caller's struct; no allocation per timer. */
struct pw__timer {
	struct pw_list node; /* link in its slot list (or the firing batch) */
	uint64_t deadline;   /* true deadline, in ticks */
	uint64_t slot_when;  /* the tick its registered slot stands for */
	pw__timer_fn fn;     /* called when it fires */
	/*
	 * A timer of the same slot about PW__WHEEL_HINT places nearer the
	 * head, which a walk of the slot meets that many steps later; in
	 * the expired list, the timer PW__WHEEL_HINT places behind, which
	 * firing meets that many steps later; or NULL. Only ever
	 * prefetched, never dereferenced: it may be stale.
	 */
	struct pw__timer *hint;
	uint8_t level; /* 0..5, or PW__TIMER_LEVEL_DUE */
	uint8_t slot;  /* 0..63 within its level */
	uint8_t state; /* enum pw__timer_state */
};

/* The wheel of one shard. */
struct pw__wheel {
	uint64_t elapsed; /* current tick; deadlines <= it were handed out,
			   * but for timers armed since (they wait in due) */
	uint64_t occupied[PW__WHEEL_LEVELS]; /* bit s <=> slots[l][s] in use */
	struct pw_list slots[PW__WHEEL_LEVELS][PW__WHEEL_SLOTS];
	size_t count;	    /* timers PENDING in the wheel (any list) */
	struct pw_list due; /* armed with deadline <= elapsed: next advance */
	struct pw_list expired; /* collected by the running advance, to fire */
	uint64_t expiries;	/* statistic: slots expired so far */
	uint64_t refiled;	/* statistic: timers re-filed by an expiry */
	/*
	 * Per slot, the timers filed there since it was last empty, counted
	 * in recent_links; the last PW__WHEEL_HINT of them are kept in a
	 * ring whose next place is recent_links % PW__WHEEL_HINT, for the
	 * hints. Places at or past recent_links are stale. So during an
	 * expiry, the ring of a slot the expiry fills names only timers it
	 * filed, all alive.
	 */
	struct pw__timer
		*recent[PW__WHEEL_LEVELS][PW__WHEEL_SLOTS][PW__WHEEL_HINT];
	uint32_t recent_links[PW__WHEEL_LEVELS][PW__WHEEL_SLOTS];
	/*
	 * Per slot an expiry filled (bit s of head_filled[l]), the first
	 * PW__WHEEL_HINT timers it linked: the tail end, where the slot's
	 * own walk starts. Stale places are harmless (only prefetched).
	 */
	uint64_t head_filled[PW__WHEEL_LEVELS];
	struct pw__timer
		*first[PW__WHEEL_LEVELS][PW__WHEEL_SLOTS][PW__WHEEL_HINT];
};

/**
 * pw__wheel_init - make @w an empty wheel whose current tick is @now_tick.
 *
 * Context: owning shard thread only.
 */
void pw__wheel_init(struct pw__wheel *w, uint64_t now_tick);

/**
 * pw__timer_init - make @t an IDLE timer that calls @fn when it fires.
 *
 * Must be called once before any other use of @t, never on an armed one.
 * Context: owning shard thread only.
 */
void pw__timer_init(struct pw__timer *t, pw__timer_fn fn);

/**
 * pw__wheel_insert - arm @t to fire at tick @deadline.
 *
 * @t may be IDLE, FIRED, PENDING (re-armed: its old arming is dropped) or
 * FIRING (its pending call is dropped). A @deadline <= w->elapsed fires at
 * the next pw__wheel_advance() call, even one with the same now. Any
 * 64-bit @deadline is accepted, UINT64_MAX included. O(1).
 * Context: owning shard thread only (a timer fn may call it).
 */
void pw__wheel_insert(struct pw__wheel *w, struct pw__timer *t,
		      uint64_t deadline);

/**
 * pw__wheel_reset - move the deadline of @t to @deadline.
 *
 * A PENDING timer whose new deadline is not before the tick of its slot
 * only has its deadline changed (it is re-filed when that slot expires);
 * otherwise this is pw__wheel_insert(). Works on IDLE, FIRED and FIRING
 * timers as pw__wheel_insert() does. O(1).
 * Context: owning shard thread only (a timer fn may call it).
 */
void pw__wheel_reset(struct pw__wheel *w, struct pw__timer *t,
		     uint64_t deadline);

/**
 * pw__wheel_cancel - disarm @t.
 *
 * Return: true if @t was PENDING, or FIRING (collected but its fn not yet
 * called: it then will not be called); @t is IDLE afterwards. false, and
 * nothing changes, for an IDLE or FIRED timer (cancel twice is harmless).
 * O(1).
 * Context: owning shard thread only (a timer fn may call it).
 */
bool pw__wheel_cancel(struct pw__wheel *w, struct pw__timer *t);

/**
 * pw__wheel_next - the earliest tick at which pw__wheel_advance() has work.
 *
 * Return: w->elapsed if a timer is due already; otherwise the start tick
 * of the earliest occupied slot, which may be a cascade point earlier than
 * any true deadline (advancing there fires nothing but re-files timers);
 * UINT64_MAX when no timer is pending. O(levels), no scan of slots.
 * Context: owning shard thread only.
 */
uint64_t pw__wheel_next(const struct pw__wheel *w);

/**
 * pw__wheel_advance - move the wheel's time to @now_tick, firing timers.
 *
 * A @now_tick before w->elapsed counts as w->elapsed. Calls the fn of
 * every timer armed before this call whose deadline <= @now_tick, in
 * deadline order (timers armed already due first, FIFO among timers of
 * one slot). While a fn runs, w->elapsed is the tick being processed; a
 * fn may insert, reset or cancel any timer, itself included. A timer it
 * arms for a tick <= w->elapsed fires at the next call, one for a later
 * tick <= @now_tick fires in this call. Collected timers are FIRING and
 * fired in batches of up to PW__WHEEL_BATCH; one cancelled or re-armed
 * before its turn is skipped. Cost: O(levels) per processed slot and per
 * re-filed timer, whatever the gap between ticks.
 * Return: the number of fn calls.
 * Context: owning shard thread only; not reentrant (no call from a fn).
 */
size_t pw__wheel_advance(struct pw__wheel *w, uint64_t now_tick);

/**
 * pw__wheel_check - verify every invariant of @w (for tests).
 *
 * Checks that each PENDING timer sits in the list its level and slot name,
 * in the slot that (elapsed, slot_when) selects, with slot_when <=
 * deadline; that occupied bits match non-empty slots; that an empty
 * slot's hint ring counts no filing; that due timers are due; and that
 * count matches. O(slots + timers).
 * Return: 0, or -EINVAL after writing a one-line reason to @err (if not
 * NULL, @errlen bytes at most).
 * Context: owning shard thread only.
 */
int pw__wheel_check(const struct pw__wheel *w, char *err, size_t errlen);

/**
 * pw__ns_to_tick_ceil - a deadline in ns as a tick, rounded up.
 *
 * Exact for every input, never overflows; a @tick_ns of 0 counts as 1.
 * Return: ceil(@ns / @tick_ns).
 * Context: any thread.
 */
static inline uint64_t pw__ns_to_tick_ceil(uint64_t ns, uint64_t tick_ns)
{
	if (tick_ns == 0)
		tick_ns = 1;
	/* No overflow: a remainder implies tick_ns >= 2, so q < UINT64_MAX. */
	return ns / tick_ns + (ns % tick_ns != 0);
}

/**
 * pw__ns_to_tick_floor - a current time in ns as a tick, rounded down.
 *
 * A @tick_ns of 0 counts as 1.
 * Return: floor(@ns / @tick_ns).
 * Context: any thread.
 */
static inline uint64_t pw__ns_to_tick_floor(uint64_t ns, uint64_t tick_ns)
{
	if (tick_ns == 0)
		tick_ns = 1;
	return ns / tick_ns;
}

/**
 * pw__tick_to_ns - the start of @tick in ns (e.g. pw__wheel_next() as a
 * sleep deadline).
 *
 * A @tick_ns of 0 counts as 1.
 * Return: @tick * @tick_ns, saturated at UINT64_MAX.
 * Context: any thread.
 */
static inline uint64_t pw__tick_to_ns(uint64_t tick, uint64_t tick_ns)
{
	if (tick_ns == 0)
		tick_ns = 1;
	if (tick > UINT64_MAX / tick_ns)
		return UINT64_MAX;
	return tick * tick_ns;
}

#endif /* PW__TIMER_WHEEL_H */
