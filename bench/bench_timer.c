/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_timer.c - the per-shard timer wheel against a 4-ary heap.
 *
 * N live timers (1k, 100k, 1M), each embedded in a 192-byte "connection"
 * of one contiguous slab, armed in random order at "far-ish" deadlines,
 * uniform in [2^12, 2^12 + 2^18) ticks ahead (4 s to 4.4 min at 1 ms
 * ticks, the range of I/O timeouts). Per operation:
 *
 *   *_churn_cancel_insert  cancel a random live timer, arm it again at a
 *			    fresh deadline: N connections re-arming their
 *			    timeouts (random order from a precomputed
 *			    permutation, deadlines from a precomputed table)
 *   *_reset_random	    move a random live timer to a fresh deadline of
 *			    the same law: about half later, half earlier
 *   *_reset_later	    push a random live timer's deadline out to the
 *			    longest timeout from now (an idle timeout kept
 *			    alive by traffic): always later
 *   *_cancel_insert_same   arm one extra timer and cancel it at once (an
 *			    I/O that completes before its timeout)
 *   *_fire		    advance to the next expiry again and again; time
 *			    per fired timer, cascades included; re-arming
 *			    the fired ones is not timed
 *   *_fire_dense	    the same with every deadline in the next 64
 *			    ticks: thousands of timers per slot
 *   bm_mem_random_conn	    the memory floor: one word of each connection
 *			    in random order, no dependency between them
 *
 * Between timed batches of the first three, time moves on (untimed) by
 * one timer lifetime per N operations, and the timers that come due are
 * fired and re-armed, so slots, holes and the heap stay as in a server.
 *
 * The baseline is a 4-ary min-heap of (deadline, entry) pairs, the
 * children of a node in one cache line, with an index back-pointer in
 * each entry: insert, cancel and reset are O(log n) sifts.
 */
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "timer/wheel.h"

#define SPAN_MIN  (UINT64_C(1) << 12)
#define SPAN_MASK ((UINT64_C(1) << 18) - 1)
#define SPAN_MAX  (SPAN_MIN + SPAN_MASK)
#define OPS_BATCH 1024
#define CONN_SIZE 192
#define NDELTA	  65536 /* precomputed deadline offsets, a power of 2 */
/* Dense: every deadline in the next 64 ticks (a level 0 slot each). */
#define DENSE_MIN  UINT64_C(1)
#define DENSE_MASK UINT64_C(63)

static const int64_t bench_sizes[] = { 1000, 100000, 1000000 };

static uint64_t rng_state = 0x9e3779b97f4a7c15;

/* xorshift64*, for set-up only. */
static inline uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(0x2545f4914f6cdd1d);
}

/*
 * The law of every deadline drawn: uniform in [span_min, span_min +
 * span_mask] ticks ahead. SPAN_MIN and SPAN_MASK ("far-ish") but for
 * the dense fire benchmarks, which set DENSE_MIN and DENSE_MASK for
 * their run.
 */
static uint64_t span_min = SPAN_MIN, span_mask = SPAN_MASK;

static inline uint64_t far_ish(void)
{
	return span_min + (rnd() & span_mask);
}

/* A uniform index below @n without a division. */
static inline size_t rnd_below(size_t n)
{
	return (size_t)(((rnd() >> 32) * (uint64_t)n) >> 32);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		abort();
	return p;
}

/* A random permutation of 0..n-1. */
static uint32_t *permutation(size_t n)
{
	uint32_t *p = xcalloc(n, sizeof(*p));

	for (size_t i = 0; i < n; i++)
		p[i] = (uint32_t)i;
	for (size_t i = n; i > 1; i--) {
		size_t j = rnd_below(i);
		uint32_t x = p[i - 1];

		p[i - 1] = p[j];
		p[j] = x;
	}
	return p;
}

/* Random operands for the timed loops, read in sequence. */
struct ops {
	uint32_t *perm;	 /* which timer, N entries, cycled */
	uint64_t *delta; /* far_ish() offsets, NDELTA entries, cycled */
	size_t n, i, j;
};

static void ops_init(struct ops *o, size_t n)
{
	o->n = n;
	o->i = 0;
	o->j = 0;
	o->perm = permutation(n);
	o->delta = xcalloc(NDELTA, sizeof(*o->delta));
	for (size_t k = 0; k < NDELTA; k++)
		o->delta[k] = far_ish();
}

static inline size_t ops_victim(struct ops *o)
{
	size_t v = o->perm[o->i];

	if (++o->i == o->n)
		o->i = 0;
	return v;
}

static inline uint64_t ops_delta(struct ops *o)
{
	return o->delta[o->j++ & (NDELTA - 1)];
}

static void ops_free(struct ops *o)
{
	free(o->perm);
	free(o->delta);
}

