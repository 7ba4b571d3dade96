/* SPDX-License-Identifier: MIT */
/*
 * test_combinators.c - timeout, debounce, retry, throttle and interval at
 * exact virtual times under the paused clock (1 ms tick): who wins at the
 * deadline, what is dropped and cancelled, emission lists, back-off
 * times, jitter bounds and determinism, dropped counts, missed-tick
 * behaviours, composition, and bad input for every public function.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "tests/common.h"
#include "pinwheel/channel.h"
#include "pinwheel/combinators.h"
#include "pinwheel/stream.h"

#define MS PW_NSEC_PER_MSEC

static int64_t now_ms(void)
{
	return (int64_t)(pw_time_now() / MS);
}

/* Sleep an hour of virtual time: a probe for forgotten timers. */
static enum pw_poll probe_poll(struct pw_cx *cx, void *state)
{
	struct pw_sleep *sl = state;

	if (pw_sleep_poll(cx, sl) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, 0);
}

/*
 * Shard 0's counters once it is idle: no task memory held. Then a probe
 * sleeps an hour: the paused clock jumps to the earliest pending timer,
 * so a timer some test forgot to cancel would fire before the probe's;
 * exactly one (the probe's own) may fire.
 */
static struct pw_shard_stats idle_stats(struct pw_runtime *rt)
{
	struct pw_shard_stats st, after;
	struct pw_sleep probe;

	pw_test_wait_live(rt, 0, 0);
	cr_assert_eq(pw_runtime_stats(rt, 0, &st), 0);
	cr_assert_eq(st.live_tasks, 0);
	pw_sleep_init(&probe, 3600 * PW_NSEC_PER_SEC);
	pw_test_block_on(rt, probe_poll, &probe);
	cr_assert_eq(pw_runtime_stats(rt, 0, &after), 0);
	cr_assert_eq(
		after.timers_fired, st.timers_fired + 1,
		"%llu timers fired while the probe slept",
		(unsigned long long)(after.timers_fired - st.timers_fired));
	return st;
}

/* ---- a future that sleeps, then returns a value ------------------------ */

struct sleepy {
	struct pw_future fut;
	struct pw_sleep sl;
	int64_t value;
};

static int sleepy_drops, sleepy_cancels;

static enum pw_poll sleepy_poll(struct pw_cx *cx, struct pw_future *f,
				int64_t *out)
{
	struct sleepy *s = pw_container_of(f, struct sleepy, fut);

	if (pw_sleep_poll(cx, &s->sl) == PW_PENDING)
		return PW_PENDING;
	*out = s->value;
	return PW_READY;
}

static void sleepy_drop(struct pw_future *f)
{
	struct sleepy *s = pw_container_of(f, struct sleepy, fut);

	sleepy_drops++;
	if (pw_sleep_cancel(&s->sl) == 0)
		sleepy_cancels++;
}

static const struct pw_future_ops sleepy_ops = { sleepy_poll, sleepy_drop };

static void sleepy_init(struct sleepy *s, uint64_t ns, int64_t value)
{
	s->fut.ops = &sleepy_ops;
	pw_sleep_init(&s->sl, ns);
	s->value = value;
}

/* ---- a stream of ints at given ms times, then the end ------------------ */

struct source {
	struct pw_stream s;
	const int *at; /* item i is the int at[i], due at at[i] ms */
	int n, i;
	int end_ms;
	uint64_t armed; /* deadline the sleep is set to */
	struct pw_sleep sl;
	bool dropped;
};

static enum pw_poll source_poll(struct pw_cx *cx, struct pw_stream *s,
				void *item, int *res)
{
	struct source *src = pw_container_of(s, struct source, s);
	uint64_t when =
		(uint64_t)(src->i < src->n ? src->at[src->i] : src->end_ms) *
		MS;

	if (src->i > src->n) {
		*res = 0;
		return PW_READY;
	}
	if (when != src->armed) {
		pw_sleep_reset(&src->sl, when);
		src->armed = when;
	}
	if (pw_sleep_poll(cx, &src->sl) == PW_PENDING)
		return PW_PENDING;
	if (src->i++ == src->n) {
		*res = 0;
		return PW_READY;
	}
	memcpy(item, &src->at[src->i - 1], sizeof(int));
	*res = 1;
	return PW_READY;
}

static void source_drop(struct pw_stream *s)
{
	struct source *src = pw_container_of(s, struct source, s);

	pw_sleep_cancel(&src->sl);
	src->dropped = true;
}

static const struct pw_stream_ops source_ops = { source_poll, source_drop };

static void source_init(struct source *src, const int *at, int n, int end_ms)
{
	memset(src, 0, sizeof(*src));
	src->s.ops = &source_ops;
	src->s.item_size = sizeof(int);
	src->at = at;
	src->n = n;
	src->end_ms = end_ms;
	src->armed = PW_TIME_NEVER;
	pw_sleep_init_at(&src->sl, PW_TIME_NEVER);
}

/* ---- collecting a stream: (value, ms) pairs, then the end time --------- */

struct out {
	int v;
	int64_t at;
};

struct collect {
	struct pw_stream *s;
	struct out got[64];
	int n;
	int64_t end_at;
};

static enum pw_poll collect_poll(struct pw_cx *cx, void *state)
{
	struct collect *c = state;

	for (;;) {
		int v = -1, res = 9;
		if (pw_stream_poll_next(cx, c->s, &v, &res) == PW_PENDING)
			return PW_PENDING;
		if (res == 0) {
			c->end_at = now_ms();
			pw_stream_drop(c->s);
			return pw_ready(cx, c->n);
		}
		cr_assert_eq(res, 1, "res %d", res);
		cr_assert_lt(c->n, 64);
		c->got[c->n++] = (struct out){ v, now_ms() };
	}
}

static void assert_outs(const struct collect *c, const struct out *want, int n)
{
	for (int i = 0; i < c->n && i < n; i++)
		cr_assert(c->got[i].v == want[i].v &&
				  c->got[i].at == want[i].at,
			  "item %d is %d@%lld, want %d@%lld", i, c->got[i].v,
			  (long long)c->got[i].at, want[i].v,
			  (long long)want[i].at);
	cr_assert_eq(c->n, n, "%d items, want %d", c->n, n);
}

/* ---- timeout ----------------------------------------------------------- */

