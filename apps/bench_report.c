/* SPDX-License-Identifier: MIT */
/*
 * bench_report.c - what `pinwheel bench` reports: the median of each
 * figure over the rounds as a table (with the steal/shard ratios), the
 * same and every round as JSON, and every round's latency samples
 * merged into one percentile curve per column, drawn with gnuplot (one
 * panel per scenario). Nothing here measures or starts a server but
 * gnuplot.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "pinwheel.h"
#include "apps/bench.h"
#include "apps/bench_int.h"
#include "apps/bench_stats.h"
#include "apps/cli.h"
#include "apps/plot.h"

/* ---- figures, medians and ratios ---------------------------------------- */

/* The figures' JSON keys, their names in a verdict, which way is better,
 * and their table columns (width, decimals). */
static const struct figure {
	const char *key, *what;
	enum pw_stats_sense sense;
	int width, prec;
} figs[NFIGS] = {
	[FIG_RPS] = { "throughput_rps", "throughput", PW_STATS_HIGHER_BETTER,
		      12, 1 },
	[FIG_P50] = { "p50_us", "p50", PW_STATS_LOWER_BETTER, 10, 1 },
	[FIG_P99] = { "p99_us", "p99", PW_STATS_LOWER_BETTER, 10, 1 },
	[FIG_P999] = { "p99.9_us", "p99.9", PW_STATS_LOWER_BETTER, 10, 1 },
	[FIG_CPU] = { "cpu_us_per_request", "CPU per request",
		      PW_STATS_LOWER_BETTER, 11, 2 },
};

/* Figure @f of @m; below 0 when unknown. */
static double fig(const struct meas *m, int f)
{
	switch (f) {
	case FIG_RPS:
		return m->rps;
	case FIG_P50:
		return m->p50;
	case FIG_P99:
		return m->p99;
	case FIG_P999:
		return m->p999;
	default:
		return m->cpu_us;
	}
}

/* Figure @f of @c's rounds, the unknown ones left out, in @s. Return:
 * whether any is known. */
static bool summary(const struct cell *c, int f, struct pw_stats_summary *s)
{
	double v[ROUNDS_MAX];
	unsigned n = 0;

	for (unsigned i = 0; i < c->n; i++)
		if (fig(&c->m[i], f) >= 0)
			v[n++] = fig(&c->m[i], f);
	return n && !pw_stats_summarize(v, n, s);
}

/* The median of figure @f over @c's rounds; -1 when none is known. */
static double median(const struct cell *c, int f)
{
	struct pw_stats_summary s;

	return summary(c, f, &s) ? s.median : -1;
}

/* The ratio of figure @f, column @a over column @b, over the rounds both
 * measured (above 0), with its interval. Return: whether any round
 * pairs. */
static bool ratio(const struct cell *a, const struct cell *b, int f,
		  struct pw_stats_ci *ci)
{
	double va[ROUNDS_MAX], vb[ROUNDS_MAX];
	unsigned n = 0;

	for (unsigned i = 0; i < a->n; i++)
		for (unsigned j = 0; j < b->n; j++)
			if (a->m[i].round == b->m[j].round &&
			    fig(&a->m[i], f) > 0 && fig(&b->m[j], f) > 0) {
				va[n] = fig(&a->m[i], f);
				vb[n++] = fig(&b->m[j], f);
			}
	return n && !pw_stats_boot_ratio(va, vb, n, PW_STATS_SEED, ci);
}

static uint64_t total_errors(const struct cell *c, struct pw_load_errors *e)
{
	uint64_t n = 0;

	memset(e, 0, sizeof(*e));
	for (unsigned i = 0; i < c->n; i++) {
		n += c->m[i].errors;
		e->connect += c->m[i].err.connect;
		e->reset += c->m[i].err.reset;
		e->timeout += c->m[i].err.timeout;
		e->bad += c->m[i].err.bad;
		e->other += c->m[i].err.other;
	}
	return n;
}

