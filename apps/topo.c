/* SPDX-License-Identifier: MIT */
/*
 * topo.c - `pinwheel topo`: the machine as pinwheel sees it, and where the
 * shards would go.
 *
 * Loads the topology (or an hwloc synthetic one with --synthetic), runs the
 * placement policy chosen by the flags, and prints both as tables or JSON.
 */
#include <errno.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pinwheel/topo.h"
#include "apps/apps.h"
#include "apps/cli.h"

static const char *dist_name(int d)
{
	switch (d) {
	case PW_DIST_SAME_CORE:
		return "core";
	case PW_DIST_SAME_L3:
		return "l3";
	case PW_DIST_SAME_NODE:
		return "node";
	default:
		return "remote";
	}
}

/* The CPUs of node @id as a list, in @buf. */
static void node_cpus(const struct pw_topo *t, int id, char *buf, size_t len)
{
	int *cpus = malloc((t->npus ? t->npus : 1) * sizeof(*cpus));
	unsigned n = 0;

	if (!cpus) {
		snprintf(buf, len, "?");
		return;
	}
	for (unsigned i = 0; i < t->npus; i++)
		if (t->pus[i].node == id)
			cpus[n++] = t->pus[i].cpu;
	/* pus[] is in logical order; a list wants ascending numbers. */
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && cpus[j - 1] > cpus[j]; j--) {
			int x = cpus[j];
			cpus[j] = cpus[j - 1];
			cpus[j - 1] = x;
		}
	if (pw_cpulist_format(cpus, n, buf, len) >= (int)len && len > 4)
		strcpy(buf + len - 4, "...");
	free(cpus);
}

static void print_json(const struct pw_topo *t, const char *synthetic,
		       bool numa, const struct pw_placement_opts *o,
		       const struct pw_placement *p)
{
	char buf[4096];

	printf("{\n  \"source\": ");
	if (synthetic)
		pw_cli_json_str(stdout, synthetic);
	else
		printf("\"machine\"");
	printf(",\n  \"numa_supported\": %s,\n", numa ? "true" : "false");
	printf("  \"packages\": %u,\n  \"l3_groups\": %u,\n  \"cores\": %u,\n"
	       "  \"pus\": %u,\n",
	       t->npackages, t->nl3, t->ncores, t->npus);
	printf("  \"nodes\": [");
	for (unsigned i = 0; i < t->nnodes; i++) {
		node_cpus(t, t->nodes[i].id, buf, sizeof(buf));
		printf("%s\n    {\"id\": %d, \"cpus\": \"%s\", \"pus\": %u, "
		       "\"memory_bytes\": %llu}",
		       i ? "," : "", t->nodes[i].id, buf, t->nodes[i].npus,
		       (unsigned long long)t->nodes[i].mem_bytes);
	}
	printf("\n  ],\n  \"cpus\": [");
	for (unsigned i = 0; i < t->npus; i++) {
		const struct pw_topo_pu *u = &t->pus[i];
		printf("%s\n    {\"cpu\": %d, \"core\": %d, \"smt\": %d, "
		       "\"l3\": %d, \"node\": %d, \"package\": %d}",
		       i ? "," : "", u->cpu, u->core, u->smt, u->l3, u->node,
		       u->package);
	}
	printf("\n  ],\n  \"placement\": {\n");
	printf("    \"unit\": \"%s\",\n    \"order\": \"%s\",\n",
	       o->cpus		       ? "cpus" :
	       o->unit == PW_PLACE_PUS ? "pus" :
					 "cores",
	       o->order == PW_PLACE_SPREAD ? "spread" : "compact");
	printf("    \"shards\": [");
	for (unsigned s = 0; s < p->shards; s++)
		printf("%s\n      {\"shard\": %u, \"cpu\": %d, \"node\": %d, "
		       "\"to_previous\": \"%s\"}",
		       s ? "," : "", s, p->cpu[s], p->node[s],
		       s ? dist_name(pw_topo_distance(t, p->cpu[s - 1],
						      p->cpu[s])) :
			   "");
	printf("\n    ]\n  }\n}\n");
}

static void print_table(const struct pw_topo *t, const char *synthetic,
			bool numa, const struct pw_placement_opts *o,
			const struct pw_placement *p)
{
	char buf[4096];

	if (synthetic)
		printf("machine (synthetic \"%s\"):", synthetic);
	else
		printf("machine:");
	printf(" %u package%s, %u NUMA node%s, %u L3 group%s, %u core%s, "
	       "%u PU%s\n",
	       t->npackages, t->npackages == 1 ? "" : "s", t->nnodes,
	       t->nnodes == 1 ? "" : "s", t->nl3, t->nl3 == 1 ? "" : "s",
	       t->ncores, t->ncores == 1 ? "" : "s", t->npus,
	       t->npus == 1 ? "" : "s");
	if (!synthetic) {
		if (numa)
			printf("NUMA: supported (libnuma), %d node%s "
			       "configured\n",
			       numa_num_configured_nodes(),
			       numa_num_configured_nodes() == 1 ? "" : "s");
		else
			printf("NUMA: not supported, one node\n");
	}

	printf("\n%4s  %10s  %5s  %s\n", "node", "memory MiB", "PUs", "cpus");
	for (unsigned i = 0; i < t->nnodes; i++) {
		node_cpus(t, t->nodes[i].id, buf, sizeof(buf));
		printf("%4d  %10llu  %5u  %s\n", t->nodes[i].id,
		       (unsigned long long)(t->nodes[i].mem_bytes >> 20),
		       t->nodes[i].npus, buf);
	}

	printf("\n%5s  %7s  %4s  %4s  %4s  %3s\n", "cpu", "package", "node",
	       "l3", "core", "smt");
	for (unsigned i = 0; i < t->npus; i++) {
		const struct pw_topo_pu *u = &t->pus[i];
		printf("%5d  %7d  %4d  %4d  %4d  %3d\n", u->cpu, u->package,
		       u->node, u->l3, u->core, u->smt);
	}

	printf("\nplacement: %s, %s, %u shard%s on %u cpu%s\n",
	       o->cpus		       ? "explicit cpus" :
	       o->unit == PW_PLACE_PUS ? "one per PU" :
					 "one per core",
	       o->order == PW_PLACE_SPREAD ? "spread" : "compact", p->shards,
	       p->shards == 1 ? "" : "s", p->ncpus, p->ncpus == 1 ? "" : "s");
	printf("%5s  %5s  %4s  %s\n", "shard", "cpu", "node",
	       "shares with previous");
	for (unsigned s = 0; s < p->shards; s++)
		printf("%5u  %5d  %4d  %s\n", s, p->cpu[s], p->node[s],
		       s ? dist_name(pw_topo_distance(t, p->cpu[s - 1],
						      p->cpu[s])) :
			   "-");
}

