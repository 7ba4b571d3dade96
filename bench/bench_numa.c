/* SPDX-License-Identifier: MIT */
/*
 * bench_numa.c - what placement and per-shard memory cost or save.
 *
 * Allocation: malloc/free of 64 B and 4 KiB on a thread bound to an arena
 * of its own (as a shard thread is), on jemalloc's default arena for the
 * thread, and through glibc's allocator (__libc_malloc/__libc_free, which
 * glibc exports even when jemalloc serves malloc), one pair at a time and
 * in bursts of 64 live blocks.
 *
 * Mesh: pw_call round trips between two shards at each distance this
 * machine offers (same core: both shards on one CPU; same L3; same node;
 * other node), to a target asleep in the kernel and, for distinct CPUs, to
 * a busy one. Distances the machine lacks are skipped with a message.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench/bench.h"
#include "pinwheel.h"

#ifdef PW_HAVE_JEMALLOC
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
		   size_t newlen) __attribute__((weak));
#endif
void *__libc_malloc(size_t size);
void __libc_free(void *p);

#define BATCH 256
#define BURST 64

/* Keep @p alive as far as the compiler knows. */
static inline void use(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

enum alloc_kind { ALLOC_SHARD_ARENA, ALLOC_DEFAULT_ARENA, ALLOC_GLIBC };

/* Bind the calling thread to a fresh arena; returns the old one in *old. */
static bool arena_bind_new(struct pw_bench *b, unsigned *old)
{
#ifdef PW_HAVE_JEMALLOC
	unsigned idx;
	size_t sz = sizeof(*old);
	if (!mallctl || mallctl("thread.arena", old, &sz, NULL, 0) != 0) {
		pw_bench_skip(b, "jemalloc is not linked");
		return false;
	}
	sz = sizeof(idx);
	if (mallctl("arenas.create", &idx, &sz, NULL, 0) != 0 ||
	    mallctl("thread.arena", NULL, NULL, &idx, sizeof(idx)) != 0) {
		pw_bench_skip(b, "cannot create a jemalloc arena");
		return false;
	}
	return true;
#else
	(void)old;
	pw_bench_skip(b, "built without jemalloc");
	return false;
#endif
}

static void arena_restore(unsigned old)
{
#ifdef PW_HAVE_JEMALLOC
	mallctl("thread.arena", NULL, NULL, &old, sizeof(old));
#else
	(void)old;
#endif
}

static void run_alloc(struct pw_bench *b, enum alloc_kind k, bool burst)
{
	size_t size = (size_t)pw_bench_arg(b);
	unsigned old = 0;
	void *live[BURST];

	if (k == ALLOC_SHARD_ARENA && !arena_bind_new(b, &old))
		return;
#ifndef PW_HAVE_JEMALLOC
	if (k == ALLOC_DEFAULT_ARENA) {
		pw_bench_skip(b, "built without jemalloc");
		return;
	}
#endif
	if (k == ALLOC_GLIBC) {
		if (burst) {
			while (pw_bench_run(b, BURST)) {
				for (int i = 0; i < BURST; i++)
					use(live[i] = __libc_malloc(size));
				for (int i = 0; i < BURST; i++)
					__libc_free(live[i]);
			}
		} else {
			while (pw_bench_run(b, BATCH))
				for (int i = 0; i < BATCH; i++) {
					void *p = __libc_malloc(size);
					use(p);
					__libc_free(p);
				}
		}
	} else if (burst) {
		while (pw_bench_run(b, BURST)) {
			for (int i = 0; i < BURST; i++)
				use(live[i] = malloc(size));
			for (int i = 0; i < BURST; i++)
				free(live[i]);
		}
	} else {
		while (pw_bench_run(b, BATCH))
			for (int i = 0; i < BATCH; i++) {
				void *p = malloc(size);
				use(p);
				free(p);
			}
	}
	if (k == ALLOC_SHARD_ARENA)
		arena_restore(old);
}

static const int64_t sizes[] = { 64, 4096 };

static void bm_malloc_free_shard_arena(struct pw_bench *b)
{
	run_alloc(b, ALLOC_SHARD_ARENA, false);
}
PW_BENCH_ARGS(bm_malloc_free_shard_arena, sizes);

static void bm_malloc_free_default_arena(struct pw_bench *b)
{
	run_alloc(b, ALLOC_DEFAULT_ARENA, false);
}
PW_BENCH_ARGS(bm_malloc_free_default_arena, sizes);

static void bm_malloc_free_glibc(struct pw_bench *b)
{
	run_alloc(b, ALLOC_GLIBC, false);
}
PW_BENCH_ARGS(bm_malloc_free_glibc, sizes);

static void bm_malloc_burst64_shard_arena(struct pw_bench *b)
{
	run_alloc(b, ALLOC_SHARD_ARENA, true);
}
PW_BENCH_ARGS(bm_malloc_burst64_shard_arena, sizes);

static void bm_malloc_burst64_glibc(struct pw_bench *b)
{
	run_alloc(b, ALLOC_GLIBC, true);
}
PW_BENCH_ARGS(bm_malloc_burst64_glibc, sizes);

/* ---- mesh round trips by distance ------------------------------------- */

/* Two CPUs of this machine at distance @want; false if there are none. */
static bool pick_pair(int want, int cpu[2])
{
	struct pw_topo *t;
	bool found = false;

	if (pw_topo_load(&t) != 0)
		return false;
	for (unsigned i = 0; i < t->npus && !found; i++)
		for (unsigned j = 0; j < t->npus && !found; j++) {
			/* Same core: SMT siblings, else one CPU twice. */
			if (i == j &&
			    (want != PW_DIST_SAME_CORE || t->ncores != t->npus))
				continue;
			if (pw_topo_distance(t, t->pus[i].cpu, t->pus[j].cpu) ==
			    want) {
				cpu[0] = t->pus[i].cpu;
				cpu[1] = t->pus[j].cpu;
				found = true;
			}
		}
	pw_topo_free(t);
	return found;
}

static const char *dist_names[] = { "same core", "same L3", "same node",
				    "other node" };

static void run_distance(struct pw_bench *b, bool busy)
{
	int want = (int)pw_bench_arg(b);
	static int cpus[2];
	struct pw_config cfg;
	struct pw_runtime *rt;
	char why[96];

	if (!pick_pair(want, cpus)) {
		snprintf(why, sizeof(why),
			 "no two CPUs at distance '%s' on this machine",
			 dist_names[want]);
		pw_bench_skip(b, why);
		return;
	}
	if (busy && cpus[0] == cpus[1]) {
		pw_bench_skip(b, "a busy target on the caller's own CPU only "
				 "measures the scheduler's time slice");
		return;
	}
	pw_config_init(&cfg);
	cfg.shards = 2;
	cfg.cpus = cpus;
	cfg.flags = PW_CONFIG_OVERSUBSCRIBE;
	int err = pw_runtime_create(&rt, &cfg);
	if (err) {
		pw_bench_skip(b, pw_strerror_setup(err));
		return;
	}
	if (pw_mesh_distance(rt, 0, 1) != want) {
		pw_runtime_destroy(rt);
		pw_bench_skip(b, "the runtime disagrees on the distance");
		return;
	}
	pw_bench_call_roundtrips(b, rt, busy);
	pw_bench_counter(b, "cpu_a", cpus[0], false);
	pw_bench_counter(b, "cpu_b", cpus[1], false);
	pw_runtime_destroy(rt);
}

static const int64_t distances[] = { PW_DIST_SAME_CORE, PW_DIST_SAME_L3,
				     PW_DIST_SAME_NODE, PW_DIST_OTHER_NODE };

static void bm_mesh_roundtrip_asleep_by_distance(struct pw_bench *b)
{
	run_distance(b, false);
}
PW_BENCH_ARGS(bm_mesh_roundtrip_asleep_by_distance, distances);

static void bm_mesh_roundtrip_busy_by_distance(struct pw_bench *b)
{
	run_distance(b, true);
}
PW_BENCH_ARGS(bm_mesh_roundtrip_busy_by_distance, distances);
