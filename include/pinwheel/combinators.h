/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/combinators.h - time combinators over futures and streams:
 * timeout, debounce, retry, throttle and interval.
 *
 * Each is a struct embedded in a task's state, with an init, a poll and a
 * drop, and each is itself a pw_future or pw_stream (pinwheel/stream.h),
 * so they compose: a timeout inside a retry, a throttle over a debounce
 * over a channel. Each uses at most one pw_sleep, re-armed with
 * pw_sleep_reset() rather than created anew, so a combinator costs one
 * wheel entry however many items or attempts pass through it.
 *
 * Ownership: a combinator owns the future or stream it wraps from a
 * successful init on. It drops an inner future as soon as that future is
 * finished with (completed, timed out, failed attempt), and drops its
 * input stream in its own drop. After a failed init nothing is owned.
 *
 * Pinning, as for pw_sleep: an armed sleep holds the polling task's
 * memory until it fires or is cancelled, so the combinator must live in
 * that task's state (or in memory that outlives the task), be polled by
 * that one task on one shard, and be dropped from the task's drop hook
 * (or once it is finished). Drops are idempotent and ignore NULL.
 *
 * Times are ns on the shard's clock (pinwheel/time.h); under the paused
 * clock every time below is exact. docs/timer.md has timelines.
 */
#ifndef PINWHEEL_COMBINATORS_H
#define PINWHEEL_COMBINATORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "stream.h"
#include "task.h"
#include "time.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- timeout --------------------------------------------------------- */

/* A future bounded by a deadline. Fields are private. */
struct pw_timeout {
	struct pw_future fut;	 /* this timeout as a future */
	struct pw_future *inner; /* owned; NULL once dropped */
	struct pw_sleep sleep;	 /* the deadline */
	int64_t result;		 /* once done */
	bool done;
};

/**
 * pw_timeout_init - bound @inner by a deadline @ns from now.
 *
 * "Now" is the shard's current time when called on a shard, else the
 * first poll (as pw_sleep_init()). Takes ownership of @inner.
 * Return: 0; -EINVAL for a NULL @t or @inner, or @inner without ops.
 * Context: any thread.
 */
PW_API int pw_timeout_init(struct pw_timeout *t, uint64_t ns,
			   struct pw_future *inner);

/**
 * pw_timeout_init_at - as pw_timeout_init(), with an absolute deadline
 * (a pw_deadline shared by several operations).
 * Return: 0; -EINVAL as pw_timeout_init().
 * Context: any thread.
 */
PW_API int pw_timeout_init_at(struct pw_timeout *t, struct pw_deadline d,
			      struct pw_future *inner);

/**
 * pw_timeout_poll - poll the inner future, then the deadline.
 * @out: receives the inner result, or -ETIMEDOUT.
 *
 * The inner future is polled first, so one that is ready at the deadline
 * wins. When it completes the deadline's sleep is cancelled and the inner
 * future dropped; when the deadline passes first the inner future is
 * dropped (cancelling its own timers and operations) and the result is
 * -ETIMEDOUT. A finished timeout repeats its result.
 * Return: PW_PENDING or PW_READY with *@out set; -EINVAL in *@out for a
 * NULL @cx or uninitialised @t (nothing happens for a NULL @out).
 * Context: a task on a shard (always the same task for one timeout).
 */
PW_API enum pw_poll pw_timeout_poll(struct pw_cx *cx, struct pw_timeout *t,
				    int64_t *out);

/**
 * pw_timeout_drop - cancel the deadline and drop the inner future.
 * Idempotent; NULL or uninitialised @t is ignored.
 * Context: the shard it was polled on; safe from a drop hook.
 */
PW_API void pw_timeout_drop(struct pw_timeout *t);

/**
 * pw_timeout_future - @t as a pw_future (its poll and drop are the ones
 * above). Return: the future, or NULL for NULL/uninitialised @t.
 * Context: any thread.
 */
PW_API struct pw_future *pw_timeout_future(struct pw_timeout *t);

/* ---- delay ----------------------------------------------------------- */

/* A future that completes with a value after a sleep: Rust's
 * `async { sleep(d).await; value }`. Fields are private. */
struct pw_delay {
	struct pw_future fut; /* this delay as a future */
	struct pw_sleep sleep;
	int64_t value;
};

