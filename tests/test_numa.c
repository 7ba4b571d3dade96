/* SPDX-License-Identifier: MIT */
/*
 * test_numa.c - placement and memory on the real machine: each shard runs
 * on its planned CPU, its memory policy and slab pages are on its node,
 * its allocations come from its own jemalloc arena; pw_mesh_distance()
 * agrees with the topology; bad CPUs, nodes and sets and
 * oversubscription without opting in are refused with exact errors; no
 * NUMA support degrades to one node, a failing hwloc to a clear error.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tests/common.h"

#ifdef PW_HAVE_JEMALLOC
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
		   size_t newlen) __attribute__((weak));
#endif

#define NODE_BITS 1024

static struct pw_runtime *numa_runtime(unsigned shards, const int *cpus,
				       uint32_t flags)
{
	struct pw_config cfg;
	struct pw_runtime *rt = NULL;

	pw_test_config_init(&cfg);
	cfg.shards = shards;
	cfg.cpus = cpus;
	cfg.flags = flags;
	int err = pw_runtime_create(&rt, &cfg);
	cr_assert_eq(err, 0, "pw_runtime_create: %d (%s)", err,
		     pw_strerror_setup(err));
	return rt;
}

/* ---- what a task sees on its shard ---------------------------------- */

struct probe {
	int shard;	      /* pw_shard_id() */
	int ncpus, cpu;	      /* affinity: how many CPUs, the first */
	int thread_mode;      /* the thread's memory policy */
	bool thread_has_node; /* ...naming the shard's node */
	int state_mode;	      /* policy of the task state's pages */
	bool state_has_node;  /* ...naming the shard's node */
	int state_node;	      /* node the task state's page is on */
	int small_arena;      /* arenas.lookup of fresh blocks, or -1 */
	int large_arena;
	void *large; /* 1 MiB kept for the test to free */
	_Atomic bool done;
};

struct probe_arg {
	struct probe *out;
	int node; /* the shard's planned node */
};

static bool mask_has(const unsigned long *mask, int node)
{
	const unsigned bits = 8 * sizeof(unsigned long);
	return node >= 0 && node < NODE_BITS &&
	       (mask[(unsigned)node / bits] >> ((unsigned)node % bits) & 1);
}

static int arena_of(void *p)
{
#ifdef PW_HAVE_JEMALLOC
	unsigned idx;
	size_t sz = sizeof(idx);
	if (mallctl && mallctl("arenas.lookup", &idx, &sz, &p, sizeof(p)) == 0)
		return (int)idx;
#else
	(void)p;
#endif
	return -1;
}

static enum pw_poll probe_poll(struct pw_cx *cx, void *state)
{
	struct probe_arg *a = state; /* copied into the shard's slab */
	struct probe *p = a->out;
	unsigned long mask[NODE_BITS / (8 * sizeof(unsigned long))];
	cpu_set_t set;
	int mode;

	p->shard = pw_shard_id();
	CPU_ZERO(&set);
	p->ncpus = -1;
	if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) == 0) {
		p->ncpus = CPU_COUNT(&set);
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set)) {
				p->cpu = c;
				break;
			}
	}
	memset(mask, 0, sizeof(mask));
	p->thread_mode = -1;
	if (get_mempolicy(&mode, mask, NODE_BITS, NULL, 0) == 0) {
		p->thread_mode = mode;
		p->thread_has_node = mask_has(mask, a->node);
	}
	memset(mask, 0, sizeof(mask));
	p->state_mode = -1;
	if (get_mempolicy(&mode, mask, NODE_BITS, state, MPOL_F_ADDR) == 0) {
		p->state_mode = mode;
		p->state_has_node = mask_has(mask, a->node);
	}
	p->state_node = -1;
	if (get_mempolicy(&mode, NULL, 0, state, MPOL_F_NODE | MPOL_F_ADDR) ==
	    0)
		p->state_node = mode;
#ifdef PW_HAVE_JEMALLOC
	/* Cached blocks may come from elsewhere: start from an empty cache. */
	if (mallctl)
		mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
#endif
	void *small = malloc(200);
	p->large = malloc(1 << 20);
	p->small_arena = arena_of(small);
	p->large_arena = arena_of(p->large);
	free(small);
	/* release: pairs with the acquire load in run_probe(). */
	atomic_store_explicit(&p->done, true, memory_order_release);
	return pw_ready(cx, 0);
}

static void run_probe(struct pw_runtime *rt, unsigned shard, struct probe *p)
{
	int node = pw_runtime_shard_node(rt, shard);
	cr_assert_geq(node, 0);
	struct probe_arg a = { p, node };

	memset(p, 0, sizeof(*p));
	cr_assert_eq(pw_runtime_spawn(rt, shard, probe_poll, &a, sizeof(a),
				      NULL),
		     0);
	/* acquire: pairs with the release store in probe_poll(). */
	PW_TEST_WAIT_UNTIL(atomic_load_explicit(&p->done, memory_order_acquire),
			   PW_TEST_WAIT_SECS, "the probe on shard %u never ran",
			   shard);
}

