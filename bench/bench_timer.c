/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_timer.c - the per-shard timer wheel against a binary heap.
 *
 * For N live timers (1k, 100k, 1M) with "far-ish" deadlines, uniform in
 * [2^12, 2^12 + 2^18) ticks ahead (4 s to 4.4 min at 1 ms ticks, the
 * range of I/O timeouts), measure per operation:
 *
 *   *_insert_cancel  arm one extra timer at such a deadline, cancel it
 *   *_reset	      move a random live timer to a fresh deadline of the
 *		      same law: about half later, half earlier
 *   *_fire	      advance to the next expiry again and again; time per
 *		      fired timer, cascades included (refill of the fired
 *		      ones is not timed)
 *
 * The baseline is a binary min-heap of (deadline, entry) pairs with an
 * index back-pointer in each entry, so cancel and reset are O(log n).
 * Live timers are armed in random order, so list neighbours are scattered
 * in memory as in a running server.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "wheel.h"

#define SPAN_MIN  (UINT64_C(1) << 12)
#define SPAN_MASK ((UINT64_C(1) << 18) - 1)
#define OPS_BATCH 1024

static const int64_t bench_sizes[] = { 1000, 100000, 1000000 };

static uint64_t rng_state = 0x9e3779b97f4a7c15;

/* xorshift64*: cheap enough not to matter beside the measured work. */
static inline uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(0x2545f4914f6cdd1d);
}

static inline uint64_t far_ish(void)
{
	return SPAN_MIN + (rnd() & SPAN_MASK);
}

/* A uniform index below @n without a division. */
static inline size_t rnd_below(size_t n)
{
	return (size_t)(((rnd() >> 32) * (uint64_t)n) >> 32);
}

/* A random permutation of 0..n-1, to arm timers in scattered order. */
static size_t *permutation(size_t n)
{
	size_t *p = malloc(n * sizeof(*p));

	if (!p)
		abort();
	for (size_t i = 0; i < n; i++)
		p[i] = i;
	for (size_t i = n; i > 1; i--) {
		size_t j = rnd_below(i), x = p[i - 1];

		p[i - 1] = p[j];
		p[j] = x;
	}
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		abort();
	return p;
}

/* ---------------------------------------------------------------- */
/* Binary min-heap baseline.                                         */

struct hent {
	uint64_t deadline;
	size_t idx; /* position in the heap array, for O(log n) removal */
};

struct hslot {
	uint64_t key; /* a copy of the deadline: compares without a miss */
	struct hent *e;
};

struct heap {
	struct hslot *a;
	size_t n;
};

static inline void heap_set(struct heap *h, size_t i, struct hslot x)
{
	h->a[i] = x;
	x.e->idx = i;
}

static void heap_sift_up(struct heap *h, size_t i, struct hslot x)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (h->a[p].key <= x.key)
			break;
		heap_set(h, i, h->a[p]);
		i = p;
	}
	heap_set(h, i, x);
}

static void heap_sift_down(struct heap *h, size_t i, struct hslot x)
{
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->a[c + 1].key < h->a[c].key)
			c++;
		if (x.key <= h->a[c].key)
			break;
		heap_set(h, i, h->a[c]);
		i = c;
	}
	heap_set(h, i, x);
}

static void heap_push(struct heap *h, struct hent *e, uint64_t deadline)
{
	struct hslot x = { deadline, e };

	e->deadline = deadline;
	heap_sift_up(h, h->n++, x);
}

/* Place @x at hole @i, up or down as its key requires. */
static void heap_fix(struct heap *h, size_t i, struct hslot x)
{
	if (i > 0 && x.key < h->a[(i - 1) / 2].key)
		heap_sift_up(h, i, x);
	else
		heap_sift_down(h, i, x);
}

static void heap_remove(struct heap *h, struct hent *e)
{
	size_t i = e->idx;
	struct hslot last = h->a[--h->n];

	if (i != h->n)
		heap_fix(h, i, last);
}

static void heap_update(struct heap *h, struct hent *e, uint64_t deadline)
{
	struct hslot x = { deadline, e };

	e->deadline = deadline;
	heap_fix(h, e->idx, x);
}

static struct hent *heap_pop(struct heap *h)
{
	struct hent *top = h->a[0].e;
	struct hslot last = h->a[--h->n];