/**
 * pw_delay_init - make @d a future that completes with @value @ns from
 * now ("now" as pw_sleep_init()). Dropping it cancels its timer, so it
 * can be handed to a combinator (pw_timeout_init(), a retry's attempt)
 * that owns it.
 * Return: the future, or NULL for a NULL @d.
 * Context: any thread.
 */
PW_API struct pw_future *pw_delay_init(struct pw_delay *d, uint64_t ns,
				       int64_t value);

/* ---- debounce -------------------------------------------------------- */

/* Emits the newest item once the input stays quiet. Fields are private. */
struct pw_debounce {
	struct pw_stream stream;  /* the output; items as the input's */
	struct pw_stream *input;  /* owned */
	unsigned char *slot[2];	  /* held item and incoming item */
	struct pw_sleep sleep;	  /* the emission deadline */
	uint64_t quiet, max_wait; /* ns; max_wait 0 for none */
	uint64_t first_at;	  /* arrival of the oldest held item */
	uint64_t deadline;	  /* emission time of the held item */
	uint64_t resets;	  /* pw_sleep_reset() calls */
	bool held, input_done, done;
};

/**
 * pw_debounce_init - debounce @input with a quiet time of @quiet_ns.
 * @max_wait_ns: 0, or the longest an item may be held while new items
 *               keep arriving: a continuous stream still emits at least
 *               once per @max_wait_ns.
 * @storage: 2 * @input->item_size bytes, owned by the caller, alive as
 *           long as the debounce (the held item and the incoming one).
 *
 * Semantics: each poll first drains every item the input has ready; an
 * item replaces the held one and moves the emission deadline to its
 * arrival + @quiet_ns, but never past the arrival of the oldest item
 * held since the last emission + @max_wait_ns. The one sleep is reset at
 * most once per poll (so at most once per item). At the deadline the held
 * item is emitted. When the input ends a held item is emitted at once,
 * then the debounce ends. An input error is passed through at once and
 * the held item kept. Takes ownership of @input.
 * Return: 0; -EINVAL for NULL @d, @input or @storage, an @input without
 * ops, or a zero @quiet_ns.
 * Context: any thread.
 */
PW_API int pw_debounce_init(struct pw_debounce *d, struct pw_stream *input,
			    uint64_t quiet_ns, uint64_t max_wait_ns,
			    void *storage);

/**
 * pw_debounce_poll_next - the next debounced item.
 * Return: as pw_stream_poll_next() (*@res 1, 0 at the end, or -errno);
 * -EINVAL for NULL arguments or an uninitialised @d.
 * Context: a task on a shard (always the same task for one debounce).
 */
PW_API enum pw_poll pw_debounce_poll_next(struct pw_cx *cx,
					  struct pw_debounce *d, void *item,
					  int *res);

/**
 * pw_debounce_drop - cancel the sleep and drop the input stream.
 * A held item is discarded. Idempotent; NULL is ignored.
 * Context: the shard it was polled on; safe from a drop hook.
 */
PW_API void pw_debounce_drop(struct pw_debounce *d);

/**
 * pw_debounce_stream - @d as a pw_stream. Return: NULL for a NULL or
 * uninitialised @d. Context: any thread.
 */
PW_API struct pw_stream *pw_debounce_stream(struct pw_debounce *d);

/**
 * pw_debounce_resets - how many times its sleep was reset (at most one
 * per input item): a debounce never creates a timer per item.
 * Return: the count; 0 for NULL. Context: its shard.
 */
PW_API uint64_t pw_debounce_resets(const struct pw_debounce *d);

/* ---- retry ----------------------------------------------------------- */

/* The operation a retry repeats: a factory of one future per attempt. */
struct pw_retry_ops {
	/*
	 * Start attempt @attempt (1..max_attempts): make a fresh future in
	 * storage the caller controls and set *@fut to it; the retry polls
	 * it and drops it when the attempt ends. Return 0, or -errno to
	 * count as that attempt's (failed) result without a future.
	 */
	int (*start)(void *arg, unsigned attempt, struct pw_future **fut);
	/* Optional: true when @err (< 0) must not be retried. */
	bool (*is_fatal)(void *arg, int64_t err);
	/*
	 * Optional: attempt @attempt failed with @err (< 0), after
	 * is_fatal was asked. @delay_ns is the back-off before the next
	 * attempt, jitter included, or 0 when there is none (the retry
	 * ends with @err). For logging and metrics: it must not poll or
	 * drop the retry. Called on the retry's task.
	 */
	void (*failed)(void *arg, unsigned attempt, int64_t err,
		       uint64_t delay_ns);
};