/* ---- the command ------------------------------------------------------ */

/* The flags of `pinwheel topo`. */
static struct topo_cmd {
	struct pw_placement_opts o;
	const char *synthetic;
	bool json, pus, spread;
	uint64_t shards;
} T;

static const struct pw_cli_opt topo_opts[] = {
	{ "--json", PW_CLI_BOOL, &T.json, 0, 0, NULL,
	  "print JSON instead of tables" },
	{ "--cpus", PW_CLI_STRING, &T.o.cpus, 0, 0, "LIST",
	  "place on exactly these CPUs, e.g. 0-3,8" },
	{ "--nodes", PW_CLI_STRING, &T.o.nodes, 0, 0, "LIST",
	  "only CPUs of these NUMA nodes, e.g. 0,2" },
	{ "--pus", PW_CLI_BOOL, &T.pus, 0, 0, NULL,
	  "one shard per PU (SMT siblings too); default: per core" },
	{ "--spread", PW_CLI_BOOL, &T.spread, 0, 0, NULL,
	  "round-robin over nodes and L3 groups; default: compact" },
	{ "--shards", PW_CLI_UINT, &T.shards, 1, PW_PLACE_MAX, "N",
	  "this many shards; default: one per CPU chosen" },
	{ "--oversubscribe", PW_CLI_BOOL, &T.o.allow_oversubscribe, 0, 0, NULL,
	  "allow more shards than CPUs" },
	{ "--synthetic", PW_CLI_STRING, &T.synthetic, 0, 0, "DESC",
	  "an hwloc synthetic machine, e.g. "
	  "\"pack:2 numa:2 l3:1 core:8 pu:2\"" },
};

/* --cpus and --shards stay this command's own (no common flags): they
 * describe a placement, possibly of a synthetic machine, not a runtime. */
static const struct pw_cli_cmd topo_cmd = {
	.name = "pinwheel topo",
	.about = "Prints the packages, NUMA nodes, L3 groups, cores "
		 "and PUs of this machine\n(the CPUs this process may "
		 "use) and the planned shard placement.",
	.opts = topo_opts,
	.nopts = sizeof(topo_opts) / sizeof(topo_opts[0]),
};

/* The machine, real or --synthetic; NULL after a message (*@status). */
static struct pw_topo *topo_load(int *status)
{
	struct pw_topo *t = NULL;
	int err;

	if (T.synthetic)
		err = pw_topo_load_synthetic(&t, T.synthetic);
	else
		err = pw_topo_load(&t);
	if (!err)
		return t;
	fprintf(stderr, "pinwheel topo: %s: %s\n",
		T.synthetic ? "bad --synthetic description" :
			      "cannot read the topology (hwloc)",
		strerror(-err));
	*status = T.synthetic && err == -EINVAL ? 2 : 1;
	return NULL;
}

/* Why pw_topo_place() failed with @err, in the flags' words. */
static const char *place_error(int err)
{
	if (err == -ENODEV)
		return "a CPU or node in --cpus/--nodes is not on this "
		       "machine or not allowed";
	if (err == -EINVAL)
		return "malformed --cpus/--nodes list, or no CPU left";
	if (err == -E2BIG)
		return "more shards than CPUs (see --oversubscribe) "
		       "or too many";
	return strerror(-err);
}

int pw_app_topo(int argc, char **argv)
{
	static struct pw_placement p;
	static struct pw_cli cli;
	struct pw_topo *t;
	int err, status = 0;

	T = (struct topo_cmd){ 0 };
	err = pw_cli_parse(&cli, &topo_cmd, argc, argv);
	if (err)
		return pw_cli_status(err);
	if (T.pus)
		T.o.unit = PW_PLACE_PUS;
	if (T.spread)
		T.o.order = PW_PLACE_SPREAD;
	T.o.shards = (unsigned)T.shards;
	t = topo_load(&status);
	if (!t)
		return status;
	err = pw_topo_place(t, &T.o, &p);
	if (err < 0) {
		fprintf(stderr, "pinwheel topo: placement: %s\n",
			place_error(err));
		pw_topo_free(t);
		return err == -ENOMEM ? 1 : 2;
	}
	if (T.json)
		print_json(t, T.synthetic, numa_available() >= 0, &T.o, &p);
	else
		print_table(t, T.synthetic, numa_available() >= 0, &T.o, &p);
	pw_topo_free(t);
	return 0;
}
