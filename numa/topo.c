/* SPDX-License-Identifier: MIT */
/*
 * topo.c - topology snapshots from hwloc and shard placement.
 *
 * hwloc is used only while loading: the tree is walked once and flattened
 * into struct pw_topo (one row per PU with its core, L3, node and package
 * ids), then the hwloc topology is destroyed. Placement works on that flat
 * array alone: pick the candidate PUs (first PU of each core, every PU, or
 * an explicit list, filtered by node), order them compact (hwloc logical
 * order) or spread (sort keys that emulate nested round-robin over nodes,
 * L3 groups and SMT ranks), then hand them to shards, wrapping around when
 * oversubscription is allowed.
 */
#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fault.h"
#include "pinwheel/topo.h"

static int neg_errno(int fallback)
{
	return errno > 0 ? -errno : -fallback;
}

/* Id of @obj's ancestor of @type (its logical index), or -1. */
static int ancestor_id(hwloc_topology_t topo, hwloc_obj_t obj,
		       hwloc_obj_type_t type)
{
	hwloc_obj_t a = hwloc_get_ancestor_obj_by_type(topo, type, obj);
	return a ? (int)a->logical_index : -1;
}

/* Fill @t's PUs: CPU, core, SMT rank, L3 and package of each; PUs
 * without a core become cores of their own, numbered past @ncore.
 * Returns 0 or -ENOMEM. */
static int fill_pus(hwloc_topology_t topo, struct pw_topo *t, int ncore)
{
	/* Per core, the SMT rank its next PU gets. */
	int *smt_next = pw__fault_calloc(
		PW__FAULT_TOPO, (size_t)ncore + t->npus, sizeof(*smt_next));
	unsigned extra = 0;

	if (!smt_next)
		return -ENOMEM;
	for (unsigned i = 0; i < t->npus; i++) {
		hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, i);
		struct pw_topo_pu *p = &t->pus[i];

		p->cpu = (int)pu->os_index;
		p->core = ancestor_id(topo, pu, HWLOC_OBJ_CORE);
		if (p->core < 0)
			p->core = ncore + (int)extra++;
		p->smt = smt_next[p->core]++;
		p->l3 = ancestor_id(topo, pu, HWLOC_OBJ_L3CACHE);
		p->package = ancestor_id(topo, pu, HWLOC_OBJ_PACKAGE);
		p->node = -1;
	}
	free(smt_next);
	t->ncores = (unsigned)ncore + extra;
	return 0;
}

/* Fill @t's @nnode NUMA nodes and give each PU its node; a PU no node
 * claims (not expected) goes to the first node. */
static void fill_nodes(hwloc_topology_t topo, struct pw_topo *t, int nnode)
{
	if (nnode == 0) {
		/* Cannot happen with hwloc 2, which always has a node. */
		t->nnodes = 1;
		t->nodes[0].npus = t->npus;
	}
	for (int n = 0; n < nnode; n++) {
		hwloc_obj_t node = hwloc_get_obj_by_type(
			topo, HWLOC_OBJ_NUMANODE, (unsigned)n);
		struct pw_topo_node *tn = &t->nodes[t->nnodes++];

		tn->id = (int)node->os_index;
		tn->mem_bytes = node->attr ? node->attr->numanode.local_memory :
					     0;
		for (unsigned i = 0; i < t->npus; i++) {
			struct pw_topo_pu *p = &t->pus[i];
			if (p->node < 0 && node->cpuset &&
			    hwloc_bitmap_isset(node->cpuset,
					       (unsigned)p->cpu)) {
				p->node = tn->id;
				tn->npus++;
			}
		}
	}
	for (unsigned i = 0; i < t->npus; i++) {
		if (t->pus[i].node < 0) {
			t->pus[i].node = t->nodes[0].id;
			t->nodes[0].npus++;
		}
	}
}

/* Flatten a loaded hwloc topology into a new snapshot. */
static int snapshot(hwloc_topology_t topo, bool synthetic, struct pw_topo **out)
{
	int npu = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
	int ncore = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
	int nl3 = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_L3CACHE);
	int nnode = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
	int npack = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
	struct pw_topo *t;

	if (npu <= 0)
		return -ENODEV;
	if (ncore < 0 || nl3 < 0 || nnode < 0 || npack < 0)
		return -EINVAL;
	t = pw__fault_calloc(PW__FAULT_TOPO, 1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->pus = pw__fault_calloc(PW__FAULT_TOPO, (size_t)npu, sizeof(*t->pus));
	t->nodes = pw__fault_calloc(PW__FAULT_TOPO, nnode ? (size_t)nnode : 1,
				    sizeof(*t->nodes));
	t->npus = (unsigned)npu;
	t->nl3 = (unsigned)nl3;
	t->npackages = (unsigned)npack;
	t->synthetic = synthetic;
	if (!t->pus || !t->nodes || fill_pus(topo, t, ncore)) {
		pw_topo_free(t);
		return -ENOMEM;
	}
	fill_nodes(topo, t, nnode);
	*out = t;
	return 0;
}

