/* SPDX-License-Identifier: MIT */
/*
 * fiber_stack.c - fiber stacks: the per-thread pool, the guard pages and
 * the overflow report.
 *
 * Each thread that runs fibers (a shard thread, or a worker in stealing
 * mode) keeps a pool of free stacks, one LIFO list per power-of-two size
 * class; the list links live in the free stacks themselves (at their
 * top, a page the last fiber touched). A stack handed back on another
 * thread joins that thread's pool. The pool is freed when the thread
 * ends (a pthread key destructor), or earlier by pw__fstack_pool_free().
 *
 * The guard page is a guard region (madvise MADV_GUARD_INSTALL, Linux
 * 6.13) where the kernel has them: the mapping stays whole, so
 * neighbouring stacks merge into few mappings and 100,000 fibers stay
 * under vm.max_map_count. Older kernels get a PROT_NONE page, two
 * mappings per stack.
 *
 * On a bound shard a new stack comes from numa/mem.c's chunk mapping, so
 * its pages prefer the shard's node like the slab's chunks do.
 *
 * The overflow report: a SIGSEGV handler, installed once per process,
 * runs on an alternate signal stack (one per thread that runs fibers,
 * unless the thread has one already) because the faulting stack is the
 * full one. It compares the fault address with the guard page of the
 * fiber running on the thread (pw__fstack_running()); on a match it
 * writes the report and lets the fault kill the process, otherwise it
 * hands the signal to the handler that was installed before it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/fiber_stack.h"
#include "core/task_int.h"
#include "numa/mem_int.h"
#include "shard/shard_int.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define NCLASS	      15 /* page << 0 .. page << 14: 64 MiB of 4 KiB pages */
#define POOL_BYTES    ((size_t)16 << 20) /* kept per class, at most */
#define POOL_MIN      2			 /* kept per class, at least */
#define ALT_STACK_LEN ((size_t)64 << 10)
#define TRIM_ABOVE    ((size_t)256 << 10) /* pooled stacks drop pages */

struct free_stack {
	struct free_stack *next;
	struct pw__fstack st;
};

struct fstack_pool {
	struct free_stack *free[NCLASS];
	uint16_t count[NCLASS];
	void *alt; /* our alternate signal stack, or NULL */
};

/* The calling thread's pool. initial-exec: one load from the thread
 * pointer on the get and put paths, in the .so too. */
static _Thread_local struct fstack_pool pool
	__attribute__((tls_model("initial-exec")));

/* Written by its thread (pw__fstack_running()), read by the SIGSEGV
 * handler on the same thread: no other thread touches it. */
_Thread_local struct pw__fstack_cur pw__fstack_cur;

static pthread_once_t handler_once = PTHREAD_ONCE_INIT;
static pthread_key_t pool_key;
static bool pool_key_ok;
static struct sigaction old_segv; /* written once, before ours is in */
static size_t page;    /* written once by install_handler(), under the once */
static int page_shift; /* log2(page), with it: no division per spawn */

/* Append @s to @buf at *@n, within @cap. */
static void put_str(char *buf, size_t *n, size_t cap, const char *s)
{
	while (*s && *n < cap)
		buf[(*n)++] = *s++;
}

static void put_num(char *buf, size_t *n, size_t cap, size_t v)
{
	char d[24];
	int i = 0;

	do
		d[i++] = (char)('0' + v % 10);
	while ((v /= 10) && i < (int)sizeof(d));
	while (i && *n < cap)
		buf[(*n)++] = d[--i];
}

/* The report; async-signal-safe (no stdio, no allocation). */
static void report_overflow(const struct pw__fstack *st, const char *name)
{
	char buf[320];
	size_t n = 0;

	put_str(buf, &n, sizeof(buf) - 64,
		"pinwheel: fiber stack overflow in '");
	put_str(buf, &n, sizeof(buf) - 64, name ? name : "?");
	put_str(buf, &n, sizeof(buf), "' (stack ");
	put_num(buf, &n, sizeof(buf), st->size >> 10);
	put_str(buf, &n, sizeof(buf), " KiB)\n");
	while (n) {
		ssize_t w = write(STDERR_FILENO, buf, n);
		if (w <= 0)
			break;
		memmove(buf, buf + w, n - (size_t)w);
		n -= (size_t)w;
	}
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	const struct pw__fstack *st = pw__fstack_cur.st;
	uintptr_t a = (uintptr_t)si->si_addr;

	if (st && a >= (uintptr_t)st->map && a < (uintptr_t)st->lo) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		report_overflow(st, pw__fstack_cur.name);
		/* Returning re-runs the faulting access, which now kills
		 * the process with SIGSEGV (and a core if enabled). */
		sigaction(SIGSEGV, &dfl, NULL);
		return;
	}
	if (old_segv.sa_flags & SA_SIGINFO) {
		old_segv.sa_sigaction(sig, si, uc);
	} else if (old_segv.sa_handler != SIG_IGN &&
		   old_segv.sa_handler != SIG_DFL) {
		old_segv.sa_handler(sig);
	} else {
		/* The default action: a real fault repeats and kills; a
		 * sent signal is raised again. */
		sigaction(SIGSEGV, &old_segv, NULL);
		if (si->si_code <= 0)
			raise(sig);
	}
}

