/* SPDX-License-Identifier: MIT */
/*
 * fault.h - allocation failure injection, for the tests.
 *
 * Every allocation the library makes for itself (heap, mmap, io_uring
 * and eventfd setup, threads) first asks pw__fault(site). In production
 * nothing is armed and the answer costs one relaxed load of a global
 * that is zero, on the allocation's slow path only: a slab refill, a
 * create, a first use. Nothing on a hot path (spawn from a warm slab,
 * wake, poll, timer insert, SQE prep) calls it.
 *
 * A test arms one rule with pw__fault_arm(site, skip, count): the next
 * @skip allocations at @site succeed, the @count after them fail as the
 * real call would under memory pressure (NULL, MAP_FAILED, -ENOMEM, or
 * EAGAIN for a thread), and the rest succeed again. PW__FAULT_ANY
 * matches every site, so "the Nth allocation anywhere fails" walks every
 * failure path of a call by arming N = 0, 1, 2 ... until the call
 * succeeds without a failure. pw__fault_seen() and pw__fault_failed()
 * count what each site saw since the last arm.
 *
 * Hooking a new allocation site: pick (or add, before PW__FAULT_NSITES)
 * the site that names the object, and write pw__fault_malloc(site, ...)
 * (or _calloc, _aligned_alloc, _mmap) instead of the plain call, or put
 * "pw__fault(site) ? <the call's failure> : <the call>" around any other
 * allocating call. Then add a test to tests/test_nomem.c that arms the
 * site and checks what the caller gets back.
 *
 * Internal: declared only here, never in include/.
 */
#ifndef PW_CORE_FAULT_H
#define PW_CORE_FAULT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>

enum pw__fault_site {
	PW__FAULT_ANY,	      /* any site below (only for pw__fault_arm) */
	PW__FAULT_SLAB,	      /* a slab chunk: task, aux and foreign slabs */
	PW__FAULT_RUNTIME,    /* runtime, shard table, shards, placement,
			     * stealing workers */
	PW__FAULT_MESH,	      /* the mesh rings and each shard's ring table */
	PW__FAULT_RING,	      /* a starting shard's io_uring and eventfd */
	PW__FAULT_THREAD,     /* a shard or blocking-pool thread (EAGAIN) */
	PW__FAULT_SPAWN,      /* a spawn or block_on message from outside */
	PW__FAULT_NET,	      /* a shard's net state and buffer ring */
	PW__FAULT_LISTENER,   /* a listener and its spill queue */
	PW__FAULT_TOPO,	      /* topology, CPU lists, placement scratch */
	PW__FAULT_METRICS,    /* pw_metrics_read()'s worker array */
	PW__FAULT_HIST,	      /* pw_hist_init()'s counts */
	PW__FAULT_RECV_LIMIT, /* not an allocation: a shard's first receive
			       * is refused as by a kernel without the
			       * multishot byte limit */
	PW__FAULT_NSITES
};

/* Non-zero while a rule is armed. Written by pw__fault_arm() and
 * pw__fault_disarm() only. */
extern atomic_uint pw__fault_armed;

/* The slow half of pw__fault(): takes the rule's lock. */
bool pw__fault_hit(enum pw__fault_site site);

/**
 * pw__fault - should this allocation at @site fail? False, at the cost
 * of one relaxed load, unless a test armed a rule.
 * Context: any thread.
 */
static inline bool pw__fault(enum pw__fault_site site)
{
	/* relaxed: pairs with the release store in pw__fault_arm(). A test
	 * arms before it calls the library, and the call reaches another
	 * thread only through a hand-off (thread start, inbox, mesh ring)
	 * that orders the store before this load. pw__fault_hit() reads
	 * the rule itself under its lock. */
	if (__builtin_expect(!atomic_load_explicit(&pw__fault_armed,
						   memory_order_relaxed),
			     1))
		return false;
	return pw__fault_hit(site);
}

/* malloc(), calloc(), aligned_alloc() and an anonymous read-write
 * private mmap() that fail when pw__fault(@site) says so. */
static inline void *pw__fault_malloc(enum pw__fault_site site, size_t n)
{
	return pw__fault(site) ? NULL : malloc(n);
}

static inline void *pw__fault_calloc(enum pw__fault_site site, size_t n,
				     size_t size)
{
	return pw__fault(site) ? NULL : calloc(n, size);
}

static inline void *pw__fault_aligned_alloc(enum pw__fault_site site,
					    size_t align, size_t n)
{
	return pw__fault(site) ? NULL : aligned_alloc(align, n);
}

static inline void *pw__fault_mmap(enum pw__fault_site site, size_t len)
{
	if (pw__fault(site))
		return MAP_FAILED;
	return mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

/**
 * pw__fault_arm - from now on, the next @skip allocations at @site (or
 * anywhere, for PW__FAULT_ANY) succeed and the @count after them fail.
 * Resets every site's counters. Replaces any rule armed before.
 * Context: any thread; a test calls it before the call it targets.
 */
void pw__fault_arm(enum pw__fault_site site, unsigned long skip,
		   unsigned long count);

/**
 * pw__fault_disarm - no allocation fails any more. The counters keep
 * their values until the next pw__fault_arm().
 * Context: any thread.
 */
void pw__fault_disarm(void);

/**
 * pw__fault_seen - allocations that asked at @site since the last
 * pw__fault_arm() while it was armed (PW__FAULT_ANY: at every site).
 * Context: any thread.
 */
unsigned long pw__fault_seen(enum pw__fault_site site);

/**
 * pw__fault_failed - of those, how many were made to fail.
 * Context: any thread.
 */
unsigned long pw__fault_failed(enum pw__fault_site site);

#endif /* PW_CORE_FAULT_H */
