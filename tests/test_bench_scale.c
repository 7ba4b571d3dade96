/* SPDX-License-Identifier: MIT */
/*
 * test_bench_scale.c - `pinwheel bench` at several server core counts and
 * placed by flags: the CPU lists per core count for given allowed CPUs,
 * the --server-cores, CPU list and NUMA node parsing, the NUMA distance
 * read from a sysfs-like folder, the flags rejected with their message,
 * and short runs: the http scenario at 1 and 2 server cores (both points
 * in the JSON with their cores and placement, HdrHistogram files named
 * per count, the scaling plot), and overlapping CPUs warned about.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/common.h"
#include "tests/json.h"
#include "pinwheel/topo.h"
#include "apps/bench.h"

/* Expect @n CPUs @got to be @want. */
static void expect_cpus(const int *got, unsigned n, const int *want,
			unsigned nwant, const char *what)
{
	cr_expect_eq(n, nwant, "%s: %u CPUs, not %u", what, n, nwant);
	for (unsigned i = 0; i < n && i < nwant; i++)
		cr_expect_eq(got[i], want[i], "%s: CPU %u is %d, not %d", what,
			     i, got[i], want[i]);
}

/* Place @place at @k cores from @p and expect the lists. */
static void expect_place(enum pw_bench_place place,
			 const struct pw_bench_pools *p, unsigned k,
			 const int *srv, unsigned nsrv, const int *load,
			 unsigned nload, const char *what)
{
	int s[16], l[16];
	unsigned ns = 99, nl = 99;

	cr_assert_eq(pw_bench_place_cores(place, p, k, s, &ns, l, &nl), 0, "%s",
		     what);
	expect_cpus(s, ns, srv, nsrv, what);
	expect_cpus(l, nl, load, nload, what);
}

Test(bench_scale, cpus_per_core_count)
{
	static const int two[] = { 0, 1 }, five[] = { 0, 1, 2, 3, 4 };
	static const int pool[] = { 2, 3 }, four[] = { 4 };
	struct pw_bench_pools p2 = { .cpus = two, .n = 2 };
	struct pw_bench_pools p5 = { .cpus = five, .n = 5 };
	struct pw_bench_pools ps = {
		.cpus = five, .n = 5, .srv = pool, .nsrv = 2
	};
	struct pw_bench_pools pl = { .cpus = five,
				     .n = 5,
				     .srv = pool,
				     .nsrv = 2,
				     .load = four,
				     .nload = 1 };
	int s[16], l[16];
	unsigned ns, nl;

	/* Two CPUs: split at 1 keeps them apart; at 2 the load shares. */
	expect_place(PW_BENCH_SPLIT, &p2, 1, (int[]){ 0 }, 1, (int[]){ 1 }, 1,
		     "split, 2 CPUs, 1 core");
	expect_place(PW_BENCH_SPLIT, &p2, 2, two, 2, two, 2,
		     "split, 2 CPUs, 2 cores");
	expect_place(PW_BENCH_ALL, &p2, 1, (int[]){ 0 }, 1, two, 2,
		     "all, 2 CPUs, 1 core");
	expect_place(PW_BENCH_ALL, &p2, 2, two, 2, two, 2,
		     "all, 2 CPUs, 2 cores");
	/* auto is the scenario's own placement: half the CPUs for a split. */
	expect_place(PW_BENCH_SPLIT, &p2, PW_BENCH_CORES_AUTO, (int[]){ 0 }, 1,
		     (int[]){ 1 }, 1, "split, auto");
	expect_place(PW_BENCH_ALL, &p2, PW_BENCH_CORES_AUTO, two, 2, two, 2,
		     "all, auto");
	expect_place(PW_BENCH_SPLIT, &p5, PW_BENCH_CORES_AUTO, (int[]){ 0, 1 },
		     2, (int[]){ 2, 3, 4 }, 3, "split, 5 CPUs, auto");
	expect_place(PW_BENCH_SPLIT, &p5, 3, (int[]){ 0, 1, 2 }, 3,
		     (int[]){ 3, 4 }, 2, "split, 5 CPUs, 3 cores");
	expect_place(PW_BENCH_ALL, &p5, 3, (int[]){ 0, 1, 2 }, 3, five, 5,
		     "all, 5 CPUs, 3 cores");
	/* A server pool: its first K; the load on the rest (split). */
	expect_place(PW_BENCH_SPLIT, &ps, 1, (int[]){ 2 }, 1,
		     (int[]){ 0, 1, 3, 4 }, 4, "server pool, 1 core");
	expect_place(PW_BENCH_SPLIT, &ps, PW_BENCH_CORES_AUTO, pool, 2,
		     (int[]){ 0, 1, 4 }, 3, "server pool, auto: all of it");
	expect_place(PW_BENCH_ALL, &ps, 2, pool, 2, five, 5,
		     "server pool, all");
	/* A load pool is taken as it is. */
	expect_place(PW_BENCH_SPLIT, &pl, 1, (int[]){ 2 }, 1, four, 1,
		     "load pool, split");
	expect_place(PW_BENCH_ALL, &pl, 2, pool, 2, four, 1, "load pool, all");
	/* Beyond the pool, and bad arguments. */
	cr_expect_eq(pw_bench_place_cores(PW_BENCH_SPLIT, &p2, 3, s, &ns, l,
					  &nl),
		     -ERANGE);
	cr_expect_eq(pw_bench_place_cores(PW_BENCH_SPLIT, &ps, 3, s, &ns, l,
					  &nl),
		     -ERANGE);
	cr_expect_eq(pw_bench_place_cores(PW_BENCH_SPLIT, NULL, 1, s, &ns, l,
					  &nl),
		     -EINVAL);
	p2.n = 0;
	cr_expect_eq(pw_bench_place_cores(PW_BENCH_SPLIT, &p2, 1, s, &ns, l,
					  &nl),
		     -EINVAL);
}

