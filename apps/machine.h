/* SPDX-License-Identifier: MIT */
/*
 * machine.h - the state of the machine a benchmark runs on, read from
 * /proc and /sys (internal to the pinwheel command; the tests use it):
 * load average, the VM's steal time, the CPU frequency governor, SMT
 * siblings, and the warnings they call for when a run is too noisy to
 * decide.
 *
 * Each reader has a parser that takes the file's text, and the readers
 * take the file (or /sys folder) as an argument, so that tests feed them
 * fixtures.
 */
#ifndef PW_APPS_MACHINE_H
#define PW_APPS_MACHINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PW_MACHINE_LOADAVG "/proc/loadavg"
#define PW_MACHINE_STAT	   "/proc/stat"
#define PW_MACHINE_SYSCPU  "/sys/devices/system/cpu"

#define PW_MACHINE_WARN_LEN 192 /* bytes of one warning line */

/* Noise thresholds: above them a run gets a warning. */
#define PW_MACHINE_CV_WARN    0.10 /* a cell's throughput CV over rounds */
#define PW_MACHINE_STEAL_WARN 3.0  /* % of the run the VM lost to steal */

/* The all-CPU line of /proc/stat, in clock ticks. */
struct pw_machine_ticks {
	uint64_t total; /* every column */
	uint64_t steal; /* the 8th: time the hypervisor ran something else */
};

/* The machine around a bench run. */
struct pw_machine {
	double load1, load5, load15;	/* before the run; < 0: unknown */
	unsigned online;		/* CPUs online (sysconf) */
	struct pw_machine_ticks t0, t1; /* /proc/stat before and after */
	bool have_ticks;		/* both read */
	double steal_pct;  /* steal over the run, % of all CPU time; < 0:
			     unknown */
	char governor[32]; /* of the bench's CPUs: one name, "mixed", or
			      "unknown" */
};

/**
 * pw_machine_parse_loadavg - the three load averages of /proc/loadavg's
 * text @s ("0.52 0.58 0.59 1/467 12345").
 * Return: 0; -EINVAL for NULL arguments or text that does not start
 * with three numbers.
 * Context: any thread.
 */
int pw_machine_parse_loadavg(const char *s, double *l1, double *l5,
			     double *l15);

/**
 * pw_machine_read_loadavg - the same, from the file @path.
 * Return: 0; -errno when it cannot be read; -EINVAL as the parser.
 * Context: any thread.
 */
int pw_machine_read_loadavg(const char *path, double *l1, double *l5,
			    double *l15);

/**
 * pw_machine_parse_stat - the all-CPU line ("cpu  user nice system idle
 * iowait irq softirq steal ...") of /proc/stat's text @s: the sum of its
 * columns and its steal column (0 when the kernel gives fewer than 8).
 * Return: 0; -EINVAL for NULL arguments or no such line.
 * Context: any thread.
 */
int pw_machine_parse_stat(const char *s, struct pw_machine_ticks *t);

/**
 * pw_machine_read_stat - the same, from the file @path.
 * Return: 0; -errno when it cannot be read; -EINVAL as the parser.
 * Context: any thread.
 */
int pw_machine_read_stat(const char *path, struct pw_machine_ticks *t);

/**
 * pw_machine_steal_pct - steal time between @a and @b as a percentage of
 * all CPU time between them.
 * Return: the percentage; -1 when no time passed or @b is before @a.
 * Context: any thread.
 */
double pw_machine_steal_pct(const struct pw_machine_ticks *a,
			    const struct pw_machine_ticks *b);

/**
 * pw_machine_governor - the frequency governor of the @n CPUs @cpus,
 * from @sysdir/cpuN/cpufreq/scaling_governor, into @buf: the name when
 * every CPU that has one agrees, "mixed" when they differ, "unknown"
 * when none has the file (a VM, a kernel without cpufreq).
 * Context: any thread.
 */
void pw_machine_governor(const char *sysdir, const int *cpus, unsigned n,
			 char *buf, size_t len);

/**
 * pw_machine_parse_cpulist - a kernel CPU list ("0-3,8,10-11") into the
 * flags @set[0..@max).
 * Return: the number of CPUs set; -EINVAL for NULL arguments, a bad list
 * or a CPU at or above @max.
 * Context: any thread.
 */
int pw_machine_parse_cpulist(const char *s, bool *set, unsigned max);

/**
 * pw_machine_smt_shared - the first pair of CPUs, @srv[i] on the server
 * side and a different @load[j] on the load side, that are SMT siblings
 * (one core) according to @sysdir/cpuN/topology/thread_siblings_list;
 * CPUs on both sides are left out (those share more than a core).
 * @a, @b receive the pair.
 * Return: 1 found; 0 none (or no topology files).
 * Context: any thread.
 */
int pw_machine_smt_shared(const char *sysdir, const int *srv, unsigned nsrv,
			  const int *load, unsigned nload, int *a, int *b);

/**
 * pw_machine_before - read @m's state before a run: load average,
 * online CPUs, /proc/stat, and the governor of @cpus (the real files).
 * Context: any thread.
 */
void pw_machine_before(struct pw_machine *m, const int *cpus, unsigned n);

/**
 * pw_machine_after - read /proc/stat after the run and set the steal
 * percentage.
 * Context: any thread.
 */
void pw_machine_after(struct pw_machine *m);

/**
 * pw_machine_warnings - the warnings @m calls for, one line each (no
 * newline) into @out[0..@max) of @len bytes each: a load average above
 * the @ncpus CPUs the bench may use, steal above PW_MACHINE_STEAL_WARN %,
 * a governor other than "performance" (and known).
 * Return: the number written (at most @max).
 * Context: any thread.
 */
unsigned pw_machine_warnings(const struct pw_machine *m, unsigned ncpus,
			     char (*out)[PW_MACHINE_WARN_LEN], unsigned max);

#endif /* PW_APPS_MACHINE_H */
