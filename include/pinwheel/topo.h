/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/topo.h - machine topology and shard placement.
 *
 * pw_topo_load() takes a plain-C snapshot of the machine (packages, NUMA
 * nodes, L3 groups, cores, PUs) from hwloc, restricted to the CPUs the
 * process may run on; pw_topo_load_synthetic() builds the same snapshot
 * from an hwloc synthetic description, for tests. pw_topo_place() turns a
 * snapshot and a policy into one CPU and node per shard, ready for
 * struct pw_config.cpus. No hwloc type appears here.
 */
#ifndef PINWHEEL_TOPO_H
#define PINWHEEL_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest CPU or node number pw_cpulist_parse() accepts, plus one. */
#define PW_CPULIST_LIMIT 65536
/* Most shards one placement holds (the runtime's PW_MAX_SHARDS). */
#define PW_PLACE_MAX 1024

/* One processing unit (hardware thread). Ids are -1 where the machine has
 * no such level (e.g. no L3 cache). */
struct pw_topo_pu {
	int cpu;     /* OS index: the Linux CPU number */
	int core;    /* core id, 0..ncores-1 */
	int smt;     /* index among its core's PUs, 0 for the first */
	int l3;	     /* L3 group id, 0..nl3-1, or -1 */
	int node;    /* NUMA node OS index */
	int package; /* package id, 0..npackages-1, or -1 */
};

/* One NUMA node. */
struct pw_topo_node {
	int id;		    /* OS index, as numactl and libnuma number it */
	unsigned npus;	    /* PUs of the snapshot on this node */
	uint64_t mem_bytes; /* local memory, 0 if unknown */
};

/* A topology snapshot. pus[] is in hwloc logical order: package by
 * package, node by node, L3 by L3, core by core, so neighbours in the
 * array share as much hardware as possible. nodes[] is in the same order. */
struct pw_topo {
	unsigned npus, ncores, nl3, nnodes, npackages;
	struct pw_topo_pu *pus;
	struct pw_topo_node *nodes;
	bool synthetic; /* built by pw_topo_load_synthetic() */
};

/**
 * pw_topo_load - snapshot the machine's topology.
 * @out: receives the snapshot; free it with pw_topo_free().
 *
 * Only the CPUs of the process's affinity mask (and cgroup) are kept, and
 * the cores, L3 groups and nodes that still have one of them (nodes with
 * memory but no allowed CPU are kept too, with npus 0).
 * Return: 0; -EINVAL for a NULL @out; -ENOMEM; or the -errno of a failed
 * hwloc call (-ENOSYS when hwloc cannot discover the machine).
 * Context: any thread; may sleep (reads sysfs).
 */
PW_API int pw_topo_load(struct pw_topo **out);

/**
 * pw_topo_load_synthetic - build a snapshot from an hwloc synthetic
 * description.
 * @out: receives the snapshot; free it with pw_topo_free().
 * @desc: levels from the top, e.g. "pack:2 numa:2 l3:1 core:8 pu:2"; each
 * level's NUMA nodes are named "numa:N". CPUs and nodes are numbered from
 * 0 in logical order.
 *
 * Return: 0; -EINVAL for a NULL @out or @desc or a description hwloc
 * rejects; -ENOMEM.
 * Context: any thread.
 */
PW_API int pw_topo_load_synthetic(struct pw_topo **out, const char *desc);

/**
 * pw_topo_free - free a snapshot from pw_topo_load*(). NULL is a no-op.
 * Context: any thread.
 */
PW_API void pw_topo_free(struct pw_topo *t);

/**
 * pw_topo_find - the PU of @t whose CPU number is @cpu, or NULL.
 * Context: any thread.
 */
PW_API const struct pw_topo_pu *pw_topo_find(const struct pw_topo *t, int cpu);

/* How much hardware two CPUs share, closest first. */
enum pw_distance {
	PW_DIST_SAME_CORE,  /* the same core (or the same PU) */
	PW_DIST_SAME_L3,    /* different cores under one L3 */
	PW_DIST_SAME_NODE,  /* one NUMA node, no shared L3 */
	PW_DIST_OTHER_NODE, /* different NUMA nodes */
};