/* Keep only the CPUs this process may run on. */
static int restrict_to_affinity(hwloc_topology_t topo)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	int err = 0;

	if (!set)
		return -ENOMEM;
	if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) < 0 &&
	    hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_THREAD) < 0) {
		/* Binding unsupported: keep what hwloc calls allowed. */
		goto out;
	}
	if (hwloc_bitmap_iszero(set)) {
		err = -ENODEV;
		goto out;
	}
	errno = 0;
	if (hwloc_topology_restrict(topo, set, 0) < 0)
		err = neg_errno(EINVAL);
out:
	hwloc_bitmap_free(set);
	return err;
}

static int load(struct pw_topo **out, const char *desc)
{
	hwloc_topology_t topo;
	int err;

	errno = 0;
	if (hwloc_topology_init(&topo) < 0)
		return neg_errno(ENOMEM);
	if (desc) {
		errno = 0;
		if (hwloc_topology_set_synthetic(topo, desc) < 0) {
			err = neg_errno(EINVAL);
			goto out;
		}
	}
	/* Whatever errno hwloc leaves (EINVAL without components), a
	 * failed discovery is -ENOSYS, as pw_topo_load() promises. */
	if (hwloc_topology_load(topo) < 0) {
		err = -ENOSYS;
		goto out;
	}
	if (!desc) {
		err = restrict_to_affinity(topo);
		if (err)
			goto out;
	}
	err = snapshot(topo, desc != NULL, out);
out:
	hwloc_topology_destroy(topo);
	return err;
}

int pw_topo_load(struct pw_topo **out)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	return load(out, NULL);
}

int pw_topo_load_synthetic(struct pw_topo **out, const char *desc)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!desc || !*desc)
		return -EINVAL;
	return load(out, desc);
}

void pw_topo_free(struct pw_topo *t)
{
	if (!t)
		return;
	free(t->pus);
	free(t->nodes);
	free(t);
}

const struct pw_topo_pu *pw_topo_find(const struct pw_topo *t, int cpu)
{
	if (!t)
		return NULL;
	for (unsigned i = 0; i < t->npus; i++)
		if (t->pus[i].cpu == cpu)
			return &t->pus[i];
	return NULL;
}

int pw_topo_distance(const struct pw_topo *t, int cpu_a, int cpu_b)
{
	const struct pw_topo_pu *a, *b;

	if (!t)
		return -EINVAL;
	a = pw_topo_find(t, cpu_a);
	b = pw_topo_find(t, cpu_b);
	if (!a || !b)
		return -ENODEV;
	if (a->core == b->core)
		return PW_DIST_SAME_CORE;
	if (a->l3 >= 0 && a->l3 == b->l3)
		return PW_DIST_SAME_L3;
	if (a->node == b->node)
		return PW_DIST_SAME_NODE;
	return PW_DIST_OTHER_NODE;
}

/* ---- CPU lists ---- */

static const char *skip_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* Parse a decimal number below PW_CPULIST_LIMIT at *@sp. */
static int parse_num(const char **sp, unsigned *v)
{
	const char *s = *sp;
	unsigned long n = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	while (*s >= '0' && *s <= '9') {
		n = n * 10 + (unsigned long)(*s - '0');
		if (n >= PW_CPULIST_LIMIT)
			return -ERANGE;
		s++;
	}
	*sp = s;
	*v = (unsigned)n;
	return 0;
}

#define BITS_PER_WORD (8 * sizeof(unsigned long))

