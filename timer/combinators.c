/* SPDX-License-Identifier: MIT */
/*
 * combinators.c - timeout, delay, debounce, retry, throttle and interval.
 *
 * Each combinator is a small state machine over at most one pw_sleep,
 * which it initialises once (idle, deadline "never") and then moves with
 * pw_sleep_reset(): an armed entry is updated in place, a fired one is
 * re-filed at the next poll, so no combinator ever needs a second wheel
 * entry. They read time from the shard's per-turn clock, so everything a
 * task does in one poll happens at one instant, and under the paused
 * clock every emission, attempt and tick time is exact.
 *
 * Order of checks is part of the semantics: a timeout polls its inner
 * future before its deadline (ready at the deadline wins); a debounce
 * drains its input before looking at its deadline (an item its own poll
 * can see at the deadline is taken first; one a task woken by another
 * timer of the same tick sends through a channel is seen only if that
 * task ran first: docs/timer.md); the interval computes its next tick
 * from the scheduled time of the one it returns.
 */
#include <errno.h>
#include <string.h>

#include "pinwheel/combinators.h"
#include "shard/sched.h"

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The calling shard's cached time (the caller is a poll on a shard). */
static inline uint64_t now_ns(struct pw_cx *cx)
{
	return pw__now(cx->shard);
}

static inline bool poll_ok(struct pw_cx *cx)
{
	return cx && cx->task && cx->shard && cx->shard == pw__cur_shard;
}

/* ---- timeout --------------------------------------------------------- */

static enum pw_poll timeout_fut_poll(struct pw_cx *cx, struct pw_future *f,
				     int64_t *out)
{
	return pw_timeout_poll(cx, pw_container_of(f, struct pw_timeout, fut),
			       out);
}

static void timeout_fut_drop(struct pw_future *f)
{
	pw_timeout_drop(pw_container_of(f, struct pw_timeout, fut));
}

static const struct pw_future_ops timeout_ops = {
	.poll = timeout_fut_poll,
	.drop = timeout_fut_drop,
};

static inline bool timeout_valid(const struct pw_timeout *t)
{
	return t && t->fut.ops == &timeout_ops;
}

static int timeout_setup(struct pw_timeout *t, struct pw_future *inner)
{
	if (!t || !inner || !inner->ops || !inner->ops->poll)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->fut.ops = &timeout_ops;
	t->inner = inner;
	return 0;
}

int pw_timeout_init(struct pw_timeout *t, uint64_t ns, struct pw_future *inner)
{
	int err = timeout_setup(t, inner);

	if (!err)
		pw_sleep_init(&t->sleep, ns);
	return err;
}

int pw_timeout_init_at(struct pw_timeout *t, struct pw_deadline d,
		       struct pw_future *inner)
{
	int err = timeout_setup(t, inner);

	if (!err)
		pw_sleep_init_at(&t->sleep, d.at);
	return err;
}

static void timeout_finish(struct pw_timeout *t, int64_t result)
{
	struct pw_future *inner = t->inner;

	t->done = true;
	t->result = result;
	t->inner = NULL;
	pw_sleep_cancel(&t->sleep);
	pw_future_drop(inner);
}

enum pw_poll pw_timeout_poll(struct pw_cx *cx, struct pw_timeout *t,
			     int64_t *out)
{
	int64_t v;

	if (!out)
		return PW_READY;
	if (!poll_ok(cx) || !timeout_valid(t)) {
		*out = -EINVAL;
		return PW_READY;
	}
	if (!t->done) {
		if (!t->inner) {
			/* Dropped before it finished. */
			*out = -ECANCELED;
			return PW_READY;
		}
		if (pw_future_poll(cx, t->inner, &v) == PW_READY)
			timeout_finish(t, v);
		else if (pw_sleep_poll(cx, &t->sleep) == PW_READY)
			timeout_finish(t, -ETIMEDOUT);
		else
			return PW_PENDING;
	}
	*out = t->result;
	return PW_READY;
}

void pw_timeout_drop(struct pw_timeout *t)
{
	if (!timeout_valid(t))
		return;
	struct pw_future *inner = t->inner;

	t->inner = NULL;
	pw_sleep_cancel(&t->sleep);
	pw_future_drop(inner);
}

