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

/**
 * pw_bench_place_cpus - the server's and the load's CPUs for @place,
 * from the @n allowed CPUs @cpus (ascending).
 * @srv, @load: at least @n entries each; @nsrv, @nload receive counts.
 * Return: 0; -EINVAL for NULL arguments or @n == 0.
 * Context: any thread.
 */
int pw_bench_place_cpus(enum pw_bench_place place, const int *cpus, unsigned n,
			int *srv, unsigned *nsrv, int *load, unsigned *nload);

/**
 * pw_bench_proc_cpu_ns - utime + stime of every thread of process @pid
 * so far, from /proc/PID/stat, in ns (clock-tick resolution).
 * Return: 0 with *@ns set; -ENOENT when the process is gone; -EIO for a
 * stat line that cannot be read.
 * Context: any thread.
 */
int pw_bench_proc_cpu_ns(pid_t pid, uint64_t *ns);

#endif /* PW_APPS_BENCH_H */
