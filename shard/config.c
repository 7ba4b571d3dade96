/* SPDX-License-Identifier: MIT */
/*
 * config.c - a runtime's configuration: its defaults, its check, and the
 * words for a runtime that would not start.
 *
 * pw_config_init() takes its defaults from the machine (its topology)
 * and from nothing else: no environment variable changes them, so a
 * program that wants one (the pinwheel command, the test runner) reads it
 * itself and sets the field.
 *
 * pw_config_check() finds the first mistake pw_runtime_create() would
 * refuse and names its field. It runs in two steps, in the order
 * pw_runtime_create() meets them and with the errno it returns:
 *   1. the fields alone (pw__config_fields()): the very check
 *      pw_runtime_create() makes before it places a shard;
 *   2. the placement on a topology snapshot: the CPU list or the
 *      placement policy, as numa/mem.c's pw__mem_place() checks them
 *      when the runtime starts (pw_runtime_create() does not load the
 *      topology twice: step 2 is its own placement).
 * pw_strerror_setup() explains the errors that are not about one field.
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pinwheel/runtime.h"
#include "pinwheel/topo.h"
#include "shard/shard_int.h"

void pw_config_init(struct pw_config *cfg)
{
	if (!cfg)
		return;
	cpu_set_t set;
	struct pw_topo *t;
	memset(cfg, 0, sizeof(*cfg));
	cfg->shards = 1;
	if (pw_topo_load(&t) == 0) {
		/* One shard per physical core (SMT siblings skipped). */
		cfg->shards = t->ncores > 0 ? (unsigned)t->ncores : 1;
		pw_topo_free(t);
	} else if (sched_getaffinity(0, sizeof(set), &set) == 0 &&
		   CPU_COUNT(&set) > 0) {
		cfg->shards = (unsigned)CPU_COUNT(&set);
	}
	cfg->ring_entries = 256;
	cfg->cq_factor = 8;
	cfg->batch = 64;
	cfg->tick_ns = 1000000;
	cfg->mesh_batch = 256;
	cfg->max_blocking_threads = 512;
	cfg->blocking_keep_alive_ns = 10000000000ull;
	cfg->sched = PW_SCHED_SHARD;
	cfg->event_interval = 61;
	cfg->global_queue_interval = PW_INTERVAL_AUTO;
}

/* Put the printf-style message in @msg (at most @len bytes, terminated
 * when @len > 0; nothing when @msg is NULL) and return @err. */
static int __attribute__((format(printf, 4, 5)))
say(char *msg, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	if (msg && len) {
		va_start(ap, fmt);
		vsnprintf(msg, len, fmt, ap);
		va_end(ap);
	}
	return err;
}

static bool pow2_in(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v >= lo && v <= hi && !(v & (v - 1));
}

/* The sizes: shards, ring, CQ, batch, tick, mesh, blocking pool. */
static int check_sizes(const struct pw_config *c, char *msg, size_t len)
{
	if (c->shards < 1 || c->shards > PW_MAX_SHARDS)
		return say(msg, len, -EINVAL,
			   "shards: %u is out of range 1..%u", c->shards,
			   PW_MAX_SHARDS);
	if (!pow2_in(c->ring_entries, PW_RING_ENTRIES_MIN, PW_RING_ENTRIES_MAX))
		return say(msg, len, -EINVAL,
			   "ring_entries: %u is not a power of two in %u..%u",
			   c->ring_entries, PW_RING_ENTRIES_MIN,
			   PW_RING_ENTRIES_MAX);
	if (c->cq_factor < 1 || c->cq_factor > 64)
		return say(msg, len, -EINVAL,
			   "cq_factor: %u is out of range 1..64", c->cq_factor);
	if (c->batch < 1)
		return say(msg, len, -EINVAL, "batch: 0 is below 1");
	if (c->tick_ns < 1000 || c->tick_ns > 1000000000)
		return say(msg, len, -EINVAL,
			   "tick_ns: %llu is out of range 1000..1000000000",
			   (unsigned long long)c->tick_ns);
	if (c->mesh_slots && !pow2_in(c->mesh_slots, 2, 65536))
		return say(msg, len, -EINVAL,
			   "mesh_slots: %u is neither 0 (the default) nor a "
			   "power of two in 2..65536",
			   c->mesh_slots);
	if (c->mesh_batch < 1)
		return say(msg, len, -EINVAL, "mesh_batch: 0 is below 1");
	if (c->max_blocking_threads < 1)
		return say(msg, len, -EINVAL,
			   "max_blocking_threads: 0 is below 1");
	return 0;
}

