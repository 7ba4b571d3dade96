/* SPDX-License-Identifier: MIT */
/*
 * time.c - the shard's clock, sleeps, deadlines, and the paused clock.
 *
 * Real clock: each shard reads CLOCK_MONOTONIC at most once per loop
 * turn and caches it as ns since the runtime started. The read is lazy
 * (pw__now()): a turn that fires no timer and whose tasks never ask the
 * time pays for none. The wheel counts ticks of
 * tick_ns from the same origin; deadlines round up to a tick and now
 * rounds down, so nothing fires early. The loop's kernel wait is bounded
 * by the wheel's next expiry, recomputed each time the shard goes to
 * sleep, so a timer armed during the turn is honoured.
 *
 * Paused clock: one virtual time for the whole runtime (rt->vnow). It
 * moves only forward, by pw_time_advance() or, while some thread waits in
 * pw_block_on() (as Tokio's clock moves only inside block_on), when every
 * shard is idle:
 * a shard about to sleep publishes its next expiry (next_ns), then its
 * asleep flag; if it then sees every other shard asleep too, it is the
 * last to go idle and moves the clock to the smallest published expiry,
 * then rouses the shards whose timers are due (itself by not sleeping).
 * With several shards going idle at once each computes the same minimum
 * and the CAS keeps the clock monotonic. A paused shard sleeps without a
 * timeout: virtual time does not pass by itself.
 *
 * Sleeps pin their task's memory while armed, as in-flight operations
 * do, so a wheel entry never outlives the memory it lives in.
 */
#include <errno.h>
#include <stddef.h>
#include <time.h>

#include "pinwheel/time.h"
#include "shard/sched.h"
#include "timer/time_int.h"

_Static_assert(sizeof(struct pw__timer) <=
		       sizeof(((struct pw_sleep *)0)->entry),
	       "pw_sleep.entry holds a wheel entry");
_Static_assert(_Alignof(struct pw__timer) <= 8, "pw_sleep.entry alignment");

uint64_t pw__clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void pw__time_init(struct pw__shard *s)
{
	s->tick_ns = s->rt->cfg.tick_ns;
	atomic_init(&s->next_ns, UINT64_MAX);
	pw__time_update(s);
	pw__wheel_init(&s->wheel, pw__ns_to_tick_floor(s->now_ns, s->tick_ns));
}

void pw__time_update(struct pw__shard *s)
{
	s->now_stale = false;
	if (s->rt->paused)
		/* acquire: pairs with the release CAS that moved it. */
		s->now_ns = atomic_load_explicit(&s->rt->vnow,
						 memory_order_acquire);
	else {
		s->now_ns = pw__clock_ns() - s->rt->start_ns;
		PW__STAT_INC(s, clock_reads);
	}
}

void pw__time_turn(struct pw__shard *s)
{
	if (s->rt->paused)
		pw__time_update(s);
	else
		s->now_stale = true;
}

void pw__time_fire(struct pw__shard *s)
{
	uint64_t next = pw__wheel_next(&s->wheel);

	if (next == UINT64_MAX)
		return; /* no timer: no need to read the clock */
	uint64_t now = pw__ns_to_tick_floor(pw__now(s), s->tick_ns);
	if (next > now)
		return;
	size_t n = pw__wheel_advance(&s->wheel, now);
	if (n)
		PW__STAT_ADD(s, timers_fired, n);
}

uint64_t pw__time_next_ns(struct pw__shard *s)
{
	uint64_t next = pw__wheel_next(&s->wheel);

	if (next == UINT64_MAX)
		return UINT64_MAX;
	return next > UINT64_MAX / s->tick_ns ? UINT64_MAX : next * s->tick_ns;
}

void pw__time_prepare_sleep(struct pw__shard *s)
{
	if (s->rt->paused)
		/* seq_cst: published before the asleep flag (also seq_cst),
		 * so whoever sees this shard asleep sees its expiry. */
		atomic_store(&s->next_ns, pw__time_next_ns(s));
}

/* Move the paused clock forward to @to (never back). */
static void vnow_raise(struct pw_runtime *rt, uint64_t to)
{
	uint64_t cur = atomic_load_explicit(&rt->vnow, memory_order_relaxed);

	/* release: publishes the move to the shards' acquire loads in
	 * pw__time_update(). */
	while (cur < to && !atomic_compare_exchange_weak_explicit(
				   &rt->vnow, &cur, to, memory_order_release,
				   memory_order_relaxed))
		;
}

