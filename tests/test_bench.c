/* SPDX-License-Identifier: MIT */
/*
 * test_bench.c - `pinwheel bench`: the scenario table and its selection,
 * word splitting, CPU placement, /proc CPU time, flag errors, errors by
 * cause as text, one short run of the http scenario in 5 rounds that
 * must leave valid JSON with both schedulers' results, their spread,
 * ratios with intervals and verdicts and the machine's state (and a plot
 * where gnuplot is installed), and the scratch folder removed after a
 * run and after running out of memory.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/common.h"
#include "tests/json.h"
#include "core/fault.h"
#include "apps/apps.h"
#include "apps/bench.h"
#include "apps/bench_int.h"

Test(bench, table_is_well_formed)
{
	for (unsigned i = 0; i < pw_bench_nscenarios; i++) {
		const struct pw_bench_scenario *s = &pw_bench_scenarios[i];
		char buf[256], *argv[16];

		cr_assert_not_null(s->name);
		cr_expect_neq(s->name[0], '\0');
		cr_expect_null(strchr(s->name, ','), "%s", s->name);
		cr_expect(s->what && strlen(s->what) > 20, "%s", s->name);
		cr_expect_null(strchr(s->what, '\n'), "one line: %s", s->name);
		cr_expect_gt(s->conns, 0u, "%s", s->name);
		cr_expect(s->place == PW_BENCH_SPLIT ||
				  s->place == PW_BENCH_ALL,
			  "%s", s->name);
		cr_expect_geq(pw_bench_split(s->server, buf, sizeof(buf), argv,
					     16),
			      1, "%s", s->name);
		if (s->peer)
			cr_expect_geq(pw_bench_split(s->peer, buf, sizeof(buf),
						     argv, 16),
				      1, "%s", s->name);
		for (unsigned j = 0; j < i; j++)
			cr_expect_str_neq(s->name, pw_bench_scenarios[j].name);
	}
	cr_expect_geq(pw_bench_nscenarios, 5u);
}

Test(bench, select_parses_lists)
{
	bool sel[32];
	char err[128];
	unsigned http = pw_bench_nscenarios, timers = pw_bench_nscenarios;

	cr_assert_leq(pw_bench_nscenarios, 32u);
	for (unsigned i = 0; i < pw_bench_nscenarios; i++) {
		if (!strcmp(pw_bench_scenarios[i].name, "http"))
			http = i;
		if (!strcmp(pw_bench_scenarios[i].name, "timers"))
			timers = i;
	}
	cr_assert_lt(http, pw_bench_nscenarios);
	cr_assert_lt(timers, pw_bench_nscenarios);

	cr_expect_eq(pw_bench_select("all", sel, err, sizeof(err)),
		     (int)pw_bench_nscenarios);
	for (unsigned i = 0; i < pw_bench_nscenarios; i++)
		cr_expect(sel[i]);
	cr_expect_eq(pw_bench_select("http", sel, err, sizeof(err)), 1);
	for (unsigned i = 0; i < pw_bench_nscenarios; i++)
		cr_expect_eq(sel[i], i == http);
	cr_expect_eq(pw_bench_select("timers,http,timers", sel, err,
				     sizeof(err)),
		     2, "repeats count once");
	for (unsigned i = 0; i < pw_bench_nscenarios; i++)
		cr_expect_eq(sel[i], i == http || i == timers);

	static const char *const bad[] = {
		"",	"nope",	       "http,",	  ",http", "http,,timers",
		"HTTP", "http timers", "all,http"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_expect_eq(pw_bench_select(bad[i], sel, err, sizeof(err)),
			     -EINVAL, "'%s'", bad[i]);
		cr_expect_neq(err[0], '\0', "'%s' has a message", bad[i]);
	}
	cr_expect_eq(pw_bench_select("nope", sel, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "'nope'"), "%s", err);
	cr_expect_eq(pw_bench_select(NULL, sel, NULL, 0), -EINVAL);
	cr_expect_eq(pw_bench_select("http", NULL, NULL, 0), -EINVAL);
}

Test(bench, split_words)
{
	char buf[64], *argv[8];

	cr_assert_eq(pw_bench_split("http --work 2000", buf, sizeof(buf), argv,
				    8),
		     3);
	cr_expect_str_eq(argv[0], "http");
	cr_expect_str_eq(argv[1], "--work");
	cr_expect_str_eq(argv[2], "2000");
	cr_expect_null(argv[3]);
	cr_expect_eq(pw_bench_split("  \thttp   --fanout\t ", buf, sizeof(buf),
				    argv, 8),
		     2);
	cr_expect_str_eq(argv[1], "--fanout");
	cr_expect_eq(pw_bench_split("", buf, sizeof(buf), argv, 8), 0);
	cr_expect_null(argv[0]);
	cr_expect_eq(pw_bench_split("a b c", buf, sizeof(buf), argv, 3), -E2BIG,
		     "no room for the NULL");
	cr_expect_eq(pw_bench_split("abcdef", buf, 6, argv, 8), -E2BIG);
	cr_expect_eq(pw_bench_split(NULL, buf, sizeof(buf), argv, 8), -EINVAL);
}

/* A scenario's own placement (--server-cores auto) on @n allowed CPUs. */
static int place_auto(enum pw_bench_place place, const int *cpus, unsigned n,
		      int *srv, unsigned *ns, int *load, unsigned *nl)
{
	struct pw_bench_pools p = { .cpus = cpus, .n = n };

	return pw_bench_place_cores(place, &p, PW_BENCH_CORES_AUTO, srv, ns,
				    load, nl);
}