void pw_bench_causes_text(const struct pw_load_errors *e, char *buf, size_t len)
{
	const uint64_t v[] = { e->connect, e->reset, e->timeout, e->bad,
			       e->other };
	static const char *const name[] = { "connect", "reset", "timeout",
					    "bad", "other" };
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < 5 && used < len; i++)
		if (v[i])
			used += (size_t)snprintf(buf + used, len - used,
						 "%s%s %" PRIu64,
						 used ? ", " : "", name[i],
						 v[i]);
}

/* ---- warnings ------------------------------------------------------------- */

unsigned pw_bench_warnings(const struct bench *b,
			   char (*out)[PW_MACHINE_WARN_LEN], unsigned max)
{
	unsigned n = pw_machine_warnings(&b->machine, b->ncpus, out, max);

	for (unsigned i = 0; i < b->nrows; i++) {
		const struct row *r = &b->rows[i];
		char label[64];

		if (!r->selected || r->skipped)
			continue;
		pw_bench_row_label(b, r, label, sizeof(label));
		if (r->smt && n < max)
			snprintf(out[n++], PW_MACHINE_WARN_LEN,
				 "%s: server CPU %d and load CPU %d are SMT "
				 "siblings: they share one core",
				 label, r->smt_a, r->smt_b);
		for (int c = 0; c < NCOLS; c++) {
			struct pw_stats_summary s;

			if (n < max && r->cell[c].n > 1 &&
			    summary(&r->cell[c], FIG_RPS, &s) &&
			    s.cv > PW_MACHINE_CV_WARN)
				snprintf(out[n++], PW_MACHINE_WARN_LEN,
					 "%s %s: throughput varies by %.1f%% "
					 "(CV) over %u rounds, above %.0f%%",
					 label, pw_bench_col_name[c],
					 100 * s.cv, s.n,
					 100 * PW_MACHINE_CV_WARN);
		}
	}
	return n;
}

void pw_bench_print_warnings(const struct bench *b, FILE *f)
{
	char w[32][PW_MACHINE_WARN_LEN];
	unsigned n = pw_bench_warnings(b, w, 32);

	if (!n)
		return;
	fprintf(f, "\nwarnings: the run may be too noisy to decide "
		   "(docs/benchmarking.md, \"Reading a verdict\"):\n");
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "  - %s\n", w[i]);
}

/* ---- the table ------------------------------------------------------------ */

static void print_num(FILE *f, double v, int width, int prec)
{
	if (v < 0)
		fprintf(f, " %*s", width, "-");
	else
		fprintf(f, " %*.*f", width, prec, v);
}

/* @v in at most 5 characters or so: 98k, 1.2k, 739, 8.92. */
static int short_num(char *buf, size_t len, double v)
{
	if (v >= 10000)
		return snprintf(buf, len, "%.0fk", v / 1e3);
	if (v >= 1000)
		return snprintf(buf, len, "%.1fk", v / 1e3);
	if (v >= 100)
		return snprintf(buf, len, "%.0f", v);
	if (v >= 10)
		return snprintf(buf, len, "%.1f", v);
	return snprintf(buf, len, "%.2f", v);
}

/* A cell's figures: medians, the throughput's CV, the errors (with their
 * causes); then a line of min..max per figure. */
static void print_cell(FILE *f, const struct cell *cl)
{
	struct pw_stats_summary s;
	struct pw_load_errors e;
	uint64_t errors = total_errors(cl, &e);
	char causes[128];

	for (int k = 0; k < NFIGS; k++)
		print_num(f, median(cl, k), figs[k].width, figs[k].prec);
	if (summary(cl, FIG_RPS, &s) && s.n > 1)
		fprintf(f, " %5.1f%%", 100 * s.cv);
	else
		fprintf(f, " %6s", "-");
	fprintf(f, " %8" PRIu64, errors);
	pw_bench_causes_text(&e, causes, sizeof(causes));
	if (errors)
		fprintf(f, " (%s)", causes);
	fprintf(f, "\n%-9s %-12s", "", "  min..max");
	for (int k = 0; k < NFIGS; k++) {
		char lo[16], hi[16], both[40];

		if (!summary(cl, k, &s)) {
			fprintf(f, " %*s", figs[k].width, "-");
			continue;
		}
		short_num(lo, sizeof(lo), s.min);
		short_num(hi, sizeof(hi), s.max);
		snprintf(both, sizeof(both), "%s..%s", lo, hi);
		fprintf(f, " %*s", figs[k].width, both);
	}
	fputc('\n', f);
}