/* Repeats an operation with exponential back-off. Fields are private. */
struct pw_retry {
	struct pw_future fut; /* this retry as a future */
	const struct pw_retry_ops *ops;
	void *arg;	       /* passed to the ops */
	struct pw_future *cur; /* the running attempt, or NULL */
	struct pw_sleep sleep; /* the back-off */
	uint64_t base;	       /* first delay, ns */
	uint64_t rng;	       /* jitter PRNG state */
	uint64_t last_delay;   /* the latest back-off, ns */
	int64_t result;	       /* once done */
	unsigned max_attempts, attempt;
	unsigned jitter_pct; /* 0: no jitter */
	uint8_t state;
};

/**
 * pw_retry_init - run @ops up to @max_attempts times.
 * @base_ns: the back-off after the first failure; after failure k
 *           (1-based) the retry sleeps @base_ns * 2^(k-1) (saturating)
 *           before attempt k+1. No sleep follows the last attempt.
 * @ops/@arg: the operation; @ops->start is required.
 *
 * An attempt fails when its result is negative. The retry finishes with
 * the first result >= 0, with a failure that @ops->is_fatal calls fatal
 * (at once, no more attempts), or with the last attempt's failure.
 * Return: 0; -EINVAL for NULL @r or @ops, no @ops->start, or a zero
 * @max_attempts.
 * Context: any thread.
 */
PW_API int pw_retry_init(struct pw_retry *r, unsigned max_attempts,
			 uint64_t base_ns, const struct pw_retry_ops *ops,
			 void *arg);

/**
 * pw_retry_set_jitter - add a random fraction to every back-off.
 * @percent: 1..100; each delay d becomes d + j with j uniform in
 *           [0, d * @percent / 100] (whole ns).
 * @seed: seeds a splitmix64 generator: the same seed gives the same
 *        delays, run after run.
 * Return: 0; -EINVAL for a NULL/uninitialised @r, a @percent out of range,
 * or a retry already polled.
 * Context: any thread, before the first poll.
 */
PW_API int pw_retry_set_jitter(struct pw_retry *r, unsigned percent,
			       uint64_t seed);

/**
 * pw_retry_poll - drive the attempts and back-offs.
 * @out: receives the final result (see pw_retry_init()).
 * Return: PW_PENDING or PW_READY with *@out set; a finished retry
 * repeats its result. -EINVAL in *@out for a NULL @cx or uninitialised @r,
 * or when @ops->start returns 0 without a usable future.
 * Context: a task on a shard (always the same task for one retry).
 */
PW_API enum pw_poll pw_retry_poll(struct pw_cx *cx, struct pw_retry *r,
				  int64_t *out);

/**
 * pw_retry_drop - drop the running attempt's future, cancel the sleep.
 * Idempotent; NULL is ignored.
 * Context: the shard it was polled on; safe from a drop hook.
 */
PW_API void pw_retry_drop(struct pw_retry *r);

/**
 * pw_retry_future - @r as a pw_future. Return: NULL for NULL or
 * uninitialised @r. Context: any thread.
 */
PW_API struct pw_future *pw_retry_future(struct pw_retry *r);

/**
 * pw_retry_attempts - attempts started so far (0..max_attempts).
 * Return: the count; 0 for NULL. Context: its shard.
 */
PW_API unsigned pw_retry_attempts(const struct pw_retry *r);

/**
 * pw_retry_last_delay - the latest back-off chosen, jitter included.
 * Return: ns; 0 before the first failure or for NULL. Context: its shard.
 */
PW_API uint64_t pw_retry_last_delay(const struct pw_retry *r);

/* ---- throttle -------------------------------------------------------- */

/* Lets at most one item through per period. Fields are private. */
struct pw_throttle {
	struct pw_stream stream; /* the output; items as the input's */
	struct pw_stream *input; /* owned */
	uint64_t period;	 /* ns */
	uint64_t next_at;	 /* earliest time the next item may pass */
	uint64_t passed, dropped;
	bool started, done;
};

