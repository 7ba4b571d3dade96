/* SPDX-License-Identifier: MIT */
/*
 * test_topo.c - topology snapshots, placement policies, CPU lists.
 *
 * Placement runs on hwloc synthetic topologies so that several packages
 * and nodes can be checked on a one-node machine; every case asserts the
 * whole cpu[] and node[] arrays.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "pinwheel/topo.h"

/* 2 packages x 2 nodes x 1 L3 x 8 cores x 2 PUs: 64 CPUs, node n holds
 * CPUs 16n..16n+15, core c holds CPUs 2c and 2c+1. */
#define BIG "pack:2 numa:2 l3:1 core:8 pu:2"
/* 1 package x 1 node x 2 cores x 2 PUs. */
#define SMALL "pack:1 numa:1 core:2 pu:2"
/* 1 package x 2 nodes x 2 L3 x 2 cores x 1 PU: L3 groups {0,1} {2,3}
 * on node 0, {4,5} {6,7} on node 1. */
#define L3S "pack:1 numa:2 l3:2 core:2 pu:1"

static struct pw_topo *synth(const char *desc)
{
	struct pw_topo *t = NULL;
	int err = pw_topo_load_synthetic(&t, desc);

	cr_assert_eq(err, 0, "pw_topo_load_synthetic(%s): %d", desc, err);
	cr_assert_not_null(t);
	return t;
}

static void expect(const struct pw_topo *t, const struct pw_placement_opts *o,
		   const int *cpu, const int *node, unsigned n)
{
	static struct pw_placement p;
	int got = pw_topo_place(t, o, &p);

	cr_assert_eq(got, (int)n, "pw_topo_place: %d, want %u", got, n);
	cr_assert_eq(p.shards, n);
	for (unsigned i = 0; i < n; i++) {
		cr_expect_eq(p.cpu[i], cpu[i], "shard %u: cpu %d, want %d", i,
			     p.cpu[i], cpu[i]);
		cr_expect_eq(p.node[i], node[i], "shard %u: node %d, want %d",
			     i, p.node[i], node[i]);
	}
}

static int place_err(const struct pw_topo *t, const struct pw_placement_opts *o)
{
	static struct pw_placement p;
	return pw_topo_place(t, o, &p);
}

Test(topo, synthetic_snapshot)
{
	struct pw_topo *t = synth(BIG);

	cr_assert_eq(t->npus, 64);
	cr_assert_eq(t->ncores, 32);
	cr_assert_eq(t->nl3, 4);
	cr_assert_eq(t->nnodes, 4);
	cr_assert_eq(t->npackages, 2);
	cr_assert(t->synthetic);
	for (unsigned i = 0; i < 64; i++) {
		const struct pw_topo_pu *p = &t->pus[i];
		cr_expect_eq(p->cpu, (int)i);
		cr_expect_eq(p->core, (int)i / 2);
		cr_expect_eq(p->smt, (int)i % 2);
		cr_expect_eq(p->l3, (int)i / 16);
		cr_expect_eq(p->node, (int)i / 16);
		cr_expect_eq(p->package, (int)i / 32);
	}
	for (unsigned n = 0; n < 4; n++) {
		cr_expect_eq(t->nodes[n].id, (int)n);
		cr_expect_eq(t->nodes[n].npus, 16);
	}
	cr_expect_eq(pw_topo_find(t, 17), &t->pus[17]);
	cr_expect_null(pw_topo_find(t, 64));
	pw_topo_free(t);

	t = synth("pack:1 numa:1 core:2 pu:1");
	cr_assert_eq(t->npus, 2);
	cr_expect_eq(t->nl3, 0);
	cr_expect_eq(t->pus[1].l3, -1);
	pw_topo_free(t);
	pw_topo_free(NULL);
}

Test(topo, synthetic_errors)
{
	struct pw_topo *t = (struct pw_topo *)1;

	cr_expect_eq(pw_topo_load_synthetic(&t, "pack:2 bogus:3"), -EINVAL);
	cr_expect_null(t);
	cr_expect_eq(pw_topo_load_synthetic(&t, ""), -EINVAL);
	cr_expect_eq(pw_topo_load_synthetic(&t, NULL), -EINVAL);
	cr_expect_eq(pw_topo_load_synthetic(NULL, SMALL), -EINVAL);
	cr_expect_eq(pw_topo_load(NULL), -EINVAL);
}

Test(topo, big_cores_compact)
{
	struct pw_topo *t = synth(BIG);
	int cpu[32], node[32];

	for (int i = 0; i < 32; i++) {
		cpu[i] = 2 * i;
		node[i] = i / 8;
	}
	expect(t, NULL, cpu, node, 32);
	expect(t, &(struct pw_placement_opts){ 0 }, cpu, node, 32);
	pw_topo_free(t);
}