	if (h->n)
		heap_sift_down(h, 0, last);
	return top;
}

/* ---------------------------------------------------------------- */
/* Fixtures.                                                         */

struct wfix {
	struct pw__wheel *w;
	struct pw__timer *t; /* n + 1: the last one is the extra */
	size_t n;
};

static struct pw__timer **fired; /* timers fired since the last refill */
static size_t nfired;

static void wheel_fn(struct pw__timer *t)
{
	fired[nfired++] = t;
}

static void wfix_init(struct wfix *f, size_t n)
{
	size_t *p = permutation(n);

	f->n = n;
	f->w = xcalloc(1, sizeof(*f->w));
	f->t = xcalloc(n + 1, sizeof(*f->t));
	pw__wheel_init(f->w, 0);
	for (size_t i = 0; i <= n; i++)
		pw__timer_init(&f->t[i], wheel_fn);
	for (size_t i = 0; i < n; i++)
		pw__wheel_insert(f->w, &f->t[p[i]], far_ish());
	free(p);
}

static void wfix_free(struct wfix *f)
{
	free(f->t);
	free(f->w);
}

struct hfix {
	struct heap h;
	struct hent *e; /* n + 1: the last one is the extra */
	size_t n;
	uint64_t now;
};

static void hfix_init(struct hfix *f, size_t n)
{
	size_t *p = permutation(n);

	f->n = n;
	f->now = 0;
	f->h.n = 0;
	f->h.a = xcalloc(n + 1, sizeof(*f->h.a));
	f->e = xcalloc(n + 1, sizeof(*f->e));
	for (size_t i = 0; i < n; i++)
		heap_push(&f->h, &f->e[p[i]], far_ish());
	free(p);
}

static void hfix_free(struct hfix *f)
{
	free(f->e);
	free(f->h.a);
}

/* ---------------------------------------------------------------- */
/* insert + cancel of one extra timer beside N live ones.            */

static void bm_wheel_insert_cancel(struct pw_bench *b)
{
	struct wfix f;
	struct pw__timer *x;

	wfix_init(&f, (size_t)pw_bench_arg(b));
	x = &f.t[f.n];
	while (pw_bench_run(b, OPS_BATCH))
		for (int i = 0; i < OPS_BATCH; i++) {
			pw__wheel_insert(f.w, x, f.w->elapsed + far_ish());
			pw__wheel_cancel(f.w, x);
		}
	wfix_free(&f);
}
PW_BENCH_ARGS(bm_wheel_insert_cancel, bench_sizes);

static void bm_heap_insert_cancel(struct pw_bench *b)
{
	struct hfix f;
	struct hent *x;

	hfix_init(&f, (size_t)pw_bench_arg(b));
	x = &f.e[f.n];
	while (pw_bench_run(b, OPS_BATCH))
		for (int i = 0; i < OPS_BATCH; i++) {
			heap_push(&f.h, x, f.now + far_ish());
			heap_remove(&f.h, x);
		}
	hfix_free(&f);
}
PW_BENCH_ARGS(bm_heap_insert_cancel, bench_sizes);

/* ---------------------------------------------------------------- */
/* reset of a random live timer to a fresh deadline.                 */

/*
 * Between timed batches time moves on (untimed): the due timers fire and
 * are re-armed. So each timer's registered slot stays as fresh as in a
 * running server, about half the resets are later than it (in place for
 * the wheel) and half earlier (re-filed), and nothing drifts: time passes
 * by one timer lifetime (2^18 ticks) per N resets.
 */
static uint64_t reset_step(size_t n)
{
	uint64_t step = (SPAN_MASK + 1) * OPS_BATCH / n;

	return step ? step : 1;
}

static void wheel_pass_time(struct wfix *f, uint64_t ticks)
{
	pw__wheel_advance(f->w, f->w->elapsed + ticks);
	for (size_t i = 0; i < nfired; i++)
		pw__wheel_insert(f->w, fired[i], f->w->elapsed + far_ish());
	nfired = 0;
}

