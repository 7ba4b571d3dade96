/* SPDX-License-Identifier: MIT */
/*
 * test_machine.c - the machine state `pinwheel bench` reads
 * (apps/machine.c), on fixtures: /proc/loadavg and /proc/stat text, a
 * /sys/devices/system/cpu tree made in a scratch folder (governors, SMT
 * siblings), CPU lists, steal percentages and the warnings. The suite is
 * "bench" so that it runs in one pass.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/common.h"
#include "apps/machine.h"

/* Whether @a is within @eps of @b. */
static bool near(double a, double b, double eps)
{
	return a - b <= eps && b - a <= eps;
}

/* @a within @eps of @b (Criterion's float comparison, which the TSan
 * build's stand-in lacks). */
#define expect_near(a, b, eps)                                             \
	cr_expect(near((a), (b), (eps)), "%s = %.15g, expected %.15g", #a, \
		  (double)(a), (double)(b))

Test(bench, machine_loadavg)
{
	double a, b, c;

	cr_assert_eq(pw_machine_parse_loadavg("0.52 1.58 12.00 1/467 12345\n",
					      &a, &b, &c),
		     0);
	expect_near(a, 0.52, 1e-12);
	expect_near(b, 1.58, 1e-12);
	expect_near(c, 12.0, 1e-12);
	cr_expect_eq(pw_machine_parse_loadavg("0.5 x", &a, &b, &c), -EINVAL);
	cr_expect_eq(pw_machine_parse_loadavg(NULL, &a, &b, &c), -EINVAL);
	cr_expect_eq(pw_machine_read_loadavg("/nonexistent/loadavg", &a, &b,
					     &c),
		     -ENOENT);
	cr_expect_eq(pw_machine_read_loadavg("/proc/loadavg", &a, &b, &c), 0);
	cr_expect_geq(a, 0.0);
}

Test(bench, machine_stat_and_steal)
{
	struct pw_machine_ticks t0, t1;
	const char *before = "cpu  100 0 50 800 10 5 5 30 0 0\n"
			     "cpu0 50 0 25 400 5 2 3 15 0 0\n"
			     "intr 12345\n";
	const char *after = "intr 1\ncpu  200 0 100 1500 10 5 5 180 0 0\n";

	cr_assert_eq(pw_machine_parse_stat(before, &t0), 0);
	cr_expect_eq(t0.total, 1000u);
	cr_expect_eq(t0.steal, 30u);
	cr_assert_eq(pw_machine_parse_stat(after, &t1), 0, "a later line");
	cr_expect_eq(t1.total, 2000u);
	cr_expect_eq(t1.steal, 180u);
	expect_near(pw_machine_steal_pct(&t0, &t1), 15.0, 1e-12);
	expect_near(pw_machine_steal_pct(&t1, &t0), -1.0, 1e-12);
	expect_near(pw_machine_steal_pct(&t0, &t0), -1.0, 1e-12);
	/* An old kernel with 4 columns: no steal column. */
	cr_assert_eq(pw_machine_parse_stat("cpu  1 2 3 4\n", &t0), 0);
	cr_expect_eq(t0.total, 10u);
	cr_expect_eq(t0.steal, 0u);
	cr_expect_eq(pw_machine_parse_stat("cpu0 1 2 3\n", &t0), -EINVAL);
	cr_expect_eq(pw_machine_parse_stat("", &t0), -EINVAL);
	cr_expect_eq(pw_machine_read_stat("/proc/stat", &t0), 0);
	cr_expect_gt(t0.total, 0u);
}

Test(bench, machine_cpulist)
{
	bool set[16];

	cr_expect_eq(pw_machine_parse_cpulist("0-3,8,10-11\n", set, 16), 7);
	cr_expect(set[0] && set[3] && set[8] && set[11]);
	cr_expect(!set[4] && !set[9] && !set[12]);
	cr_expect_eq(pw_machine_parse_cpulist("1", set, 16), 1);
	cr_expect_eq(pw_machine_parse_cpulist("0-1,1", set, 16), 2);
	cr_expect_eq(pw_machine_parse_cpulist("3-1", set, 16), -EINVAL);
	cr_expect_eq(pw_machine_parse_cpulist("16", set, 16), -EINVAL);
	cr_expect_eq(pw_machine_parse_cpulist("a", set, 16), -EINVAL);
	cr_expect_eq(pw_machine_parse_cpulist("1;2", set, 16), -EINVAL);
}