static void pool_key_free(void *unused)
{
	(void)unused;
	pw__fstack_pool_free();
}

static void install_handler(void)
{
	struct sigaction sa;
	long p = sysconf(_SC_PAGESIZE);

	page = p > 0 ? (size_t)p : 4096;
	page_shift = __builtin_ctzll((uint64_t)page);
	pool_key_ok = !pthread_key_create(&pool_key, pool_key_free);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old_segv);
}

void pw__fstack_thread_setup(void)
{
	stack_t old;

	pw__fstack_cur.ready = true;
	pthread_once(&handler_once, install_handler);
	if (pool_key_ok)
		pthread_setspecific(pool_key, &pool);
	if (sigaltstack(NULL, &old) == 0 && (old.ss_flags & SS_DISABLE)) {
		void *p = mmap(NULL, ALT_STACK_LEN, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		stack_t ss = { .ss_sp = p, .ss_size = ALT_STACK_LEN };

		if (p == MAP_FAILED)
			return;
		if (sigaltstack(&ss, NULL) == 0)
			pool.alt = p;
		else
			munmap(p, ALT_STACK_LEN);
	}
}

/* Size class of @size usable bytes (page << class), or -1 beyond the
 * last. */
static int size_class(size_t size)
{
	size_t pages = (size + page - 1) >> page_shift;
	int c = pages <= 1 ? 0 : 64 - __builtin_clzll((uint64_t)pages - 1);

	return c < NCLASS ? c : -1;
}

/* @len bytes, page-aligned, read-write: NUMA-local on a bound shard. */
static void *map_stack(size_t len)
{
	struct pw__shard *s = pw__cur_shard;

	if (s && s->mem.bound) {
		size_t mapped;
		void *p = pw__mem_chunk_alloc(len, &mapped);

		if (p && mapped)
			return p;
		free(p); /* heap memory: cannot hold a guard page */
	}
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Linux 6.13 guard regions: a guard page that does not split the
 * mapping, so stacks do not count two mappings each against
 * vm.max_map_count (65530 by default: 32k stacks with mprotect). */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

/* Cleared once per process when the kernel refuses guard regions; a race
 * only repeats the try. Relaxed, paired with nothing: it orders no other
 * memory, each thread only learns to skip a failing call. */
static _Atomic int guard_regions = 1;

/* Make the page at @map a guard page. 0 or -1. */
static int guard(void *map)
{
	if (atomic_load_explicit(&guard_regions, memory_order_relaxed)) {
		if (madvise(map, page, MADV_GUARD_INSTALL) == 0)
			return 0;
		atomic_store_explicit(&guard_regions, 0, memory_order_relaxed);
	}
	return mprotect(map, page, PROT_NONE);
}

int pw__fstack_get(size_t size, struct pw__fstack *st)
{
	int c;

	if (!size)
		size = PW_FIBER_STACK_DEFAULT;
	if (size > PW__FSTACK_MAX)
		return -EINVAL;
	if (!pw__fstack_cur.ready)
		pw__fstack_thread_setup();
	c = size_class(size);
	if (c < 0)
		return -EINVAL;
	struct free_stack *f = pool.free[c];
	if (f) {
		pool.free[c] = f->next;
		pool.count[c]--;
		*st = f->st;
		return 0;
	}
	size = page << c;
	void *map = map_stack(size + page);
	if (!map)
		return -ENOMEM;
	if (guard(map)) {
		munmap(map, size + page);
		return -ENOMEM;
	}
	st->map = map;
	st->map_len = size + page;
	st->lo = (char *)map + page;
	st->size = size;
	return 0;
}

void pw__fstack_put(struct pw__fstack *st)
{
	int c;

	if (!pw__fstack_cur.ready)
		pw__fstack_thread_setup();
	c = size_class(st->size);
	if (c >= 0 && (pool.count[c] < POOL_MIN ||
		       (size_t)pool.count[c] * st->size < POOL_BYTES)) {
		struct free_stack *f =
			(struct free_stack *)((char *)st->lo + st->size) - 1;

		/* The frames the last fiber never returned from may still
		 * be poisoned. */
		UNPOISON(f, sizeof(*f));
		/* A large stack keeps only its top page resident while
		 * pooled (the mapping and its node policy stay). */
		if (st->size > TRIM_ABOVE)
			madvise(st->lo, st->size - page, MADV_DONTNEED);
		f->st = *st;
		f->next = pool.free[c];
		pool.free[c] = f;
		pool.count[c]++;
		return;
	}
	munmap(st->map, st->map_len);
}

void pw__fstack_pool_free(void)
{
	for (int c = 0; c < NCLASS; c++) {
		while (pool.free[c]) {
			struct free_stack *f = pool.free[c];

			pool.free[c] = f->next;
			munmap(f->st.map, f->st.map_len);
		}
		pool.count[c] = 0;
	}
	if (pool.alt) {
		stack_t ss = { .ss_flags = SS_DISABLE };

		if (sigaltstack(&ss, NULL) == 0)
			munmap(pool.alt, ALT_STACK_LEN);
		pool.alt = NULL;
	}
	pw__fstack_cur.ready = false;
}