Test(numa, each_shard_runs_on_its_cpu_with_memory_on_its_node)
{
	PW_TEST_SHARD_ONLY();
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_topo *t;
	cr_assert_eq(pw_topo_load(&t), 0);

	for (unsigned k = 0; k < 2; k++) {
		struct pw_shard_stats st;
		struct probe p;
		cr_assert_eq(pw_runtime_stats(rt, k, &st), 0);
		cr_assert_geq(st.cpu, 0, "shard %u is pinned", k);
		const struct pw_topo_pu *pu = pw_topo_find(t, st.cpu);
		cr_assert_not_null(pu, "planned cpu %d is in the topology",
				   st.cpu);
		int node = pw_runtime_shard_node(rt, k);
		cr_assert_eq(node, pu->node, "shard %u's node is its cpu's", k);

		run_probe(rt, k, &p);
		cr_assert_eq(p.shard, (int)k);
		cr_assert_eq(p.ncpus, 1, "shard %u pinned to one cpu", k);
		cr_assert_eq(p.cpu, st.cpu, "shard %u on its planned cpu", k);
		cr_assert_eq(p.thread_mode, MPOL_PREFERRED,
			     "shard %u thread policy %d", k, p.thread_mode);
		cr_assert(p.thread_has_node);
		cr_assert_eq(p.state_mode, MPOL_PREFERRED,
			     "slab pages of shard %u: policy %d", k,
			     p.state_mode);
		cr_assert(p.state_has_node);
		cr_assert_eq(p.state_node, node, "slab page of shard %u", k);
		free(p.large);
	}
	pw_topo_free(t);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(numa, allocations_on_shard_k_come_from_arena_k)
{
	PW_TEST_SHARD_ONLY();
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_arena_stats as[2];

	int err = pw_runtime_arena_stats(rt, 0, &as[0]);
	if (err == -ENOTSUP) {
		cr_assert_eq(as[0].arena, -1);
		cr_assert_eq(as[0].allocated, 0);
		cr_assert_eq(pw_runtime_destroy(rt), 0);
		cr_skip_test("per-shard jemalloc arenas are not available: a "
			     "sanitizer build (ASan/TSan own malloc) or a "
			     "program whose malloc is not jemalloc's");
		return;
	}
	cr_assert_eq(err, 0);
	cr_assert_eq(pw_runtime_arena_stats(rt, 1, &as[1]), 0);
	cr_assert_geq(as[0].arena, 0);
	cr_assert_geq(as[1].arena, 0);
	cr_assert_neq(as[0].arena, as[1].arena, "one arena per shard");

	for (unsigned k = 0; k < 2; k++) {
		struct probe p;
		struct pw_arena_stats before, after;
		cr_assert_eq(pw_runtime_arena_stats(rt, k, &before), 0);
		run_probe(rt, k, &p);
		cr_assert_eq(p.small_arena, as[k].arena,
			     "small block, shard %u", k);
		cr_assert_eq(p.large_arena, as[k].arena,
			     "large block, shard %u", k);
		cr_assert_eq(pw_runtime_arena_stats(rt, k, &after), 0);
		cr_assert_eq(after.arena, as[k].arena);
		cr_assert_geq(after.large_bytes, before.large_bytes + (1 << 20),
			      "the 1 MiB block counts in arena %d",
			      after.arena);
		cr_assert_eq(after.allocated,
			     after.small_bytes + after.large_bytes);
		free(p.large);
	}
	struct pw_arena_stats x;
	cr_assert_eq(pw_runtime_arena_stats(rt, 2, &x), -ENODEV);
	cr_assert_eq(pw_runtime_arena_stats(rt, 0, NULL), -EINVAL);
	cr_assert_eq(pw_runtime_arena_stats(NULL, 0, &x), -EINVAL);
	cr_assert_eq(pw_runtime_destroy(rt), 0);

	/* A later runtime's shards reuse the arenas. */
	rt = pw_test_runtime(2);
	cr_assert_eq(pw_runtime_arena_stats(rt, 0, &x), 0);
	cr_assert(x.arena == as[0].arena || x.arena == as[1].arena,
		  "arena %d reused", x.arena);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- distance --------------------------------------------------------- */

Test(numa, mesh_distance_follows_the_topology)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_shard_stats s0, s1;
	struct pw_topo *t;

	cr_assert_eq(pw_topo_load(&t), 0);
	cr_assert_eq(pw_runtime_stats(rt, 0, &s0), 0);
	cr_assert_eq(pw_runtime_stats(rt, 1, &s1), 0);
	int want = pw_topo_distance(t, s0.cpu, s1.cpu);
	cr_assert_geq(want, 0);
	cr_assert_eq(pw_mesh_distance(rt, 0, 1), want);
	cr_assert_eq(pw_mesh_distance(rt, 1, 0), want);
	cr_assert_eq(pw_mesh_distance(rt, 0, 0), PW_DIST_SAME_CORE);
	cr_assert_eq(pw_mesh_distance(rt, 1, 1), PW_DIST_SAME_CORE);
	if (t->ncores >= 2) {
		/* Two cores: never the same core. */
		cr_assert_neq(want, PW_DIST_SAME_CORE);
		if (t->nnodes == 1)
			cr_assert(want == PW_DIST_SAME_L3 ||
					  want == PW_DIST_SAME_NODE,
				  "one node: same L3 or same node, got %d",
				  want);
	}
	cr_assert_eq(pw_mesh_distance(rt, 0, 2), -ENODEV);
	cr_assert_eq(pw_mesh_distance(rt, 2, 0), -ENODEV);
	cr_assert_eq(pw_mesh_distance(rt, 0, 1u << 31), -ENODEV);
	cr_assert_eq(pw_mesh_distance(NULL, 0, 1), -EINVAL);
	cr_assert_eq(pw_runtime_shard_node(rt, 2), -ENODEV);
	cr_assert_eq(pw_runtime_shard_node(NULL, 0), -EINVAL);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_mesh_distance(rt, 0, 1), -EINVAL, "destroyed");

	/* Two shards on one CPU share a core. */
	static const int same[2] = { 0, 0 };
	rt = numa_runtime(2, same, PW_CONFIG_OVERSUBSCRIBE);
	cr_assert_eq(pw_mesh_distance(rt, 0, 1), PW_DIST_SAME_CORE);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	pw_topo_free(t);
}