/* Time passed per batch: one timer lifetime (2^18 ticks) per N ops. */
static uint64_t time_step(size_t n)
{
	uint64_t step = (SPAN_MASK + 1) * OPS_BATCH / n;

	return step ? step : 1;
}

/* ---------------------------------------------------------------- */
/* 4-ary min-heap baseline.                                          */

struct hent {
	uint64_t deadline;
	size_t idx; /* position in the heap array, for O(log n) removal */
};

struct hslot {
	uint64_t key; /* a copy of the deadline: compares without a miss */
	struct hent *e;
};

/*
 * a[i] has children a[4i+1..4i+4]. The array starts 3 slots into a
 * 64-byte aligned block, so each group of 4 children (64 bytes) is one
 * cache line.
 */
struct heap {
	struct hslot *a;
	void *block;
	size_t n;
};

#define HEAP_D 4

static void heap_init(struct heap *h, size_t cap)
{
	h->block = aligned_alloc(64, ((cap + 3) * sizeof(struct hslot) + 63) /
					     64 * 64);
	if (!h->block)
		abort();
	h->a = (struct hslot *)h->block + 3;
	h->n = 0;
}

static inline void heap_set(struct heap *h, size_t i, struct hslot x)
{
	h->a[i] = x;
	x.e->idx = i;
}