int pw_cpulist_parse(const char *s, int *out, unsigned max)
{
	unsigned long *bits;
	unsigned count = 0;
	int err = 0;

	if (!s)
		return -EINVAL;
	bits = pw__fault_calloc(PW__FAULT_TOPO,
				PW_CPULIST_LIMIT / BITS_PER_WORD,
				sizeof(*bits));
	if (!bits)
		return -ENOMEM;
	for (;;) {
		unsigned lo, hi;

		s = skip_blanks(s);
		err = parse_num(&s, &lo);
		if (err)
			goto out;
		hi = lo;
		if (*s == '-') {
			s++;
			err = parse_num(&s, &hi);
			if (err)
				goto out;
			if (hi < lo) {
				err = -EINVAL;
				goto out;
			}
		}
		for (unsigned v = lo; v <= hi; v++) {
			unsigned long m = 1UL << (v % BITS_PER_WORD);
			if (!(bits[v / BITS_PER_WORD] & m)) {
				bits[v / BITS_PER_WORD] |= m;
				count++;
			}
		}
		s = skip_blanks(s);
		if (*s != ',')
			break;
		s++;
	}
	if (*s == '\n')
		s++;
	if (*s) {
		err = -EINVAL;
		goto out;
	}
	if (out) {
		if (count > max) {
			err = -E2BIG;
			goto out;
		}
		unsigned k = 0;
		for (unsigned v = 0; v < PW_CPULIST_LIMIT; v++)
			if (bits[v / BITS_PER_WORD] &
			    (1UL << (v % BITS_PER_WORD)))
				out[k++] = (int)v;
	}
	err = (int)count;
out:
	free(bits);
	return err;
}

int pw_cpulist_format(const int *cpus, unsigned n, char *buf, size_t len)
{
	size_t pos = 0;

	if ((!cpus && n) || (!buf && len))
		return -EINVAL;
	if (len)
		buf[0] = '\0';
	for (unsigned i = 0; i < n;) {
		unsigned j = i;
		char item[32];
		int w;

		while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
			j++;
		if (j == i)
			w = snprintf(item, sizeof(item), "%s%d", i ? "," : "",
				     cpus[i]);
		else
			w = snprintf(item, sizeof(item), "%s%d-%d",
				     i ? "," : "", cpus[i], cpus[j]);
		if (pos < len)
			snprintf(buf + pos, len - pos, "%s", item);
		pos += (size_t)w;
		i = j + 1;
	}
	return (int)pos;
}

/* ---- placement ---- */

/* A candidate PU and its sort keys. */
struct cand {
	unsigned pu;   /* index in t->pus (its logical order) */
	unsigned node; /* rank of its node in t->nodes */
	int l3;
	int smt;
	unsigned p; /* rank within its (node, L3) group, spread order */
	unsigned q; /* rank within its node, spread order */
};

static int cmp_u(unsigned a, unsigned b)
{
	return a < b ? -1 : a > b;
}

/* (node, l3, smt, logical) */
static int cmp_group(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;
	int c = cmp_u(a->node, b->node);
	if (!c)
		c = a->l3 < b->l3 ? -1 : a->l3 > b->l3;
	if (!c)
		c = a->smt < b->smt ? -1 : a->smt > b->smt;
	return c ? c : cmp_u(a->pu, b->pu);
}

/* (node, p, l3): round-robin over a node's L3 groups. */
static int cmp_in_node(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;
	int c = cmp_u(a->node, b->node);
	if (!c)
		c = cmp_u(a->p, b->p);
	if (!c)
		c = a->l3 < b->l3 ? -1 : a->l3 > b->l3;
	return c ? c : cmp_u(a->pu, b->pu);
}

/* (q, node): round-robin over the nodes. */
static int cmp_spread(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;
	int c = cmp_u(a->q, b->q);
	return c ? c : cmp_u(a->node, b->node);
}

static void order_spread(struct cand *c, unsigned n)
{
	qsort(c, n, sizeof(*c), cmp_group);
	for (unsigned i = 0; i < n; i++)
		c[i].p = (i && c[i].node == c[i - 1].node &&
			  c[i].l3 == c[i - 1].l3) ?
				 c[i - 1].p + 1 :
				 0;
	qsort(c, n, sizeof(*c), cmp_in_node);
	for (unsigned i = 0; i < n; i++)
		c[i].q = (i && c[i].node == c[i - 1].node) ? c[i - 1].q + 1 : 0;
	qsort(c, n, sizeof(*c), cmp_spread);
}

static int node_rank(const struct pw_topo *t, int id)
{
	for (unsigned i = 0; i < t->nnodes; i++)
		if (t->nodes[i].id == id)
			return (int)i;
	return -1;
}

/* Mark in @want (one flag per PU) the PUs of CPU list @list. */
static int want_cpus(const struct pw_topo *t, const char *list, bool *want)
{
	int n = pw_cpulist_parse(list, NULL, 0);
	int *cpus;

	if (n < 0)
		return n == -ERANGE ? -ENODEV : n;
	cpus = pw__fault_malloc(PW__FAULT_TOPO, (size_t)n * sizeof(*cpus));
	if (!cpus)
		return -ENOMEM;
	n = pw_cpulist_parse(list, cpus, (unsigned)n);
	for (int i = 0; i < n; i++) {
		const struct pw_topo_pu *p = pw_topo_find(t, cpus[i]);
		if (!p) {
			n = -ENODEV;
			break;
		}
		want[p - t->pus] = true;
	}
	free(cpus);
	return n < 0 ? n : 0;
}

