/* SPDX-License-Identifier: MIT */
/*
 * test_alloc.c - after warm-up, spawn, wake and poll make no allocator
 * call: the shard thread's calls to malloc and friends are counted, and
 * the slab's chunk count must not move either. Without a sanitizer the
 * calls are counted by interposing malloc and friends, forwarding to
 * jemalloc where the build links it (so the rest of the test program,
 * shard arenas included, sees one allocator), else to glibc. Under ASan
 * and TSan, which own malloc, the sanitizer's allocation hooks count
 * them instead.
 */
#include <stdatomic.h>
#include <stddef.h>

#include "tests/common.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PW_COUNT_MALLOC 0
#else
#define PW_COUNT_MALLOC 1
#endif

#if PW_COUNT_MALLOC && defined(PW_HAVE_JEMALLOC)
#include <jemalloc/jemalloc.h>
#include <stdint.h>

/* jemalloc's own entry points; flags 0 keeps the thread's arena. */
static void *real_malloc(size_t n)
{
	return mallocx(n ? n : 1, 0);
}

static void *real_calloc(size_t n, size_t m)
{
	if (m && n > SIZE_MAX / m)
		return NULL;
	size_t bytes = n * m;
	return mallocx(bytes ? bytes : 1, MALLOCX_ZERO);
}

static void *real_realloc(void *p, size_t n)
{
	return p ? rallocx(p, n ? n : 1, 0) : real_malloc(n);
}

static void *real_memalign(size_t a, size_t n)
{
	return mallocx(n ? n : 1, MALLOCX_ALIGN(a));
}

static void real_free(void *p)
{
	if (p)
		dallocx(p, 0);
}
#elif PW_COUNT_MALLOC
/* glibc's own entry points, which the interposers forward to. */
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void __libc_free(void *);
#define real_malloc   __libc_malloc
#define real_calloc   __libc_calloc
#define real_realloc  __libc_realloc
#define real_memalign __libc_memalign
#define real_free     __libc_free
#endif

/* Calls made by shard threads: only they touch the counted paths. */
static _Atomic unsigned long shard_allocs;

static void count(void)
{
	if (pw_shard_id() >= 0)
		/* relaxed: a statistic read after pw_block_on() returns. */
		atomic_fetch_add_explicit(&shard_allocs, 1,
					  memory_order_relaxed);
}

#if !PW_COUNT_MALLOC
/* From the sanitizer runtime (sanitizer/allocator_interface.h, which not
 * every compiler ships). */
int __sanitizer_install_malloc_and_free_hooks(
	void (*malloc_hook)(const volatile void *, size_t),
	void (*free_hook)(const volatile void *));

/* The sanitizer calls these on every allocation and free it serves. */
static void on_malloc(const volatile void *p, size_t n)
{
	(void)p;
	(void)n;
	count();
}

static void on_free(const volatile void *p)
{
	if (p)
		count();
}

static void count_allocs(void)
{
	cr_assert_neq(__sanitizer_install_malloc_and_free_hooks(on_malloc,
								on_free),
		      0, "the sanitizer took no allocation hooks");
}
#else
static void count_allocs(void)
{
	/* The interposers below count from the start. */
}
#endif

#if PW_COUNT_MALLOC

void *malloc(size_t n)
{
	count();
	return real_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	count();
	return real_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	count();
	return real_realloc(p, n);
}

void *aligned_alloc(size_t a, size_t n)
{
	count();
	return real_memalign(a, n);
}

int posix_memalign(void **p, size_t a, size_t n)
{
	count();
	*p = real_memalign(a, n);
	return *p ? 0 : 12;
}

void free(void *p)
{
	if (p)
		count();
	real_free(p);
}
#endif

static unsigned long allocs(void)
{
	return atomic_load(&shard_allocs);
}

/* A child that parks once, is woken by the parent, then finishes. */
struct kid {
	int polls;
	struct pw_waker *slot;
};

static enum pw_poll kid_poll(struct pw_cx *cx, void *state)
{
	struct kid *k = state;
	if (k->polls++ == 0) {
		struct pw_waker w = pw_cx_waker(cx);
		pw_waker_clone(k->slot, &w);
		return PW_PENDING;
	}
	return pw_ready(cx, k->polls);
}

struct round {
	int rounds, i, phase;
	unsigned long before, after;
	uint64_t chunks_before;
	struct pw_runtime *rt;
	struct pw_join j[64];
	struct pw_waker w[64];
};

static uint64_t chunks(struct pw_runtime *rt)
{
	struct pw_shard_stats st;
	pw_runtime_stats(rt, 0, &st);
	return st.slab_chunks;
}

/* One round: spawn 64 children, let them park, wake each, join each. */
static enum pw_poll round_poll(struct pw_cx *cx, void *state)
{
	struct round *r = state;
	for (;;) {
		switch (r->phase) {
		case 0:
			if (r->i == r->rounds)
				return pw_ready(cx, 0);
			if (r->i == 100) { /* warm */
				r->before = allocs();
				r->chunks_before = chunks(r->rt);
			}
			for (int k = 0; k < 64; k++) {
				struct kid kid = { 0, &r->w[k] };
				cr_assert_eq(pw_spawn(&r->j[k], kid_poll, &kid,
						      sizeof(kid), NULL),
					     0);
			}
			r->phase = 1;
			return pw_yield(cx);
		case 1:
			for (int k = 0; k < 64; k++)
				pw_waker_wake(&r->w[k]);
			r->phase = 2;
			/* fall through */
		case 2:
			for (int k = 0; k < 64; k++) {
				int64_t v;
				if (r->j[k].task &&
				    pw_join_poll(cx, &r->j[k], &v) ==
					    PW_PENDING)
					return PW_PENDING;
			}
			r->phase = 0;
			r->i++;
			if (r->i == r->rounds)
				r->after = allocs();
			break;
		}
	}
}

/* One malloc and one free on the shard, through pointers the compiler
 * cannot see through: the counter's control. Returns the calls counted. */
static void *(*volatile malloc_fn)(size_t) = malloc;
static void (*volatile free_fn)(void *) = free;

static enum pw_poll control_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	unsigned long before = allocs();
	void *p = malloc_fn(24);

	cr_assert_not_null(p);
	free_fn(p);
	return pw_ready(cx, (int64_t)(allocs() - before));
}

Test(alloc, spawn_wake_poll_allocate_nothing_after_warmup)
{
	count_allocs();
	struct pw_runtime *rt = pw_test_runtime(1);
	/* The counter sees a shard's allocator calls, one by one. */
	cr_assert_eq(pw_test_block_on(rt, control_poll, NULL), 2,
		     "a malloc and a free on the shard, counted");
	static struct round r;
	r.rounds = 1100;
	r.rt = rt;
	pw_test_block_on(rt, round_poll, &r);
	cr_assert_eq(r.after, r.before, "%lu allocator calls after warm-up",
		     r.after - r.before);
	cr_assert_eq(chunks(rt), r.chunks_before, "the slab grew");
	cr_assert_gt(r.chunks_before, 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}