static void heap_sift_up(struct heap *h, size_t i, struct hslot x)
{
	while (i > 0) {
		size_t p = (i - 1) / HEAP_D;

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
		size_t c = HEAP_D * i + 1, end = c + HEAP_D, m;

		if (c >= h->n)
			break;
		if (end > h->n)
			end = h->n;
		m = c;
		for (size_t k = c + 1; k < end; k++)
			if (h->a[k].key < h->a[m].key)
				m = k;
		if (x.key <= h->a[m].key)
			break;
		heap_set(h, i, h->a[m]);
		i = m;
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
	if (i > 0 && x.key < h->a[(i - 1) / HEAP_D].key)
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
/* Fixtures: timers embedded in connections of one slab.             */

struct wconn {
	char before[64];
	struct pw__timer t;
	char after[CONN_SIZE - 64 - sizeof(struct pw__timer)];
};

struct hconn {
	char before[64];
	struct hent e;
	char after[CONN_SIZE - 64 - sizeof(struct hent)];
};

_Static_assert(sizeof(struct wconn) == CONN_SIZE, "wheel conn size");
_Static_assert(sizeof(struct hconn) == CONN_SIZE, "heap conn size");

struct wfix {
	struct pw__wheel *w;
	struct wconn *c; /* n + 1: the last one is the extra */
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
	uint32_t *p = permutation(n);

	f->n = n;
	f->w = xcalloc(1, sizeof(*f->w));
	f->c = xcalloc(n + 1, sizeof(*f->c));
	pw__wheel_init(f->w, 0);
	for (size_t i = 0; i <= n; i++)
		pw__timer_init(&f->c[i].t, wheel_fn);
	for (size_t i = 0; i < n; i++)
		pw__wheel_insert(f->w, &f->c[p[i]].t, far_ish());
	free(p);
	fired = xcalloc(n + 1, sizeof(*fired));
	nfired = 0;
}

static void wfix_free(struct wfix *f)
{
	(void)(f->w); /* the wheel owns no memory */
	free(fired);
	free(f->c);
	free(f->w);
}

/* Untimed: move time on, re-arm what fired. */
static void wheel_pass_time(struct wfix *f, uint64_t ticks)
{
	pw__wheel_advance(f->w, f->w->elapsed + ticks);
	for (size_t i = 0; i < nfired; i++)
		pw__wheel_insert(f->w, fired[i], f->w->elapsed + far_ish());
	nfired = 0;
}

struct hfix {
	struct heap h;
	struct hconn *c; /* n + 1: the last one is the extra */
	struct hent **out;
	size_t n;
	uint64_t now;
};

static void hfix_init(struct hfix *f, size_t n)
{
	uint32_t *p = permutation(n);

	f->n = n;
	f->now = 0;
	heap_init(&f->h, n + 1);
	f->c = xcalloc(n + 1, sizeof(*f->c));
	f->out = xcalloc(n + 1, sizeof(*f->out));
	for (size_t i = 0; i < n; i++)
		heap_push(&f->h, &f->c[p[i]].e, far_ish());
	free(p);
}

static void hfix_free(struct hfix *f)
{
	free(f->out);
	free(f->c);
	free(f->h.block);
}

static void heap_pass_time(struct hfix *f, uint64_t ticks)
{
	size_t n = 0;

	f->now += ticks;
	while (f->h.n && f->h.a[0].key <= f->now)
		f->out[n++] = heap_pop(&f->h);
	for (size_t i = 0; i < n; i++)
		heap_push(&f->h, f->out[i], f->now + far_ish());
}

/* ---------------------------------------------------------------- */
/* churn: cancel a random live timer, arm it at a fresh deadline.    */

static void bm_wheel_churn_cancel_insert(struct pw_bench *b)
{
	struct wfix f;
	struct ops o;
	uint64_t step;

	wfix_init(&f, (size_t)pw_bench_arg(b));
	ops_init(&o, f.n);
	step = time_step(f.n);
	while (pw_bench_run(b, OPS_BATCH)) {
		for (int i = 0; i < OPS_BATCH; i++) {
			struct pw__timer *t = &f.c[ops_victim(&o)].t;

			pw__wheel_cancel(f.w, t);
			pw__wheel_insert(f.w, t, f.w->elapsed + ops_delta(&o));
		}
		pw_bench_pause(b);
		wheel_pass_time(&f, step);
		pw_bench_resume(b);
	}
	ops_free(&o);
	wfix_free(&f);
}
PW_BENCH_ARGS(bm_wheel_churn_cancel_insert, bench_sizes);

static void bm_heap_churn_cancel_insert(struct pw_bench *b)
{
	struct hfix f;
	struct ops o;
	uint64_t step;

	hfix_init(&f, (size_t)pw_bench_arg(b));
	ops_init(&o, f.n);
	step = time_step(f.n);
	while (pw_bench_run(b, OPS_BATCH)) {
		for (int i = 0; i < OPS_BATCH; i++) {
			struct hent *e = &f.c[ops_victim(&o)].e;

			heap_remove(&f.h, e);
			heap_push(&f.h, e, f.now + ops_delta(&o));
		}
		pw_bench_pause(b);
		heap_pass_time(&f, step);
		pw_bench_resume(b);
	}
	ops_free(&o);
	hfix_free(&f);
}
PW_BENCH_ARGS(bm_heap_churn_cancel_insert, bench_sizes);

/* ---------------------------------------------------------------- */
/* reset of a random live timer: to a fresh deadline, or further out. */

static void wheel_reset(struct pw_bench *b, bool later)
{
	struct wfix f;
	struct ops o;
	uint64_t in_place = 0, total = 0, step;

	wfix_init(&f, (size_t)pw_bench_arg(b));
	ops_init(&o, f.n);
	step = time_step(f.n);
	while (pw_bench_run(b, OPS_BATCH)) {
		for (int i = 0; i < OPS_BATCH; i++) {
			struct pw__timer *t = &f.c[ops_victim(&o)].t;
			uint64_t d =
				f.w->elapsed +
				(later ? SPAN_MAX + (i & 63) : ops_delta(&o));

			in_place += d >= t->slot_when;
			pw__wheel_reset(f.w, t, d);
		}
		total += OPS_BATCH;
		pw_bench_pause(b);
		wheel_pass_time(&f, step);
		pw_bench_resume(b);
	}
	pw_bench_counter(b, "in_place", total ? (double)in_place / total : 0,
			 false);
	ops_free(&o);
	wfix_free(&f);
}

static void heap_reset(struct pw_bench *b, bool later)
{
	struct hfix f;
	struct ops o;
	uint64_t step;

	hfix_init(&f, (size_t)pw_bench_arg(b));
	ops_init(&o, f.n);
	step = time_step(f.n);
	while (pw_bench_run(b, OPS_BATCH)) {
		for (int i = 0; i < OPS_BATCH; i++) {
			struct hent *e = &f.c[ops_victim(&o)].e;
			uint64_t d = f.now + (later ? SPAN_MAX + (i & 63) :
						      ops_delta(&o));

			heap_update(&f.h, e, d);
		}
		pw_bench_pause(b);
		heap_pass_time(&f, step);
		pw_bench_resume(b);
	}
	ops_free(&o);
	hfix_free(&f);
}

static void bm_wheel_reset_random(struct pw_bench *b)
{
	wheel_reset(b, false);
}
PW_BENCH_ARGS(bm_wheel_reset_random, bench_sizes);

static void bm_heap_reset_random(struct pw_bench *b)
{
	heap_reset(b, false);
}
PW_BENCH_ARGS(bm_heap_reset_random, bench_sizes);

static void bm_wheel_reset_later(struct pw_bench *b)
{
	wheel_reset(b, true);
}
PW_BENCH_ARGS(bm_wheel_reset_later, bench_sizes);

static void bm_heap_reset_later(struct pw_bench *b)
{
	heap_reset(b, true);
}
PW_BENCH_ARGS(bm_heap_reset_later, bench_sizes);

/* ---------------------------------------------------------------- */
/* arm one extra timer and cancel it at once (the heap's best case). */

static void bm_wheel_cancel_insert_same(struct pw_bench *b)
{
	struct wfix f;
	struct ops o;
	struct pw__timer *x;

	wfix_init(&f, (size_t)pw_bench_arg(b));
	ops_init(&o, f.n);
	x = &f.c[f.n].t;
	while (pw_bench_run(b, OPS_BATCH))
		for (int i = 0; i < OPS_BATCH; i++) {
			pw__wheel_insert(f.w, x, f.w->elapsed + ops_delta(&o));
			pw__wheel_cancel(f.w, x);
		}
	ops_free(&o);
	wfix_free(&f);
}
PW_BENCH_ARGS(bm_wheel_cancel_insert_same, bench_sizes);

static void bm_heap_cancel_insert_same(struct pw_bench *b)
{
	struct hfix f;
	struct ops o;
	struct hent *x;

	hfix_init(&f, (size_t)pw_bench_arg(b));
	ops_init(&o, f.n);
	x = &f.c[f.n].e;
	while (pw_bench_run(b, OPS_BATCH))
		for (int i = 0; i < OPS_BATCH; i++) {
			heap_push(&f.h, x, f.now + ops_delta(&o));
			heap_remove(&f.h, x);
		}
	ops_free(&o);
	hfix_free(&f);
}
PW_BENCH_ARGS(bm_heap_cancel_insert_same, bench_sizes);

/* ---------------------------------------------------------------- */
/* The memory floor: what touching a random connection costs at best. */

/*
 * Read and write one word of each of the N connections in a random
 * order, with no dependency between one access and the next, so the
 * processor overlaps as many misses as it can: the floor for any walk
 * that visits random timers of the slab, however well it prefetches.
 * A timer armed 4 s to 4.4 min ahead is visited about 3.4 times from
 * arming to firing (its re-files, then the fire: refiled_per_fire + 1).
 */
static void bm_mem_random_conn(struct pw_bench *b)
{
	size_t n = (size_t)pw_bench_arg(b), i = 0;
	struct wconn *c = xcalloc(n, sizeof(*c));
	uint32_t *p = permutation(n);

	while (pw_bench_run(b, OPS_BATCH))
		for (int k = 0; k < OPS_BATCH; k++) {
			c[p[i]].t.deadline++;
			if (++i == n)
				i = 0;
		}
	free(p);
	free(c);
}
PW_BENCH_ARGS(bm_mem_random_conn, bench_sizes);

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
	uint64_t total = 0, refiled0, expiries0;

	wfix_init(&f, (size_t)pw_bench_arg(b));
	refiled0 = f.w->refiled;
	expiries0 = f.w->expiries;
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
				 (double)(f.w->refiled - refiled0) /
					 (double)total,
				 false);
		pw_bench_counter(b, "slots_per_fire",
				 (double)(f.w->expiries - expiries0) /
					 (double)total,
				 false);
	}
	wfix_free(&f);
}
PW_BENCH_ARGS(bm_wheel_fire, bench_sizes);

