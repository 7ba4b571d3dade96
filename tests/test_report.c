/* SPDX-License-Identifier: MIT */
/*
 * test_report.c - `pinwheel report`: merging interval logs and load JSON
 * gives exactly the histogram of all their values together; inputs of
 * other layouts and unreadable inputs are refused with a clear message;
 * and two `pinwheel load --hdr-log` processes started together
 * (--start-at) against one `pinwheel http` server merge into one
 * histogram holding every answer of both.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/common.h"
#include "tests/json.h"
#include "pinwheel/hist_hdr.h"
#include "apps/load.h"

/* A scratch file name for this test process. */
static void tmp_name(char *buf, size_t len, const char *what)
{
	snprintf(buf, len, "/tmp/pw-report-%d-%s", getpid(), what);
}

/* The file @path, whole; valid until the next call. */
static char *read_file(const char *path)
{
	static char *last;

	free(last);
	last = pw_test_slurp(path, NULL);
	cr_assert_not_null(last, "%s", path);
	return last;
}

/* The number after "KEY": in @json, from @from on. */
static uint64_t json_u64(const char *json, const char *key)
{
	char k[128];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\": ", key);
	p = strstr(json, k);
	cr_assert_not_null(p, "no %s in %s", key, json);
	return strtoull(p + strlen(k), NULL, 10);
}

static void write_log(const char *path, struct pw_hist *h, int intervals)
{
	struct pw_hdr_log log;

	cr_assert_eq(pw_hdr_log_open(&log, path, 1733212800.0, 0), 0);
	for (int i = 0; i < intervals; i++)
		cr_assert_eq(pw_hdr_log_write(&log, &h[i], i, 1.0), 0);
	cr_assert_eq(pw_hdr_log_close(&log), 0);
}

static void write_json(const char *path, const struct pw_hist *h)
{
	char *s;
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	cr_assert_eq(pw_hist_encode_hdr(h, &s, NULL), 0);
	fprintf(f,
		"{\"proto\": \"http\", \"requests\": %" PRIu64
		", \"latency_hdr\": \"%s\", \"hgrm\": null}\n",
		pw_hist_count(h), s);
	fclose(f);
	free(s);
}

static void fill(struct pw_hist *h, uint64_t *seed, unsigned n, uint64_t base)
{
	for (unsigned i = 0; i < n; i++)
		pw_hist_record(h, base + pw_test_rng(seed) % (base * 20));
}

Test(report, merge_equals_one_histogram_of_everything)
{
	struct pw_hist iv[3], b, all, merged;
	char log[128], js[128], out[128];
	static char text[16384];
	uint64_t seed = 5;

	tmp_name(log, sizeof(log), "a.hlog");
	tmp_name(js, sizeof(js), "b.json");
	tmp_name(out, sizeof(out), "out.json");
	cr_assert_eq(pw_hist_init(&all, 0, 3), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(pw_hist_init(&iv[i], 0, 3), 0);
		fill(&iv[i], &seed, 20000, 30000 * (uint64_t)(i + 1));
		pw_hist_merge(&all, &iv[i]);
	}
	cr_assert_eq(pw_hist_init(&b, 0, 3), 0);
	fill(&b, &seed, 30000, 200000);
	pw_hist_merge(&all, &b);
	write_log(log, iv, 3);
	write_json(js, &b);

	char *argv[] = { "pinwheel", "report", log, "--json", out, js, NULL };
	int st = pw_test_run_cmd(text, sizeof(text), argv);
	cr_assert_eq(st, 0, "%s", text);
	cr_assert(strstr(text, "merged"), "%s", text);
	cr_assert(strstr(text, "p99.99"), "%s", text);
	char *json = read_file(out);
	cr_assert(pw_test_json_valid(json), "%s", json);
	cr_assert(strstr(json, "\"kind\": \"hdr_log\", \"histograms\": 3"));
	cr_assert(strstr(json, "\"kind\": \"load_json\", \"histograms\": 1"));
	const char *m = strstr(json, "\"merged\": ");
	cr_assert_not_null(m);
	/* Count: the sum; percentiles: those of one histogram of it all. */
	cr_assert_eq(json_u64(m, "count"), 90000);
	cr_assert_eq(json_u64(m, "count"), pw_hist_count(&all));
	static const char *keys[] = { "50", "75", "90", "99", "99.9", "99.99" };
	static const double ps[] = { 50, 75, 90, 99, 99.9, 99.99 };
	for (size_t i = 0; i < 6; i++)
		cr_assert_eq(json_u64(m, keys[i]),
			     pw_hist_percentile(&all, ps[i]), "p%s", keys[i]);
	/* And the merged histogram itself, bucket for bucket. */
	const char *hd = strstr(json, "\"merged_hdr\": \"");
	cr_assert_not_null(hd);
	hd += strlen("\"merged_hdr\": \"");
	cr_assert_eq(pw_hist_decode_hdr(&merged, hd, strcspn(hd, "\"")), 0);
	cr_assert_eq(merged.ncounts, all.ncounts);
	cr_assert_eq(memcmp(merged.counts, all.counts,
			    all.ncounts * sizeof(uint64_t)),
		     0);
	pw_hist_destroy(&merged);
	unlink(log);
	unlink(js);
	unlink(out);
	for (int i = 0; i < 3; i++)
		pw_hist_destroy(&iv[i]);
	pw_hist_destroy(&b);
	pw_hist_destroy(&all);
}