Test(bench, placement)
{
	int srv[8], load[8];
	unsigned ns, nl;
	static const int two[] = { 0, 1 }, one[] = { 3 },
			 five[] = { 0, 1, 2, 3, 4 };

	cr_assert_eq(place_auto(PW_BENCH_SPLIT, two, 2, srv, &ns, load, &nl),
		     0);
	cr_expect(ns == 1 && srv[0] == 0 && nl == 1 && load[0] == 1);
	cr_assert_eq(place_auto(PW_BENCH_ALL, two, 2, srv, &ns, load, &nl), 0);
	cr_expect(ns == 2 && nl == 2 && srv[1] == 1 && load[0] == 0);
	cr_assert_eq(place_auto(PW_BENCH_SPLIT, one, 1, srv, &ns, load, &nl),
		     0);
	cr_expect(ns == 1 && nl == 1 && srv[0] == 3 && load[0] == 3,
		  "one CPU: shared");
	cr_assert_eq(place_auto(PW_BENCH_SPLIT, five, 5, srv, &ns, load, &nl),
		     0);
	cr_expect(ns == 2 && srv[1] == 1 && nl == 3 && load[0] == 2 &&
		  load[2] == 4);
	cr_expect_eq(place_auto(PW_BENCH_SPLIT, two, 0, srv, &ns, load, &nl),
		     -EINVAL);
}

/* CLOCK_PROCESS_CPUTIME_ID in ns: the kernel's count that /proc/PID/stat
 * shows in clock ticks. */
