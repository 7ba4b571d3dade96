/* SPDX-License-Identifier: MIT */
/*
 * mem.c - shard placement, NUMA-local memory and per-shard arenas.
 *
 * Placement. pw_runtime_create() loads the topology once (hwloc), checks
 * the configured CPUs against it (or asks pw_topo_place() for a policy's),
 * refuses more shards than CPUs unless the caller opted in, and records
 * each shard's node. The snapshot stays with the runtime for
 * pw_mesh_distance().
 *
 * Memory. With NUMA support (numa_available() >= 0) every binding is
 * MPOL_PREFERRED: the node's pages first, other nodes when it is full,
 * never an allocation failure. What is bound:
 *   - slab chunks: mapped per chunk and bound with mbind() by the shard;
 *   - the mesh: one mapping, one page-aligned region per destination
 *     holding the headers and slots of every ring it consumes, each region
 *     bound to its consumer's node before the headers and slots are first
 *     written (initialising a ring writes every slot, so its pages are
 *     faulted in there at creation);
 *   - the shard thread's policy (set_mempolicy) after it is pinned and
 *     before its io_uring ring is set up, so pages the thread faults in
 *     first (its stack, fresh arena pages, the kernel's ring pages, which
 *     follow the caller's policy and CPU) come from its node.
 * What is not: the shard record and the runtime (allocated by the creating
 * thread), heap pages an arena reuses from before, and memory other
 * threads touch first. With PW_CONFIG_NO_PIN nothing is bound.
 *
 * Arenas. When jemalloc serves malloc() (checked once: a malloc on this
 * thread must show up in jemalloc's per-thread counter), each shard thread
 * binds itself to an arena of its own (arenas.create, thread.arena) and
 * keeps its thread cache. jemalloc cannot drop an arena that may still
 * hold blocks, so a stopped shard's arena returns to a pool and the next
 * shard takes it. Sanitizer builds compile this out (PW_HAVE_JEMALLOC is
 * not defined): arenas then read as unavailable.
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/fault.h"
#include "pinwheel/mesh.h"
#include "pinwheel/numa.h"
#include "pinwheel/topo.h"
#include "numa/mem_int.h"
#include "shard/shard_int.h"
#include "shard/spsc.h"

/* ---- NUMA support ------------------------------------------------------ */

/* Highest node id we bind to, plus one (a 1024-bit mask). */
#define NODE_LIMIT 1024
#define WORD_BITS  (8 * sizeof(unsigned long))

static pthread_once_t numa_once = PTHREAD_ONCE_INIT;
static bool numa_ok;

static void numa_probe(void)
{
	numa_ok = numa_available() >= 0;
}

static bool have_numa(void)
{
	pthread_once(&numa_once, numa_probe);
	return numa_ok;
}

static void node_mask(unsigned long *mask, int node)
{
	memset(mask, 0, NODE_LIMIT / 8);
	mask[(unsigned)node / WORD_BITS] |= 1UL << ((unsigned)node % WORD_BITS);
}

/* Prefer @node for [@p, @p + @len), page-aligned. 0 or -errno. */
static int bind_range(void *p, size_t len, int node)
{
	unsigned long mask[NODE_LIMIT / WORD_BITS];

	if (node < 0 || node >= NODE_LIMIT)
		return -EINVAL;
	node_mask(mask, node);
	/* The kernel reads maxnode - 1 bits. */
	if (mbind(p, len, MPOL_PREFERRED, mask, NODE_LIMIT + 1, 0) < 0)
		return -errno;
	return 0;
}

static size_t page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);
	return p > 0 ? (size_t)p : 4096;
}

static size_t round_up(size_t v, size_t to)
{
	return (v + to - 1) / to * to;
}

/* ---- placement ----------------------------------------------------------- */

static bool oversubscribe_ok(const struct pw_runtime *rt)
{
	return (rt->cfg.flags & PW_CONFIG_OVERSUBSCRIBE) != 0;
}