/* Write @text to @dir/@rel, making the folders. */
static void put(const char *dir, const char *rel, const char *text)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (char *p = path + strlen(dir) + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0700);
			*p = '/';
		}
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/*
 * Four CPUs on two cores (0 and 2 one core, 1 and 3 the other), the
 * governor of CPUs 0-1 only.
 */
Test(bench, machine_governor_and_smt_siblings)
{
	char dir[] = "/tmp/pw-test-machine.XXXXXX", gov[32], cmd[64];
	const int c01[] = { 0, 1 }, c23[] = { 2, 3 }, c0[] = { 0 };
	const int c1[] = { 1 }, c2[] = { 2 }, c3[] = { 3 };
	int a = -1, b = -1;

	cr_assert_not_null(mkdtemp(dir));
	put(dir, "cpu0/topology/thread_siblings_list", "0,2\n");
	put(dir, "cpu1/topology/thread_siblings_list", "1,3\n");
	put(dir, "cpu2/topology/thread_siblings_list", "0,2\n");
	put(dir, "cpu3/topology/thread_siblings_list", "1,3\n");
	put(dir, "cpu0/cpufreq/scaling_governor", "performance\n");
	put(dir, "cpu1/cpufreq/scaling_governor", "powersave\n");

	pw_machine_governor(dir, c0, 1, gov, sizeof(gov));
	cr_expect_str_eq(gov, "performance");
	pw_machine_governor(dir, c01, 2, gov, sizeof(gov));
	cr_expect_str_eq(gov, "mixed");
	pw_machine_governor(dir, c1, 1, gov, sizeof(gov));
	cr_expect_str_eq(gov, "powersave");
	pw_machine_governor(dir, c23, 2, gov, sizeof(gov));
	cr_expect_str_eq(gov, "unknown", "no cpufreq files");

	cr_expect_eq(pw_machine_smt_shared(dir, c0, 1, c1, 1, &a, &b), 0);
	cr_expect_eq(pw_machine_smt_shared(dir, c0, 1, c2, 1, &a, &b), 1);
	cr_expect_eq(a, 0);
	cr_expect_eq(b, 2);
	cr_expect_eq(pw_machine_smt_shared(dir, c01, 2, c3, 1, &a, &b), 1);
	cr_expect_eq(a, 1);
	cr_expect_eq(b, 3);
	/* The same CPUs on both sides: they share more than a core. */
	cr_expect_eq(pw_machine_smt_shared(dir, c01, 2, c01, 2, &a, &b), 0);
	cr_expect_eq(
		pw_machine_smt_shared("/nonexistent", c0, 1, c2, 1, &a, &b), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

Test(bench, machine_warnings)
{
	char w[4][PW_MACHINE_WARN_LEN];
	struct pw_machine m = { .load1 = 0.5, .steal_pct = 1.0 };

	snprintf(m.governor, sizeof(m.governor), "unknown");
	cr_expect_eq(pw_machine_warnings(&m, 2, w, 4), 0u, "a quiet machine");
	m.load1 = 2.0;
	cr_expect_eq(pw_machine_warnings(&m, 2, w, 4), 0u, "at the CPUs");
	m.load1 = 2.5;
	m.steal_pct = 3.5;
	snprintf(m.governor, sizeof(m.governor), "powersave");
	cr_assert_eq(pw_machine_warnings(&m, 2, w, 4), 3u);
	cr_expect_str_eq(w[0], "load average 2.50 before the run, above the 2 "
			       "CPUs: other programs share them");
	cr_expect_str_eq(w[1],
			 "the hypervisor stole 3.5% of the CPU time during "
			 "the run (/proc/stat): the VM's neighbours are busy");
	cr_expect_str_eq(w[2], "CPU frequency governor \"powersave\", not "
			       "\"performance\": clock speed changes with "
			       "load");
	cr_expect_eq(pw_machine_warnings(&m, 2, w, 1), 1u, "room for one");
	snprintf(m.governor, sizeof(m.governor), "performance");
	m.steal_pct = -1;
	cr_expect_eq(pw_machine_warnings(&m, 4, w, 4), 0u);
}
