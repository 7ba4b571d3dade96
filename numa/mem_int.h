/* SPDX-License-Identifier: MIT */
/*
 * mem_int.h - placement and NUMA-local memory of a runtime. Private to
 * the library.
 *
 * shard.c, loop.c, mesh.c and slab.c call these hooks; numa/mem.c holds the
 * policy. A runtime keeps its topology snapshot (for pw_mesh_distance)
 * and the memory node of each shard; a shard keeps whether its memory is
 * bound and which jemalloc arena its thread allocates from.
 */
#ifndef PW_NUMA_MEM_INT_H
#define PW_NUMA_MEM_INT_H

#include <stdbool.h>
#include <stddef.h>

struct pw_runtime;
struct pw__shard;
struct pw__spsc;
struct pw_topo;

/* Per runtime. Written by the creating thread before the shards start;
 * read-only afterwards. */
struct pw__rt_mem {
	struct pw_topo *topo; /* snapshot the shards were placed on */
	int *nodes;	      /* memory node of each shard */
	void *mesh;	      /* the mesh mapping: one region per dst */
	size_t mesh_len;      /* its length */
	size_t mesh_stride;   /* bytes per destination region */
	size_t mesh_slots;    /* slots per ring */
};

/* Per shard. Written by the shard thread before it reports its start
 * (the start mutex orders it before any reader). */
struct pw__shard_mem {
	int node;   /* its memory node */
	bool bound; /* thread policy set: slab chunks bound too */
	int arena;  /* jemalloc arena of the thread, or -1 */
};

/*
 * pw__mem_place - choose each shard's CPU (rt->cpus) and node from the
 * configuration: cfg.cpus, cfg.placement, or one shard per core.
 * Return: 0; -ENODEV for a CPU or node that is not usable; -EINVAL for an
 * empty set or conflicting options; -E2BIG for more shards than CPUs
 * without PW_CONFIG_OVERSUBSCRIBE; -ENXIO when hwloc fails; -ENOMEM.
 * Context: pw_runtime_create(), before the shards start.
 */
int pw__mem_place(struct pw_runtime *rt);

/* Free what pw__mem_place() and the mesh hooks allocated. */
void pw__mem_rt_free(struct pw_runtime *rt);

/*
 * pw__mem_shard_enter - on the shard thread, after pinning and before any
 * allocation or ring set-up: prefer the shard's node for the thread's
 * memory and bind the thread to a jemalloc arena of its own. Failures
 * only leave the shard unbound. pw__mem_shard_exit() undoes it at the end
 * of the thread (the arena goes back to a pool for later shards).
 */
void pw__mem_shard_enter(struct pw__shard *s);
void pw__mem_shard_exit(struct pw__shard *s);

/*
 * pw__mem_chunk_alloc - @size bytes for a slab chunk, 64-byte aligned:
 * mapped and bound to the calling shard's node when it is bound, else
 * from the heap. *@mapped receives what pw__mem_chunk_free() needs (the
 * mapping length, or 0 for heap memory). NULL when memory is short.
 * Context: any thread; pw__mem_chunk_free() on any thread too.
 */
void *pw__mem_chunk_alloc(size_t size, size_t *mapped);
void pw__mem_chunk_free(void *p, size_t mapped);

/*
 * pw__mem_mesh_alloc - map and initialise every ring of the mesh, @slots
 * per ring: the rings a shard consumes ([src][dst] for every src) share
 * one region bound to dst's node. pw__mem_mesh_ring() finds ring
 * [@src][@dst]. Return: 0 or -ENOMEM.
 */
int pw__mem_mesh_alloc(struct pw_runtime *rt, size_t slots);
struct pw__spsc *pw__mem_mesh_ring(struct pw_runtime *rt, unsigned src,
				   unsigned dst);
void pw__mem_mesh_free(struct pw_runtime *rt);

#endif /* PW_NUMA_MEM_INT_H */