struct pw_future *pw_timeout_future(struct pw_timeout *t)
{
	return timeout_valid(t) ? &t->fut : NULL;
}

/* ---- delay ------------------------------------------------------------- */

static enum pw_poll delay_poll(struct pw_cx *cx, struct pw_future *f,
			       int64_t *out)
{
	struct pw_delay *d = pw_container_of(f, struct pw_delay, fut);

	if (pw_sleep_poll(cx, &d->sleep) == PW_PENDING)
		return PW_PENDING;
	*out = d->value;
	return PW_READY;
}

static void delay_drop(struct pw_future *f)
{
	pw_sleep_cancel(&pw_container_of(f, struct pw_delay, fut)->sleep);
}

static const struct pw_future_ops delay_ops = { delay_poll, delay_drop };

struct pw_future *pw_delay_init(struct pw_delay *d, uint64_t ns, int64_t value)
{
	if (!d)
		return NULL;
	d->fut.ops = &delay_ops;
	pw_sleep_init(&d->sleep, ns);
	d->value = value;
	return &d->fut;
}

/* ---- debounce -------------------------------------------------------- */

static enum pw_poll debounce_stream_poll(struct pw_cx *cx, struct pw_stream *s,
					 void *item, int *res)
{
	return pw_debounce_poll_next(
		cx, pw_container_of(s, struct pw_debounce, stream), item, res);
}

static void debounce_stream_drop(struct pw_stream *s)
{
	pw_debounce_drop(pw_container_of(s, struct pw_debounce, stream));
}

static const struct pw_stream_ops debounce_ops = {
	.poll_next = debounce_stream_poll,
	.drop = debounce_stream_drop,
};

static inline bool debounce_valid(const struct pw_debounce *d)
{
	return d && d->stream.ops == &debounce_ops;
}

int pw_debounce_init(struct pw_debounce *d, struct pw_stream *input,
		     uint64_t quiet_ns, uint64_t max_wait_ns, void *storage)
{
	if (!d || !input || !input->ops || !input->ops->poll_next ||
	    !input->item_size || !storage || !quiet_ns)
		return -EINVAL;
	memset(d, 0, sizeof(*d));
	d->stream.ops = &debounce_ops;
	d->stream.item_size = input->item_size;
	d->input = input;
	d->slot[0] = storage;
	d->slot[1] = (unsigned char *)storage + input->item_size;
	d->quiet = quiet_ns;
	d->max_wait = max_wait_ns;
	d->deadline = PW_TIME_NEVER;
	pw_sleep_init_at(&d->sleep, PW_TIME_NEVER);
	return 0;
}

/* Hand the held item to the consumer. */
static enum pw_poll debounce_emit(struct pw_debounce *d, void *item, int *res)
{
	memcpy(item, d->slot[0], d->stream.item_size);
	d->held = false;
	d->deadline = PW_TIME_NEVER;
	*res = 1;
	return PW_READY;
}

/* A new item is in slot[1]: hold it (the newest wins) and move the
 * deadline: quiet after it, capped at max_wait after the first held. */
static void debounce_hold(struct pw_cx *cx, struct pw_debounce *d)
{
	unsigned char *tmp = d->slot[0];
	d->slot[0] = d->slot[1];
	d->slot[1] = tmp;
	uint64_t now = now_ns(cx);
	if (!d->held) {
		d->held = true;
		d->first_at = now;
	}
	d->deadline = sat_add(now, d->quiet);
	if (d->max_wait) {
		uint64_t cap = sat_add(d->first_at, d->max_wait);
		if (cap < d->deadline)
			d->deadline = cap;
	}
}

/* Drain what the input has ready; the newest item wins. Items land in
 * slot[1], then become the held slot[0] by a swap. *@moved: an item came.
 * Return: 0, or the input's error. */
static int debounce_drain(struct pw_cx *cx, struct pw_debounce *d, bool *moved)
{
	while (!d->input_done) {
		int r;
		if (pw_stream_poll_next(cx, d->input, d->slot[1], &r) ==
		    PW_PENDING)
			return 0;
		if (r < 0)
			return r;
		if (r == 0) {
			d->input_done = true;
			return 0;
		}
		debounce_hold(cx, d);
		*moved = true;
	}
	return 0;
}