/**
 * pw_throttle_init - pass at most one item of @input per @period_ns.
 *
 * Leading edge: an item passes when it arrives at or after the time the
 * previous passed item arrived + @period_ns (the first passes at once);
 * others are dropped and counted. End and errors pass through. It needs
 * no timer, only the arrival times. Takes ownership of @input.
 * Return: 0; -EINVAL for NULL @t or @input, @input without ops, or a
 * zero @period_ns.
 * Context: any thread.
 */
PW_API int pw_throttle_init(struct pw_throttle *t, struct pw_stream *input,
			    uint64_t period_ns);

/**
 * pw_throttle_poll_next - the next item allowed through.
 * Return: as pw_stream_poll_next(); -EINVAL for NULL arguments or an
 * uninitialised @t. Dropping an item takes a unit of the coop budget.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_throttle_poll_next(struct pw_cx *cx,
					  struct pw_throttle *t, void *item,
					  int *res);

/**
 * pw_throttle_drop - drop the input stream. Idempotent; NULL is ignored.
 * Context: the shard it was polled on; safe from a drop hook.
 */
PW_API void pw_throttle_drop(struct pw_throttle *t);

/**
 * pw_throttle_stream - @t as a pw_stream. Return: NULL for a NULL or
 * uninitialised @t. Context: any thread.
 */
PW_API struct pw_stream *pw_throttle_stream(struct pw_throttle *t);

/**
 * pw_throttle_dropped - items dropped so far. Return: the count; 0 for
 * NULL. Context: its shard.
 */
PW_API uint64_t pw_throttle_dropped(const struct pw_throttle *t);

/* ---- interval -------------------------------------------------------- */

/* What an interval does about ticks the consumer was too late for. */
enum pw_missed_tick {
	PW_MISSED_TICK_BURST = 0, /* fire them back to back until caught up */
	PW_MISSED_TICK_DELAY,	  /* next tick one period after the late one */
	PW_MISSED_TICK_SKIP,	  /* next tick on the schedule after now */
};

/* Ticks every period. Fields are private. */
struct pw_interval {
	struct pw_stream stream; /* ticks as int64_t scheduled times */
	struct pw_sleep sleep;	 /* the next scheduled tick */
	uint64_t period;	 /* ns */
	uint8_t missed;		 /* enum pw_missed_tick */
};

/**
 * pw_interval_init - tick every @period_ns, the first tick at once.
 *
 * The first tick is scheduled at "now" (the shard's time when called on
 * a shard, else the first poll), then one every @period_ns. A tick counts
 * as missed when it is returned more than one wheel tick after its
 * scheduled time (a timer may end up to a tick late by design); @missed
 * then picks the next scheduled time: BURST keeps the schedule (the
 * missed ticks come back to back), DELAY schedules now + @period_ns,
 * SKIP the first time on the original schedule after now.
 * Return: 0; -EINVAL for NULL @iv, a zero @period_ns or an unknown
 * @missed.
 * Context: any thread.
 */
PW_API int pw_interval_init(struct pw_interval *iv, uint64_t period_ns,
			    enum pw_missed_tick missed);

/**
 * pw_interval_tick_poll - wait for the next tick.
 * @tick: receives the tick's scheduled time (ns since runtime start),
 *        which is earlier than now for a late tick; or -EINVAL for a
 *        NULL @cx or an uninitialised @iv.
 * Return: PW_PENDING, or PW_READY with *@tick set.
 * Context: a task on a shard (always the same task for one interval).
 */
PW_API enum pw_poll
pw_interval_tick_poll(struct pw_cx *cx, struct pw_interval *iv, int64_t *tick);

/**
 * pw_interval_drop - cancel the pending tick. Idempotent; NULL ignored.
 * Context: the shard it was polled on; safe from a drop hook.
 */
PW_API void pw_interval_drop(struct pw_interval *iv);

/**
 * pw_interval_stream - @iv as a never-ending pw_stream of int64_t tick
 * times. Return: NULL for NULL or uninitialised @iv. Context: any thread.
 */
PW_API struct pw_stream *pw_interval_stream(struct pw_interval *iv);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_COMBINATORS_H */