/* The ratio line of column @a over @b (named @name), then the verdicts
 * on throughput and p99. */
static void print_ratios(FILE *f, const struct cell *a, const struct cell *b,
			 const char *na, const char *nb)
{
	struct pw_stats_ci ci;
	char name[32], v[200];

	snprintf(name, sizeof(name), "%s/%s", na, nb);
	fprintf(f, "%-9s %-12s", "", name);
	for (int k = 0; k < NFIGS; k++)
		if (ratio(a, b, k, &ci))
			fprintf(f, " %*.2fx", figs[k].width - 1, ci.ratio);
		else
			fprintf(f, " %*s", figs[k].width, "-");
	fputc('\n', f);
	for (int k = FIG_RPS; k <= FIG_P99; k += FIG_P99 - FIG_RPS) {
		if (!ratio(a, b, k, &ci))
			continue;
		pw_stats_verdict(&ci, figs[k].sense, na, nb, figs[k].what, v,
				 sizeof(v));
		fprintf(f, "%-9s   %s: %s\n", "", figs[k].what, v);
	}
}

/* Row @r of @b's lines. */
static void print_row(FILE *f, const struct bench *b, const struct row *r)
{
	bool first = true;
	char label[64];

	pw_bench_row_label(b, r, label, sizeof(label));
	if (r->skipped) {
		fprintf(f, "%-9s skipped: %s\n", label, r->note);
		return;
	}
	for (int c = 0; c < NCOLS; c++) {
		const struct cell *cl = &r->cell[c];

		if (!cl->used)
			continue;
		fprintf(f, "%-9s %-12s", first ? label : "",
			pw_bench_col_name[c]);
		first = false;
		if (!cl->n)
			fprintf(f, " %s: %s\n",
				cl->skipped ? "skipped" : "failed",
				cl->note[0] ? cl->note : "no result");
		else
			print_cell(f, cl);
	}
	for (int c = COL_STEAL; c < NCOLS; c++)
		if (r->cell[c].n && r->cell[COL_SHARD].n)
			print_ratios(f, &r->cell[c], &r->cell[COL_SHARD],
				     pw_bench_col_name[c],
				     pw_bench_col_name[COL_SHARD]);
}

void pw_bench_print_table(const struct bench *b, FILE *f)
{
	fprintf(f, "\n%-9s %-12s %12s %10s %10s %10s %11s %6s %8s\n",
		"scenario", "sched", "req/s", "p50 us", "p99 us", "p99.9 us",
		"cpu us/req", "cv", "errors");
	for (unsigned i = 0; i < b->nrows; i++)
		if (b->rows[i].selected)
			print_row(f, b, &b->rows[i]);
}

/* ---- JSON ------------------------------------------------------------------ */

static void json_num(FILE *f, const char *key, double v)
{
	fprintf(f, "\"%s\": ", key);
	if (v < 0)
		fprintf(f, "null");
	else
		fprintf(f, "%.3f", v);
}

static void json_cpus(FILE *f, const int *cpus, unsigned n)
{
	fputc('[', f);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "%s%d", i ? ", " : "", cpus[i]);
	fputc(']', f);
}

static void json_causes(FILE *f, const struct pw_load_errors *e)
{
	fprintf(f,
		"\"error_causes\": {\"connect\": %" PRIu64
		", \"reset\": %" PRIu64 ", \"timeout\": %" PRIu64
		", \"bad\": %" PRIu64 ", \"other\": %" PRIu64 "}",
		e->connect, e->reset, e->timeout, e->bad, e->other);
}