enum pw_poll pw_debounce_poll_next(struct pw_cx *cx, struct pw_debounce *d,
				   void *item, int *res)
{
	if (!res)
		return PW_READY;
	if (!poll_ok(cx) || !debounce_valid(d) || !item) {
		*res = -EINVAL;
		return PW_READY;
	}
	if (d->done || !d->input) {
		*res = 0;
		return PW_READY;
	}
	bool moved = false;
	int err = debounce_drain(cx, d, &moved);
	if (d->input_done) {
		pw_sleep_cancel(&d->sleep);
		if (d->held)
			return debounce_emit(d, item, res);
		d->done = true;
		*res = 0;
		return PW_READY;
	}
	if (moved) {
		/* One reset per poll however many items came: the entry
		 * moves, no timer is created. */
		pw_sleep_reset(&d->sleep, d->deadline);
		d->resets++;
	}
	if (err) {
		*res = err;
		return PW_READY;
	}
	if (!d->held)
		return PW_PENDING; /* the input registered our waker */
	if (pw_sleep_poll(cx, &d->sleep) == PW_PENDING)
		return PW_PENDING;
	return debounce_emit(d, item, res);
}

void pw_debounce_drop(struct pw_debounce *d)
{
	if (!debounce_valid(d))
		return;
	struct pw_stream *input = d->input;

	d->input = NULL;
	d->held = false;
	pw_sleep_cancel(&d->sleep);
	pw_stream_drop(input);
}

struct pw_stream *pw_debounce_stream(struct pw_debounce *d)
{
	return debounce_valid(d) ? &d->stream : NULL;
}

uint64_t pw_debounce_resets(const struct pw_debounce *d)
{
	return d ? d->resets : 0;
}

/* ---- retry ----------------------------------------------------------- */

enum { R_START = 0, R_RUNNING, R_SLEEPING, R_DONE };

static enum pw_poll retry_fut_poll(struct pw_cx *cx, struct pw_future *f,
				   int64_t *out)
{
	return pw_retry_poll(cx, pw_container_of(f, struct pw_retry, fut), out);
}

static void retry_fut_drop(struct pw_future *f)
{
	pw_retry_drop(pw_container_of(f, struct pw_retry, fut));
}

static const struct pw_future_ops retry_ops = {
	.poll = retry_fut_poll,
	.drop = retry_fut_drop,
};

static inline bool retry_valid(const struct pw_retry *r)
{
	return r && r->fut.ops == &retry_ops;
}

int pw_retry_init(struct pw_retry *r, unsigned max_attempts, uint64_t base_ns,
		  const struct pw_retry_ops *ops, void *arg)
{
	if (!r || !ops || !ops->start || !max_attempts)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->fut.ops = &retry_ops;
	r->ops = ops;
	r->arg = arg;
	r->base = base_ns;
	r->max_attempts = max_attempts;
	r->state = R_START;
	pw_sleep_init_at(&r->sleep, PW_TIME_NEVER);
	return 0;
}

int pw_retry_set_jitter(struct pw_retry *r, unsigned percent, uint64_t seed)
{
	if (!retry_valid(r) || percent < 1 || percent > 100 || r->attempt)
		return -EINVAL;
	r->jitter_pct = percent;
	r->rng = seed;
	return 0;
}

/* splitmix64: one 64-bit output per call, any seed. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The back-off after failed attempt @k (1-based), jitter included. */
static uint64_t retry_delay(struct pw_retry *r, unsigned k)
{
	unsigned shift = k - 1;
	uint64_t d;

	if (r->base == 0)
		return 0;
	if (shift >= 64 || r->base > (UINT64_MAX >> shift))
		d = UINT64_MAX;
	else
		d = r->base << shift;
	if (r->jitter_pct) {
		/* span = d * pct / 100 without overflow. */
		uint64_t span =
			d / 100 * r->jitter_pct + d % 100 * r->jitter_pct / 100;
		uint64_t j = 0;
		if (span == UINT64_MAX)
			j = next_random(&r->rng);
		else
			j = (uint64_t)(((unsigned __int128)next_random(&r->rng) *
					(span + 1)) >>
				       64);
		d = sat_add(d, j);
	}
	return d;
}

static void retry_finish(struct pw_retry *r, int64_t result)
{
	r->state = R_DONE;
	r->result = result;
	pw_sleep_cancel(&r->sleep);
}