/* Mark in @keep (one flag per node rank) the nodes of list @list. */
static int want_nodes(const struct pw_topo *t, const char *list, bool *keep)
{
	int n = pw_cpulist_parse(list, NULL, 0);
	int *ids;

	if (n < 0)
		return n == -ERANGE ? -ENODEV : n;
	ids = pw__fault_malloc(PW__FAULT_TOPO, (size_t)n * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	n = pw_cpulist_parse(list, ids, (unsigned)n);
	for (int i = 0; i < n; i++) {
		int r = node_rank(t, ids[i]);
		if (r < 0) {
			n = -ENODEV;
			break;
		}
		keep[r] = true;
	}
	free(ids);
	return n < 0 ? n : 0;
}

/* Mark the PUs @o wants in @want and the nodes it keeps in @keep.
 * Returns 0 or a negative errno (a bad list). */
static int choose(const struct pw_topo *t, const struct pw_placement_opts *o,
		  bool *want, bool *keep)
{
	int err = 0;

	if (o->cpus)
		err = want_cpus(t, o->cpus, want);
	else
		for (unsigned i = 0; i < t->npus; i++)
			want[i] = o->unit == PW_PLACE_PUS || t->pus[i].smt == 0;
	if (err)
		return err;
	if (o->nodes)
		return want_nodes(t, o->nodes, keep);
	for (unsigned i = 0; i < t->nnodes; i++)
		keep[i] = true;
	return 0;
}

/* The candidate PUs in @c, in @o's order: wanted, on a kept node.
 * Returns how many (0: none), or -E2BIG past PW_PLACE_MAX. */
static int candidates(const struct pw_topo *t,
		      const struct pw_placement_opts *o, const bool *want,
		      const bool *keep, struct cand *c)
{
	unsigned n = 0;

	for (unsigned i = 0; i < t->npus; i++) {
		int r = node_rank(t, t->pus[i].node);
		if (!want[i] || r < 0 || !keep[r])
			continue;
		c[n++] = (struct cand){ .pu = i,
					.node = (unsigned)r,
					.l3 = t->pus[i].l3,
					.smt = t->pus[i].smt };
	}
	if (n > PW_PLACE_MAX)
		return -E2BIG;
	if (o->order == PW_PLACE_SPREAD)
		order_spread(c, n);
	return (int)n;
}

/* Deal @o's shards over the @n candidates @c into @out. Returns the
 * shard count or -E2BIG. */
static int deal(const struct pw_topo *t, const struct pw_placement_opts *o,
		const struct cand *c, unsigned n, struct pw_placement *out)
{
	unsigned shards = o->shards ? o->shards : n;

	if (shards > PW_PLACE_MAX || (shards > n && !o->allow_oversubscribe))
		return -E2BIG;
	memset(out, 0, sizeof(*out));
	out->shards = shards;
	out->ncpus = shards < n ? shards : n;
	for (unsigned s = 0; s < shards; s++) {
		const struct pw_topo_pu *p = &t->pus[c[s % n].pu];
		out->cpu[s] = p->cpu;
		out->node[s] = p->node;
	}
	return (int)shards;
}

int pw_topo_place(const struct pw_topo *t, const struct pw_placement_opts *o,
		  struct pw_placement *out)
{
	static const struct pw_placement_opts defaults;
	bool *want = NULL, *keep = NULL;
	struct cand *c = NULL;
	int err;

	if (!t || !out || !t->npus)
		return -EINVAL;
	if (!o)
		o = &defaults;
	if (o->unit != PW_PLACE_CORES && o->unit != PW_PLACE_PUS)
		return -EINVAL;
	if (o->order != PW_PLACE_COMPACT && o->order != PW_PLACE_SPREAD)
		return -EINVAL;
	want = pw__fault_calloc(PW__FAULT_TOPO, t->npus, sizeof(*want));
	keep = pw__fault_calloc(PW__FAULT_TOPO, t->nnodes, sizeof(*keep));
	c = pw__fault_calloc(PW__FAULT_TOPO, t->npus, sizeof(*c));
	err = !want || !keep || !c ? -ENOMEM : choose(t, o, want, keep);
	if (!err)
		err = candidates(t, o, want, keep, c);
	if (err == 0)
		err = -EINVAL; /* no candidate */
	if (err > 0)
		err = deal(t, o, c, (unsigned)err, out);
	free(want);
	free(keep);
	free(c);
	return err;
}