/* One round's figures. */
static void json_round(FILE *f, const struct meas *m)
{
	fprintf(f, "{\"round\": %u, \"order\": %u, ", m->round + 1,
		m->slot + 1);
	json_num(f, "throughput_rps", m->rps);
	fprintf(f, ", \"requests\": %" PRIu64 ", \"errors\": %" PRIu64 ", ",
		m->requests, m->errors);
	json_causes(f, &m->err);
	for (int k = FIG_P50; k < NFIGS; k++) {
		fprintf(f, ", ");
		json_num(f, figs[k].key, fig(m, k));
	}
	fprintf(f, ", ");
	json_num(f, "server_cpu_s", m->cpu_s);
	fprintf(f, ", ");
	json_num(f, "elapsed_s", m->elapsed_s);
	fprintf(f, ", ");
	json_num(f, "vm_steal_pct", m->steal_pct);
	if (m->server_log[0]) {
		fprintf(f, ", \"server_log\": ");
		pw_cli_json_str(f, m->server_log);
	}
	fputc('}', f);
}

/* The spread of each figure over @c's rounds. */
static void json_spread(FILE *f, const struct cell *c)
{
	fprintf(f, ",\n        \"spread\": {");
	for (int k = 0; k < NFIGS; k++) {
		struct pw_stats_summary s;

		fprintf(f, "%s\"%s\": ", k ? ", " : "", figs[k].key);
		if (!summary(c, k, &s)) {
			fprintf(f, "null");
			continue;
		}
		fprintf(f,
			"{\"n\": %u, \"min\": %.3f, \"q1\": %.3f, "
			"\"median\": %.3f, \"q3\": %.3f, \"max\": %.3f, "
			"\"iqr\": %.3f, \"cv\": %.4f}",
			s.n, s.min, s.q1, s.median, s.q3, s.max, s.iqr, s.cv);
	}
	fputc('}', f);
}

static void json_cell(FILE *f, const struct cell *c)
{
	struct pw_load_errors e;
	uint64_t errors;

	fprintf(f, "{\"status\": \"%s\"",
		c->n	   ? "ok" :
		c->skipped ? "skipped" :
			     "failed");
	if (c->note[0]) {
		fprintf(f, ", \"reason\": ");
		pw_cli_json_str(f, c->note);
	}
	if (!c->n) {
		fputc('}', f);
		return;
	}
	for (int k = 0; k < NFIGS; k++) {
		fprintf(f, ", ");
		json_num(f, figs[k].key, median(c, k));
	}
	errors = total_errors(c, &e);
	fprintf(f, ", \"errors\": %" PRIu64 ", ", errors);
	json_causes(f, &e);
	json_spread(f, c);
	fprintf(f, ",\n        \"rounds\": [");
	for (unsigned i = 0; i < c->n; i++) {
		fprintf(f, "%s\n          ", i ? "," : "");
		json_round(f, &c->m[i]);
	}
	fprintf(f, "],\n        \"latency\": ");
	if (c->have_hist)
		pw_hist_write_json(&c->hist, f);
	else
		fprintf(f, "null");
	fputc('}', f);
}

/* The ratios of column @a over @b, each with its interval and verdict. */
static void json_ratio(FILE *f, const struct cell *a, const struct cell *b,
		       const char *na, const char *nb)
{
	fprintf(f, "\"%s/%s\": {", na, nb);
	for (int k = 0; k < NFIGS; k++) {
		struct pw_stats_ci ci;
		char v[200];

		fprintf(f, "%s\"%s\": ", k ? ",\n          " : "", figs[k].key);
		if (!ratio(a, b, k, &ci)) {
			fprintf(f, "null");
			continue;
		}
		pw_stats_verdict(&ci, figs[k].sense, na, nb, figs[k].what, v,
				 sizeof(v));
		fprintf(f,
			"{\"rounds\": %u, \"ratio\": %.4f, \"ci95\": [%.4f, "
			"%.4f], \"verdict\": ",
			ci.n, ci.ratio, ci.lo, ci.hi);
		pw_cli_json_str(f, v);
		fputc('}', f);
	}
	fputc('}', f);
}