#define KNOWN_FLAGS                                                       \
	(PW_CONFIG_NO_PIN | PW_CONFIG_NO_DEFER | PW_CONFIG_PAUSED_CLOCK | \
	 PW_CONFIG_NO_LIFO | PW_CONFIG_OVERSUBSCRIBE)

/* The waits, the flags and the scheduler. */
static int check_modes(const struct pw_config *c, char *msg, size_t len)
{
	if (c->idle_poll_ns > PW_IDLE_POLL_MAX_NS)
		return say(msg, len, -EINVAL,
			   "idle_poll_ns: %llu is out of range 0..%llu",
			   (unsigned long long)c->idle_poll_ns,
			   PW_IDLE_POLL_MAX_NS);
	if (c->batch_wait_ns > PW_BATCH_WAIT_MAX_NS)
		return say(msg, len, -EINVAL,
			   "batch_wait_ns: %llu is out of range 0..%llu",
			   (unsigned long long)c->batch_wait_ns,
			   PW_BATCH_WAIT_MAX_NS);
	if (c->flags & ~KNOWN_FLAGS)
		return say(msg, len, -EINVAL,
			   "flags: 0x%x has bits no PW_CONFIG_* flag names "
			   "(0x%x)",
			   c->flags, c->flags & ~KNOWN_FLAGS);
	if (c->sched != PW_SCHED_SHARD && c->sched != PW_SCHED_STEAL)
		return say(msg, len, -EINVAL, "sched: %d is not shard or steal",
			   (int)c->sched);
	if (c->sched == PW_SCHED_STEAL && c->event_interval < 1)
		return say(msg, len, -EINVAL,
			   "event_interval: 0 is below 1 (the stealing "
			   "scheduler)");
	if (c->sched == PW_SCHED_STEAL && c->global_queue_interval < 1)
		return say(msg, len, -EINVAL,
			   "global_queue_interval: 0 is neither at least 1 nor "
			   "PW_INTERVAL_AUTO (the stealing scheduler)");
	return 0;
}

/* Each CPU of the list is a CPU number the machine could have. */
static int check_cpu_numbers(const struct pw_config *c, char *msg, size_t len)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int limit = ncpu > 0 ? (int)ncpu : CPU_SETSIZE;

	for (unsigned i = 0; c->cpus && i < c->shards; i++) {
		if (c->cpus[i] < 0)
			return say(msg, len, -EINVAL,
				   "cpus[%u]: CPU %d is negative", i,
				   c->cpus[i]);
		if (c->cpus[i] >= limit)
			return say(msg, len, -ENODEV,
				   "cpus[%u]: CPU %d does not exist (this "
				   "machine's CPUs are 0..%d)",
				   i, c->cpus[i], limit - 1);
	}
	return 0;
}

/**
 * pw__config_fields - step 1 of pw_config_check(): every field of @c on
 * its own, without the topology (@c not NULL). pw_runtime_create() calls
 * it before it places a shard.
 * Return: 0, or the errno pw_runtime_create() returns (-EINVAL; -ENODEV
 * for a CPU number beyond the machine's) with the message in @msg (at
 * most @len bytes; @msg may be NULL).
 * Context: any thread.
 */
int pw__config_fields(const struct pw_config *c, char *msg, size_t len)
{
	int err = check_sizes(c, msg, len);

	if (!err)
		err = check_modes(c, msg, len);
	if (!err)
		err = check_cpu_numbers(c, msg, len);
	return err;
}

/* The CPU list on topology @t: every CPU in it, none twice unless
 * oversubscribing (numa/mem.c's check_cpus()). */