static uint64_t process_cpu_ns(void)
{
	struct timespec ts;

	cr_assert_eq(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * pw_bench_proc_cpu_ns follows the process's CPU time: across 200 ms of
 * spinning (measured by the process CPU clock, so the same amount on any
 * machine) it advances by that much, to within the clock-tick
 * resolution of /proc (two ticks: utime and stime are each truncated),
 * and by no more than the CPU clock saw around both reads.
 */
Test(bench, proc_cpu_time)
{
	const uint64_t work = 200 * 1000000ull;
	const uint64_t tick = 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK);
	uint64_t a, b, outer0, inner0, inner1, outer1;
	volatile uint64_t x = 0;

	outer0 = process_cpu_ns();
	cr_assert_eq(pw_bench_proc_cpu_ns(getpid(), &a), 0);
	inner0 = process_cpu_ns();
	do {
		for (int i = 0; i < 100000; i++)
			x += (uint64_t)i;
		inner1 = process_cpu_ns();
	} while (inner1 - inner0 < work);
	cr_assert_eq(pw_bench_proc_cpu_ns(getpid(), &b), 0);
	outer1 = process_cpu_ns();
	cr_assert_gt(x, 0u);
	cr_assert_geq(b - a + 2 * tick, inner1 - inner0,
		      "%llu ns counted over %llu ns of CPU work",
		      (unsigned long long)(b - a),
		      (unsigned long long)(inner1 - inner0));
	cr_assert_leq(b - a, outer1 - outer0 + 2 * tick,
		      "%llu ns counted, %llu ns of CPU in all",
		      (unsigned long long)(b - a),
		      (unsigned long long)(outer1 - outer0));
	cr_expect_eq(pw_bench_proc_cpu_ns(-5, &a), -ENOENT);
	cr_expect_eq(pw_bench_proc_cpu_ns(getpid(), NULL), -EINVAL);
}

/* Runs the pinwheel command; its exit status, output in @out. */
static int run_cmd(char *out, size_t len, char *const argv[])
{
	int fd, status;
	size_t got = 0;
	ssize_t r;
	pid_t pid = pw_test_cmd_start(argv, &fd);

	while ((r = read(fd, out + got, len - 1 - got)) > 0) {
		got += (size_t)r;
		if (got + 1 == len)
			got = 0; /* keep reading; only the tail matters */
	}
	out[got] = '\0';
	close(fd);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

Test(bench, command_flags)
{
	static const struct pw_test_cmd_case cases[] = {
		{ { "pinwheel", "bench", "--help" }, 0, "timers" },
		{ { "pinwheel", "bench", "--scenarios", "nope" },
		  2,
		  "unknown scenario 'nope'" },
		{ { "pinwheel", "bench", "--scenarios", "" }, 2, "--scenarios" },
		{ { "pinwheel", "bench", "--rounds", "0" }, 2, "--rounds" },
		{ { "pinwheel", "bench", "--duration", "x" }, 2, "--duration" },
		{ { "pinwheel", "bench", "--conns", "0" }, 2, "--conns" },
		{ { "pinwheel", "bench", "--rate", "-1" }, 2, "--rate" },
		{ { "pinwheel", "bench", "--json", "" }, 2, "--json" },
		{ { "pinwheel", "bench", "--bogus" }, 2, "'--bogus'" },
		{ { "pinwheel", "bench", "--peers=yes" }, 2, "--peers" },
	};

	pw_test_cmd_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

Test(bench, error_causes_as_text)
{
	struct pw_load_errors e = { 0 };
	char buf[128];

	pw_bench_causes_text(&e, buf, sizeof(buf));
	cr_expect_str_eq(buf, "");
	e.timeout = 64;
	pw_bench_causes_text(&e, buf, sizeof(buf));
	cr_expect_str_eq(buf, "timeout 64");
	e.connect = 1;
	e.other = 3;
	pw_bench_causes_text(&e, buf, sizeof(buf));
	cr_expect_str_eq(buf, "connect 1, timeout 64, other 3");
	pw_bench_causes_text(&e, buf, 8);
	cr_expect_str_eq(buf, "connect", "cut to the buffer");
}

Test(bench, json_checker_works)
{
	cr_expect(pw_test_json_valid(
		"{\"a\": [1, -2.5e3, true, null, \"x\\n\"]}"));
	cr_expect(!pw_test_json_valid("{\"a\": 1,}"));
	cr_expect(!pw_test_json_valid("{\"a\": nan}"));
	cr_expect(!pw_test_json_valid("[1] 2"));
}

/* The first "throughput_rps" at or after @p is above 0. */
static void expect_throughput(const char *p)
{
	const char *t = strstr(p, "\"throughput_rps\": ");

	cr_assert_not_null(t, "%s", p);
	cr_expect_gt(atof(t + 18), 0.0, "%s", p);
}

/* Entries in the folder @path other than . and .., or -1. */
static int dir_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/*
 * The HdrHistogram files of column @sched in @dir: the interval log's
 * intervals hold exactly the answers the .hgrm (every round merged)
 * counts, five rounds of about one second each. Removes both files.
 */
static void expect_hdr_files(const char *dir, const char *sched)
{
	char path[128], line[256];
	unsigned long long total = 0;
	struct pw_hdr_log_info info;
	struct pw_hist sum;

	snprintf(path, sizeof(path), "%s/http-%s.hgrm", dir, sched);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "no %s", path);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "#[Max = %*f, Total count = %llu", &total) ==
		    1)
			break;
	fclose(f);
	unlink(path);
	cr_assert_gt(total, 0, "%s: no total count", path);
	snprintf(path, sizeof(path), "%s/http-%s.hlog", dir, sched);
	f = fopen(path, "r");
	cr_assert_not_null(f, "no %s", path);
	cr_assert_eq(pw_hdr_log_read(f, &sum, &info), 0, "%s: %s", path,
		     info.error ? info.error : "?");
	fclose(f);
	unlink(path);
	cr_expect_eq(pw_hist_count(&sum), total,
		     "%s: the intervals hold %llu answers, the rounds %llu",
		     sched, (unsigned long long)pw_hist_count(&sum), total);
	cr_expect_geq(info.intervals, 5, "%s: %llu intervals", sched,
		      (unsigned long long)info.intervals);
	pw_hist_destroy(&sum);
}