/* The settings of the bench, after its opening brace. */
static void json_settings(const struct bench *b, FILE *f)
{
	struct utsname u;
	char date[32] = "";
	time_t now = time(NULL);
	struct tm tm;

	if (uname(&u))
		strcpy(u.release, "unknown");
	if (gmtime_r(&now, &tm))
		strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(f, "\n  \"pinwheel\": ");
	pw_cli_json_str(f, pw_version());
	fprintf(f, ",\n  \"date\": \"%s\",\n  \"kernel\": ", date);
	pw_cli_json_str(f, u.release);
	fprintf(f, ",\n  \"cpus\": ");
	json_cpus(f, b->cpus, b->ncpus);
	fprintf(f,
		",\n  \"duration_s\": %.3f,\n  \"warmup_s\": %.3f,\n"
		"  \"rounds\": %" PRIu64 ",\n  \"mode\": \"%s\",\n"
		"  \"rate\": %" PRIu64,
		(double)b->duration / 1e9, (double)b->warmup / 1e9, b->rounds,
		b->rate ? "open" : "closed", b->rate);
	fprintf(f, ",\n  \"server_cores\": ");
	if (b->counts[0] == PW_BENCH_CORES_AUTO)
		fprintf(f, "\"auto\"");
	else
		for (unsigned i = 0; i < b->ncounts; i++)
			fprintf(f, "%s%u%s", i ? ", " : "[", b->counts[i],
				i + 1 == b->ncounts ? "]" : "");
	fprintf(f,
		",\n  \"bootstrap\": {\"method\": \"paired rounds: the "
		"median of the per-round ratios, resampled by round\", "
		"\"resamples\": %u, \"seed\": %llu, \"confidence\": 0.95, "
		"\"min_rounds\": %u}",
		PW_STATS_RESAMPLES, (unsigned long long)PW_STATS_SEED,
		PW_STATS_MIN_ROUNDS);
}

/* The machine's state and the warnings, after the settings. */
static void json_machine(const struct bench *b, FILE *f)
{
	const struct pw_machine *m = &b->machine;
	char w[32][PW_MACHINE_WARN_LEN];
	unsigned n = pw_bench_warnings(b, w, 32);

	fprintf(f, ",\n  \"machine\": {\"load_average\": ");
	if (m->load1 >= 0)
		fprintf(f, "[%.2f, %.2f, %.2f]", m->load1, m->load5, m->load15);
	else
		fprintf(f, "null");
	fprintf(f, ", \"online_cpus\": %u, ", m->online);
	json_num(f, "steal_pct", m->steal_pct);
	fprintf(f, ", \"governor\": ");
	pw_cli_json_str(f, m->governor);
	fprintf(f, ",\n    \"warnings\": [");
	for (unsigned i = 0; i < n; i++) {
		fprintf(f, "%s\n      ", i ? "," : "");
		pw_cli_json_str(f, w[i]);
	}
	fprintf(f, "]}");
}

/* Row @r's placement: its core count, CPUs, nodes and their distance. */
static void json_place(const struct row *r, FILE *f)
{
	unsigned shared = 0;

	for (unsigned i = 0; i < r->nsrv; i++)
		for (unsigned j = 0; j < r->nload; j++)
			shared += r->srv[i] == r->load[j];
	fprintf(f,
		", \"place\": \"%s\", \"cores\": %u,\n      \"server_cpus\": ",
		r->sc->place == PW_BENCH_ALL ? "all" : "split", r->nsrv);
	json_cpus(f, r->srv, r->nsrv);
	fprintf(f, ", \"load_cpus\": ");
	json_cpus(f, r->load, r->nload);
	fprintf(f, ", \"shared_cpus\": %u, \"server_nodes\": ", shared);
	json_cpus(f, r->srv_nodes, r->nsrv_nodes);
	fprintf(f, ", \"load_nodes\": ");
	json_cpus(f, r->load_nodes, r->nload_nodes);
	if (r->distance > 0)
		fprintf(f, ", \"numa_distance\": %d", r->distance);
	else
		fprintf(f, ", \"numa_distance\": null");
}