struct to_root {
	uint64_t inner_ns, limit_ns;
	bool via_future;
	bool init;
	struct sleepy inner;
	struct pw_timeout t;
	int64_t at;
};

static enum pw_poll to_poll(struct pw_cx *cx, void *state)
{
	struct to_root *r = state;
	int64_t v;

	if (!r->init) {
		sleepy_init(&r->inner, r->inner_ns, 42);
		cr_assert_eq(pw_timeout_init(&r->t, r->limit_ns, &r->inner.fut),
			     0);
		r->init = true;
	}
	enum pw_poll p;
	if (r->via_future)
		p = pw_future_poll(cx, pw_timeout_future(&r->t), &v);
	else
		p = pw_timeout_poll(cx, &r->t, &v);
	if (p == PW_PENDING)
		return PW_PENDING;
	r->at = now_ms();
	cr_assert_eq(sleepy_drops, 1, "the inner future is dropped once");
	/* Finished: the result repeats, the drop is idempotent. */
	int64_t again;
	cr_assert_eq(pw_timeout_poll(cx, &r->t, &again), PW_READY);
	cr_assert_eq(again, v);
	pw_timeout_drop(&r->t);
	pw_timeout_drop(&r->t);
	cr_assert_eq(sleepy_drops, 1);
	return pw_ready(cx, v);
}