/* ---- bad input -------------------------------------------------------- */

static int create_err(const struct pw_config *cfg)
{
	struct pw_runtime *rt = (void *)1;
	int err = pw_runtime_create(&rt, cfg);
	if (!err)
		pw_runtime_destroy(rt);
	else
		cr_assert_null(rt);
	return err;
}

static int create_placed(unsigned shards, const char *cpus, const char *nodes,
			 uint32_t flags)
{
	struct pw_placement_opts o = { .cpus = cpus, .nodes = nodes };
	struct pw_config cfg;

	pw_test_config_init(&cfg);
	cfg.shards = shards;
	cfg.placement = &o;
	cfg.flags = flags;
	return create_err(&cfg);
}

static int create_on(unsigned shards, const int *cpus, uint32_t flags)
{
	struct pw_config cfg;

	pw_test_config_init(&cfg);
	cfg.shards = shards;
	cfg.cpus = cpus;
	cfg.flags = flags;
	return create_err(&cfg);
}

Test(numa, bad_cpus_nodes_and_sets_are_refused)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int unknown[1] = { (int)ncpu };
	int negative[1] = { -1 };

	cr_assert_eq(create_on(1, unknown, 0), -ENODEV, "unknown cpu");
	cr_assert_eq(create_on(1, negative, 0), -EINVAL, "negative cpu");
	cr_assert_eq(create_placed(1, "100000", NULL, 0), -ENODEV,
		     "cpu beyond any machine");
	cr_assert_eq(create_placed(1, "", NULL, 0), -EINVAL, "empty cpu set");
	cr_assert_eq(create_placed(1, NULL, "", 0), -EINVAL, "empty node set");
	cr_assert_eq(create_placed(1, "0-", NULL, 0), -EINVAL, "malformed");
	cr_assert_eq(create_placed(1, NULL, "999", 0), -ENODEV, "unknown node");
	cr_assert_eq(create_placed(1, NULL, "70000", 0), -ENODEV,
		     "node beyond any machine");
	cr_assert_eq(create_placed(1, "0", NULL, 0), 0);
	cr_assert_eq(create_placed(1, NULL, "0", 0), 0);

	/* Both a CPU list and a policy; a policy for another shard count. */
	static const int zero[1] = { 0 };
	struct pw_placement_opts o = { .shards = 2 };
	struct pw_config cfg;
	pw_test_config_init(&cfg);
	cfg.shards = 1;
	cfg.cpus = zero;
	cfg.placement = &o;
	cr_assert_eq(create_err(&cfg), -EINVAL, "cpus and placement");
	cfg.cpus = NULL;
	cr_assert_eq(create_err(&cfg), -EINVAL, "placement shards differ");

	/* The messages say what is wrong. */
	cr_assert(strstr(pw_strerror_setup(-ENODEV), "offline"));
	cr_assert(strstr(pw_strerror_setup(-E2BIG), "PW_CONFIG_OVERSUBSCRIBE"));
	cr_assert(strstr(pw_strerror_setup(-ENXIO), "hwloc"));
	cr_assert(strstr(pw_strerror_setup(-EINVAL), "empty"));
}