/* Attempt r->attempt ended with @v < 0: tell the failed hook, then
 * finish or schedule the next. */
static void retry_failed(struct pw_retry *r, int64_t v)
{
	bool last = r->attempt >= r->max_attempts ||
		    (r->ops->is_fatal && r->ops->is_fatal(r->arg, v));

	if (!last)
		r->last_delay = retry_delay(r, r->attempt);
	if (r->ops->failed)
		r->ops->failed(r->arg, r->attempt, v, last ? 0 : r->last_delay);
	if (last) {
		retry_finish(r, v);
		return;
	}
	pw_sleep_reset_after(&r->sleep, r->last_delay);
	r->state = R_SLEEPING;
}

enum pw_poll pw_retry_poll(struct pw_cx *cx, struct pw_retry *r, int64_t *out)
{
	if (!out)
		return PW_READY;
	if (!poll_ok(cx) || !retry_valid(r)) {
		*out = -EINVAL;
		return PW_READY;
	}
	while (r->state != R_DONE) {
		int64_t v;
		switch (r->state) {
		case R_START: {
			struct pw_future *f = NULL;
			r->attempt++;
			int err = r->ops->start(r->arg, r->attempt, &f);
			if (err < 0) {
				retry_failed(r, err);
				break;
			}
			if (!f || !f->ops || !f->ops->poll) {
				retry_finish(r, -EINVAL);
				break;
			}
			r->cur = f;
			r->state = R_RUNNING;
		}
		/* fall through */
		case R_RUNNING:
			if (pw_future_poll(cx, r->cur, &v) == PW_PENDING)
				return PW_PENDING;
			struct pw_future *f = r->cur;
			r->cur = NULL;
			pw_future_drop(f);
			if (v >= 0)
				retry_finish(r, v);
			else
				retry_failed(r, v);
			break;
		case R_SLEEPING:
			if (pw_sleep_poll(cx, &r->sleep) == PW_PENDING)
				return PW_PENDING;
			r->state = R_START;
			break;
		default:
			retry_finish(r, -EINVAL);
			break;
		}
	}
	*out = r->result;
	return PW_READY;
}

void pw_retry_drop(struct pw_retry *r)
{
	if (!retry_valid(r))
		return;
	struct pw_future *f = r->cur;

	r->cur = NULL;
	pw_sleep_cancel(&r->sleep);
	if (r->state != R_DONE) {
		r->state = R_DONE;
		r->result = -ECANCELED;
	}
	pw_future_drop(f);
}

struct pw_future *pw_retry_future(struct pw_retry *r)
{
	return retry_valid(r) ? &r->fut : NULL;
}

unsigned pw_retry_attempts(const struct pw_retry *r)
{
	return r ? r->attempt : 0;
}

uint64_t pw_retry_last_delay(const struct pw_retry *r)
{
	return r ? r->last_delay : 0;
}

/* ---- throttle -------------------------------------------------------- */

static enum pw_poll throttle_stream_poll(struct pw_cx *cx, struct pw_stream *s,
					 void *item, int *res)
{
	return pw_throttle_poll_next(
		cx, pw_container_of(s, struct pw_throttle, stream), item, res);
}

static void throttle_stream_drop(struct pw_stream *s)
{
	pw_throttle_drop(pw_container_of(s, struct pw_throttle, stream));
}

static const struct pw_stream_ops throttle_ops = {
	.poll_next = throttle_stream_poll,
	.drop = throttle_stream_drop,
};

static inline bool throttle_valid(const struct pw_throttle *t)
{
	return t && t->stream.ops == &throttle_ops;
}

int pw_throttle_init(struct pw_throttle *t, struct pw_stream *input,
		     uint64_t period_ns)
{
	if (!t || !input || !input->ops || !input->ops->poll_next ||
	    !input->item_size || !period_ns)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->stream.ops = &throttle_ops;
	t->stream.item_size = input->item_size;
	t->input = input;
	t->period = period_ns;
	return 0;
}

