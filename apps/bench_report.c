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
#include "apps/cli.h"

/* ---- medians ------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of field @off (a double in struct meas) over @c's rounds;
 * negative values (unknown) are left out; -1 when none is known. */
static double median(const struct cell *c, size_t off)
{
	double v[ROUNDS_MAX];
	unsigned n = 0;

	for (unsigned i = 0; i < c->n; i++) {
		double x;
		memcpy(&x, (const char *)&c->m[i] + off, sizeof(x));
		if (x >= 0)
			v[n++] = x;
	}
	if (!n)
		return -1;
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MED(c, f) median((c), offsetof(struct meas, f))

static uint64_t total_errors(const struct cell *c)
{
	uint64_t e = 0;
	for (unsigned i = 0; i < c->n; i++)
		e += c->m[i].errors;
	return e;
}

/* ---- the table ------------------------------------------------------------ */

static void print_num(FILE *f, double v, int width, int prec)
{
	if (v < 0)
		fprintf(f, " %*s", width, "-");
	else
		fprintf(f, " %*.*f", width, prec, v);
}

static void print_ratio(FILE *f, double a, double b, int width)
{
	if (a < 0 || b <= 0)
		fprintf(f, " %*s", width, "-");
	else
		fprintf(f, " %*.2fx", width - 1, a / b);
}

void pw_bench_print_table(const struct bench *b, FILE *f)
{
	fprintf(f, "\n%-9s %-12s %12s %10s %10s %10s %11s %8s\n", "scenario",
		"sched", "req/s", "p50 us", "p99 us", "p99.9 us", "cpu us/req",
		"errors");
	for (unsigned i = 0; i < pw_bench_nscenarios; i++) {
		const struct row *r = &b->rows[i];
		bool first = true;

		if (!r->selected)
			continue;
		if (r->skipped) {
			fprintf(f, "%-9s skipped: %s\n", r->sc->name, r->note);
			continue;
		}
		for (int c = 0; c < NCOLS; c++) {
			const struct cell *cl = &r->cell[c];

			if (!cl->used)
				continue;
			fprintf(f, "%-9s %-12s", first ? r->sc->name : "",
				pw_bench_col_name[c]);
			first = false;
			if (!cl->n) {
				fprintf(f, " %s: %s\n",
					cl->skipped ? "skipped" : "failed",
					cl->note[0] ? cl->note : "no result");
				continue;
			}
			print_num(f, MED(cl, rps), 12, 1);
			print_num(f, MED(cl, p50), 10, 1);
			print_num(f, MED(cl, p99), 10, 1);
			print_num(f, MED(cl, p999), 10, 1);
			print_num(f, MED(cl, cpu_us), 11, 2);
			fprintf(f, " %8" PRIu64 "\n", total_errors(cl));
		}
		const struct cell *a = &r->cell[COL_STEAL],
				  *s = &r->cell[COL_SHARD];
		if (a->n && s->n) {
			fprintf(f, "%-9s %-12s", "", "steal/shard");
			print_ratio(f, MED(a, rps), MED(s, rps), 12);
			print_ratio(f, MED(a, p50), MED(s, p50), 10);
			print_ratio(f, MED(a, p99), MED(s, p99), 10);
			print_ratio(f, MED(a, p999), MED(s, p999), 10);
			print_ratio(f, MED(a, cpu_us), MED(s, cpu_us), 11);
			fputc('\n', f);
		}
	}
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

static void json_cell(FILE *f, const struct cell *c)
{
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
	fprintf(f, ", ");
	json_num(f, "throughput_rps", MED(c, rps));
	fprintf(f, ", ");
	json_num(f, "p50_us", MED(c, p50));
	fprintf(f, ", ");
	json_num(f, "p99_us", MED(c, p99));
	fprintf(f, ", ");
	json_num(f, "p99.9_us", MED(c, p999));
	fprintf(f, ", ");
	json_num(f, "cpu_us_per_request", MED(c, cpu_us));
	fprintf(f, ", \"errors\": %" PRIu64 ", \"rounds\": [", total_errors(c));
	for (unsigned i = 0; i < c->n; i++) {
		const struct meas *m = &c->m[i];
		fprintf(f, "%s\n          {", i ? "," : "");
		json_num(f, "throughput_rps", m->rps);
		fprintf(f,
			", \"requests\": %" PRIu64 ", \"errors\": %" PRIu64
			", ",
			m->requests, m->errors);
		json_num(f, "p50_us", m->p50);
		fprintf(f, ", ");
		json_num(f, "p99_us", m->p99);
		fprintf(f, ", ");
		json_num(f, "p99.9_us", m->p999);
		fprintf(f, ", ");
		json_num(f, "cpu_us_per_request", m->cpu_us);
		fprintf(f, ", ");
		json_num(f, "server_cpu_s", m->cpu_s);
		fprintf(f, ", ");
		json_num(f, "elapsed_s", m->elapsed_s);
		fputc('}', f);
	}
	fprintf(f, "],\n        \"latency\": ");
	if (c->have_hist)
		pw_hist_write_json(&c->hist, f);
	else
		fprintf(f, "null");
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
	fprintf(f, ", \"place\": \"%s\", \"server_cpus\": ",
		r->sc->place == PW_BENCH_ALL ? "all" : "split");
	json_cpus(f, r->srv, r->nsrv);
	fprintf(f, ", \"load_cpus\": ");
	json_cpus(f, r->load, r->nload);
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
	fprintf(f, ",\n  \"scenarios\": [");
	for (unsigned i = 0; i < pw_bench_nscenarios; i++) {
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

/*
 * @h's percentile curve as gnuplot data: x = 1 / (1 - p) (so 90% is 10,
 * 99% is 100), y the latency in us; ten points per decade, up to the
 * percentile the samples support, then the maximum.
 */
static void write_curve(FILE *f, const struct pw_hist *h)
{
	double n = (double)pw_hist_count(h), rest = 1.0;

	for (int i = 0; i <= 60 && 1.0 / rest <= n; i++) {
		fprintf(f, "%.6g %.3f\n", 1.0 / rest,
			(double)pw_hist_percentile(h, 100.0 * (1.0 - rest)) /
				1e3);
		rest *= 0.7943282347242815; /* 10^(-1/10) */
	}
	fprintf(f, "%.6g %.3f\n", n, (double)pw_hist_max(h) / 1e3);
}

/* The panel of row @r (index @i): a curve per column that ran. */
static void plot_panel(const struct row *r, unsigned i, FILE *f)
{
	bool first = true;

	fprintf(f, "set title '%s, %u connections'\nplot ", r->sc->name,
		r->conns);
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
	for (unsigned i = 0; i < pw_bench_nscenarios; i++)
		for (int c = 0; c < NCOLS; c++) {
			const struct cell *cl = &b->rows[i].cell[c];

			if (!b->rows[i].selected || !cl->n || !cl->have_hist)
				continue;
			fprintf(f, "$s%uc%d << EOD\n", i, c);
			write_curve(f, &cl->hist);
			fprintf(f, "EOD\n");
		}
	fprintf(f, "set terminal pngcairo size 900,%u font ',9'\n",
		120 + 280 * panels);
	fprintf(f, "set output '");
	for (const char *p = b->plot; *p; p++)
		fprintf(f, *p == '\'' ? "''" : "%c", *p);
	fprintf(f, "'\n");
	fprintf(f,
		"set multiplot layout %u,1 title 'pinwheel bench: latency "
		"by percentile, %s loop, %" PRIu64 " round%s merged'\n",
		panels, b->rate ? "open" : "closed", b->rounds,
		b->rounds == 1 ? "" : "s");
	fprintf(f,
		"set logscale xy\nset grid\nset key top left\n"
		"set xtics ('0%%%%' 1, '50%%%%' 2, '90%%%%' 10, '99%%%%' 100, "
		"'99.9%%%%' 1000, '99.99%%%%' 10000, '99.999%%%%' 100000, "
		"'99.9999%%%%' 1000000)\n"
		"set xlabel 'percentile'\nset ylabel 'latency (us)'\n");
	for (unsigned i = 0; i < pw_bench_nscenarios; i++)
		if (row_drawn(&b->rows[i]))
			plot_panel(&b->rows[i], i, f);
	fprintf(f, "unset multiplot\n");
}

int pw_bench_write_plot(const struct bench *b, char *why, size_t len)
{
	char gp[PATH_MAX], script[PATH_MAX + 16], log[PATH_MAX + 16];
	char line[200];
	unsigned panels = 0;
	FILE *f;
	pid_t pid;
	int st;

	if (!find_in_path("gnuplot", gp, sizeof(gp))) {
		snprintf(why, len,
			 "gnuplot is not installed (apt-get install "
			 "gnuplot-nox)");
		return -1;
	}
	for (unsigned i = 0; i < pw_bench_nscenarios; i++)
		panels += row_drawn(&b->rows[i]);
	if (!panels)
		return 1;
	snprintf(script, sizeof(script), "%s/latency.gp", b->tmp);
	snprintf(log, sizeof(log), "%s/gnuplot.log", b->tmp);
	f = fopen(script, "w");
	if (!f) {
		snprintf(why, len, "cannot write %s: %s", script,
			 strerror(errno));
		return -1;
	}
	plot_script(b, panels, f);
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