/* The configured CPU list: every CPU must be in @t; repeats are
 * oversubscription. */
static int check_cpus(struct pw_runtime *rt, const struct pw_topo *t)
{
	unsigned distinct = 0;

	for (unsigned i = 0; i < rt->nshards; i++) {
		int cpu = rt->cfg.cpus[i];
		bool seen = false;

		if (!pw_topo_find(t, cpu))
			return -ENODEV;
		for (unsigned j = 0; j < i && !seen; j++)
			seen = rt->cfg.cpus[j] == cpu;
		distinct += !seen;
		rt->cpus[i] = cpu;
	}
	if (distinct < rt->nshards && !oversubscribe_ok(rt))
		return -E2BIG;
	return 0;
}

/* A policy (or the default: one shard per core, compact). */
static int place_policy(struct pw_runtime *rt, const struct pw_topo *t)
{
	struct pw_placement_opts o = { .unit = PW_PLACE_CORES };
	struct pw_placement *pl;
	int n;

	if (rt->cfg.placement) {
		o = *rt->cfg.placement;
		if (o.shards && o.shards != rt->nshards)
			return -EINVAL;
	}
	o.shards = rt->nshards;
	o.allow_oversubscribe |= oversubscribe_ok(rt);
	pl = pw__fault_malloc(PW__FAULT_RUNTIME, sizeof(*pl));
	if (!pl)
		return -ENOMEM;
	n = pw_topo_place(t, &o, pl);
	if (n == (int)rt->nshards)
		memcpy(rt->cpus, pl->cpu, rt->nshards * sizeof(int));
	free(pl);
	if (n < 0)
		return n;
	return n == (int)rt->nshards ? 0 : -EINVAL;
}

int pw__mem_place(struct pw_runtime *rt)
{
	struct pw__rt_mem *m = &rt->mem;
	int err;

	if (rt->cfg.cpus && rt->cfg.placement)
		return -EINVAL;
	rt->cpus =
		pw__fault_calloc(PW__FAULT_RUNTIME, rt->nshards, sizeof(int));
	m->nodes =
		pw__fault_calloc(PW__FAULT_RUNTIME, rt->nshards, sizeof(int));
	if (!rt->cpus || !m->nodes)
		return -ENOMEM;
	err = pw_topo_load(&m->topo);
	if (err)
		return err == -ENOMEM ? err : -ENXIO;
	err = rt->cfg.cpus ? check_cpus(rt, m->topo) :
			     place_policy(rt, m->topo);
	rt->cfg.placement = NULL; /* the caller's need not outlive us */
	if (err)
		return err;
	for (unsigned i = 0; i < rt->nshards; i++) {
		const struct pw_topo_pu *p = pw_topo_find(m->topo, rt->cpus[i]);
		/* Without NUMA support the machine is one node. */
		m->nodes[i] = have_numa() && p ? p->node : 0;
	}
	return 0;
}

void pw__mem_rt_free(struct pw_runtime *rt)
{
	pw_topo_free(rt->mem.topo);
	rt->mem.topo = NULL;
	free(rt->mem.nodes);
	rt->mem.nodes = NULL;
}

/* ---- arenas -------------------------------------------------------------- */

#ifdef PW_HAVE_JEMALLOC
/* Weak: the library links without jemalloc; it is found when the program
 * brings it (and then only used when it also serves malloc). */
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
		   size_t newlen) __attribute__((weak));

#define ARENA_POOL 4096

static pthread_once_t je_once = PTHREAD_ONCE_INIT;
static bool je_ok;
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned pool[ARENA_POOL]; /* arenas no shard uses, guarded */
static unsigned npool;

static uint64_t thread_allocated(void)
{
	uint64_t v = 0;
	size_t sz = sizeof(v);

	if (mallctl("thread.allocated", &v, &sz, NULL, 0) != 0)
		return 0;
	return v;
}