enum pw_poll pw_throttle_poll_next(struct pw_cx *cx, struct pw_throttle *t,
				   void *item, int *res)
{
	if (!res)
		return PW_READY;
	if (!poll_ok(cx) || !throttle_valid(t) || !item) {
		*res = -EINVAL;
		return PW_READY;
	}
	if (t->done || !t->input) {
		*res = 0;
		return PW_READY;
	}
	for (;;) {
		int r;
		if (pw_stream_poll_next(cx, t->input, item, &r) == PW_PENDING)
			return PW_PENDING;
		if (r <= 0) {
			if (r == 0)
				t->done = true;
			*res = r;
			return PW_READY;
		}
		uint64_t now = now_ns(cx);
		if (!t->started || now >= t->next_at) {
			t->started = true;
			t->next_at = sat_add(now, t->period);
			t->passed++;
			*res = 1;
			return PW_READY;
		}
		t->dropped++;
		if (!pw__coop_proceed(cx))
			return PW_PENDING;
	}
}

void pw_throttle_drop(struct pw_throttle *t)
{
	if (!throttle_valid(t))
		return;
	struct pw_stream *input = t->input;

	t->input = NULL;
	pw_stream_drop(input);
}

struct pw_stream *pw_throttle_stream(struct pw_throttle *t)
{
	return throttle_valid(t) ? &t->stream : NULL;
}

uint64_t pw_throttle_dropped(const struct pw_throttle *t)
{
	return t ? t->dropped : 0;
}

/* ---- interval -------------------------------------------------------- */

static enum pw_poll interval_stream_poll(struct pw_cx *cx, struct pw_stream *s,
					 void *item, int *res)
{
	int64_t tick;
	struct pw_interval *iv = pw_container_of(s, struct pw_interval, stream);

	if (!res)
		return PW_READY;
	if (!item) {
		*res = -EINVAL;
		return PW_READY;
	}
	if (pw_interval_tick_poll(cx, iv, &tick) == PW_PENDING)
		return PW_PENDING;
	if (tick < 0) {
		*res = (int)tick;
		return PW_READY;
	}
	memcpy(item, &tick, sizeof(tick));
	*res = 1;
	return PW_READY;
}

static void interval_stream_drop(struct pw_stream *s)
{
	pw_interval_drop(pw_container_of(s, struct pw_interval, stream));
}

static const struct pw_stream_ops interval_ops = {
	.poll_next = interval_stream_poll,
	.drop = interval_stream_drop,
};

static inline bool interval_valid(const struct pw_interval *iv)
{
	return iv && iv->stream.ops == &interval_ops;
}

int pw_interval_init(struct pw_interval *iv, uint64_t period_ns,
		     enum pw_missed_tick missed)
{
	if (!iv || !period_ns || (unsigned)missed > PW_MISSED_TICK_SKIP)
		return -EINVAL;
	memset(iv, 0, sizeof(*iv));
	iv->stream.ops = &interval_ops;
	iv->stream.item_size = sizeof(int64_t);
	iv->period = period_ns;
	iv->missed = (uint8_t)missed;
	pw_sleep_init(&iv->sleep, 0); /* the first tick: now */
	return 0;
}

enum pw_poll pw_interval_tick_poll(struct pw_cx *cx, struct pw_interval *iv,
				   int64_t *tick)
{
	if (!tick)
		return PW_READY;
	if (!poll_ok(cx) || !interval_valid(iv)) {
		*tick = -EINVAL;
		return PW_READY;
	}
	if (pw_sleep_poll(cx, &iv->sleep) == PW_PENDING)
		return PW_PENDING;
	uint64_t sched = pw_sleep_deadline(&iv->sleep);
	uint64_t now = now_ns(cx);
	uint64_t next = sat_add(sched, iv->period);
	/* Late by more than the wheel's own rounding: a missed tick. */
	if (now > sat_add(sched, cx->shard->tick_ns)) {
		switch (iv->missed) {
		case PW_MISSED_TICK_DELAY:
			next = sat_add(now, iv->period);
			break;
		case PW_MISSED_TICK_SKIP:
			next = sat_add(sched, ((now - sched) / iv->period + 1) *
						      iv->period);
			break;
		default: /* BURST: keep the schedule */
			break;
		}
	}
	pw_sleep_reset(&iv->sleep, next);
	*tick = (int64_t)sched;
	return PW_READY;
}

void pw_interval_drop(struct pw_interval *iv)
{
	if (interval_valid(iv))
		pw_sleep_cancel(&iv->sleep);
}

struct pw_stream *pw_interval_stream(struct pw_interval *iv)
{
	return interval_valid(iv) ? &iv->stream : NULL;
}