Test(report, refuses_other_layouts_and_bad_input)
{
	struct pw_hist a, b;
	char la[128], lb[128], bad[128], empty[128];
	static char text[16384];

	tmp_name(la, sizeof(la), "3.hlog");
	tmp_name(lb, sizeof(lb), "2.hlog");
	tmp_name(bad, sizeof(bad), "bad.hlog");
	tmp_name(empty, sizeof(empty), "empty.json");
	pw_hist_init(&a, 0, 3);
	pw_hist_init(&b, 0, 2);
	pw_hist_record(&a, 1000);
	pw_hist_record(&b, 1000);
	write_log(la, &a, 1);
	write_log(lb, &b, 1);
	FILE *f = fopen(bad, "w");
	fprintf(f, "0.000,1.000,0.001,HISTFAAAACB4nJNpmSzMwMDAxAAB\n");
	fclose(f);
	f = fopen(empty, "w");
	fprintf(f, "{\"proto\": \"http\"}\n");
	fclose(f);

	struct {
		char *argv[8];
		int status;
		const char *says;
	} cases[] = {
		{ { "pinwheel", "report", la, lb, NULL },
		  1,
		  "different layouts do not merge" },
		{ { "pinwheel", "report", bad, NULL },
		  1,
		  ":1: a truncated or corrupt histogram" },
		{ { "pinwheel", "report", empty, NULL },
		  1,
		  "no latency histogram" },
		{ { "pinwheel", "report", "/nonexistent.hlog", NULL },
		  1,
		  "No such file" },
		{ { "pinwheel", "report", NULL }, 2, "no FILE" },
		{ { "pinwheel", "report", "--bogus", la, NULL },
		  2,
		  "unknown flag" },
		{ { "pinwheel", "report", "--help", NULL }, 0, "FILE..." },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int st = pw_test_run_cmd(text, sizeof(text), cases[i].argv);
		cr_expect_eq(st, cases[i].status, "case %zu: %d: %s", i, st,
			     text);
		cr_expect(strstr(text, cases[i].says), "case %zu: %s", i, text);
	}
	unlink(la);
	unlink(lb);
	unlink(bad);
	unlink(empty);
	pw_hist_destroy(&a);
	pw_hist_destroy(&b);
}

/* One `pinwheel load` of the server at @at, its files named after @tag. */
static pid_t load_start(const char *at, const char *tag, char (*files)[128],
			char *start, int *fd)
{
	tmp_name(files[0], 128, tag);
	strcat(files[0], ".hlog");
	tmp_name(files[1], 128, tag);
	strcat(files[1], ".json");
	char *argv[] = { "pinwheel",   "load",	 "--target",  (char *)at,
			 "--shards",   "1",	 "--conns",   "2",
			 "--duration", "2s",	 "--warmup",  "100ms",
			 "--start-at", start,	 "--hdr-log", files[0],
			 "--json",     files[1], "--quiet",   NULL };
	return pw_test_cmd_start(argv, fd);
}

/* A one-shard `pinwheel http` on a free loopback port, its address into
 * @at; its pid, with its output on *@fd. */
static pid_t start_http(char at[PW_NET_ADDR_STRLEN], int *fd)
{
	static char text[16384];
	struct pw_net_addr addr;
	size_t len = 0;
	char *srv[] = { "pinwheel", "http", "--listen", "127.0.0.1:0",
			"--shards", "1",    NULL };
	pid_t sp = pw_test_cmd_start(srv, fd);

	pw_test_banner_addr(*fd, text, sizeof(text), &len, &addr);
	pw_net_addr_format(&addr, at, PW_NET_ADDR_STRLEN);
	return sp;
}