Test(topo, big_cores_spread)
{
	struct pw_topo *t = synth(BIG);
	int cpu[32], node[32];

	for (int k = 0; k < 32; k++) {
		node[k] = k % 4;
		cpu[k] = 16 * (k % 4) + 2 * (k / 4);
	}
	expect(t, &(struct pw_placement_opts){ .order = PW_PLACE_SPREAD }, cpu,
	       node, 32);
	pw_topo_free(t);
}

Test(topo, big_pus_compact)
{
	struct pw_topo *t = synth(BIG);
	int cpu[64], node[64];

	for (int i = 0; i < 64; i++) {
		cpu[i] = i;
		node[i] = i / 16;
	}
	expect(t, &(struct pw_placement_opts){ .unit = PW_PLACE_PUS }, cpu,
	       node, 64);
	pw_topo_free(t);
}

Test(topo, big_pus_spread)
{
	struct pw_topo *t = synth(BIG);
	int cpu[64], node[64];

	/* Node by node in turn; in a node, every core's first PU, then the
	 * SMT siblings. */
	for (int k = 0; k < 64; k++) {
		int q = k / 4;
		node[k] = k % 4;
		cpu[k] = 16 * (k % 4) + (q < 8 ? 2 * q : 2 * (q - 8) + 1);
	}
	expect(t,
	       &(struct pw_placement_opts){ .unit = PW_PLACE_PUS,
					    .order = PW_PLACE_SPREAD },
	       cpu, node, 64);
	pw_topo_free(t);
}

Test(topo, big_nodes_filter)
{
	struct pw_topo *t = synth(BIG);
	int cpu[16], node[16];

	for (int i = 0; i < 16; i++) {
		cpu[i] = i < 8 ? 16 + 2 * i : 48 + 2 * (i - 8);
		node[i] = i < 8 ? 1 : 3;
	}
	expect(t, &(struct pw_placement_opts){ .nodes = "1,3" }, cpu, node, 16);

	for (int k = 0; k < 16; k++) {
		node[k] = k % 2 ? 2 : 0;
		cpu[k] = 16 * node[k] + 2 * (k / 2);
	}
	expect(t,
	       &(struct pw_placement_opts){ .nodes = "0,2",
					    .order = PW_PLACE_SPREAD },
	       cpu, node, 16);
	pw_topo_free(t);
}

Test(topo, big_explicit_cpus)
{
	struct pw_topo *t = synth(BIG);

	expect(t, &(struct pw_placement_opts){ .cpus = "8,0-3" },
	       (int[]){ 0, 1, 2, 3, 8 }, (int[]){ 0, 0, 0, 0, 0 }, 5);
	expect(t,
	       &(struct pw_placement_opts){ .cpus = "0-3,8",
					    .order = PW_PLACE_SPREAD },
	       (int[]){ 0, 2, 8, 1, 3 }, (int[]){ 0, 0, 0, 0, 0 }, 5);
	expect(t,
	       &(struct pw_placement_opts){ .cpus = "1,17,33",
					    .unit = PW_PLACE_CORES },
	       (int[]){ 1, 17, 33 }, (int[]){ 0, 1, 2 }, 3);
	/* Explicit CPUs filtered by node. */
	expect(t, &(struct pw_placement_opts){ .cpus = "14-18", .nodes = "1" },
	       (int[]){ 16, 17, 18 }, (int[]){ 1, 1, 1 }, 3);
	pw_topo_free(t);
}

Test(topo, big_shard_count)
{
	struct pw_topo *t = synth(BIG);

	expect(t, &(struct pw_placement_opts){ .shards = 3 },
	       (int[]){ 0, 2, 4 }, (int[]){ 0, 0, 0 }, 3);
	expect(t,
	       &(struct pw_placement_opts){ .shards = 5,
					    .order = PW_PLACE_SPREAD },
	       (int[]){ 0, 16, 32, 48, 2 }, (int[]){ 0, 1, 2, 3, 0 }, 5);
	pw_topo_free(t);
}

Test(topo, small_policies)
{
	struct pw_topo *t = synth(SMALL);
	const int zero[4] = { 0 };

	cr_assert_eq(t->npus, 4);
	cr_assert_eq(t->ncores, 2);
	expect(t, NULL, (int[]){ 0, 2 }, zero, 2);
	expect(t, &(struct pw_placement_opts){ .order = PW_PLACE_SPREAD },
	       (int[]){ 0, 2 }, zero, 2);
	expect(t, &(struct pw_placement_opts){ .unit = PW_PLACE_PUS },
	       (int[]){ 0, 1, 2, 3 }, zero, 4);
	expect(t,
	       &(struct pw_placement_opts){ .unit = PW_PLACE_PUS,
					    .order = PW_PLACE_SPREAD },
	       (int[]){ 0, 2, 1, 3 }, zero, 4);
	expect(t,
	       &(struct pw_placement_opts){ .shards = 5,
					    .allow_oversubscribe = true },
	       (int[]){ 0, 2, 0, 2, 0 }, (int[]){ 0, 0, 0, 0, 0 }, 5);
	pw_topo_free(t);
}