static void bm_heap_fire(struct pw_bench *b)
{
	struct hfix f;
	size_t k, credit = 0, nout = 0;

	hfix_init(&f, (size_t)pw_bench_arg(b));
	k = fire_batch(f.n);
	while (pw_bench_run(b, k)) {
		while (credit < k) {
			/* Like the wheel: jump to the next expiry, fire all. */
			f.now = f.h.a[0].key;
			while (f.h.n && f.h.a[0].key <= f.now) {
				f.out[nout++] = heap_pop(&f.h);
				credit++;
			}
		}
		credit -= k;
		pw_bench_pause(b);
		for (size_t i = 0; i < nout; i++)
			heap_push(&f.h, f.out[i], f.now + far_ish());
		nout = 0;
		pw_bench_resume(b);
	}
	hfix_free(&f);
}
PW_BENCH_ARGS(bm_heap_fire, bench_sizes);

/*
 * fire_dense: the same with every deadline in the next 64 ticks, so
 * each tick fires about N / 32 timers from one level 0 slot: timeouts
 * armed in a burst (a million connections given the same timeout
 * within a few milliseconds). One slot's timers then outgrow the caches
 * at 100k and 1M, and firing walks them cold.
 */
static void fire_dense(struct pw_bench *b, void (*fire)(struct pw_bench *))
{
	span_min = DENSE_MIN;
	span_mask = DENSE_MASK;
	fire(b);
	span_min = SPAN_MIN;
	span_mask = SPAN_MASK;
}

static void bm_wheel_fire_dense(struct pw_bench *b)
{
	fire_dense(b, bm_wheel_fire);
}
PW_BENCH_ARGS(bm_wheel_fire_dense, bench_sizes);

static void bm_heap_fire_dense(struct pw_bench *b)
{
	fire_dense(b, bm_heap_fire);
}
PW_BENCH_ARGS(bm_heap_fire_dense, bench_sizes);