/* Parse @list with @max CPUs: expect @rc and, when > 0, the counts. */
static void expect_cores(const char *list, unsigned max, int rc,
			 const unsigned *want, const char *says)
{
	unsigned out[8];
	char err[160] = "";
	int got = pw_bench_parse_cores(list, max, out, 8, err, sizeof(err));

	cr_expect_eq(got, rc, "'%s': %d, not %d (%s)", list, got, rc, err);
	for (int i = 0; i < got && i < rc; i++)
		cr_expect_eq(out[i], want[i], "'%s': count %d is %u, not %u",
			     list, i, out[i], want[i]);
	if (says)
		cr_expect(strstr(err, says), "'%s': %s", list, err);
}

Test(bench_scale, parse_core_counts)
{
	expect_cores("1,all", 2, 2, (unsigned[]){ 1, 2 }, NULL);
	expect_cores("all", 16, 1, (unsigned[]){ 16 }, NULL);
	expect_cores("4,1,2,4", 8, 3, (unsigned[]){ 1, 2, 4 }, NULL);
	expect_cores("2,all", 2, 1, (unsigned[]){ 2 }, NULL);
	expect_cores("auto", 2, 1, (unsigned[]){ PW_BENCH_CORES_AUTO }, NULL);
	expect_cores("3", 2, -ERANGE, NULL, "3 server cores asked");
	expect_cores("0", 2, -EINVAL, NULL, "'0' is not a core count");
	expect_cores("1,auto", 2, -EINVAL, NULL, "'auto'");
	expect_cores("1,,2", 2, -EINVAL, NULL, "''");
	expect_cores("x", 2, -EINVAL, NULL, "'x'");
	expect_cores("", 2, -EINVAL, NULL, "empty");
	expect_cores("1,2,3,4,5,6,7,8,9", 9, -E2BIG, NULL, "too many");
	cr_expect_eq(pw_bench_parse_cores(NULL, 2, (unsigned[2]){ 0 }, 2, NULL,
					  0),
		     -EINVAL);
}

