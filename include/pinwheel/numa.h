/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/numa.h - where a shard's memory lives.
 *
 * Each shard's memory is bound to the NUMA node of its CPU: its slab, the
 * mesh rings it consumes, and (through the thread's memory policy) its
 * io_uring ring and any page it touches first. Its heap allocations go to
 * a jemalloc arena of its own when jemalloc serves malloc() in the
 * process (link the program with -ljemalloc). See docs/numa.md.
 */
#ifndef PINWHEEL_NUMA_H
#define PINWHEEL_NUMA_H

#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pw_runtime;

/* A shard's jemalloc arena. Read with pw_runtime_arena_stats(). */
struct pw_arena_stats {
	int arena;	      /* arena index, or -1 when unavailable */
	uint64_t small_bytes; /* bytes in small size classes */
	uint64_t large_bytes; /* bytes in large size classes */
	uint64_t allocated;   /* their sum: bytes currently allocated */
};

/**
 * pw_runtime_arena_stats - the jemalloc arena of shard @shard and the
 * bytes currently allocated from it (jemalloc's statistics, refreshed by
 * this call; blocks held in thread caches count as allocated). An arena
 * outlives its runtime and is reused by later shards, so the figures
 * include whatever earlier shards left allocated in it.
 *
 * Return: 0; -ENOTSUP when the shard has no arena (jemalloc is not the
 * process's malloc, or a sanitizer build): @out->arena is then -1 and the
 * counts 0; -EINVAL for a bad @rt or NULL @out; -ENODEV for a bad shard.
 * Context: any thread.
 */
PW_API int pw_runtime_arena_stats(struct pw_runtime *rt, unsigned shard,
				  struct pw_arena_stats *out);

/**
 * pw_runtime_shard_node - the NUMA node shard @shard's memory is bound
 * to: the node of its CPU; 0 for every shard when the kernel has no NUMA
 * support (numa_available() < 0), where nothing is bound.
 * Return: the node (>= 0); -EINVAL for a bad @rt; -ENODEV for a bad shard.
 * Context: any thread.
 */
PW_API int pw_runtime_shard_node(struct pw_runtime *rt, unsigned shard);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_NUMA_H */