bool pw__time_may_sleep(struct pw__shard *s, uint64_t *wait_ns)
{
	struct pw_runtime *rt = s->rt;
	uint64_t next = pw__time_next_ns(s);

	*wait_ns = UINT64_MAX;
	if (!rt->paused) {
		if (next == UINT64_MAX)
			return true;
		pw__time_update(s);
		if (next <= pw__now(s))
			return false;
		*wait_ns = next - pw__now(s);
		return true;
	}
	pw__time_update(s);
	if (next <= pw__now(s))
		return false;
	/* seq_cst: pairs with the increment in pw_block_on(), which is
	 * followed by a rouse of every shard. */
	if (!atomic_load(&rt->blockers))
		return true; /* nobody waits: time stands */
	if (pw__pool_busy(&rt->pool))
		return true; /* a blocking job runs: time stands, as in Tokio */
	/* Last to go idle? Every shard asleep (seq_cst loads: pair with
	 * each shard's seq_cst store of asleep after its next_ns). */
	uint64_t min = UINT64_MAX;
	for (unsigned i = 0; i < rt->nshards; i++) {
		struct pw__shard *o = rt->shards[i];
		if (!atomic_load(&o->asleep))
			return true; /* someone still works: time stands */
		uint64_t n = atomic_load(&o->next_ns);
		if (n < min)
			min = n;
	}
	if (min == UINT64_MAX)
		return true; /* no timer anywhere: wait for I/O or work */
	vnow_raise(rt, min);
	for (unsigned i = 0; i < rt->nshards; i++) {
		struct pw__shard *o = rt->shards[i];
		if (o != s && atomic_load(&o->next_ns) <= min)
			pw__shard_rouse(o);
	}
	pw__time_update(s);
	return next > pw__now(s);
}

pw_time_t pw_time_now(void)
{
	struct pw__shard *s = pw__cur_shard;

	return s ? pw__now(s) : 0;
}

int pw_time_get(pw_time_t *now)
{
	struct pw__shard *s = pw__cur_shard;

	if (!now)
		return -EINVAL;
	if (!s)
		return -EPERM;
	*now = pw__now(s);
	return 0;
}

int pw_time_advance(uint64_t ns)
{
	struct pw__shard *s = pw__cur_shard;

	if (!s || !s->rt->paused)
		return -EPERM;
	struct pw_runtime *rt = s->rt;
	uint64_t cur = atomic_load_explicit(&rt->vnow, memory_order_relaxed);
	/* release: as in vnow_raise(); the clock only moves forward. */
	while (!atomic_compare_exchange_weak_explicit(
		&rt->vnow, &cur, sat_add(cur, ns), memory_order_release,
		memory_order_relaxed))
		;
	pw__time_update(s);
	for (unsigned i = 0; i < rt->nshards; i++)
		if (rt->shards[i] != s)
			pw__shard_rouse(rt->shards[i]);
	return 0;
}

/* ---- sleeps ---------------------------------------------------------- */

static inline struct pw__timer *entry_of(struct pw_sleep *sl)
{
	return (struct pw__timer *)(void *)sl->entry;
}

static inline struct pw_sleep *sleep_of(struct pw__timer *t)
{
	return (struct pw_sleep *)(void *)((char *)t -
					   offsetof(struct pw_sleep, entry));
}

static void sleep_fire(struct pw__timer *t)
{
	struct pw_sleep *sl = sleep_of(t);
	struct pw__task *task = sl->task;
	sl->state = PW_SLEEP_FIRED;
	/* Fired by the wheel of the shard that armed it: this thread. */
	pw__task_unpin_wake(pw__cur_shard, task);
}

static void sleep_disarm(struct pw_sleep *sl)
{
	struct pw__task *task = sl->task;
	struct pw__shard *s = pw__cur_shard; /* the shard that armed it */

	pw__wheel_cancel(&s->wheel, entry_of(sl));
	sl->state = PW_SLEEP_IDLE;
	/* A drop hook cancelling it: the task may be waiting for this. */
	pw__task_unpin(s, task);
}