/* One selected row: the scenario, its placement, and its cells. */
static void json_row(const struct row *r, FILE *f)
{
	bool first = true;

	fprintf(f, "\n    {\"name\": ");
	pw_cli_json_str(f, r->sc->name);
	fprintf(f, ", \"what\": ");
	pw_cli_json_str(f, r->sc->what);
	fprintf(f, ",\n      \"server\": ");
	pw_cli_json_str(f, r->sc->server);
	fprintf(f, ", \"backend\": ");
	if (r->sc->backend)
		pw_cli_json_str(f, r->sc->backend);
	else
		fprintf(f, "null");
	json_place(r, f);
	fprintf(f, ", \"smt_shared\": ");
	if (r->smt)
		fprintf(f, "[%d, %d]", r->smt_a, r->smt_b);
	else
		fprintf(f, "null");
	fprintf(f, ", \"conns\": %u,\n      \"status\": \"%s\"", r->conns,
		r->skipped ? "skipped" : "ran");
	if (r->skipped) {
		fprintf(f, ", \"reason\": ");
		pw_cli_json_str(f, r->note);
		fprintf(f, "}");
		return;
	}
	fprintf(f, ",\n      \"results\": {");
	for (int c = 0; c < NCOLS; c++) {
		if (!r->cell[c].used)
			continue;
		fprintf(f, "%s\n        \"%s\": ", first ? "" : ",",
			pw_bench_col_name[c]);
		first = false;
		json_cell(f, &r->cell[c]);
	}
	fprintf(f, "},\n      \"ratios\": {");
	first = true;
	for (int c = COL_STEAL; c < NCOLS; c++) {
		if (!r->cell[c].n || !r->cell[COL_SHARD].n)
			continue;
		fprintf(f, "%s\n        ", first ? "" : ",");
		first = false;
		json_ratio(f, &r->cell[c], &r->cell[COL_SHARD],
			   pw_bench_col_name[c], pw_bench_col_name[COL_SHARD]);
	}
	fprintf(f, "}}");
}

/* The Tokio peer's part, after --peers. */
static void json_peer(const struct bench *b, FILE *f)
{
	static const char *const names[2] = { "skewed_mt",
					      "spawn_mt_throughput" };

	fprintf(f, ",\n  \"tokio\": {\"http\": %s",
		b->peer_ok ? "true" : "false");
	if (b->peer_note[0]) {
		fprintf(f, ", \"note\": ");
		pw_cli_json_str(f, b->peer_note);
	}
	for (int i = 0; i < 2; i++)
		fprintf(f, ", \"%s\": %s", names[i],
			b->peer_sched[i] ? b->peer_sched[i] : "null");
	fputc('}', f);
}

int pw_bench_write_json(const struct bench *b, FILE *f)
{
	bool first = true;

	fputc('{', f);
	json_settings(b, f);
	json_machine(b, f);
	fprintf(f, ",\n  \"scenarios\": [");
	for (unsigned i = 0; i < b->nrows; i++) {
		if (!b->rows[i].selected)
			continue;
		if (!first)
			fputc(',', f);
		first = false;
		json_row(&b->rows[i], f);
	}
	fprintf(f, "\n  ]");
	if (b->peers)
		json_peer(b, f);
	fprintf(f, "\n}\n");
	return fflush(f) || ferror(f) ? -EIO : 0;
}

/* ---- the plot -------------------------------------------------------------- */

void pw_bench_make_parent(const char *path)
{
	char d[PATH_MAX];

	snprintf(d, sizeof(d), "%s", path);
	for (char *p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(d, 0755);
		*p = '/';
	}
}

static bool find_in_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		snprintf(out, len, "%.*s/%s", (int)n, path, name);
		if (n && !access(out, X_OK))
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

/* The panel of row @r (index @i): a curve per column that ran. */
static void plot_panel(const struct bench *b, const struct row *r, unsigned i,
		       FILE *f)
{
	bool first = true;
	char label[64];

	pw_bench_row_label(b, r, label, sizeof(label));
	fprintf(f, "set title '%s, %u connections'\nplot ", label, r->conns);
	for (int c = 0; c < NCOLS; c++) {
		if (!r->cell[c].n || !r->cell[c].have_hist)
			continue;
		fprintf(f,
			"%s$s%uc%d with linespoints pt 7 ps 0.4 "
			"lw 2 title '%s'",
			first ? "" : ", ", i, c, pw_bench_col_name[c]);
		first = false;
	}
	fputc('\n', f);
}

/* Rows with a curve to draw: selected, and a column that ran. */
static bool row_drawn(const struct row *r)
{
	for (int c = 0; c < NCOLS; c++)
		if (r->selected && r->cell[c].n && r->cell[c].have_hist)
			return true;
	return false;
}