Test(combinators, timeout_inner_ready_before_the_deadline)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct to_root r = { .inner_ns = 10 * MS, .limit_ns = 20 * MS };

	cr_assert_eq(pw_test_block_on(rt, to_poll, &r), 42);
	cr_assert_eq(r.at, 10);
	cr_assert_eq(sleepy_cancels, 0, "the inner sleep had fired");
	/* Only the inner sleep fired: the deadline was cancelled. */
	cr_assert_eq(idle_stats(rt).timers_fired, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(combinators, timeout_inner_ready_at_the_deadline_wins)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct to_root r = { .inner_ns = 20 * MS,
			     .limit_ns = 20 * MS,
			     .via_future = true };

	cr_assert_eq(pw_test_block_on(rt, to_poll, &r), 42);
	cr_assert_eq(r.at, 20);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(combinators, timeout_fires_at_exactly_d_and_drops_the_inner)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct to_root r = { .inner_ns = 50 * MS, .limit_ns = 20 * MS };

	cr_assert_eq(pw_test_block_on(rt, to_poll, &r), -ETIMEDOUT);
	cr_assert_eq(r.at, 20);
	cr_assert_eq(sleepy_cancels, 1, "the inner sleep was cancelled");
	/* Only the deadline fired; the inner 50 ms sleep never did. */
	cr_assert_eq(idle_stats(rt).timers_fired, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* The library's delay future inside a timeout: its value when it comes
 * first; cancelled (its timer never fires) when the deadline does. */
struct delay_root {
	uint64_t delay_ns;
	bool init;
	struct pw_delay d;
	struct pw_timeout t;
	int64_t at;
};

static enum pw_poll delay_root_poll(struct pw_cx *cx, void *state)
{
	struct delay_root *r = state;
	int64_t v;

	if (!r->init) {
		struct pw_future *f = pw_delay_init(&r->d, r->delay_ns, 7);
		cr_assert_eq(pw_timeout_init(&r->t, 100 * MS, f), 0);
		r->init = true;
	}
	if (pw_timeout_poll(cx, &r->t, &v) == PW_PENDING)
		return PW_PENDING;
	r->at = now_ms();
	return pw_ready(cx, v);
}

Test(combinators, delay_gives_its_value_or_is_cancelled_by_a_timeout)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct delay_root first = { .delay_ns = 30 * MS };
	struct delay_root second = { .delay_ns = 300 * MS };

	cr_assert_null(pw_delay_init(NULL, MS, 0));
	cr_assert_eq(pw_test_block_on(rt, delay_root_poll, &first), 7);
	cr_assert_eq(first.at, 30);
	uint64_t fired = idle_stats(rt).timers_fired;
	cr_assert_eq(pw_test_block_on(rt, delay_root_poll, &second),
		     -ETIMEDOUT);
	cr_assert_eq(second.at - first.at, 100 + 3600 * 1000,
		     "the deadline is 100 ms after the probe's hour");
	/* The hour's probe, then only the deadline: the 300 ms delay was
	 * cancelled when the timeout dropped it. */
	cr_assert_eq(idle_stats(rt).timers_fired, fired + 2);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* A task holding a pending timeout is aborted: its drop hook drops the
 * timeout, which cancels both sleeps; nothing fires afterwards. */
static enum pw_poll to_child_poll(struct pw_cx *cx, void *state)
{
	return to_poll(cx, state);
}

static void to_child_drop(void *state)
{
	struct to_root *r = state;

	pw_timeout_drop(&r->t);
}

struct abort_root {
	int step;
	struct pw_join j;
};

static enum pw_poll to_abort_poll(struct pw_cx *cx, void *state)
{
	struct abort_root *a = state;
	int64_t v;

	if (a->step == 0) {
		struct to_root r = { .inner_ns = 50 * MS, .limit_ns = 20 * MS };
		cr_assert_eq(pw_spawn(&a->j, to_child_poll, &r, sizeof(r),
				      to_child_drop),
			     0);
		a->step = 1;
		return pw_yield(cx);
	}
	if (a->step == 1) {
		cr_assert_eq(pw_join_abort(&a->j), 0);
		a->step = 2;
	}
	if (pw_join_poll(cx, &a->j, &v) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, v);
}

Test(combinators, timeout_dropped_while_pending_cancels_everything)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct abort_root a = { 0 };

	cr_assert_eq(pw_test_block_on(rt, to_abort_poll, &a), -ECANCELED);
	cr_assert_eq(sleepy_drops, 1);
	cr_assert_eq(sleepy_cancels, 1);
	cr_assert_eq(idle_stats(rt).timers_fired, 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- pw_future_drop ------------------------------------------------------ */

/*
 * pw_future_drop calls the future's drop operation once per call: an
 * armed sleepy future is dropped (its sleep cancelled) from the task that
 * polled it and from a task's drop hook. A NULL future, one without ops
 * and one whose ops have no drop are ignored.
 */
static int poll_only_polls;

static enum pw_poll poll_only_poll(struct pw_cx *cx, struct pw_future *f,
				   int64_t *out)
{
	(void)cx;
	(void)f;
	poll_only_polls++;
	*out = 0;
	return PW_READY;
}

static const struct pw_future_ops poll_only_ops = { poll_only_poll, NULL };

struct holder {
	struct sleepy sl;
	bool polled;
};

static enum pw_poll holder_poll(struct pw_cx *cx, void *state)
{
	struct holder *h = state;
	int64_t v;

	if (!h->polled) {
		sleepy_init(&h->sl, 30 * MS, 1);
		h->polled = true;
	}
	return h->sl.fut.ops->poll(cx, &h->sl.fut, &v);
}

static void holder_drop(void *state)
{
	struct holder *h = state;

	pw_future_drop(&h->sl.fut);
}

struct fd_root {
	int step;
	struct sleepy sl;
	struct pw_join j;
};

static enum pw_poll future_drop_poll(struct pw_cx *cx, void *state)
{
	struct fd_root *r = state;
	struct pw_future none = { NULL }, poll_only = { &poll_only_ops };
	int64_t v;

	if (r->step == 0) {
		pw_future_drop(NULL);
		pw_future_drop(&none);
		pw_future_drop(&poll_only);
		cr_assert_eq(poll_only_polls, 0, "drop never polls");
		cr_assert_eq(sleepy_drops, 0);
		/* Armed, then dropped by its own task. */
		sleepy_init(&r->sl, 10 * MS, 1);
		cr_assert_eq(r->sl.fut.ops->poll(cx, &r->sl.fut, &v),
			     PW_PENDING);
		pw_future_drop(&r->sl.fut);
		cr_assert_eq(sleepy_drops, 1);
		cr_assert_eq(sleepy_cancels, 1, "the armed sleep is cancelled");
		/* From a drop hook: a task holding an armed one, aborted. */
		cr_assert_eq(pw_spawn(&r->j, holder_poll, &(struct holder){ 0 },
				      sizeof(struct holder), holder_drop),
			     0);
		r->step = 1;
		return pw_yield(cx);
	}
	if (r->step == 1) {
		cr_assert_eq(pw_join_abort(&r->j), 0);
		r->step = 2;
	}
	if (pw_join_poll(cx, &r->j, &v) == PW_PENDING)
		return PW_PENDING;
	cr_assert_eq(v, -ECANCELED);
	return pw_ready(cx, now_ms());
}

Test(combinators, future_drop_calls_the_drop_operation_once)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct fd_root r = { 0 };

	cr_assert_eq(pw_test_block_on(rt, future_drop_poll, &r), 0,
		     "no timer fired: the clock stayed at 0");
	cr_assert_eq(sleepy_drops, 2);
	cr_assert_eq(sleepy_cancels, 2);
	cr_assert_eq(poll_only_polls, 0);
	cr_assert_eq(idle_stats(rt).timers_fired, 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- debounce ---------------------------------------------------------- */

static struct pw_channel kch;
static int kstore[16];

/* Types keys into kch at given times, then closes it at end_ms. */
struct typist {
	const int *at;
	int n, i, end_ms;
	struct pw_sleep sl;
	int waits; /* sleeps that had to wait for the wheel */
	bool waited;
};

static enum pw_poll typist_poll(struct pw_cx *cx, void *state)
{
	struct typist *t = state;

	for (;;) {
		int when = t->i < t->n ? t->at[t->i] : t->end_ms;
		if (!t->waited) {
			pw_sleep_reset(&t->sl, (uint64_t)when * MS);
			t->waited = true;
			if (pw_sleep_poll(cx, &t->sl) == PW_PENDING) {
				t->waits++;
				return PW_PENDING;
			}
		} else if (pw_sleep_poll(cx, &t->sl) == PW_PENDING) {
			return PW_PENDING;
		}
		t->waited = false;
		if (t->i == t->n) {
			cr_assert_eq(pw_channel_close_tx(&kch), 0);
			return pw_ready(cx, t->waits);
		}
		int key = 1 + t->i++; /* keys 1, 2, 3, ... */
		cr_assert_eq(pw_channel_try_send(&kch, &key), 0);
	}
}

static void typist_drop(void *state)
{
	struct typist *t = state;

	pw_sleep_cancel(&t->sl);
}

struct deb_root {
	int step;
	struct pw_join typist;
	struct pw_debounce d;
	int storage[2];
	struct collect c;
	int64_t typist_waits;
};

static const int keys_at[] = { 0, 10, 20, 25, 200, 210 };

static enum pw_poll deb_root_poll(struct pw_cx *cx, void *state)
{
	struct deb_root *r = state;

	if (r->step == 0) {
		struct typist t = { .at = keys_at, .n = 6, .end_ms = 300 };
		pw_sleep_init_at(&t.sl, PW_TIME_NEVER);
		cr_assert_eq(pw_spawn(&r->typist, typist_poll, &t, sizeof(t),
				      typist_drop),
			     0);
		cr_assert_eq(pw_debounce_init(&r->d, pw_channel_stream(&kch),
					      50 * MS, 0, r->storage),
			     0);
		r->c.s = pw_debounce_stream(&r->d);
		r->step = 1;
	}
	if (r->step == 1) {
		if (collect_poll(cx, &r->c) == PW_PENDING)
			return PW_PENDING;
		r->step = 2;
	}
	if (pw_join_poll(cx, &r->typist, &r->typist_waits) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, 0);
}

Test(combinators, debounce_keystrokes_emit_the_last_of_each_burst)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static struct deb_root r;

	cr_assert_eq(pw_channel_init(&kch, sizeof(int), 16, kstore), 0);
	pw_test_block_on(rt, deb_root_poll, &r);
	/* Keys 1..4 at 0, 10, 20, 25; keys 5, 6 at 200, 210; quiet 50. */
	const struct out want[] = { { 4, 75 }, { 6, 260 } };
	assert_outs(&r.c, want, 2);
	cr_assert_eq(r.c.end_at, 300, "ends when the input does");
	/* One reset per arriving key, and the debounce's one sleep fired
	 * exactly twice: every other fire is the typist's. */
	cr_assert_eq(pw_debounce_resets(&r.d), 6);
	cr_assert_eq(r.typist_waits, 6, "10, 20, 25, 200, 210, 300");
	cr_assert_eq(idle_stats(rt).timers_fired, 6 + 2);
	struct pw_channel_stats cs;
	pw_channel_stats(&kch, &cs);
	cr_assert(cs.rx_closed, "dropping the debounce dropped the input");
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

struct deb_src_root {
	bool init;
	uint64_t quiet, max_wait;
	struct source src;
	struct pw_debounce d;
	int storage[2];
	struct collect c;
};

static enum pw_poll deb_src_poll(struct pw_cx *cx, void *state)
{
	struct deb_src_root *r = state;

	if (!r->init) {
		cr_assert_eq(pw_debounce_init(&r->d, &r->src.s, r->quiet,
					      r->max_wait, r->storage),
			     0);
		r->c.s = pw_debounce_stream(&r->d);
		r->init = true;
	}
	return collect_poll(cx, &r->c);
}

Test(combinators, debounce_flushes_at_once_when_the_input_ends)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static struct deb_src_root r = { .quiet = 50 * MS };
	static const int at[] = { 0, 10 };

	source_init(&r.src, at, 2, 20);
	cr_assert_eq(pw_test_block_on(rt, deb_src_poll, &r), 1);
	const struct out want[] = { { 10, 20 } };
	assert_outs(&r.c, want, 1);
	cr_assert_eq(r.c.end_at, 20);
	cr_assert(r.src.dropped);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Items every 10 ms at 0..190 (value = time), input ends at 300. */
static int every10[20];

static void fill_every10(void)
{
	for (int i = 0; i < 20; i++)
		every10[i] = 10 * i;
}

Test(combinators, debounce_max_wait_keeps_a_continuous_stream_emitting)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static struct deb_src_root r = { .quiet = 50 * MS,
					 .max_wait = 60 * MS };

	fill_every10();
	source_init(&r.src, every10, 20, 300);
	pw_test_block_on(rt, deb_src_poll, &r);
	/*
	 * Window 1 opens with item 0: deadline min(t + 50, 0 + 60) = 60;
	 * item 60 arrives at 60 and is drained first, so it is the one
	 * emitted. Window 2 opens with 70: deadline 130, item 130 emitted
	 * at 130. Window 3 opens with 140: deadline 200 (items stop at
	 * 190, whose own quiet deadline 240 is later). The end at 300.
	 */
	const struct out want[] = { { 60, 60 }, { 130, 130 }, { 190, 200 } };
	assert_outs(&r.c, want, 3);
	cr_assert_eq(r.c.end_at, 300);
	cr_assert_eq(pw_debounce_resets(&r.d), 20, "one per item");
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(combinators, debounce_without_max_wait_waits_for_quiet)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static struct deb_src_root r = { .quiet = 50 * MS };

	fill_every10();
	source_init(&r.src, every10, 20, 300);
	pw_test_block_on(rt, deb_src_poll, &r);
	const struct out want[] = { { 190, 240 } };
	assert_outs(&r.c, want, 1);
	cr_assert_eq(r.c.end_at, 300);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- retry ------------------------------------------------------------- */

/* The retried operation: attempt k returns results[k-1] after dur_ns;
 * a result of -ENOMEM makes start() itself fail. */
struct flaky {
	const int64_t *results;
	uint64_t dur_ns;
	bool with_timeout; /* wrap each attempt in a 20 ms timeout */
	struct pw_retry *r;
	int nstart;
	int64_t starts[8];  /* attempt start times, ms */
	uint64_t delays[8]; /* back-off chosen before each attempt */
	struct sleepy fut;
	struct pw_timeout to;
};

static int flaky_start(void *arg, unsigned attempt, struct pw_future **fut)
{
	struct flaky *f = arg;

	cr_assert_eq(attempt, (unsigned)f->nstart + 1);
	cr_assert_lt(f->nstart, 8);
	f->starts[f->nstart] = now_ms();
	f->delays[f->nstart] = pw_retry_last_delay(f->r);
	f->nstart++;
	if (f->results[attempt - 1] == -ENOMEM)
		return -ENOMEM;
	sleepy_init(&f->fut, f->dur_ns, f->results[attempt - 1]);
	if (!f->with_timeout) {
		*fut = &f->fut.fut;
		return 0;
	}
	cr_assert_eq(pw_timeout_init(&f->to, 20 * MS, &f->fut.fut), 0);
	*fut = pw_timeout_future(&f->to);
	return 0;
}

static bool eperm_is_fatal(void *arg, int64_t err)
{
	(void)arg;
	return err == -EPERM;
}

/* The failed hook: each call's attempt, error and back-off, in order. */
static int nfailed;
static unsigned failed_attempt[8];
static int64_t failed_err[8];
static uint64_t failed_delay[8];

static void flaky_failed(void *arg, unsigned attempt, int64_t err,
			 uint64_t delay_ns)
{
	struct flaky *f = arg;

	cr_assert_lt(nfailed, 8);
	cr_assert_eq(attempt, (unsigned)f->nstart, "after the attempt began");
	failed_attempt[nfailed] = attempt;
	failed_err[nfailed] = err;
	failed_delay[nfailed] = delay_ns;
	nfailed++;
}

static const struct pw_retry_ops flaky_ops = { .start = flaky_start };
static const struct pw_retry_ops fatal_ops = { .start = flaky_start,
					       .is_fatal = eperm_is_fatal };
static const struct pw_retry_ops hooked_ops = { .start = flaky_start,
						.is_fatal = eperm_is_fatal,
						.failed = flaky_failed };

struct retry_root {
	unsigned max;
	uint64_t base;
	const struct pw_retry_ops *ops;
	unsigned jitter;
	uint64_t seed;
	bool init;
	struct pw_retry r;
	struct flaky f;
	int64_t at;
};

static enum pw_poll retry_root_poll(struct pw_cx *cx, void *state)
{
	struct retry_root *rr = state;
	int64_t v;

	if (!rr->init) {
		rr->f.r = &rr->r;
		cr_assert_eq(pw_retry_init(&rr->r, rr->max, rr->base, rr->ops,
					   &rr->f),
			     0);
		if (rr->jitter)
			cr_assert_eq(pw_retry_set_jitter(&rr->r, rr->jitter,
							 rr->seed),
				     0);
		rr->init = true;
	}
	if (pw_retry_poll(cx, &rr->r, &v) == PW_PENDING)
		return PW_PENDING;
	rr->at = now_ms();
	int64_t again;
	cr_assert_eq(pw_future_poll(cx, pw_retry_future(&rr->r), &again),
		     PW_READY);
	cr_assert_eq(again, v, "a finished retry repeats its result");
	pw_retry_drop(&rr->r);
	return pw_ready(cx, v);
}

static void assert_starts(const struct flaky *f, const int64_t *want, int n)
{
	cr_assert_eq(f->nstart, n, "%d attempts, want %d", f->nstart, n);
	for (int i = 0; i < n; i++)
		cr_assert_eq(f->starts[i], want[i], "attempt %d at %lld", i + 1,
			     (long long)f->starts[i]);
}

Test(combinators, retry_succeeds_on_the_third_attempt)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static const int64_t res[] = { -ENOMEM, -EIO, 7 };
	static struct retry_root rr = { .max = 5,
					.base = 10 * MS,
					.ops = &flaky_ops };

	rr.f.results = res;
	cr_assert_eq(pw_test_block_on(rt, retry_root_poll, &rr), 7);
	const int64_t want[] = { 0, 10, 30 };
	assert_starts(&rr.f, want, 3);
	cr_assert_eq(rr.at, 30);
	cr_assert_eq(pw_retry_attempts(&rr.r), 3);
	cr_assert_eq(sleepy_drops, 2, "each attempt's future dropped");
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(combinators, retry_all_attempts_fail_with_doubling_sleeps)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static const int64_t res[] = { -EIO, -EIO, -EIO, -EIO, -EAGAIN };
	static struct retry_root rr = { .max = 5,
					.base = 10 * MS,
					.ops = &flaky_ops };

	rr.f.results = res;
	rr.f.dur_ns = 1 * MS; /* each attempt takes 1 ms */
	cr_assert_eq(pw_test_block_on(rt, retry_root_poll, &rr), -EAGAIN);
	/* Fail at 1, sleep 10; 12, sleep 20; 33, sleep 40; 74, sleep 80;
	 * the last fails at 155 with no sleep after it. */
	const int64_t want[] = { 0, 11, 32, 73, 154 };
	assert_starts(&rr.f, want, 5);
	const uint64_t delays[] = { 0, 10 * MS, 20 * MS, 40 * MS, 80 * MS };
	for (int i = 0; i < 5; i++)
		cr_assert_eq(rr.f.delays[i], delays[i]);
	cr_assert_eq(rr.at, 155);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(combinators, retry_fatal_error_stops_at_once)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static const int64_t res[] = { -EIO, -EPERM, 7 };
	static struct retry_root rr = { .max = 5,
					.base = 10 * MS,
					.ops = &fatal_ops };

	rr.f.results = res;
	cr_assert_eq(pw_test_block_on(rt, retry_root_poll, &rr), -EPERM);
	const int64_t want[] = { 0, 10 };
	assert_starts(&rr.f, want, 2);
	cr_assert_eq(rr.at, 10);
	cr_assert_eq(pw_retry_attempts(&rr.r), 2);
	cr_assert_eq(idle_stats(rt).timers_fired, 1, "only the 10 ms sleep");
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/*
 * The failed hook sees every failed attempt in order, with its error and
 * the back-off chosen after it: 10 then 20 ms, then 0 for the fatal
 * -EPERM that ends the retry; the success is not reported.
 */
Test(combinators, retry_failed_hook_after_each_failure)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static const int64_t res[] = { -ENOMEM, -EIO, -EPERM, 7 };
	static struct retry_root rr = { .max = 5,
					.base = 10 * MS,
					.ops = &hooked_ops };

	nfailed = 0;
	rr.f.results = res;
	cr_assert_eq(pw_test_block_on(rt, retry_root_poll, &rr), -EPERM);
	cr_assert_eq(nfailed, 3);
	const unsigned attempt[] = { 1, 2, 3 };
	const int64_t err[] = { -ENOMEM, -EIO, -EPERM };
	const uint64_t delay[] = { 10 * MS, 20 * MS, 0 };
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(failed_attempt[i], attempt[i]);
		cr_assert_eq(failed_err[i], err[i]);
		cr_assert_eq(failed_delay[i], delay[i], "call %d: %llu ns", i,
			     (unsigned long long)failed_delay[i]);
	}
	cr_assert_eq(rr.at, 30);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Every attempt fails: the last call says no back-off follows. */
Test(combinators, retry_failed_hook_last_attempt_has_no_backoff)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static const int64_t res[] = { -EIO, -EIO };
	static struct retry_root rr = { .max = 2,
					.base = 5 * MS,
					.ops = &hooked_ops };

	nfailed = 0;
	rr.f.results = res;
	cr_assert_eq(pw_test_block_on(rt, retry_root_poll, &rr), -EIO);
	cr_assert_eq(nfailed, 2);
	cr_assert_eq(failed_delay[0], 5 * MS);
	cr_assert_eq(failed_delay[1], 0);
	cr_assert_eq(failed_attempt[1], 2);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

static const int64_t all_fail[] = { -EIO, -EIO, -EIO, -EIO, -EIO, -EIO };

static void run_jittered(uint64_t seed, struct retry_root *rr)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);

	memset(rr, 0, sizeof(*rr));
	rr->max = 6;
	rr->base = 10 * MS;
	rr->ops = &flaky_ops;
	rr->jitter = 50;
	rr->seed = seed;
	rr->f.results = all_fail;
	cr_assert_eq(pw_test_block_on(rt, retry_root_poll, rr), -EIO);
	cr_assert_eq(rr->f.nstart, 6);
	/* Each back-off d * 2^k plus up to half of it, and the attempt
	 * starts when it ends, rounded up to the 1 ms tick. */
	for (int i = 1; i < 6; i++) {
		uint64_t d = (10 * MS) << (i - 1);
		uint64_t got = rr->f.delays[i];
		cr_assert_geq(got, d);
		cr_assert_leq(got, d + d / 2);
		int64_t gap = rr->f.starts[i] - rr->f.starts[i - 1];
		cr_assert_eq(gap, (int64_t)((got + MS - 1) / MS),
			     "attempt %d: gap %lld for %llu ns", i + 1,
			     (long long)gap, (unsigned long long)got);
	}
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(combinators, retry_jitter_is_in_range_and_deterministic)
{
	static struct retry_root a, b, c;

	run_jittered(12345, &a);
	run_jittered(12345, &b);
	run_jittered(999, &c);
	bool differs = false;
	for (int i = 1; i < 6; i++) {
		cr_assert_eq(a.f.delays[i], b.f.delays[i], "same seed");
		cr_assert_eq(a.f.starts[i], b.f.starts[i]);
		differs |= a.f.delays[i] != c.f.delays[i];
	}
	cr_assert(differs, "another seed, other delays");
}

/* Each attempt times out at 20 ms, base 10 ms, 3 attempts: attempts at
 * 0, 30 (20 + 10) and 70 (50 + 20); the last times out at 90. */
Test(combinators, retry_of_a_timeout)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static const int64_t res[] = { 1, 2, 3 };
	static struct retry_root rr = { .max = 3,
					.base = 10 * MS,
					.ops = &flaky_ops };

	rr.f.results = res;
	rr.f.dur_ns = 100 * MS;
	rr.f.with_timeout = true;
	cr_assert_eq(pw_test_block_on(rt, retry_root_poll, &rr), -ETIMEDOUT);
	const int64_t want[] = { 0, 30, 70 };
	assert_starts(&rr.f, want, 3);
	cr_assert_eq(rr.at, 90);
	cr_assert_eq(sleepy_drops, 3);
	cr_assert_eq(sleepy_cancels, 3, "every 100 ms sleep was cancelled");
	/* Fired: three deadlines (20, 50, 90), two back-offs (30, 70). */
	cr_assert_eq(idle_stats(rt).timers_fired, 5);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- throttle ---------------------------------------------------------- */

struct thr_root {
	bool init;
	struct source src;
	struct pw_throttle t;
	struct collect c;
};

static enum pw_poll thr_poll(struct pw_cx *cx, void *state)
{
	struct thr_root *r = state;

	if (!r->init) {
		cr_assert_eq(pw_throttle_init(&r->t, &r->src.s, 30 * MS), 0);
		r->c.s = pw_throttle_stream(&r->t);
		r->init = true;
	}
	return collect_poll(cx, &r->c);
}

Test(combinators, throttle_passes_one_per_period_and_counts_drops)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static struct thr_root r;
	static const int at[] = { 0, 10, 20, 30, 35, 50, 61, 65, 100 };

	source_init(&r.src, at, 9, 120);
	cr_assert_eq(pw_test_block_on(rt, thr_poll, &r), 4);
	/* 0 passes; 30 >= 0 + 30 passes; 61 >= 60; 100 >= 91. */
	const struct out want[] = {
		{ 0, 0 }, { 30, 30 }, { 61, 61 }, { 100, 100 }
	};
	assert_outs(&r.c, want, 4);
	cr_assert_eq(pw_throttle_dropped(&r.t), 5, "10, 20, 35, 50, 65");
	cr_assert_eq(r.c.end_at, 120);
	cr_assert(r.src.dropped);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- interval ---------------------------------------------------------- */

struct iv_root {
	enum pw_missed_tick missed;
	int step, n;
	struct pw_interval iv;
	struct pw_sleep stall;
	int64_t sched[8], at[8];
};

static enum pw_poll iv_poll(struct pw_cx *cx, void *state)
{
	struct iv_root *r = state;
	int64_t tick;

	if (r->step == 0) {
		cr_assert_eq(pw_interval_init(&r->iv, 10 * MS, r->missed), 0);
		r->step = 1;
	}
	while (r->n < 7) {
		if (r->step == 2) {
			/* After the tick at 10, stall for 35 ms. */
			if (pw_sleep_poll(cx, &r->stall) == PW_PENDING)
				return PW_PENDING;
			r->step = 3;
		}
		if (pw_interval_tick_poll(cx, &r->iv, &tick) == PW_PENDING)
			return PW_PENDING;
		cr_assert_geq(tick, 0);
		r->sched[r->n] = tick / (int64_t)MS;
		r->at[r->n] = now_ms();
		if (++r->n == 2) {
			pw_sleep_init(&r->stall, 35 * MS);
			r->step = 2;
		}
	}
	pw_interval_drop(&r->iv);
	pw_interval_drop(&r->iv);
	return pw_ready(cx, 0);
}

static void run_interval(enum pw_missed_tick m, const int64_t *sched,
			 const int64_t *at, uint64_t fired)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct iv_root r = { .missed = m };

	cr_assert_eq(pw_test_block_on(rt, iv_poll, &r), 0);
	for (int i = 0; i < 7; i++)
		cr_assert(r.sched[i] == sched[i] && r.at[i] == at[i],
			  "tick %d: scheduled %lld at %lld; want %lld at %lld",
			  i, (long long)r.sched[i], (long long)r.at[i],
			  (long long)sched[i], (long long)at[i]);
	cr_assert_eq(idle_stats(rt).timers_fired, fired);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Period 10 ms; the consumer takes the ticks at 0 and 10, then stalls
 * until 45. */
Test(combinators, interval_burst_catches_up_back_to_back)
{
	const int64_t sched[] = { 0, 10, 20, 30, 40, 50, 60 };
	const int64_t at[] = { 0, 10, 45, 45, 45, 50, 60 };

	/* Fired: tick 10, the stall, ticks 50 and 60; the late ticks were
	 * already due when polled. */
	run_interval(PW_MISSED_TICK_BURST, sched, at, 4);
}

Test(combinators, interval_delay_restarts_from_the_late_tick)
{
	const int64_t sched[] = { 0, 10, 20, 55, 65, 75, 85 };
	const int64_t at[] = { 0, 10, 45, 55, 65, 75, 85 };

	run_interval(PW_MISSED_TICK_DELAY, sched, at, 6);
}

Test(combinators, interval_skip_keeps_the_original_schedule)
{
	const int64_t sched[] = { 0, 10, 20, 50, 60, 70, 80 };
	const int64_t at[] = { 0, 10, 45, 50, 60, 70, 80 };

	run_interval(PW_MISSED_TICK_SKIP, sched, at, 6);
}

/* Composition through the stream views: a throttle (25 ms) over an
 * interval (10 ms) passes the ticks at 0, 30, 60, 90. */
struct compose_root {
	bool init;
	int n;
	struct pw_interval iv;
	struct pw_throttle t;
	int64_t got[4];
};

static enum pw_poll compose_poll(struct pw_cx *cx, void *state)
{
	struct compose_root *r = state;

	if (!r->init) {
		cr_assert_eq(pw_interval_init(&r->iv, 10 * MS,
					      PW_MISSED_TICK_BURST),
			     0);
		cr_assert_eq(pw_throttle_init(&r->t, pw_interval_stream(&r->iv),
					      25 * MS),
			     0);
		r->init = true;
	}
	while (r->n < 4) {
		int64_t tick;
		int res;
		if (pw_stream_poll_next(cx, pw_throttle_stream(&r->t), &tick,
					&res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, 1);
		cr_assert_eq(tick, (int64_t)pw_time_now(), "on time");
		r->got[r->n++] = tick / (int64_t)MS;
	}
	pw_stream_drop(pw_throttle_stream(&r->t));
	return pw_ready(cx, pw_throttle_dropped(&r->t));
}

Test(combinators, throttle_over_an_interval_stream)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct compose_root r = { 0 };

	cr_assert_eq(pw_test_block_on(rt, compose_poll, &r), 6);
	const int64_t want[] = { 0, 30, 60, 90 };
	for (int i = 0; i < 4; i++)
		cr_assert_eq(r.got[i], want[i]);
	idle_stats(rt);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- bad input --------------------------------------------------------- */

static int null_start(void *arg, unsigned attempt, struct pw_future **fut)
{
	(void)arg;
	(void)attempt;
	*fut = NULL;
	return 0;
}

static const struct pw_retry_ops null_ops = { .start = null_start };
static const struct pw_retry_ops no_start_ops = { .start = NULL };

static enum pw_poll bad_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	int64_t v = 1;
	int res = 1, item = 0;
	struct sleepy inner;
	struct source src;
	struct pw_future nofut = { NULL };
	struct pw_stream nostream = { NULL, sizeof(int) };

	sleepy_init(&inner, 0, 1);
	source_init(&src, NULL, 0, 0);

	/* timeout */
	struct pw_timeout t, tz;
	memset(&tz, 0, sizeof(tz));
	cr_assert_eq(pw_timeout_init(NULL, 1, &inner.fut), -EINVAL);
	cr_assert_eq(pw_timeout_init(&t, 1, NULL), -EINVAL);
	cr_assert_eq(pw_timeout_init(&t, 1, &nofut), -EINVAL);
	cr_assert_eq(pw_timeout_init_at(NULL, pw_deadline_after(1), &inner.fut),
		     -EINVAL);
	cr_assert_eq(pw_timeout_init_at(&t, pw_deadline_after(1), NULL),
		     -EINVAL);
	cr_assert_eq(pw_timeout_poll(cx, &tz, &v), PW_READY);
	cr_assert_eq(v, -EINVAL);
	cr_assert_eq(pw_timeout_poll(cx, NULL, &v), PW_READY);
	cr_assert_eq(v, -EINVAL);
	cr_assert_eq(pw_timeout_poll(cx, &tz, NULL), PW_READY);
	cr_assert_null(pw_timeout_future(NULL));
	cr_assert_null(pw_timeout_future(&tz));
	pw_timeout_drop(NULL);
	pw_timeout_drop(&tz);
	/* An absolute deadline already past: ready-or-timeout at once. */
	cr_assert_eq(pw_timeout_init_at(&t, pw_deadline_after(0), &inner.fut),
		     0);
	cr_assert_eq(pw_timeout_poll(NULL, &t, &v), PW_READY);
	cr_assert_eq(v, -EINVAL);
	cr_assert_eq(pw_timeout_poll(cx, &t, &v), PW_READY);
	cr_assert_eq(v, 1, "the inner future, ready, wins");
	/* Polling a dropped, unfinished timeout. */
	sleepy_init(&inner, 5 * MS, 1);
	cr_assert_eq(pw_timeout_init(&t, 1 * MS, &inner.fut), 0);
	pw_timeout_drop(&t);
	cr_assert_eq(pw_timeout_poll(cx, &t, &v), PW_READY);
	cr_assert_eq(v, -ECANCELED);

	/* debounce */
	struct pw_debounce d, dz;
	int two[2];
	memset(&dz, 0, sizeof(dz));
	cr_assert_eq(pw_debounce_init(NULL, &src.s, 1, 0, two), -EINVAL);
	cr_assert_eq(pw_debounce_init(&d, NULL, 1, 0, two), -EINVAL);
	cr_assert_eq(pw_debounce_init(&d, &nostream, 1, 0, two), -EINVAL);
	cr_assert_eq(pw_debounce_init(&d, &src.s, 0, 0, two), -EINVAL);
	cr_assert_eq(pw_debounce_init(&d, &src.s, 1, 0, NULL), -EINVAL);
	cr_assert_eq(pw_debounce_poll_next(cx, &dz, &item, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_debounce_poll_next(NULL, &dz, &item, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_debounce_poll_next(cx, &dz, &item, NULL), PW_READY);
	cr_assert_null(pw_debounce_stream(NULL));
	cr_assert_null(pw_debounce_stream(&dz));
	cr_assert_eq(pw_debounce_resets(NULL), 0);
	pw_debounce_drop(NULL);
	pw_debounce_drop(&dz);
	cr_assert_eq(pw_debounce_init(&d, &src.s, 1, 0, two), 0);
	cr_assert_eq(pw_debounce_poll_next(cx, &d, NULL, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_debounce_poll_next(cx, &d, &item, &res), PW_READY);
	cr_assert_eq(res, 0, "an empty input ends at once");
	pw_debounce_drop(&d);
	cr_assert(src.dropped);
	pw_debounce_drop(&d);
	cr_assert_eq(pw_debounce_poll_next(cx, &d, &item, &res), PW_READY);
	cr_assert_eq(res, 0, "dropped: the end");

	/* retry */
	struct pw_retry r, rz;
	memset(&rz, 0, sizeof(rz));
	cr_assert_eq(pw_retry_init(NULL, 1, 1, &flaky_ops, NULL), -EINVAL);
	cr_assert_eq(pw_retry_init(&r, 1, 1, NULL, NULL), -EINVAL);
	cr_assert_eq(pw_retry_init(&r, 1, 1, &no_start_ops, NULL), -EINVAL);
	cr_assert_eq(pw_retry_init(&r, 0, 1, &flaky_ops, NULL), -EINVAL);
	cr_assert_eq(pw_retry_set_jitter(NULL, 10, 1), -EINVAL);
	cr_assert_eq(pw_retry_set_jitter(&rz, 10, 1), -EINVAL);
	cr_assert_eq(pw_retry_poll(cx, &rz, &v), PW_READY);
	cr_assert_eq(v, -EINVAL);
	cr_assert_eq(pw_retry_poll(cx, &rz, NULL), PW_READY);
	cr_assert_null(pw_retry_future(NULL));
	cr_assert_null(pw_retry_future(&rz));
	cr_assert_eq(pw_retry_attempts(NULL), 0);
	cr_assert_eq(pw_retry_last_delay(NULL), 0);
	pw_retry_drop(NULL);
	pw_retry_drop(&rz);
	cr_assert_eq(pw_retry_init(&r, 3, 1, &null_ops, NULL), 0);
	cr_assert_eq(pw_retry_set_jitter(&r, 0, 1), -EINVAL);
	cr_assert_eq(pw_retry_set_jitter(&r, 101, 1), -EINVAL);
	cr_assert_eq(pw_retry_poll(NULL, &r, &v), PW_READY);
	cr_assert_eq(v, -EINVAL);
	cr_assert_eq(pw_retry_poll(cx, &r, &v), PW_READY);
	cr_assert_eq(v, -EINVAL, "start() gave no future");
	cr_assert_eq(pw_retry_attempts(&r), 1);
	cr_assert_eq(pw_retry_set_jitter(&r, 10, 1), -EINVAL, "after start");
	pw_retry_drop(&r);

	/* throttle */
	struct pw_throttle th, thz;
	memset(&thz, 0, sizeof(thz));
	source_init(&src, NULL, 0, 0);
	cr_assert_eq(pw_throttle_init(NULL, &src.s, 1), -EINVAL);
	cr_assert_eq(pw_throttle_init(&th, NULL, 1), -EINVAL);
	cr_assert_eq(pw_throttle_init(&th, &nostream, 1), -EINVAL);
	cr_assert_eq(pw_throttle_init(&th, &src.s, 0), -EINVAL);
	cr_assert_eq(pw_throttle_poll_next(cx, &thz, &item, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_throttle_poll_next(NULL, &thz, &item, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_throttle_poll_next(cx, &thz, &item, NULL), PW_READY);
	cr_assert_null(pw_throttle_stream(NULL));
	cr_assert_null(pw_throttle_stream(&thz));
	cr_assert_eq(pw_throttle_dropped(NULL), 0);
	pw_throttle_drop(NULL);
	pw_throttle_drop(&thz);
	cr_assert_eq(pw_throttle_init(&th, &src.s, 1), 0);
	cr_assert_eq(pw_throttle_poll_next(cx, &th, NULL, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_throttle_poll_next(cx, &th, &item, &res), PW_READY);
	cr_assert_eq(res, 0);
	pw_throttle_drop(&th);
	pw_throttle_drop(&th);
	cr_assert(src.dropped);

	/* interval */
	struct pw_interval iv, ivz;
	int64_t tick = 1;
	memset(&ivz, 0, sizeof(ivz));
	cr_assert_eq(pw_interval_init(NULL, 1, PW_MISSED_TICK_BURST), -EINVAL);
	cr_assert_eq(pw_interval_init(&iv, 0, PW_MISSED_TICK_BURST), -EINVAL);
	cr_assert_eq(pw_interval_init(&iv, 1, (enum pw_missed_tick)7), -EINVAL);
	cr_assert_eq(pw_interval_tick_poll(cx, &ivz, &tick), PW_READY);
	cr_assert_eq(tick, -EINVAL);
	cr_assert_eq(pw_interval_tick_poll(cx, NULL, &tick), PW_READY);
	cr_assert_eq(tick, -EINVAL);
	cr_assert_eq(pw_interval_tick_poll(cx, &ivz, NULL), PW_READY);
	cr_assert_null(pw_interval_stream(NULL));
	cr_assert_null(pw_interval_stream(&ivz));
	pw_interval_drop(NULL);
	pw_interval_drop(&ivz);
	cr_assert_eq(pw_interval_init(&iv, 1 * MS, PW_MISSED_TICK_SKIP), 0);
	cr_assert_eq(pw_interval_tick_poll(NULL, &iv, &tick), PW_READY);
	cr_assert_eq(tick, -EINVAL);
	cr_assert_eq(pw_stream_poll_next(cx, pw_interval_stream(&iv), NULL,
					 &res),
		     PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_interval_tick_poll(cx, &iv, &tick), PW_READY);
	cr_assert_eq(tick, (int64_t)pw_time_now(), "the first tick is at once");
	cr_assert_eq(pw_interval_tick_poll(cx, &iv, &tick), PW_PENDING);
	pw_interval_drop(&iv);
	pw_interval_drop(&iv);

	/* Extreme values saturate instead of wrapping. */
	static const int64_t fail[] = { -EIO, -EIO };
	static struct flaky f;
	memset(&f, 0, sizeof(f));
	f.results = fail;
	f.r = &r;
	/* A base of UINT64_MAX - 1 plus up to 100 % of it: the sum is past
	 * UINT64_MAX for any jitter above 1 ns, so it must saturate. */
	cr_assert_eq(pw_retry_init(&r, 2, UINT64_MAX - 1, &flaky_ops, &f), 0);
	cr_assert_eq(pw_retry_set_jitter(&r, 100, 0), 0);
	cr_assert_eq(pw_retry_poll(cx, &r, &v), PW_PENDING);
	cr_assert_eq(pw_retry_last_delay(&r), UINT64_MAX);
	pw_retry_drop(&r);
	cr_assert_eq(pw_retry_poll(cx, &r, &v), PW_READY);
	cr_assert_eq(v, -ECANCELED, "dropped before it finished");
	return pw_ready(cx, 0);
}

Test(combinators, bad_input)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);

	cr_assert_eq(pw_test_block_on(rt, bad_poll, NULL), 0);
	/* Nothing left armed: no timer fires later, no memory held. */
	cr_assert_eq(idle_stats(rt).timers_fired, 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	/* Off a shard, polls refuse. */
	int64_t v = 0;
	struct pw_interval iv;
	cr_assert_eq(pw_interval_init(&iv, 1 * MS, PW_MISSED_TICK_BURST), 0);
	cr_assert_eq(pw_interval_tick_poll(NULL, &iv, &v), PW_READY);
	cr_assert_eq(v, -EINVAL);
}