void pw_sleep_init_at(struct pw_sleep *sl, pw_time_t deadline)
{
	if (!sl)
		return;
	pw__timer_init(entry_of(sl), sleep_fire);
	sl->task = NULL;
	sl->deadline = deadline;
	sl->duration = 0;
	sl->state = PW_SLEEP_IDLE;
	sl->relative = false;
}

void pw_sleep_init(struct pw_sleep *sl, uint64_t ns)
{
	struct pw__shard *s = pw__cur_shard;

	if (!sl)
		return;
	pw_sleep_init_at(sl, s ? sat_add(pw__now(s), ns) : PW_TIME_NEVER);
	if (!s) {
		sl->relative = true;
		sl->duration = ns;
	}
}

enum pw_poll pw_sleep_poll(struct pw_cx *cx, struct pw_sleep *sl)
{
	if (!cx || !sl)
		return PW_READY;
	struct pw__shard *s = cx->shard;

	if (!pw__coop_proceed(cx))
		return PW_PENDING;
	if (sl->state == PW_SLEEP_FIRED)
		return PW_READY;
	if (sl->relative) {
		sl->deadline = sat_add(pw__now(s), sl->duration);
		sl->relative = false;
	}
	if (sl->deadline <= pw__now(s)) {
		if (sl->state == PW_SLEEP_ARMED)
			sleep_disarm(sl);
		sl->state = PW_SLEEP_FIRED;
		return PW_READY;
	}
	pw_coop_unspend(cx);
	if (sl->state == PW_SLEEP_ARMED && sl->task != cx->task) {
		/* Another task awaits it now: the pin moves with the wake. */
		struct pw__task *old = sl->task;
		pw__task_pin(s, cx->task);
		sl->task = cx->task;
		pw__task_unpin(s, old);
	}
	if (sl->state == PW_SLEEP_IDLE) {
		pw__wheel_insert(&s->wheel, entry_of(sl),
				 pw__ns_to_tick_ceil(sl->deadline, s->tick_ns));
		sl->task = cx->task;
		pw__task_pin(s, cx->task);
		sl->state = PW_SLEEP_ARMED;
	}
	return PW_PENDING;
}

void pw_sleep_reset(struct pw_sleep *sl, pw_time_t deadline)
{
	if (!sl)
		return;
	sl->deadline = deadline;
	sl->relative = false;
	if (sl->state == PW_SLEEP_ARMED) {
		struct pw__shard *s = pw__cur_shard; /* the one that armed it */
		pw__wheel_reset(&s->wheel, entry_of(sl),
				pw__ns_to_tick_ceil(deadline, s->tick_ns));
	} else {
		sl->state = PW_SLEEP_IDLE;
	}
}

void pw_sleep_reset_after(struct pw_sleep *sl, uint64_t ns)
{
	struct pw__shard *s = pw__cur_shard;

	pw_sleep_reset(sl, s ? sat_add(pw__now(s), ns) : PW_TIME_NEVER);
}

int pw_sleep_cancel(struct pw_sleep *sl)
{
	if (!sl)
		return -EINVAL;
	if (sl->state != PW_SLEEP_ARMED)
		return -EALREADY;
	sleep_disarm(sl);
	return 0;
}

pw_time_t pw_sleep_deadline(const struct pw_sleep *sl)
{
	return sl && !sl->relative ? sl->deadline : PW_TIME_NEVER;
}

bool pw_sleep_is_elapsed(const struct pw_sleep *sl)
{
	return sl && sl->state == PW_SLEEP_FIRED;
}

/* ---- deadlines -------------------------------------------------------- */

struct pw_deadline pw_deadline_after(uint64_t ns)
{
	struct pw__shard *s = pw__cur_shard;
	struct pw_deadline d = { s ? sat_add(pw__now(s), ns) : PW_TIME_NEVER };

	return d;
}

bool pw_deadline_expired(struct pw_deadline d)
{
	struct pw__shard *s = pw__cur_shard;

	return s && d.at <= pw__now(s);
}

uint64_t pw_deadline_remaining(struct pw_deadline d)
{
	struct pw__shard *s = pw__cur_shard;

	if (!s)
		return d.at;
	return d.at <= pw__now(s) ? 0 : d.at - pw__now(s);
}