static int check_cpus_on(const struct pw_config *c, const struct pw_topo *t,
			 char *msg, size_t len)
{
	for (unsigned i = 0; i < c->shards; i++)
		if (!pw_topo_find(t, c->cpus[i]))
			return say(msg, len, -ENODEV,
				   "cpus[%u]: CPU %d is offline or outside "
				   "this process's affinity mask",
				   i, c->cpus[i]);
	if (c->flags & PW_CONFIG_OVERSUBSCRIBE)
		return 0;
	for (unsigned i = 1; i < c->shards; i++)
		for (unsigned j = 0; j < i; j++)
			if (c->cpus[j] == c->cpus[i])
				return say(msg, len, -E2BIG,
					   "cpus[%u]: CPU %d is cpus[%u] too "
					   "(set PW_CONFIG_OVERSUBSCRIBE to "
					   "share a CPU)",
					   i, c->cpus[i], j);
	return 0;
}

static bool has_node(const struct pw_topo *t, int id)
{
	for (unsigned i = 0; i < t->nnodes; i++)
		if (t->nodes[i].id == id)
			return true;
	return false;
}

/* The numbers of placement list @list (the field @field: CPUs, or node
 * ids when @nodes) in @v, @n of them, each checked on @t. */
static int check_numbers(const struct pw_topo *t, const char *field, bool nodes,
			 const int *v, int n, char *msg, size_t len)
{
	for (int i = 0; i < n; i++) {
		if (nodes && !has_node(t, v[i]))
			return say(msg, len, -ENODEV,
				   "%s: node %d does not exist", field, v[i]);
		if (!nodes && !pw_topo_find(t, v[i]))
			return say(msg, len, -ENODEV,
				   "%s: CPU %d is offline or outside this "
				   "process's affinity mask",
				   field, v[i]);
	}
	return 0;
}

/* Placement list @list, the field @field (pw_topo_place()'s want_cpus()
 * and want_nodes() in numa/topo.c). */
static int check_list(const struct pw_topo *t, const char *field,
		      const char *list, bool nodes, char *msg, size_t len)
{
	int n = pw_cpulist_parse(list, NULL, 0);
	int *v;

	if (n == -ERANGE)
		return say(msg, len, -ENODEV,
			   "%s: \"%s\" has a number beyond %d", field, list,
			   PW_CPULIST_LIMIT - 1);
	if (n == -EINVAL)
		return say(msg, len, -EINVAL,
			   "%s: \"%s\" is not a list such as \"0-3,8\"", field,
			   list);
	if (n < 0)
		return say(msg, len, n, "%s: %s", field, strerror(-n));
	v = malloc((size_t)n * sizeof(*v) + 1);
	if (!v)
		return say(msg, len, -ENOMEM, "%s: out of memory", field);
	n = pw_cpulist_parse(list, v, (unsigned)n);
	int err = n < 0 ? say(msg, len, n, "%s: %s", field, strerror(-n)) :
			  check_numbers(t, field, nodes, v, n, msg, len);
	free(v);
	return err;
}

/* What pw_topo_place() refused on a policy whose lists are good. */
static int placement_refused(const struct pw_config *c, const struct pw_topo *t,
			     struct pw_placement_opts o, int err, char *msg,
			     size_t len)
{
	struct pw_placement *pl;
	int chosen;

	if (err == -EINVAL)
		return say(msg, len, -EINVAL,
			   "placement: its cpus and nodes leave no CPU");
	if (err != -E2BIG)
		return say(msg, len, err, "placement: %s", strerror(-err));
	/* How many CPUs the policy chose: place one shard per CPU. */
	o.shards = 0;
	pl = malloc(sizeof(*pl));
	chosen = pl ? pw_topo_place(t, &o, pl) : -ENOMEM;
	free(pl);
	if (chosen > 0 && c->shards <= PW_PLACE_MAX)
		return say(msg, len, -E2BIG,
			   "shards: %u is more than the %d CPUs placed on "
			   "(set PW_CONFIG_OVERSUBSCRIBE to share them)",
			   c->shards, chosen);
	return say(msg, len, -E2BIG, "placement: more than %d shards or CPUs",
		   PW_PLACE_MAX);
}

/* The placement policy (or the default) on topology @t (numa/mem.c's
 * place_policy(), then pw_topo_place()). */
