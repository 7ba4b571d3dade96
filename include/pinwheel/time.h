/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/time.h - time on a shard: the clock, sleeps, deadlines.
 *
 * Time is counted in nanoseconds since the runtime started. Each shard
 * reads its clock at most once per loop turn (at the turn's first use),
 * so every task polled in one turn sees the same now. Timers live in the shard's hierarchical wheel, in
 * ticks of pw_config.tick_ns (1 ms by default): deadlines round up to a
 * tick and now rounds down, so a sleep never ends early and ends at most
 * one tick late.
 *
 * With PW_CONFIG_PAUSED_CLOCK the clock is virtual: it stands still while
 * any shard has work to do, and when every shard is idle while a thread
 * waits in pw_block_on() it jumps to the earliest pending timer of any
 * shard; pw_time_advance() moves it by hand.
 * Tests get exact virtual times that way, on any number of shards.
 */
#ifndef PINWHEEL_TIME_H
#define PINWHEEL_TIME_H

#include <stdbool.h>
#include <stdint.h>

#include "export.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PW_NSEC_PER_USEC 1000ull
#define PW_NSEC_PER_MSEC 1000000ull
#define PW_NSEC_PER_SEC	 1000000000ull

/*
 * A point in time: ns since the runtime started. The one type of
 * pw_time_now() and of every deadline (sleeps, pw_deadline, the polls of
 * pinwheel/net.h), so a deadline is written now + duration with no cast.
 * Durations are plain uint64_t ns.
 */
typedef uint64_t pw_time_t;

/* "Never": a deadline that does not expire. */
#define PW_TIME_NEVER ((pw_time_t)UINT64_MAX)

/**
 * pw_time_now - the calling shard's current time, in ns since the runtime
 * started (virtual under the paused clock).
 * Return: the time; 0 when the caller is not a shard thread (the runtime's
 * start: pw_time_get() tells the two apart).
 * Context: a shard thread.
 */
PW_API pw_time_t pw_time_now(void);

/**
 * pw_time_get - pw_time_now() that reports a caller off a shard.
 * Return: 0 with *@now set; -EPERM off a shard; -EINVAL for NULL.
 * Context: any thread.
 */
PW_API int pw_time_get(pw_time_t *now);

/**
 * pw_time_advance - move the paused clock forward by @ns for every shard.
 * Timers due by then fire on their shards' next turns; the caller sees
 * the new time at once (pw_time_now()).
 * Return: 0; -EPERM off a shard or without PW_CONFIG_PAUSED_CLOCK.
 * Context: a task on a shard of a paused-clock runtime.
 */
PW_API int pw_time_advance(uint64_t ns);

/* States of a sleep (private to the runtime; read via the functions). */
enum pw_sleep_state {
	PW_SLEEP_IDLE = 0, /* not registered with the wheel */
	PW_SLEEP_ARMED,	   /* registered, not yet fired */
	PW_SLEEP_FIRED,	   /* its deadline passed */
};

/*
 * A sleep: completes at its deadline. Embedded in a task's state; it
 * registers with the wheel of the shard that polls it at its first
 * poll and holds the task's memory (like an operation in flight) until it
 * fires or is cancelled, so a forgotten cancel never leaves the wheel
 * pointing at freed memory. The fields are the runtime's.
 */
struct pw_sleep {
	uint64_t entry[8];     /* the wheel entry */
	struct pw__task *task; /* task to wake */
	pw_time_t deadline;    /* ns since runtime start */
	uint64_t duration;     /* pending relative deadline */
	uint8_t state;	       /* enum pw_sleep_state */
	bool relative;	       /* deadline not yet fixed */
};

/**
 * pw_sleep_init - a sleep of @ns nanoseconds from now.
 * On a shard "now" is the shard's current time; elsewhere the deadline is
 * fixed at the first poll. @ns of 0 is ready at the first poll.
 * Context: any thread (the sleep is then polled on one shard).
 */
PW_API void pw_sleep_init(struct pw_sleep *s, uint64_t ns);

/**
 * pw_sleep_init_at - a sleep until @deadline (ns since runtime start;
 * PW_TIME_NEVER never fires). A deadline already past is ready at the
 * first poll. Context: any thread.
 */
PW_API void pw_sleep_init_at(struct pw_sleep *s, pw_time_t deadline);

/**
 * pw_sleep_poll - PW_READY once the deadline has passed, else PW_PENDING
 * with the task woken when it does. Counts against the coop budget.
 * A NULL argument gives PW_READY (nothing to wait for). Polled by
 * another task of the same shard, the sleep wakes that task from then on.
 * Context: a task on a shard; always the same shard for one sleep.
 */
PW_API enum pw_poll pw_sleep_poll(struct pw_cx *cx, struct pw_sleep *s);

/**
 * pw_sleep_reset - move the deadline to @deadline, reusing the entry.
 *
 * O(1). An armed sleep stays armed (a later deadline only updates the
 * entry; an earlier one re-files it; one already past fires on the
 * shard's next turn and wakes the task). A fired or cancelled sleep
 * becomes pending again and registers at its next poll.
 * Context: the shard the sleep was polled on (or any thread before its
 * first poll).
 */
PW_API void pw_sleep_reset(struct pw_sleep *s, pw_time_t deadline);

/**
 * pw_sleep_reset_after - pw_sleep_reset() to @ns from the shard's now.
 * Context: a shard thread.
 */
PW_API void pw_sleep_reset_after(struct pw_sleep *s, uint64_t ns);

/**
 * pw_sleep_cancel - unregister the sleep (the drop of a Tokio Sleep).
 * Return: 0 when it was armed; -EALREADY when it was not (never polled,
 * fired, or cancelled already: cancelling twice is harmless); -EINVAL
 * for NULL.
 * Context: the shard the sleep was polled on; safe from a drop hook.
 */
PW_API int pw_sleep_cancel(struct pw_sleep *s);

/** pw_sleep_deadline - the deadline in ns, PW_TIME_NEVER if unset. */
PW_API pw_time_t pw_sleep_deadline(const struct pw_sleep *s);

/** pw_sleep_is_elapsed - true once the sleep fired or was found due. */
PW_API bool pw_sleep_is_elapsed(const struct pw_sleep *s);

/*
 * A deadline for per-operation timeouts: an absolute time a group of
 * operations shares. Plain value; copy freely.
 */
struct pw_deadline {
	pw_time_t at; /* ns since runtime start; PW_TIME_NEVER for none */
};

/**
 * pw_deadline_after - the deadline @ns from the shard's now (saturating).
 * Off a shard it is PW_TIME_NEVER. Context: a shard thread.
 */
PW_API struct pw_deadline pw_deadline_after(uint64_t ns);

/** pw_deadline_expired - true when @d has passed on the calling shard. */
PW_API bool pw_deadline_expired(struct pw_deadline d);

/** pw_deadline_remaining - ns left before @d (0 when passed). */
PW_API uint64_t pw_deadline_remaining(struct pw_deadline d);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_TIME_H */