Test(report, two_concurrent_loads_merge_to_the_sum)
{
	static char text[16384], json_a[8192];
	char at[PW_NET_ADDR_STRLEN], fa[2][128], fb[2][128], out[128];
	int fd;

	pid_t sp = start_http(at, &fd);
	/* One start time for both, two seconds ahead (time to start both
	 * on a busy machine); 2 s runs, so that a connect whose SYN a busy
	 * server dropped is retried (after 1 s) within the run. */
	struct timespec now;
	char start[64];
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(start, sizeof(start), "%lld.%03d", (long long)now.tv_sec + 2,
		 (int)(now.tv_nsec / 1000000));
	static char out_a[8192], out_b[8192];
	int fda, fdb;
	pid_t a = load_start(at, "a", fa, start, &fda);
	pid_t b = load_start(at, "b", fb, start, &fdb);
	int sta = pw_test_cmd_wait(a, fda, out_a, sizeof(out_a));
	int stb = pw_test_cmd_wait(b, fdb, out_b, sizeof(out_b));
	cr_assert_eq(sta, 0, "%s", out_a);
	cr_assert_eq(stb, 0, "%s", out_b);
	kill(sp, SIGINT);
	pw_test_cmd_wait(sp, fd, text, sizeof(text));

	strcpy(json_a, read_file(fa[1]));
	uint64_t ra = json_u64(json_a, "requests");
	uint64_t rb = json_u64(read_file(fb[1]), "requests");
	cr_assert_gt(ra, 0);
	cr_assert_gt(rb, 0);
	cr_assert(strstr(json_a, "\"hdr_log\": \""), "%s", json_a);
	/* The runs waited for the start time (without --start-at each
	 * would have measured from about two seconds before it) and then
	 * started together: their measured starts a few ms apart on an
	 * idle machine, bounded at 0.5 s for a busy one, where one process
	 * may wait that long for a CPU. */
	double sa = strtod(strstr(json_a, "\"start_wall_s\": ") + 16, NULL);
	double sb = strtod(strstr(read_file(fb[1]), "\"start_wall_s\": ") + 16,
			   NULL);
	double s0 = strtod(start, NULL);
	cr_assert_geq(sa, s0 - 0.001, "%f before the start %f", sa, s0);
	cr_assert_geq(sb, s0 - 0.001, "%f before the start %f", sb, s0);
	cr_assert_lt(sa > sb ? sa - sb : sb - sa, 0.5, "%f %f", sa, sb);

	tmp_name(out, sizeof(out), "merged.json");
	char *argv[] = {
		"pinwheel", "report", "--json", out, fa[0], fb[0], NULL
	};
	int st = pw_test_run_cmd(text, sizeof(text), argv);
	cr_assert_eq(st, 0, "%s", text);
	const char *m = strstr(read_file(out), "\"merged\": ");
	cr_assert_not_null(m);
	cr_assert_eq(json_u64(m, "count"), ra + rb, "%s", text);
	/* The logs' intervals hold every answer of their run. */
	const char *in = strstr(read_file(out), "\"inputs\": ");
	cr_assert_eq(json_u64(in, "count"), ra);
	const char *second = strstr(strstr(in, "\"file\"") + 1, "\"file\"");
	cr_assert_not_null(second);
	cr_assert_eq(json_u64(second, "count"), rb);

	/* The JSON outputs merge to the same. */
	char *argv2[] = { "pinwheel", "report", "--json", out,
			  fa[1],      fb[1],	NULL };
	st = pw_test_run_cmd(text, sizeof(text), argv2);
	cr_assert_eq(st, 0, "%s", text);
	m = strstr(read_file(out), "\"merged\": ");
	cr_assert_eq(json_u64(m, "count"), ra + rb);
	for (int i = 0; i < 2; i++) {
		unlink(fa[i]);
		unlink(fb[i]);
	}
	unlink(out);
}

/* `pinwheel load --hgrm` writes HdrHistogram's distribution of the run;
 * --start-at refuses a time that has passed, and bad values, before the
 * run. */