Test(bench_scale, parse_cpu_lists)
{
	static const int allowed[] = { 0, 1, 2, 3, 8 };
	int out[16];
	char err[160] = "";

	cr_assert_eq(pw_bench_parse_cpus("3,1-2", allowed, 5, out, 16, err,
					 sizeof(err)),
		     3, "%s", err);
	expect_cpus(out, 3, (int[]){ 1, 2, 3 }, 3, "3,1-2");
	cr_expect_eq(pw_bench_parse_cpus("8", allowed, 5, out, 16, err,
					 sizeof(err)),
		     1);
	cr_expect_eq(pw_bench_parse_cpus("2-4", allowed, 5, out, 16, err,
					 sizeof(err)),
		     -ERANGE);
	cr_expect(strstr(err, "CPU 4 is not among"), "%s", err);
	cr_expect_eq(pw_bench_parse_cpus("1-", allowed, 5, out, 16, err,
					 sizeof(err)),
		     -EINVAL);
	cr_expect(strstr(err, "not a CPU list"), "%s", err);
	cr_expect_eq(pw_bench_parse_cpus("", allowed, 5, out, 16, err,
					 sizeof(err)),
		     -EINVAL);
	cr_expect_eq(pw_bench_parse_cpus("0-3", allowed, 5, out, 2, err,
					 sizeof(err)),
		     -E2BIG);
	cr_expect_eq(pw_bench_parse_cpus(NULL, allowed, 5, out, 2, NULL, 0),
		     -EINVAL);
}

Test(bench_scale, node_cpus_from_the_topology)
{
	static const int all[] = { 0, 1, 2, 3 }, some[] = { 0, 1, 3 };
	struct pw_topo *t;
	int out[8];

	cr_assert_eq(pw_topo_load_synthetic(&t, "pack:1 numa:2 core:2 pu:1"),
		     0);
	cr_expect_eq(pw_bench_node_cpus(t, 0, all, 4, out, 8), 2);
	expect_cpus(out, 2, (int[]){ 0, 1 }, 2, "node 0");
	cr_expect_eq(pw_bench_node_cpus(t, 1, all, 4, out, 8), 2);
	expect_cpus(out, 2, (int[]){ 2, 3 }, 2, "node 1");
	cr_expect_eq(pw_bench_node_cpus(t, 1, some, 3, out, 8), 1);
	cr_expect_eq(out[0], 3);
	cr_expect_eq(pw_bench_node_cpus(t, 1, some, 2, out, 8), -ENODEV,
		     "node 1 with only CPUs 0 and 1 allowed");
	cr_expect_eq(pw_bench_node_cpus(t, 2, all, 4, out, 8), -ENODEV);
	cr_expect_eq(pw_bench_node_cpus(NULL, 0, all, 4, out, 8), -EINVAL);
	pw_topo_free(t);
}

/* Write @text to @dir/@name. */
static void put_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

Test(bench_scale, numa_distance_from_sysfs)
{
	char root[] = "/tmp/pw-test-sysfs.XXXXXX", path[256];
	static const char *const dirs[] = { "devices", "devices/system",
					    "devices/system/node",
					    "devices/system/node/node0",
					    "devices/system/node/node2" };

	cr_assert_not_null(mkdtemp(root));
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		cr_assert_eq(mkdir(path, 0700), 0, "%s", path);
	}
	/* Nodes 0 and 2 online: the matrix's columns are in that order. */
	put_file(root, "devices/system/node/online", "0,2\n");
	put_file(root, "devices/system/node/node0/distance", "10 21\n");
	put_file(root, "devices/system/node/node2/distance", "21 10\n");
	cr_expect_eq(pw_bench_node_distance(root, 0, 0), 10);
	cr_expect_eq(pw_bench_node_distance(root, 0, 2), 21);
	cr_expect_eq(pw_bench_node_distance(root, 2, 0), 21);
	cr_expect_eq(pw_bench_node_distance(root, 2, 2), 10);
	cr_expect_eq(pw_bench_node_distance(root, 0, 1), -ENOENT,
		     "node 1 is not online");
	for (int i = (int)(sizeof(dirs) / sizeof(dirs[0])) - 1; i >= 0; i--) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		if (i == 3 || i == 4) {
			char file[300];
			snprintf(file, sizeof(file), "%s/distance", path);
			unlink(file);
		}
		if (i == 2) {
			char file[300];
			snprintf(file, sizeof(file), "%s/online", path);
			unlink(file);
		}
		cr_expect_eq(rmdir(path), 0, "%s", path);
	}
	/* No matrix: one node is local, two are unknown. */
	cr_expect_eq(pw_bench_node_distance(root, 0, 0), 10);
	cr_expect_eq(pw_bench_node_distance(root, 0, 1), -ENOENT);
	cr_expect_eq(rmdir(root), 0);
}