Test(numa, cpu_outside_the_affinity_mask_is_refused)
{
	cpu_set_t set;
	cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	if (CPU_COUNT(&set) < 2)
		cr_skip_test("needs 2 CPUs");
	int last = -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			last = c;
	CPU_CLR(last, &set);
	/* In a child, every thread (a sanitizer may run its own): the mask
	 * of a process is the union of its threads'. */
	pid_t pid = pw_test_fork();
	if (pid == 0) {
		struct pw_config cfg;
		struct pw_runtime *rt;
		int cpus[1] = { last };
		if (pw_test_restrict_threads(&set))
			_exit(2);
		pw_test_config_init(&cfg);
		cfg.shards = 1;
		cfg.cpus = cpus;
		_exit(pw_runtime_create(&rt, &cfg) == -ENODEV ? 0 : 1);
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "cpu %d outside the mask: -ENODEV (status %d)", last, status);
}

Test(numa, more_shards_than_cpus_needs_opting_in)
{
	struct pw_topo *t;
	cr_assert_eq(pw_topo_load(&t), 0);
	unsigned cores = t->ncores, pus = t->npus;
	pw_topo_free(t);

	struct pw_config cfg;
	pw_test_config_init(&cfg);
	cr_assert_eq(cfg.shards, cores, "default: one shard per core");
	cr_assert_eq(create_err(&cfg), 0);
	cfg.shards = cores + 1;
	cr_assert_eq(create_err(&cfg), -E2BIG, "default placement");
	cr_assert_eq(create_placed(pus + 1, NULL, NULL, 0), -E2BIG);

	static const int twice[2] = { 0, 0 };
	cr_assert_eq(create_on(2, twice, 0), -E2BIG, "one cpu twice");
	cr_assert_eq(create_on(2, twice, PW_CONFIG_OVERSUBSCRIBE), 0);

	/* Opted in: the shards wrap around the CPUs and all work. */
	struct pw_runtime *rt;
	cfg.shards = cores + 2;
	cfg.flags = PW_CONFIG_OVERSUBSCRIBE;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	for (unsigned k = 0; k < cfg.shards; k++) {
		struct pw_shard_stats st;
		struct probe p;
		cr_assert_eq(pw_runtime_stats(rt, k, &st), 0);
		run_probe(rt, k, &p);
		cr_assert_eq(p.cpu, st.cpu);
		free(p.large);
	}
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- degraded machines -------------------------------------------------- */

Test(numa, hwloc_failure_is_a_clear_error)
{
	/* This process only: each test runs in its own. */
	setenv("HWLOC_COMPONENTS", "stop", 1); /* no discovery at all */
	struct pw_topo *t;
	int err = pw_topo_load(&t);
	cr_assert_eq(err, -ENOSYS, "hwloc cannot discover: %d", err);
	struct pw_runtime *rt = (void *)1;
	cr_assert_eq(pw_runtime_create(&rt, NULL), -ENXIO);
	cr_assert_null(rt);
}

/* get_mempolicy, set_mempolicy and mbind fail with ENOSYS, as on a kernel
 * without NUMA support. */
static void forbid_numa(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_get_mempolicy, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_set_mempolicy, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mbind, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	cr_assert_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
}

static enum pw_poll answer_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	return pw_ready(cx, 42);
}

Test(numa, no_numa_support_is_one_node)
{
	forbid_numa();
	struct pw_runtime *rt = pw_test_runtime(2);
	for (unsigned k = 0; k < 2; k++)
		cr_assert_eq(pw_runtime_shard_node(rt, k), 0);
	cr_assert_leq(pw_mesh_distance(rt, 0, 1), PW_DIST_SAME_NODE);
	cr_assert_eq(pw_test_block_on(rt, answer_poll, NULL), 42);
	cr_assert_eq(pw_runtime_destroy(rt), 0);

	/* `pinwheel topo` says so. */
	int pfd[2];
	cr_assert_eq(pipe(pfd), 0);
	pid_t pid = pw_test_fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		execl(PW_BUILDDIR "/pinwheel", "pinwheel", "topo", (char *)0);
		_exit(127);
	}
	close(pfd[1]);
	char out[4096] = { 0 };
	size_t got = 0;
	pw_test_read_rest(pfd[0], out, sizeof(out), &got);
	int status;
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert(strstr(out, "NUMA: not supported, one node"), "output: %s",
		  out);
}