static void bm_wheel_reset(struct pw_bench *b)
{
	struct wfix f;
	uint64_t later = 0, total = 0, step;

	wfix_init(&f, (size_t)pw_bench_arg(b));
	fired = xcalloc(f.n, sizeof(*fired));
	nfired = 0;
	step = reset_step(f.n);
	while (pw_bench_run(b, OPS_BATCH)) {
		for (int i = 0; i < OPS_BATCH; i++) {
			struct pw__timer *t = &f.t[rnd_below(f.n)];
			uint64_t d = f.w->elapsed + far_ish();

			later += d >= t->slot_when;
			pw__wheel_reset(f.w, t, d);
		}
		total += OPS_BATCH;
		pw_bench_pause(b);
		wheel_pass_time(&f, step);
		pw_bench_resume(b);
	}
	pw_bench_counter(b, "in_place", total ? (double)later / total : 0,
			 false);
	free(fired);
	wfix_free(&f);
}
PW_BENCH_ARGS(bm_wheel_reset, bench_sizes);

static void heap_pass_time(struct hfix *f, struct hent **out, uint64_t ticks)
{
	size_t n = 0;

	f->now += ticks;
	while (f->h.n && f->h.a[0].key <= f->now)
		out[n++] = heap_pop(&f->h);
	for (size_t i = 0; i < n; i++)
		heap_push(&f->h, out[i], f->now + far_ish());
}

static void bm_heap_reset(struct pw_bench *b)
{
	struct hfix f;
	struct hent **out;
	uint64_t step;

	hfix_init(&f, (size_t)pw_bench_arg(b));
	out = xcalloc(f.n, sizeof(*out));
	step = reset_step(f.n);
	while (pw_bench_run(b, OPS_BATCH)) {
		for (int i = 0; i < OPS_BATCH; i++)
			heap_update(&f.h, &f.e[rnd_below(f.n)],
				    f.now + far_ish());
		pw_bench_pause(b);
		heap_pass_time(&f, out, step);
		pw_bench_resume(b);
	}
	free(out);
	hfix_free(&f);
}
PW_BENCH_ARGS(bm_heap_reset, bench_sizes);

/* ---------------------------------------------------------------- */
/* fire: advance over the timers, per fired timer.                   */

static size_t fire_batch(size_t n)
{
	return n >= 2 * OPS_BATCH ? OPS_BATCH : n / 2;
}

static void bm_wheel_fire(struct pw_bench *b)
{
	struct wfix f;
	size_t k, credit = 0, got;
	uint64_t total = 0;

	wfix_init(&f, (size_t)pw_bench_arg(b));
	fired = xcalloc(f.n, sizeof(*fired));
	nfired = 0;
	k = fire_batch(f.n);
	while (pw_bench_run(b, k)) {
		while (credit < k) {
			got = pw__wheel_advance(f.w, pw__wheel_next(f.w));
			credit += got;
			total += got;
		}
		credit -= k;
		pw_bench_pause(b);
		for (size_t i = 0; i < nfired; i++)
			pw__wheel_insert(f.w, fired[i],
					 f.w->elapsed + far_ish());
		nfired = 0;
		pw_bench_resume(b);
	}
	/* Cascade work per fired timer (statistics of the wheel). */
	if (total) {
		pw_bench_counter(b, "refiled_per_fire",
				 (double)f.w->refiled / (double)total, false);
		pw_bench_counter(b, "slots_per_fire",
				 (double)f.w->expiries / (double)total, false);
	}
	free(fired);
	wfix_free(&f);
}
PW_BENCH_ARGS(bm_wheel_fire, bench_sizes);

static void bm_heap_fire(struct pw_bench *b)
{
	struct hfix f;
	struct hent **out;
	size_t k, credit = 0, nout = 0;

	hfix_init(&f, (size_t)pw_bench_arg(b));
	out = xcalloc(f.n, sizeof(*out));
	k = fire_batch(f.n);
	while (pw_bench_run(b, k)) {
		while (credit < k) {
			/* Like the wheel: jump to the next expiry, fire all. */
			f.now = f.h.a[0].key;
			while (f.h.n && f.h.a[0].key <= f.now) {
				out[nout++] = heap_pop(&f.h);
				credit++;
			}
		}
		credit -= k;
		pw_bench_pause(b);
		for (size_t i = 0; i < nout; i++)
			heap_push(&f.h, out[i], f.now + far_ish());
		nout = 0;
		pw_bench_resume(b);
	}
	free(out);
	hfix_free(&f);
}
PW_BENCH_ARGS(bm_heap_fire, bench_sizes);