/* The gnuplot script: the curves as data blocks, then the panels. */
static void plot_script(const struct bench *b, unsigned panels, FILE *f)
{
	for (unsigned i = 0; i < b->nrows; i++)
		for (int c = 0; c < NCOLS; c++) {
			const struct cell *cl = &b->rows[i].cell[c];

			if (!b->rows[i].selected || !cl->n || !cl->have_hist)
				continue;
			fprintf(f, "$s%uc%d << EOD\n", i, c);
			pw_plot_curve(f, &cl->hist);
			fprintf(f, "EOD\n");
		}
	fprintf(f, "set terminal pngcairo size 900,%u font ',9'\n",
		120 + 280 * panels);
	fprintf(f, "set output ");
	pw_plot_str(f, b->plot);
	fputc('\n', f);
	fprintf(f,
		"set multiplot layout %u,1 title 'pinwheel bench: latency "
		"by percentile, %s loop, %" PRIu64 " round%s merged'\n",
		panels, b->rate ? "open" : "closed", b->rounds,
		b->rounds == 1 ? "" : "s");
	pw_plot_percentile_axes(f);
	for (unsigned i = 0; i < b->nrows; i++)
		if (row_drawn(&b->rows[i]))
			plot_panel(b, &b->rows[i], i, f);
	fprintf(f, "unset multiplot\n");
}

/* Run gnuplot on the script @name (in the scratch folder) that @write
 * makes. Return: 0, or -1 with @why set. */
static int run_gnuplot(const struct bench *b, const char *name,
		       void (*write)(const struct bench *, unsigned, FILE *),
		       unsigned panels, char *why, size_t len)
{
	char gp[PATH_MAX], script[PATH_MAX + 16], log[PATH_MAX + 16];
	char line[200];
	FILE *f;
	pid_t pid;
	int st;

	if (!find_in_path("gnuplot", gp, sizeof(gp))) {
		snprintf(why, len,
			 "gnuplot is not installed (apt-get install "
			 "gnuplot-nox)");
		return -1;
	}
	snprintf(script, sizeof(script), "%s/%s", b->tmp, name);
	snprintf(log, sizeof(log), "%s/gnuplot.log", b->tmp);
	f = fopen(script, "w");
	if (!f) {
		snprintf(why, len, "cannot write %s: %s", script,
			 strerror(errno));
		return -1;
	}
	write(b, panels, f);
	if (fclose(f)) {
		snprintf(why, len, "cannot write %s", script);
		return -1;
	}
	char *argv[] = { gp, script, NULL };
	pid = pw_bench_spawn(argv, NULL, 0, log);
	st = pid < 0 ? -1 : pw_bench_wait_exit(pid);
	if (st) {
		pw_bench_first_line(log, line, sizeof(line));
		snprintf(why, len, "gnuplot failed (status %d): %s", st, line);
		return -1;
	}
	return 0;
}

int pw_bench_write_plot(const struct bench *b, char *why, size_t len)
{
	unsigned panels = 0;
	char gp[PATH_MAX];

	if (!find_in_path("gnuplot", gp, sizeof(gp))) {
		snprintf(why, len,
			 "gnuplot is not installed (apt-get install "
			 "gnuplot-nox)");
		return -1;
	}
	for (unsigned i = 0; i < b->nrows; i++)
		panels += row_drawn(&b->rows[i]);
	if (!panels)
		return 1;
	return run_gnuplot(b, "latency.gp", plot_script, panels, why, len);
}

/* ---- the scaling plot ------------------------------------------------------ */

/* Whether the rows from @i on of scenario b->rows[i].sc have two core
 * counts or more with a result; *@end gets the row after them. */
static bool scenario_scales(const struct bench *b, unsigned i, unsigned *end)
{
	unsigned ran = 0, j;

	for (j = i; j < b->nrows && b->rows[j].sc == b->rows[i].sc; j++)
		ran += !b->rows[j].skipped && b->rows[j].cell[COL_SHARD].n > 0;
	*end = j;
	return ran >= 2;
}