Test(bench_scale, placement_flags_rejected)
{
	static const struct pw_test_cmd_case cases[] = {
		{ { "pinwheel", "bench", "--server-cores", "0" },
		  2,
		  "--server-cores: '0' is not a core count" },
		{ { "pinwheel", "bench", "--server-cores", "999" },
		  2,
		  "--server-cores: 999 server cores asked" },
		{ { "pinwheel", "bench", "--server-cores", "1,auto" },
		  2,
		  "--server-cores: 'auto'" },
		{ { "pinwheel", "bench", "--server-cpus", "9999" },
		  2,
		  "--server-cpus: CPU 9999 is not among" },
		{ { "pinwheel", "bench", "--load-cpus", "0-" },
		  2,
		  "--load-cpus: '0-' is not a CPU list" },
		{ { "pinwheel", "bench", "--server-cpus", "0", "--server-node",
		    "0" },
		  2,
		  "give a CPU list or a node, not both" },
		{ { "pinwheel", "bench", "--load-node", "4095" },
		  2,
		  "--load-node: node 4095 has none of the CPUs" },
		{ { "pinwheel", "bench", "--server-node", "x" },
		  2,
		  "--server-node" },
		{ { "pinwheel", "bench", "--server-cpus", "0", "--server-cores",
		    "2" },
		  2,
		  "2 server cores asked, but the server may use only 1 CPU" },
		{ { "pinwheel", "bench", "--scaling-plot", "" },
		  2,
		  "--scaling-plot" },
		{ { "pinwheel", "bench", "--help" }, 0, "--server-cores" },
	};

	pw_test_cmd_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

/* Whether this process may use two CPUs or more. */
static bool two_cpus(void)
{
	cpu_set_t set;

	return !sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) >= 2;
}

/* Expect @dir/@name to exist, then remove it. */
static void expect_removed(const char *dir, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_expect_eq(unlink(path), 0, "no %s", path);
}

/*
 * Four real runs (1 and 2 server cores, each scheduler): a second of
 * measured time after 0.3 s of warm-up, so that a run on a busy machine
 * still gets answers (0.3 s after 0.1 s once got none and failed).
 */