/* Does jemalloc serve this process's malloc()? */
static void je_probe(void)
{
	void *volatile p;
	uint64_t before;

	if (!mallctl)
		return;
	before = thread_allocated();
	p = malloc(4096);
	je_ok = p && thread_allocated() >= before + 4096;
	free(p);
}

static int arena_take(void)
{
	unsigned idx;
	size_t sz = sizeof(idx);

	pthread_once(&je_once, je_probe);
	if (!je_ok)
		return -1;
	pthread_mutex_lock(&pool_mu);
	bool pooled = npool > 0;
	if (pooled)
		idx = pool[--npool];
	pthread_mutex_unlock(&pool_mu);
	if (!pooled && mallctl("arenas.create", &idx, &sz, NULL, 0) != 0)
		return -1;
	if (mallctl("thread.arena", NULL, NULL, &idx, sizeof(idx)) != 0) {
		pthread_mutex_lock(&pool_mu);
		if (npool < ARENA_POOL)
			pool[npool++] = idx;
		pthread_mutex_unlock(&pool_mu);
		return -1;
	}
	return (int)idx;
}

static void arena_give_back(int arena)
{
	/* Cached blocks go back to their arenas now, not at thread exit. */
	mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
	pthread_mutex_lock(&pool_mu);
	if (npool < ARENA_POOL)
		pool[npool++] = (unsigned)arena;
	pthread_mutex_unlock(&pool_mu);
}

static int arena_read(int arena, struct pw_arena_stats *out)
{
	char name[64];
	uint64_t epoch = 1;
	size_t small = 0, large = 0, sz = sizeof(epoch);

	/* Statistics are a snapshot taken at each epoch. */
	if (mallctl("epoch", &epoch, &sz, &epoch, sizeof(epoch)) != 0)
		return -ENOTSUP;
	sz = sizeof(small);
	snprintf(name, sizeof(name), "stats.arenas.%d.small.allocated", arena);
	if (mallctl(name, &small, &sz, NULL, 0) != 0)
		return -ENOTSUP;
	sz = sizeof(large);
	snprintf(name, sizeof(name), "stats.arenas.%d.large.allocated", arena);
	if (mallctl(name, &large, &sz, NULL, 0) != 0)
		return -ENOTSUP;
	out->small_bytes = small;
	out->large_bytes = large;
	out->allocated = (uint64_t)small + large;
	return 0;
}
#else
static int arena_take(void)
{
	return -1;
}

static void arena_give_back(int arena)
{
	(void)arena;
}

static int arena_read(int arena, struct pw_arena_stats *out)
{
	(void)arena;
	(void)out;
	return -ENOTSUP;
}
#endif

/* ---- shard threads ------------------------------------------------------- */

void pw__mem_shard_enter(struct pw__shard *s)
{
	struct pw_runtime *rt = s->rt;
	unsigned long mask[NODE_LIMIT / WORD_BITS];
	int node = rt->mem.nodes[s->id];

	s->mem.node = node;
	s->mem.bound = false;
	if (have_numa() && s->cpu >= 0 && !(rt->cfg.flags & PW_CONFIG_NO_PIN) &&
	    node < NODE_LIMIT) {
		node_mask(mask, node);
		s->mem.bound = set_mempolicy(MPOL_PREFERRED, mask,
					     NODE_LIMIT + 1) == 0;
	}
	s->mem.arena = arena_take();
}

void pw__mem_shard_exit(struct pw__shard *s)
{
	if (s->mem.arena >= 0)
		arena_give_back(s->mem.arena);
	if (s->mem.bound)
		set_mempolicy(MPOL_DEFAULT, NULL, 0);
}

/* ---- slab chunks --------------------------------------------------------- */

void *pw__mem_chunk_alloc(size_t size, size_t *mapped)
{
	struct pw__shard *s = pw__cur_shard;

	*mapped = 0;
	if (s && s->mem.bound) {
		size_t len = round_up(size, page_size());
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED) {
			/* Preferred, so a failed bind costs locality only. */
			bind_range(p, len, s->mem.node);
			*mapped = len;
			return p;
		}
	}
	return aligned_alloc(64, round_up(size, 64));
}

