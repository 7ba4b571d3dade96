/* SPDX-License-Identifier: MIT */
/*
 * time_int.h - the shard's clock and timer wheel, as the loop drives them.
 * Private to the library. See time.c.
 */
#ifndef PW_TIMER_TIME_INT_H
#define PW_TIMER_TIME_INT_H

#include <stdbool.h>
#include <stdint.h>

struct pw__shard;

/* Before the asleep flag goes up: publish what the paused clock needs. */
void pw__time_prepare_sleep(struct pw__shard *s);

/* Set up the shard's wheel at the runtime's current time. */
void pw__time_init(struct pw__shard *s);

/* Read the clock now and cache it for the rest of this loop turn. */
void pw__time_update(struct pw__shard *s);

/*
 * Start a loop turn's clock. The real clock is only marked stale: it is
 * read by the turn's first pw__now() (most turns of a shard with timers
 * read it to fire them; a turn with no timer armed and no task asking
 * the time reads none). The paused clock is read at once.
 */
void pw__time_turn(struct pw__shard *s);

/* Fire every timer due at the cached time. */
void pw__time_fire(struct pw__shard *s);

/*
 * May the shard sleep, and for how long? Called with the asleep flag up.
 * false when a timer is already due (the loop must turn again without
 * blocking); otherwise true with *@wait_ns the time until the next wheel
 * expiry, or UINT64_MAX for none (always, under the paused clock, where
 * the last shard to go idle moves the clock instead).
 */
bool pw__time_may_sleep(struct pw__shard *s, uint64_t *wait_ns);

/* The next wheel expiry in ns since runtime start, UINT64_MAX for none. */
uint64_t pw__time_next_ns(struct pw__shard *s);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t pw__clock_ns(void);

#endif /* PW_TIMER_TIME_INT_H */