Test(topo, l3_spread)
{
	struct pw_topo *t = synth(L3S);

	cr_assert_eq(t->nl3, 4);
	expect(t, NULL, (int[]){ 0, 1, 2, 3, 4, 5, 6, 7 },
	       (int[]){ 0, 0, 0, 0, 1, 1, 1, 1 }, 8);
	expect(t, &(struct pw_placement_opts){ .order = PW_PLACE_SPREAD },
	       (int[]){ 0, 4, 2, 6, 1, 5, 3, 7 },
	       (int[]){ 0, 1, 0, 1, 0, 1, 0, 1 }, 8);
	expect(t,
	       &(struct pw_placement_opts){ .nodes = "1",
					    .order = PW_PLACE_SPREAD },
	       (int[]){ 4, 6, 5, 7 }, (int[]){ 1, 1, 1, 1 }, 4);
	pw_topo_free(t);
}

Test(topo, place_errors)
{
	struct pw_topo *t = synth(BIG);
	struct pw_placement p;

	/* unknown CPUs and nodes */
	cr_expect_eq(place_err(t, &(struct pw_placement_opts){ .cpus = "64" }),
		     -ENODEV);
	cr_expect_eq(
		place_err(t, &(struct pw_placement_opts){ .cpus = "0,99999" }),
		-ENODEV);
	cr_expect_eq(place_err(t, &(struct pw_placement_opts){ .nodes = "4" }),
		     -ENODEV);
	cr_expect_eq(place_err(t,
			       &(struct pw_placement_opts){ .nodes = "0,7" }),
		     -ENODEV);
	/* malformed lists */
	cr_expect_eq(place_err(t, &(struct pw_placement_opts){ .cpus = "0-" }),
		     -EINVAL);
	cr_expect_eq(place_err(t, &(struct pw_placement_opts){ .cpus = "" }),
		     -EINVAL);
	cr_expect_eq(place_err(t, &(struct pw_placement_opts){ .nodes = "x" }),
		     -EINVAL);
	/* empty sets */
	cr_expect_eq(place_err(t, &(struct pw_placement_opts){ .cpus = "0-3",
							       .nodes = "1" }),
		     -EINVAL);
	/* too many shards */
	cr_expect_eq(place_err(t, &(struct pw_placement_opts){ .shards = 33 }),
		     -E2BIG);
	cr_expect_eq(place_err(t, &(struct pw_placement_opts){ .cpus = "0-1",
							       .shards = 3 }),
		     -E2BIG);
	cr_expect_eq(place_err(t,
			       &(struct pw_placement_opts){
				       .shards = PW_PLACE_MAX + 1,
				       .allow_oversubscribe = true }),
		     -E2BIG);
	/* bad arguments */
	cr_expect_eq(pw_topo_place(NULL, NULL, &p), -EINVAL);
	cr_expect_eq(pw_topo_place(t, NULL, NULL), -EINVAL);
	cr_expect_eq(place_err(t, &(struct pw_placement_opts){ .unit = 7 }),
		     -EINVAL);
	pw_topo_free(t);
}

Test(topo, distance)
{
	struct pw_topo *t = synth(BIG);

	cr_expect_eq(pw_topo_distance(t, 0, 0), PW_DIST_SAME_CORE);
	cr_expect_eq(pw_topo_distance(t, 0, 1), PW_DIST_SAME_CORE);
	cr_expect_eq(pw_topo_distance(t, 0, 2), PW_DIST_SAME_L3);
	cr_expect_eq(pw_topo_distance(t, 15, 0), PW_DIST_SAME_L3);
	cr_expect_eq(pw_topo_distance(t, 0, 16), PW_DIST_OTHER_NODE);
	cr_expect_eq(pw_topo_distance(t, 0, 63), PW_DIST_OTHER_NODE);
	cr_expect_eq(pw_topo_distance(t, 0, 64), -ENODEV);
	cr_expect_eq(pw_topo_distance(t, -1, 0), -ENODEV);
	cr_expect_eq(pw_topo_distance(NULL, 0, 0), -EINVAL);
	pw_topo_free(t);

	t = synth(L3S);
	cr_expect_eq(pw_topo_distance(t, 0, 1), PW_DIST_SAME_L3);
	cr_expect_eq(pw_topo_distance(t, 0, 2), PW_DIST_SAME_NODE);
	cr_expect_eq(pw_topo_distance(t, 3, 4), PW_DIST_OTHER_NODE);
	pw_topo_free(t);

	t = synth("pack:1 numa:1 core:2 pu:1");
	cr_expect_eq(pw_topo_distance(t, 0, 1), PW_DIST_SAME_NODE);
	pw_topo_free(t);
}