/**
 * pw_topo_distance - how close CPUs @cpu_a and @cpu_b are in @t.
 *
 * Return: an enum pw_distance value; -EINVAL for a NULL @t; -ENODEV when
 * either CPU is not in @t.
 * Context: any thread.
 */
PW_API int pw_topo_distance(const struct pw_topo *t, int cpu_a, int cpu_b);

/* What a shard is placed on. */
enum pw_place_unit {
	PW_PLACE_CORES, /* one shard per physical core, first PU only */
	PW_PLACE_PUS,	/* one shard per PU, SMT siblings included */
};

/* In which order the chosen CPUs are handed to shards. */
enum pw_place_order {
	PW_PLACE_COMPACT, /* fill a core, then an L3, then a node */
	PW_PLACE_SPREAD,  /* round-robin over nodes, then over L3 groups,
			     then distinct cores before SMT siblings */
};

/* A placement policy; all zero is the default: one shard per core,
 * compact, as many shards as cores. */
struct pw_placement_opts {
	enum pw_place_unit unit;
	const char *cpus;  /* CPU list ("0-3,8"): exactly these PUs,
				     overrides @unit; NULL: all */
	const char *nodes; /* node list ("0,2"): only their CPUs;
				     NULL: all */
	enum pw_place_order order;
	unsigned shards;	  /* 0: one per chosen CPU */
	bool allow_oversubscribe; /* more shards than CPUs: wrap around */
};

/* The result: shard i runs on cpu[i], whose memory node is node[i]. */
struct pw_placement {
	unsigned shards;
	unsigned ncpus; /* distinct CPUs chosen, <= PW_PLACE_MAX */
	int cpu[PW_PLACE_MAX];
	int node[PW_PLACE_MAX];
};

/**
 * pw_topo_place - choose a CPU and node for each shard.
 * @t: the topology; @o: the policy, or NULL for the default; @out:
 * receives the placement.
 *
 * Return: the number of shards (> 0); -EINVAL for a NULL @t or @out, a
 * malformed list, or a policy that leaves no CPU (e.g. a node without
 * CPUs, or CPUs outside the chosen nodes); -ENODEV for a CPU or node that
 * is not in @t (offline or outside the affinity mask); -E2BIG for more
 * shards than chosen CPUs without @allow_oversubscribe, or more than
 * PW_PLACE_MAX shards or CPUs; -ENOMEM.
 * Context: any thread.
 */
PW_API int pw_topo_place(const struct pw_topo *t,
			 const struct pw_placement_opts *o,
			 struct pw_placement *out);

/**
 * pw_cpulist_parse - parse a Linux CPU list such as "0-3,8".
 * @s: comma-separated items, each N or N-M with N <= M, every number below
 * PW_CPULIST_LIMIT; blanks around items and one trailing newline are
 * accepted (so sysfs files parse as they are).
 * @out: receives the numbers, ascending, each once; may be NULL to count.
 * @max: room in @out.
 *
 * Return: how many distinct numbers; -EINVAL for a NULL @s, an empty list
 * or item, a reversed range or anything else malformed; -ERANGE for a
 * number >= PW_CPULIST_LIMIT; -E2BIG when @out is not NULL and more than
 * @max numbers result; -ENOMEM.
 * Context: any thread.
 */
PW_API int pw_cpulist_parse(const char *s, int *out, unsigned max);

/**
 * pw_cpulist_format - write @n ascending numbers as a CPU list ("0-3,8").
 * @buf: receives the text, always terminated when @len > 0.
 *
 * Return: the length of the full text (as snprintf(): larger than or equal
 * to @len means it was cut); -EINVAL for a NULL @cpus with @n > 0 or a
 * NULL @buf with @len > 0.
 * Context: any thread.
 */
PW_API int pw_cpulist_format(const int *cpus, unsigned n, char *buf,
			     size_t len);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_TOPO_H */
