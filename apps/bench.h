/* SPDX-License-Identifier: MIT */
/*
 * bench.h - `pinwheel bench`: scenario benchmarks of the shard and the
 * stealing scheduler side by side (internal to the pinwheel command; the
 * tests use the pieces below).
 *
 * A scenario is a row of data: which `pinwheel` subcommand serves (with
 * which of its own flags), whether a backend sits behind it, where it
 * runs, how many connections load it, and which Tokio peer mode, if any,
 * serves the same workload. The driver adds what every run needs
 * (--listen, --shards, --cpus, --sched, --upstream), runs the server as
 * a child process pinned to its CPUs, loads it in-process with
 * pw_load_run() from other CPUs, and reads the server's CPU time from
 * /proc. A server that exits with status 2 at start (a flag it does not
 * know) skips the scenario with a message; so does a subcommand whose
 * --help fails. Adding a scenario for a new server flag is adding a row.
 */
#ifndef PW_APPS_BENCH_H
#define PW_APPS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where a scenario's server runs. */
enum pw_bench_place {
	/* The first half of the allowed CPUs, one shard each; the load
	 * generator on the other half (both on the one CPU of a 1-CPU
	 * machine). */
	PW_BENCH_SPLIT,
	/* Every allowed CPU, one shard each; the load generator shares
	 * them. */
	PW_BENCH_ALL,
};

/* One scenario. */
struct pw_bench_scenario {
	const char *name; /* as --scenarios names it */
	const char *what; /* one line: what it shows, and why so placed */
	/* The server: a pinwheel subcommand and its own flags, split at
	 * blanks ("http --timeout 5s"). --shards is added unless given. */
	const char *server;
	/* NULL, or a pinwheel server the one under test forwards to ("http"):
	 * it runs on the load CPUs under the shard scheduler and its address
	 * goes to the server as --upstream. */
	const char *backend;
	enum pw_bench_place place;
	unsigned conns; /* connections when --conns is not given */
	/* NULL, or the Tokio peer's mode and flags for the same workload
	 * ("http --work 2000"); --listen and --workers are added. */
	const char *peer;
};

/* The scenario table, in the order runs and reports follow. */
extern const struct pw_bench_scenario pw_bench_scenarios[];
extern const unsigned pw_bench_nscenarios;

/**
 * pw_bench_select - parse a --scenarios list: names from the table,
 * separated by commas, or "all". Repeats are allowed (each runs once,
 * in table order).
 * @sel: pw_bench_nscenarios flags, set for the chosen ones.
 * @err: receives a one-line message on failure (may be NULL).
 * Return: the number chosen (>= 1); -EINVAL for NULL, an empty list, an
 * empty name or an unknown name.
 * Context: any thread.
 */
int pw_bench_select(const char *list, bool *sel, char *err, size_t errlen);

/**
 * pw_bench_split - split @s at blanks (spaces, tabs) into words, copied
 * into @buf (@buflen bytes) and pointed to by @argv[0..]; @argv gets a
 * NULL after the last.
 * Return: the number of words; -E2BIG when @buf or @max (entries of
 * @argv, the NULL included) is too small; -EINVAL for NULL arguments.
 * Context: any thread.
 */
int pw_bench_split(const char *s, char *buf, size_t buflen, char **argv,
		   int max);

/* Where the server and the load may go: the allowed CPUs, and the pools
 * --server-cpus/--server-node and --load-cpus/--load-node chose. */
struct pw_bench_pools {
	const int *cpus; /* the allowed CPUs, ascending */
	unsigned n;
	const int *srv; /* the server's pool, ascending; NULL: @cpus */
	unsigned nsrv;
	const int *load; /* the load's CPUs; NULL: from the placement */
	unsigned nload;
};

/* --server-cores "auto": each scenario at its own placement. */
#define PW_BENCH_CORES_AUTO 0u

/**
 * pw_bench_place_cores - the server's and the load's CPUs for a scenario
 * placed @place at @k server cores. The server takes the first @k CPUs
 * of its pool. The load takes p->load when given; else, for
 * PW_BENCH_SPLIT, the allowed CPUs the server does not use (all of them
 * when none is left), and for PW_BENCH_ALL every allowed CPU.
 * @k: PW_BENCH_CORES_AUTO gives the scenario's own count: the whole pool
 * for PW_BENCH_ALL or a chosen server pool, else half the allowed CPUs
 * (at least one).
 * @srv, @load: at least p->n (and p->nload) entries each.
 * Return: 0; -EINVAL for NULL arguments or no allowed CPU; -ERANGE when
 * @k is above the pool's size.
 * Context: any thread.
 */
int pw_bench_place_cores(enum pw_bench_place place,
			 const struct pw_bench_pools *p, unsigned k, int *srv,
			 unsigned *nsrv, int *load, unsigned *nload);

/**
 * pw_bench_parse_cores - parse a --server-cores list: counts above 0 or
 * "all" (@max), separated by commas; or "auto" alone
 * (PW_BENCH_CORES_AUTO, one count). Repeats are allowed.
 * @max: CPUs the server's pool holds.
 * @out: receives the counts, ascending, each once; @cap entries.
 * @err: receives a one-line message on failure (may be NULL).
 * Return: the number of counts (>= 1); -EINVAL for a malformed list, 0
 * or "auto" among others; -ERANGE for a count above @max; -E2BIG for more
 * than @cap counts.
 * Context: any thread.
 */
int pw_bench_parse_cores(const char *list, unsigned max, unsigned *out,
			 unsigned cap, char *err, size_t errlen);

/**
 * pw_bench_parse_cpus - parse a CPU list ("0-3,8") that must stay within
 * the @n allowed CPUs @cpus.
 * @out: receives the CPUs, ascending, each once; @cap entries.
 * @err: receives a one-line message on failure (may be NULL).
 * Return: the number of CPUs (>= 1); -EINVAL for a malformed list;
 * -ERANGE for a CPU not allowed; -E2BIG for more than @cap.
 * Context: any thread.
 */
int pw_bench_parse_cpus(const char *list, const int *cpus, unsigned n, int *out,
			unsigned cap, char *err, size_t errlen);

struct pw_topo;

/**
 * pw_bench_node_cpus - the CPUs of NUMA node @node in the topology @t
 * that are among the @n allowed CPUs @cpus, ascending, into @out (@cap
 * entries).
 * Return: their number (>= 1); -EINVAL for NULL arguments; -ENODEV when
 * the node has no allowed CPU.
 * Context: any thread.
 */
int pw_bench_node_cpus(const struct pw_topo *t, int node, const int *cpus,
		       unsigned n, int *out, unsigned cap);

/**
 * pw_bench_node_distance - the NUMA distance between nodes @a and @b as
 * the kernel gives it (the SLIT matrix, /sys/devices/system/node), read
 * under @sysfs (NULL: "/sys").
 * Return: the distance (10 is local); 10 for @a == @b when the matrix
 * cannot be read; -ENOENT when it cannot be read for different nodes.
 * Context: any thread.
 */
int pw_bench_node_distance(const char *sysfs, int a, int b);

/**
 * pw_bench_proc_cpu_ns - utime + stime of every thread of process @pid
 * so far, from /proc/PID/stat, in ns (clock-tick resolution).
 * Return: 0 with *@ns set; -ENOENT when the process is gone; -EIO for a
 * stat line that cannot be read.
 * Context: any thread.
 */
int pw_bench_proc_cpu_ns(pid_t pid, uint64_t *ns);

#endif /* PW_APPS_BENCH_H */