Test(bench_scale, http_at_one_and_two_server_cores)
{
	static char out[65536];
	char dir[] = "/tmp/pw-test-scale.XXXXXX", json[64], plot[64];
	char scaling[64], hdr[64];

	if (!two_cpus())
		cr_skip_test("needs 2 CPUs");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(json, sizeof(json), "%s/r.json", dir);
	snprintf(plot, sizeof(plot), "%s/l.png", dir);
	snprintf(scaling, sizeof(scaling), "%s/s.png", dir);
	snprintf(hdr, sizeof(hdr), "%s/hdr", dir);
	char *argv[] = { "pinwheel",
			 "bench",
			 "--server-cores",
			 "1,2",
			 "--rounds",
			 "1",
			 "--duration",
			 "1s",
			 "--warmup",
			 "0.3s",
			 "--conns",
			 "8",
			 "--scenarios",
			 "http",
			 "--json",
			 json,
			 "--plot",
			 plot,
			 "--scaling-plot",
			 scaling,
			 "--hgrm",
			 hdr,
			 NULL };
	int lock = pw_test_bench_lock();
	int st = pw_test_run_cmd(out, sizeof(out), argv);
	pw_test_bench_unlock(lock);
	cr_assert_eq(st, 0, "status %d: %s", st, out);
	cr_expect(strstr(out, "server cores: 1, 2"), "%s", out);
	cr_expect(strstr(out, "\nhttp c1 "), "the table's rows: %s", out);
	cr_expect(strstr(out, "\nhttp c2 "), "%s", out);

	char *j = pw_test_slurp(json, NULL);
	cr_assert_not_null(j, "no %s: %s", json, out);
	cr_expect(pw_test_json_valid(j), "invalid JSON: %s", j);
	cr_expect(strstr(j, "\"server_cores\": [1, 2]"), "%s", j);
	/* Point 1: the server on the first CPU, the load on the other. */
	const char *c1 = strstr(j, "\"cores\": 1,");
	const char *c2 = strstr(j, "\"cores\": 2,");
	cr_assert_not_null(c1, "%s", j);
	cr_assert_not_null(c2, "%s", j);
	cr_expect_lt(c1, c2, "the points in core order");
	cr_expect(!strncmp(strstr(c1, "\"server_cpus\": "),
			   "\"server_cpus\": [", 16));
	cr_expect_eq(strstr(c1, "\"shared_cpus\": 0,"),
		     strstr(c1, "\"shared_cpus\": "), "%s", c1);
	cr_expect_eq(strstr(c2, "\"shared_cpus\": 2,"),
		     strstr(c2, "\"shared_cpus\": "),
		     "at 2 of 2 cores the load shares: %s", c2);
	for (const char *p = c1; p; p = p == c1 ? c2 : NULL) {
		cr_expect(strstr(p, "\"server_nodes\": ["), "%s", p);
		cr_expect(strstr(p, "\"load_nodes\": ["), "%s", p);
		cr_expect(strstr(p, "\"numa_distance\": "), "%s", p);
		cr_expect(strstr(p, "\"steal\": {\"status\": \"ok\""), "%s", p);
		cr_expect(strstr(p, "\"steal/shard\": {\"throughput_rps\": "),
			  "%s", p);
	}
	free(j);
	if (pw_test_have_gnuplot()) {
		char *png = pw_test_slurp(scaling, NULL);
		cr_expect(png && !memcmp(png, "\x89PNG", 4),
			  "no scaling plot: %s", out);
		free(png);
	}
	unlink(scaling);
	expect_removed(hdr, "http-c1-shard.hgrm");
	expect_removed(hdr, "http-c1-steal.hgrm");
	expect_removed(hdr, "http-c2-shard.hgrm");
	expect_removed(hdr, "http-c2-steal.hgrm");
	cr_expect_eq(rmdir(hdr), 0);
	unlink(json);
	unlink(plot);
	cr_expect_eq(rmdir(dir), 0);
}

/*
 * Server and load share CPU 0 here, so under a sanitizer on a busy
 * machine the first answer can come later than a tenth of a second: the
 * warm-up lets the connections open before the measured half second, or
 * the round would fail with no answer and the warning go unchecked.
 */
Test(bench_scale, overlapping_cpus_are_warned_about)
{
	static char out[65536];
	char dir[] = "/tmp/pw-test-scale.XXXXXX", json[64], plot[64];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(json, sizeof(json), "%s/r.json", dir);
	snprintf(plot, sizeof(plot), "%s/l.png", dir);
	char *argv[] = { "pinwheel", "bench",	    "--server-cpus",
			 "0",	     "--load-cpus", "0",
			 "--rounds", "1",	    "--duration",
			 "0.5s",     "--warmup",    "0.2s",
			 "--conns",  "4",	    "--scenarios",
			 "http",     "--json",	    json,
			 "--plot",   plot,	    "--server-cores",
			 "all",	     NULL };
	int lock = pw_test_bench_lock();
	int st = pw_test_run_cmd(out, sizeof(out), argv);
	pw_test_bench_unlock(lock);
	cr_assert_eq(st, 0, "status %d: %s", st, out);
	cr_expect(strstr(out, "CPUs overlap (1 shared)"), "%s", out);
	cr_expect(strstr(out, "scaling plot skipped: fewer than two"), "%s",
		  out);
	char *j = pw_test_slurp(json, NULL);
	cr_assert_not_null(j, "%s", out);
	cr_expect(strstr(j, "\"cores\": 1,\n      \"server_cpus\": [0], "
			    "\"load_cpus\": [0], \"shared_cpus\": 1"),
		  "%s", j);
	free(j);
	unlink(json);
	unlink(plot);
	cr_expect_eq(rmdir(dir), 0);
}