static int check_placement(const struct pw_config *c, const struct pw_topo *t,
			   char *msg, size_t len)
{
	struct pw_placement_opts o = { .unit = PW_PLACE_CORES };
	struct pw_placement *pl;
	int err = 0;

	if (c->placement)
		o = *c->placement;
	if (o.shards && o.shards != c->shards)
		return say(msg, len, -EINVAL,
			   "placement.shards: %u is neither 0 nor shards (%u)",
			   o.shards, c->shards);
	if (o.unit != PW_PLACE_CORES && o.unit != PW_PLACE_PUS)
		return say(msg, len, -EINVAL,
			   "placement.unit: %d is not cores or PUs",
			   (int)o.unit);
	if (o.order != PW_PLACE_COMPACT && o.order != PW_PLACE_SPREAD)
		return say(msg, len, -EINVAL,
			   "placement.order: %d is not compact or spread",
			   (int)o.order);
	if (o.cpus)
		err = check_list(t, "placement.cpus", o.cpus, false, msg, len);
	if (!err && o.nodes)
		err = check_list(t, "placement.nodes", o.nodes, true, msg, len);
	if (err)
		return err;
	o.shards = c->shards;
	o.allow_oversubscribe |= (c->flags & PW_CONFIG_OVERSUBSCRIBE) != 0;
	pl = malloc(sizeof(*pl));
	if (!pl)
		return say(msg, len, -ENOMEM, "placement: out of memory");
	int n = pw_topo_place(t, &o, pl);
	free(pl);
	if (n == (int)c->shards)
		return 0;
	o.allow_oversubscribe = true;
	return placement_refused(c, t, o, n < 0 ? n : -EINVAL, msg, len);
}

int pw_config_check(const struct pw_config *cfg, char *msg, size_t len)
{
	struct pw_topo *t;
	int err;

	if (msg && len)
		msg[0] = '\0';
	if (!cfg)
		return say(msg, len, -EINVAL, "config: NULL");
	err = pw__config_fields(cfg, msg, len);
	if (err)
		return err;
	if (cfg->cpus && cfg->placement)
		return say(msg, len, -EINVAL,
			   "placement: set together with cpus (give one)");
	err = pw_topo_load(&t);
	if (err)
		return say(msg, len, err == -ENOMEM ? err : -ENXIO,
			   "topology: hwloc could not read the machine (%s)",
			   strerror(-err));
	err = cfg->cpus ? check_cpus_on(cfg, t, msg, len) :
			  check_placement(cfg, t, msg, len);
	pw_topo_free(t);
	return err;
}

const char *pw_strerror_setup(int err)
{
	switch (err) {
	case 0:
		return "no error";
	case -EPERM:
		return "io_uring is not permitted for this process: the "
		       "kernel.io_uring_disabled sysctl is 1 or 2 (set it to "
		       "0: `sysctl -w kernel.io_uring_disabled=0`, or add the "
		       "user to the group in kernel.io_uring_group), or a "
		       "security policy forbids it";
	case -ENOSYS:
		return "io_uring is unavailable: the kernel lacks it "
		       "(CONFIG_IO_URING, Linux 6.1 or later is needed) or a "
		       "container's seccomp profile blocks io_uring_setup "
		       "(run the container with a profile that allows the "
		       "io_uring_* system calls)";
	case -ENOMEM:
		return "out of memory setting up the io_uring rings (raise "
		       "RLIMIT_MEMLOCK with `ulimit -l`, or use fewer ring "
		       "entries)";
	case -EINVAL:
		return "invalid runtime configuration: a field out of range, "
		       "an empty or malformed CPU or node list, or both cpus "
		       "and placement (pw_config_check() names the field)";
	case -ENODEV:
		return "a configured CPU or NUMA node is not usable: it does "
		       "not exist, is offline, or is outside this process's "
		       "affinity mask (pw_config_check() names it; `pinwheel "
		       "topo` lists the usable ones)";
	case -E2BIG:
		return "more shards than CPUs: use fewer shards, or set "
		       "PW_CONFIG_OVERSUBSCRIBE to let shards share CPUs";
	case -ENXIO:
		return "the machine topology could not be read (hwloc failed: "
		       "check that /sys is mounted and readable, and the "
		       "HWLOC_* environment variables)";
	case -EDEADLK:
		return "called from a shard thread";
	default:
		return "the runtime could not start (thread, pinning or "
		       "io_uring set-up failed)";
	}
}