Test(bench, short_http_run_writes_json_and_plot)
{
	static char out[65536];
	char dir[] = "/tmp/pw-test-bench.XXXXXX", json[64], plot[64], tmp[64];
	char hdr[64];
	size_t len = 0;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(json, sizeof(json), "%s/out/r.json", dir);
	snprintf(plot, sizeof(plot), "%s/l.png", dir);
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	snprintf(hdr, sizeof(hdr), "%s/hdr", dir);
	cr_assert_eq(mkdir(tmp, 0700), 0);
	cr_assert_eq(setenv("TMPDIR", tmp, 1), 0);
	char *argv[] = { "pinwheel",	   "bench", "--scenarios", "http",
			 "--rounds",	   "5",	    "--duration",  "1s",
			 "--warmup",	   "0.2s",  "--conns",	   "8",
			 "--json",	   json,    "--plot",	   plot,
			 "--hgrm",	   hdr,	    "--hdr-log",   hdr,
			 "--server-cores", "1",	    NULL };
	int lock = pw_test_bench_lock();
	int st = run_cmd(out, sizeof(out), argv);
	pw_test_bench_unlock(lock);
	cr_assert_eq(st, 0, "status %d: %s", st, out);
	cr_expect_eq(dir_entries(tmp), 0, "the scratch folder is left");
	cr_expect_eq(rmdir(tmp), 0);
	cr_expect(strstr(out, "steal/shard"), "%s", out);
	cr_expect(strstr(out, "keep-alive"), "the one-line description: %s",
		  out);
	/* The spread, a verdict on throughput and p99, the machine. */
	cr_expect(strstr(out, "min..max"), "%s", out);
	cr_expect(strstr(out, "   throughput: "), "%s", out);
	cr_expect(strstr(out, "   p99: "), "%s", out);
	cr_expect(strstr(out, "  machine: load average "), "%s", out);

	char *j = pw_test_slurp(json, &len);
	cr_assert_not_null(j, "no %s: %s", json, out);
	cr_expect(pw_test_json_valid(j), "invalid JSON: %s", j);
	cr_expect(strstr(j, "\"name\": \"http\""), "%s", j);
	/* Both schedulers ran and answered. */
	const char *shard = strstr(j, "\"shard\": {\"status\": \"ok\"");
	const char *steal = strstr(j, "\"steal\": {\"status\": \"ok\"");
	cr_expect_not_null(shard, "%s", j);
	cr_expect_not_null(steal, "%s", j);
	if (shard)
		expect_throughput(shard);
	if (steal)
		expect_throughput(steal);
	cr_expect(strstr(j, "\"cpu_us_per_request\": "), "%s", j);
	/* Errors by cause, spread, the ratios with intervals and verdicts,
	 * the machine, and the alternated order: shard first in round 1,
	 * second in round 2. */
	cr_expect(strstr(j, "\"error_causes\": {\"connect\": "), "%s", j);
	cr_expect(strstr(j, "\"spread\": {\"throughput_rps\": {\"n\": 5, "),
		  "%s", j);
	cr_expect(strstr(j, "\"steal/shard\": {\"throughput_rps\": "
			    "{\"rounds\": 5, \"ratio\": "),
		  "%s", j);
	cr_expect(strstr(j, "\"ci95\": ["), "%s", j);
	cr_expect(strstr(j, "\"verdict\": \""), "%s", j);
	cr_expect(strstr(j, "\"machine\": {\"load_average\": "), "%s", j);
	cr_expect(strstr(j, "\"bootstrap\": {\"method\": "), "%s", j);
	if (shard) {
		cr_expect(strstr(shard, "{\"round\": 1, \"order\": 1, "), "%s",
			  shard);
		cr_expect(strstr(shard, "{\"round\": 2, \"order\": 2, "), "%s",
			  shard);
	}
	free(j);

	if (pw_test_have_gnuplot()) {
		char *png = pw_test_slurp(plot, &len);
		cr_assert_not_null(png, "no plot: %s", out);
		cr_expect(len > 8 && !memcmp(png, "\x89PNG", 4));
		free(png);
	} else {
		cr_expect(strstr(out, "gnuplot is not installed"), "%s", out);
	}
	cr_expect_eq(dir_entries(hdr), 4, "an .hgrm and an .hlog per column");
	expect_hdr_files(hdr, "shard");
	expect_hdr_files(hdr, "steal");
	cr_expect_eq(rmdir(hdr), 0);
	unlink(json);
	unlink(plot);
	snprintf(json, sizeof(json), "%s/out", dir);
	rmdir(json);
	rmdir(dir);
}