/* Data of the scenario in rows [@i, @end): per column a block $gIcC of
 * "cores req/s p99", then $gIr of "cores steal-req/s steal-p99 rps-ratio
 * p99-ratio" for the labels. */
static void scaling_data(const struct bench *b, unsigned i, unsigned end,
			 FILE *f)
{
	struct pw_stats_ci cr, cp;

	for (int c = 0; c < NCOLS; c++) {
		fprintf(f, "$g%uc%d << EOD\n", i, c);
		for (unsigned j = i; j < end; j++) {
			const struct cell *cl = &b->rows[j].cell[c];

			if (cl->n && median(cl, FIG_RPS) > 0)
				fprintf(f, "%u %.1f %.1f\n", b->rows[j].nsrv,
					median(cl, FIG_RPS),
					median(cl, FIG_P99));
		}
		fprintf(f, "EOD\n");
	}
	fprintf(f, "$g%ur << EOD\n", i);
	for (unsigned j = i; j < end; j++) {
		const struct cell *st = &b->rows[j].cell[COL_STEAL];
		const struct cell *sh = &b->rows[j].cell[COL_SHARD];

		if (!st->n || !sh->n || !ratio(st, sh, FIG_RPS, &cr) ||
		    !ratio(st, sh, FIG_P99, &cp))
			continue;
		fprintf(f, "%u %.1f %.1f \"%.2fx\" \"%.2fx\"\n",
			b->rows[j].nsrv, median(st, FIG_RPS),
			median(st, FIG_P99), cr.ratio, cp.ratio);
	}
	fprintf(f, "EOD\n");
}

/* The two panels of the scenario of row @i: throughput, then p99. */
static void scaling_panels(const struct bench *b, unsigned i, FILE *f)
{
	static const char *const ylabel[2] = { "requests/s", "p99 (us)" };

	for (int k = 0; k < 2; k++) {
		bool first = true;

		fprintf(f, "set title '%s: %s against server cores'\n",
			b->rows[i].sc->name, k ? "p99" : "throughput");
		fprintf(f, "set ylabel '%s'\nplot ", ylabel[k]);
		for (int c = 0; c < NCOLS; c++) {
			if (!b->rows[i].cell[c].used)
				continue;
			fprintf(f,
				"%s$g%uc%d using 1:%d with linespoints pt 7 "
				"lw 2 title '%s'",
				first ? "" : ", ", i, c, 2 + k,
				pw_bench_col_name[c]);
			first = false;
		}
		fprintf(f,
			", $g%ur using 1:%d:%d with labels offset 0,1 "
			"notitle\n",
			i, 2 + k, 4 + k);
	}
}

/* The gnuplot script of the scaling plot: @panels scenarios. */
static void scaling_script(const struct bench *b, unsigned panels, FILE *f)
{
	unsigned end;

	for (unsigned i = 0; i < b->nrows; i = end)
		if (scenario_scales(b, i, &end))
			scaling_data(b, i, end, f);
	fprintf(f, "set terminal pngcairo size 1200,%u font ',9'\n",
		120 + 300 * panels);
	fprintf(f, "set output ");
	pw_plot_str(f, b->scaling_plot);
	fprintf(f,
		"\nset multiplot layout %u,2 title 'pinwheel bench: "
		"medians over %" PRIu64 " round%s against server cores; "
		"labels: the steal/shard ratio'\n",
		panels, b->rounds, b->rounds == 1 ? "" : "s");
	fprintf(f, "set grid\nset key top left\nset xlabel 'server cores'\n"
		   "set xtics 1\nset offsets 0.3, 0.3, graph 0.12, 0\n"
		   "set yrange [0:*]\n");
	for (unsigned i = 0; i < b->nrows; i = end)
		if (scenario_scales(b, i, &end))
			scaling_panels(b, i, f);
	fprintf(f, "unset multiplot\n");
}

int pw_bench_write_scaling(const struct bench *b, char *why, size_t len)
{
	unsigned panels = 0, end;

	for (unsigned i = 0; i < b->nrows; i = end)
		panels += scenario_scales(b, i, &end);
	if (!panels)
		return 1;
	return run_gnuplot(b, "scaling.gp", scaling_script, panels, why, len);
}
