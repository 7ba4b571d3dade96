/* SPDX-License-Identifier: MIT */
/*
 * time.c - the shard's clock, and its timer wheel in the loop.
 *
 * Each shard reads CLOCK_MONOTONIC once per loop turn and caches it, as
 * nanoseconds since the runtime started. The wheel counts ticks of
 * cfg.tick_ns from the same origin: deadlines round up to a tick, the
 * current time rounds down, so no timer fires early. The loop's kernel
 * wait is bounded by the wheel's next expiry, recomputed each time the
 * shard goes to sleep, so a timer inserted during the turn is honoured.
 */
#include <errno.h>
#include <time.h>

#include "shard_int.h"
#include "time_int.h"

uint64_t pw__clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void pw__time_init(struct pw__shard *s)
{
	pw__time_update(s);
	pw__wheel_init(&s->wheel,
		       pw__ns_to_tick_floor(s->now_ns, s->rt->cfg.tick_ns));
}

void pw__time_update(struct pw__shard *s)
{
	s->now_ns = pw__clock_ns() - s->rt->start_ns;
}

void pw__time_fire(struct pw__shard *s)
{
	uint64_t now = pw__ns_to_tick_floor(s->now_ns, s->rt->cfg.tick_ns);

	if (pw__wheel_next(&s->wheel) > now)
		return;
	size_t n = pw__wheel_advance(&s->wheel, now);
	if (n)
		PW__STAT_ADD(s, timers_fired, n);
}

bool pw__time_may_sleep(struct pw__shard *s, uint64_t *wait_ns)
{
	uint64_t tick_ns = s->rt->cfg.tick_ns;
	uint64_t next = pw__wheel_next(&s->wheel);

	*wait_ns = UINT64_MAX;
	if (next == UINT64_MAX)
		return true;
	pw__time_update(s);
	if (next <= pw__ns_to_tick_floor(s->now_ns, tick_ns))
		return false;
	/* next > now / tick, so next * tick > now: no underflow. */
	uint64_t at = next > UINT64_MAX / tick_ns ? UINT64_MAX : next * tick_ns;
	*wait_ns = at - s->now_ns;
	return true;
}