/*
 * The tokio column and skips: a stand-in peer (a script that serves with
 * pinwheel http) fills the column; a scenario whose flags this build may
 * not have either runs or says why it was skipped; the run still exits 0.
 */
Test(bench, peer_column_and_skips)
{
	static char out[65536];
	char dir[] = "/tmp/pw-test-bench.XXXXXX", json[64], plot[64], peer[64];
	size_t len = 0;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(json, sizeof(json), "%s/r.json", dir);
	snprintf(plot, sizeof(plot), "%s/l.png", dir);
	snprintf(peer, sizeof(peer), "%s/peer", dir);
	FILE *f = fopen(peer, "w");
	cr_assert_not_null(f);
	fprintf(f,
		"#!/bin/sh\n"
		"[ \"$1\" = http ] || exit 2\n"
		"shift\n"
		"l=; w=1\n"
		"while [ $# -gt 0 ]; do\n"
		"  case $1 in\n"
		"  --help) exit 0 ;;\n"
		"  --listen) l=$2; shift 2 ;;\n"
		"  --workers) w=$2; shift 2 ;;\n"
		"  *) echo \"peer: unknown flag $1\" >&2; exit 2 ;;\n"
		"  esac\n"
		"done\n"
		"exec %s/pinwheel http --listen \"$l\" --shards \"$w\"\n",
		PW_BUILDDIR);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(peer, 0755), 0);

	char *argv[] = {
		"pinwheel", "bench",	  "--scenarios", "http,fanout",
		"--rounds", "1",	  "--duration",	 "0.3s",
		"--warmup", "0",	  "--conns",	 "4",
		"--peers",  "--peer-bin", peer,		 "--json",
		json,	    "--plot",	  plot,		 "--server-cores",
		"auto",	    NULL
	};
	int lock = pw_test_bench_lock();
	int st = run_cmd(out, sizeof(out), argv);
	pw_test_bench_unlock(lock);
	cr_assert_eq(st, 0, "status %d: %s", st, out);
	char *j = pw_test_slurp(json, &len);
	cr_assert_not_null(j, "%s", out);
	cr_expect(pw_test_json_valid(j), "invalid JSON: %s", j);
	const char *tokio = strstr(j, "\"tokio\": {\"status\": \"ok\"");
	cr_expect_not_null(tokio, "%s", j);
	if (tokio)
		expect_throughput(tokio);
	/* fanout: ran under both, or skipped with a reason. */
	const char *fan = strstr(j, "\"name\": \"fanout\"");
	cr_assert_not_null(fan, "%s", j);
	cr_expect(strstr(fan, "\"status\": \"skipped\", \"reason\": ") ||
			  strstr(fan, "\"steal\": {\"status\": \"ok\""),
		  "%s", fan);
	cr_expect(strstr(out, "fanout: "), "its one-line description: %s", out);
	free(j);
	unlink(json);
	unlink(plot);
	unlink(peer);
	rmdir(dir);
}

/*
 * Each allocation `pinwheel bench` makes after its scratch folder failing
 * in turn (the rows' latency histograms, through the library's fault
 * injection): it says so, exits 1 and leaves nothing in $TMPDIR. The
 * command runs in process in a child of the test, where the fault is
 * armed.
 */
Test(bench, out_of_memory_removes_the_scratch_folder)
{
	static char out[4096];
	char dir[] = "/tmp/pw-test-bench.XXXXXX";
	char *argv[] = { "bench", "--scenarios", "http,timers", "--duration",
			 "10ms",  "--warmup",	 "0",		NULL };

	cr_assert_not_null(mkdtemp(dir));
	/* Two selected rows of two columns: four histograms. */
	for (unsigned long n = 0; n < 4; n++) {
		int pfd[2];

		cr_assert_eq(pipe(pfd), 0);
		pid_t pid = pw_test_fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			dup2(pfd[1], 1);
			dup2(pfd[1], 2);
			close(pfd[0]);
			setenv("TMPDIR", dir, 1);
			pw__fault_arm(PW__FAULT_HIST, n, 1);
			_exit(pw_app_bench(7, argv));
		}
		close(pfd[1]);
		int st = pw_test_cmd_wait(pid, pfd[0], out, sizeof(out));
		cr_expect_eq(st, 1, "histogram %lu: status %d: %s", n, st, out);
		cr_expect(strstr(out, "pinwheel bench: out of memory"),
			  "histogram %lu: %s", n, out);
		cr_expect_eq(dir_entries(dir), 0,
			     "histogram %lu: the scratch folder is left", n);
	}
	cr_expect_eq(rmdir(dir), 0);
}