Test(report, load_hgrm_and_start_at_checks)
{
	static char text[16384];
	char at[PW_NET_ADDR_STRLEN], hgrm[128];
	int fd;

	pid_t sp = start_http(at, &fd);
	tmp_name(hgrm, sizeof(hgrm), "run.hgrm");
	char *argv[] = { "pinwheel", "load", "--target",   at,
			 "--shards", "1",    "--requests", "300",
			 "--warmup", "0",    "--hgrm",	   hgrm,
			 "--quiet",  NULL };
	cr_assert_eq(pw_test_run_cmd(text, sizeof(text), argv), 0, "%s", text);
	char *h = read_file(hgrm);
	cr_assert_eq(strncmp(h,
			     "       Value     Percentile TotalCount "
			     "1/(1-Percentile)\n\n",
			     57),
		     0, "%s", h);
	cr_assert(strstr(h, "1.000000000000        300\n"), "%s", h);
	cr_assert(strstr(h, "Total count    =          300]"), "%s", h);
	unlink(hgrm);

	struct pw_test_cmd_case cases[] = {
		{ { "pinwheel", "load", "--target", at, "--start-at",
		    "1000000000", NULL },
		  2,
		  "s in the past" },
		{ { "pinwheel", "load", "--target", at, "--start-at", "soon",
		    NULL },
		  2,
		  "is not +DURATION" },
		{ { "pinwheel", "load", "--target", at, "--start-at", "+5x",
		    NULL },
		  2,
		  "is not +DURATION" },
		{ { "pinwheel", "load", "--target", at, "--hdr-log",
		    "/nonexistent/x.hlog", NULL },
		  2,
		  "--hdr-log: cannot open" },
	};
	pw_test_cmd_cases(cases, sizeof(cases) / sizeof(cases[0]));
	kill(sp, SIGINT);
	pw_test_cmd_wait(sp, fd, text, sizeof(text));
}

/* What the interval hook saw. */
struct ivl_seen {
	struct pw_hist sum;
	uint64_t n, next_index, bad_start;
	uint64_t lengths[16];
};

static void on_interval(void *arg, const struct pw_load_interval *iv)
{
	struct ivl_seen *v = arg;

	if (iv->index != v->next_index++ ||
	    iv->start_ns != iv->index * PW_NSEC_PER_SEC)
		v->bad_start++;
	if (v->n < 16)
		v->lengths[v->n] = iv->length_ns;
	v->n++;
	pw_hist_merge(&v->sum, iv->hist);
}

/* In process, on two shards: the interval histograms hold every answer
 * of the run's latency histogram, one a second, in order. */
Test(report, load_intervals_hold_every_answer)
{
	static char text[16384];
	struct pw_net_addr addr;
	struct pw_load_config lc;
	struct pw_load_result res;
	struct ivl_seen v = { 0 };
	size_t len = 0;
	int fd;

	char *srv[] = { "pinwheel", "http", "--listen", "127.0.0.1:0",
			"--shards", "1",    NULL };
	pid_t sp = pw_test_cmd_start(srv, &fd);
	pw_test_banner_addr(fd, text, sizeof(text), &len, &addr);
	cr_assert_eq(pw_hist_init(&v.sum, 0, PW_LOAD_HIST_DIGITS), 0);
	struct pw_runtime *rt = pw_test_runtime(2);
	pw_load_config_init(&lc);
	lc.target = addr;
	lc.conns = 4;
	lc.warmup_ns = 100 * PW_NSEC_PER_MSEC;
	lc.duration_ns = 2500 * PW_NSEC_PER_MSEC;
	lc.interval = on_interval;
	lc.arg = &v;
	cr_assert_eq(pw_load_run(rt, &lc, &res), 0);
	pw_runtime_destroy(rt);
	kill(sp, SIGINT);
	pw_test_cmd_wait(sp, fd, text, sizeof(text));

	cr_assert_gt(res.requests, 0);
	cr_assert_eq(v.bad_start, 0);
	cr_assert_eq(v.n, 3, "%" PRIu64 " intervals", v.n);
	cr_assert_eq(v.lengths[0], PW_NSEC_PER_SEC);
	cr_assert_eq(v.lengths[1], PW_NSEC_PER_SEC);
	cr_assert_eq(v.lengths[2], 500 * PW_NSEC_PER_MSEC);
	cr_assert_eq(pw_hist_count(&v.sum), res.requests);
	cr_assert_eq(memcmp(v.sum.counts, res.latency.counts,
			    v.sum.ncounts * sizeof(uint64_t)),
		     0);
	cr_assert_gt(res.start_wall_ns, 0);
	pw_hist_destroy(&v.sum);
	pw_load_result_destroy(&res);
}