void pw__mem_chunk_free(void *p, size_t mapped)
{
	if (mapped)
		munmap(p, mapped);
	else
		free(p);
}

/* ---- the mesh ------------------------------------------------------------ */

/*
 * Region of destination d: the headers of rings [0..n)[d], then their
 * slots (one 64-byte line each), rounded up to whole pages so each region
 * can be bound alone.
 */
int pw__mem_mesh_alloc(struct pw_runtime *rt, size_t slots)
{
	struct pw__rt_mem *m = &rt->mem;
	size_t n = rt->nshards;
	size_t hdr = n * sizeof(struct pw__spsc);
	size_t slot = sizeof(struct pw__spsc_slot);

	if (slots > (SIZE_MAX - hdr) / slot / n)
		return -ENOMEM;
	m->mesh_stride = round_up(hdr + n * slots * slot, page_size());
	if (m->mesh_stride > SIZE_MAX / n)
		return -ENOMEM;
	m->mesh_len = m->mesh_stride * n;
	m->mesh_slots = slots;
	m->mesh = pw__fault_mmap(PW__FAULT_MESH, m->mesh_len);
	if (m->mesh == MAP_FAILED) {
		m->mesh = NULL;
		return -ENOMEM;
	}
	for (unsigned d = 0; d < n; d++) {
		char *region = (char *)m->mesh + d * m->mesh_stride;
		if (have_numa() && !(rt->cfg.flags & PW_CONFIG_NO_PIN))
			bind_range(region, m->mesh_stride, m->nodes[d]);
		struct pw__spsc_slot *base =
			(struct pw__spsc_slot *)(region + hdr);
		for (unsigned src = 0; src < n; src++)
			pw__spsc_init(pw__mem_mesh_ring(rt, src, d),
				      base + src * slots, slots);
	}
	return 0;
}

struct pw__spsc *pw__mem_mesh_ring(struct pw_runtime *rt, unsigned src,
				   unsigned dst)
{
	char *region = (char *)rt->mem.mesh + dst * rt->mem.mesh_stride;

	return (struct pw__spsc *)region + src;
}

void pw__mem_mesh_free(struct pw_runtime *rt)
{
	if (rt->mem.mesh)
		munmap(rt->mem.mesh, rt->mem.mesh_len);
	rt->mem.mesh = NULL;
}

/* ---- public ------------------------------------------------------------- */

int pw_runtime_arena_stats(struct pw_runtime *rt, unsigned shard,
			   struct pw_arena_stats *out)
{
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->arena = -1;
	if (!pw__rt_enter(rt))
		return -EINVAL;
	if (shard >= rt->nshards) {
		pw__rt_leave(rt);
		return -ENODEV;
	}
	int arena = rt->shards[shard]->mem.arena;
	err = arena < 0 ? -ENOTSUP : arena_read(arena, out);
	if (!err)
		out->arena = arena;
	pw__rt_leave(rt);
	return err;
}

int pw_runtime_shard_node(struct pw_runtime *rt, unsigned shard)
{
	if (!pw__rt_enter(rt))
		return -EINVAL;
	int node = shard < rt->nshards ? rt->mem.nodes[shard] : -ENODEV;
	pw__rt_leave(rt);
	return node;
}

int pw_mesh_distance(struct pw_runtime *rt, unsigned a, unsigned b)
{
	int d;

	if (!pw__rt_enter(rt))
		return -EINVAL;
	if (a >= rt->nshards || b >= rt->nshards) {
		pw__rt_leave(rt);
		return -ENODEV;
	}
	d = pw_topo_distance(rt->mem.topo, rt->cpus[a], rt->cpus[b]);
	/* Without NUMA support every shard's memory is one node. */
	if (d == PW_DIST_OTHER_NODE && !have_numa())
		d = PW_DIST_SAME_NODE;
	pw__rt_leave(rt);
	return d;
}