static void expect_list(const char *s, const int *want, int n)
{
	int got[16];
	int r = pw_cpulist_parse(s, got, 16);

	cr_assert_eq(r, n, "parse(\"%s\"): %d, want %d", s, r, n);
	for (int i = 0; i < n; i++)
		cr_expect_eq(got[i], want[i], "parse(\"%s\")[%d]: %d, want %d",
			     s, i, got[i], want[i]);
}

Test(topo, cpulist_parse)
{
	int buf[4];

	expect_list("0-3,8", (int[]){ 0, 1, 2, 3, 8 }, 5);
	expect_list("8,0-3", (int[]){ 0, 1, 2, 3, 8 }, 5);
	expect_list("7", (int[]){ 7 }, 1);
	expect_list("1,1,0-1", (int[]){ 0, 1 }, 2);
	expect_list("2-2", (int[]){ 2 }, 1);
	expect_list(" 3 , 5-6\n", (int[]){ 3, 5, 6 }, 3);
	expect_list("0-1,10-12,65535", (int[]){ 0, 1, 10, 11, 12, 65535 }, 6);
	cr_expect_eq(pw_cpulist_parse("0-99", NULL, 0), 100);

	static const char *const bad[] = {
		"",   " ",  ",",     "1,",  ",1",  "1,,2", "3-1",   "a",
		"1-", "-1", "1-2-3", "1 2", "1;2", "0x1",  "1\n\n", "+1",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(pw_cpulist_parse(bad[i], buf, 4), -EINVAL,
			     "parse(\"%s\")", bad[i]);
	cr_expect_eq(pw_cpulist_parse("65536", buf, 4), -ERANGE);
	cr_expect_eq(pw_cpulist_parse("0-99999999999999999999", buf, 4),
		     -ERANGE);
	cr_expect_eq(pw_cpulist_parse("0-4", buf, 4), -E2BIG);
	cr_expect_eq(pw_cpulist_parse(NULL, buf, 4), -EINVAL);
}

Test(topo, cpulist_format)
{
	char buf[64];

	cr_expect_eq(pw_cpulist_format((int[]){ 0, 1, 2, 3, 8 }, 5, buf,
				       sizeof(buf)),
		     5);
	cr_expect_str_eq(buf, "0-3,8");
	cr_expect_eq(pw_cpulist_format((int[]){ 1, 3, 4 }, 3, buf, sizeof(buf)),
		     5);
	cr_expect_str_eq(buf, "1,3-4");
	cr_expect_eq(pw_cpulist_format(NULL, 0, buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "");
	cr_expect_eq(pw_cpulist_format((int[]){ 10, 11, 12 }, 3, buf, 4), 5);
	cr_expect_str_eq(buf, "10-");
	cr_expect_eq(pw_cpulist_format(NULL, 1, buf, 4), -EINVAL);
}

Test(topo, real_machine)
{
	struct pw_topo *t = NULL;
	static struct pw_placement p;
	cpu_set_t set;

	cr_assert_eq(pw_topo_load(&t), 0);
	cr_assert_not_null(t);
	cr_assert_gt(t->npus, 0);
	cr_assert_gt(t->ncores, 0);
	cr_assert_gt(t->nnodes, 0);
	cr_assert(!t->synthetic);
	cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	cr_expect_eq((unsigned)CPU_COUNT(&set), t->npus);
	for (unsigned i = 0; i < t->npus; i++)
		cr_expect(CPU_ISSET(t->pus[i].cpu, &set), "cpu %d",
			  t->pus[i].cpu);

	/* Default: one shard per core, each on a different core. */
	int n = pw_topo_place(t, NULL, &p);
	cr_assert_eq(n, (int)t->ncores);
	for (int i = 0; i < n; i++) {
		const struct pw_topo_pu *pu = pw_topo_find(t, p.cpu[i]);
		cr_assert_not_null(pu);
		cr_expect_eq(pu->smt, 0);
		cr_expect_eq(p.node[i], pu->node);
		for (int j = 0; j < i; j++)
			cr_expect_neq(pw_topo_distance(t, p.cpu[i], p.cpu[j]),
				      PW_DIST_SAME_CORE);
	}
	cr_expect_eq(pw_topo_place(t,
				   &(struct pw_placement_opts){
					   .unit = PW_PLACE_PUS },
				   &p),
		     (int)t->npus);
	pw_topo_free(t);
}
