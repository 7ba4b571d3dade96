/* SPDX-License-Identifier: MIT */
/*
 * report.c - `pinwheel report`: merge the latency of several `pinwheel
 * load` runs into one percentile table, JSON and plot.
 *
 * Each input is an HdrHistogram interval log (load --hdr-log: every
 * interval merged) or a load --json output (its "latency_hdr" histogram;
 * a file of several JSON lines gives all of them). The inputs must share
 * the significant digits and the highest trackable value, so that the
 * merge is exact: the merged histogram is the one a single load holding
 * every answer would have recorded. Loads on several machines started
 * together (load --start-at) thus give one view of a server driven from
 * all of them.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pinwheel/hist_hdr.h"
#include "apps/cli.h"
#include "apps/plot.h"
#include "apps/report.h"

#define REPORT_FILE_MAX (256u << 20)

extern char **environ;

/* One input file and its merged histogram. */
struct input {
	const char *path;
	const char *kind;    /* "hdr_log" or "load_json" */
	uint64_t histograms; /* intervals, or JSON histograms */
	struct pw_hist h;
};

static struct report_cmd {
	const char *json, *plot, *hgrm;
	struct pw_cli cli;
	struct input *in;
	unsigned nin;
	struct pw_hist all;
} R;

static const struct pw_cli_opt report_opts[] = {
	{ "--json", PW_CLI_STRING, &R.json, 0, 0, "FILE",
	  "also write the table as JSON to FILE (- for stdout)" },
	{ "--plot", PW_CLI_STRING, &R.plot, 0, 0, "FILE",
	  "draw the percentile curves to FILE (PNG, with gnuplot)" },
	{ "--hgrm", PW_CLI_STRING, &R.hgrm, 0, 0, "FILE",
	  "write the merged latency as an HdrHistogram .hgrm (us)" },
};

static const struct pw_cli_cmd report_cmd = {
	.name = "pinwheel report",
	.about = "pinwheel report [FLAGS] FILE...\n\n"
		 "Merges the latency histograms of `pinwheel load` runs, "
		 "each FILE an interval\nlog (load --hdr-log) or a JSON "
		 "output (load --json), into one: prints p50,\np90, p99, "
		 "p99.9, p99.99, max and count per input and merged. The "
		 "inputs must\nshare significant digits and highest value "
		 "(every pinwheel load does).\n\nExit status: 0; 1 when an "
		 "input cannot be read or merged, or an output\nwritten; 2 "
		 "for a bad flag or no FILE.",
	.opts = report_opts,
	.nopts = sizeof(report_opts) / sizeof(report_opts[0]),
	.common = 0,
};

/* ---- reading the inputs ------------------------------------------------ */

/* The whole of @f (at most REPORT_FILE_MAX), NUL-terminated, malloc'd. */
static char *slurp(FILE *f)
{
	size_t cap = 1 << 16, n = 0, r;
	char *buf = malloc(cap), *t;

	while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += r;
		if (n + 1 < cap)
			continue;
		if (cap >= REPORT_FILE_MAX || !(t = realloc(buf, cap * 2))) {
			free(buf);
			return NULL;
		}
		buf = t;
		cap *= 2;
	}
	if (buf)
		buf[n] = '\0';
	return buf;
}

/* Merge @h into @in's histogram (set up by the first). */
static int input_add(struct input *in, struct pw_hist *h)
{
	int err = 0;

	if (!in->histograms++) {
		in->h = *h;
		return 0;
	}
	if (pw_hist_digits(h) != pw_hist_digits(&in->h) ||
	    pw_hist_highest(h) != pw_hist_highest(&in->h))
		err = -EDOM;
	else
		err = pw_hist_merge(&in->h, h);
	pw_hist_destroy(h);
	return err;
}

/* Every "latency_hdr" histogram of the JSON text @text into @in. */
static int read_json(struct input *in, const char *text)
{
	static const char key[] = "\"latency_hdr\": \"";
	const char *p = text;
	int err;

	in->kind = "load_json";
	while ((p = strstr(p, key))) {
		struct pw_hist h;
		size_t n;

		p += sizeof(key) - 1;
		n = strcspn(p, "\"");
		if (p[n] != '"')
			return -EBADMSG;
		if ((err = pw_hist_decode_hdr(&h, p, n)))
			return err;
		if ((err = input_add(in, &h)))
			return err;
		p += n;
	}
	return in->histograms ? 0 : -ENODATA;
}

/* Why reading failed, in words. */
static const char *read_error(int err)
{
	switch (err) {
	case -ENODATA:
		return "no latency histogram in it (a pinwheel load --json "
		       "or --hdr-log file?)";
	case -EDOM:
		return "its histograms differ in significant digits or "
		       "highest value";
	case -ENOMEM:
		return "out of memory";
	case -EBADMSG:
		return "a truncated or corrupt histogram";
	default:
		return "a histogram pinwheel cannot read";
	}
}

/* Read input @in; on failure, say why and return 1. */
static int read_input(struct input *in)
{
	struct pw_hdr_log_info info;
	FILE *f = fopen(in->path, "re");
	int c, err;

	if (!f)
		return pw_cli_fail(&R.cli, 1, "%s: %s", in->path,
				   strerror(errno));
	while ((c = getc(f)) == ' ' || c == '\n' || c == '\t' || c == '\r')
		;
	ungetc(c, f);
	if (c == '{') {
		char *text = slurp(f);
		err = text ? read_json(in, text) : -ENOMEM;
		free(text);
		fclose(f);
		if (err && in->histograms)
			pw_hist_destroy(&in->h);
		return err ? pw_cli_fail(&R.cli, 1, "%s: %s", in->path,
					 read_error(err)) :
			     0;
	}
	in->kind = "hdr_log";
	err = pw_hdr_log_read(f, &in->h, &info);
	fclose(f);
	if (err && info.line)
		return pw_cli_fail(&R.cli, 1, "%s:%lu: %s", in->path, info.line,
				   info.error);
	if (err)
		return pw_cli_fail(&R.cli, 1, "%s: %s", in->path, info.error);
	in->histograms = info.intervals;
	return 0;
}

/* Merge every input into R.all; inputs of other layouts are refused. */
static int merge_inputs(void)
{
	const struct pw_hist *h0 = &R.in[0].h;

	if (pw_hist_init(&R.all, pw_hist_highest(h0), pw_hist_digits(h0)))
		return pw_cli_fail(&R.cli, 1, "out of memory");
	for (unsigned i = 0; i < R.nin; i++) {
		const struct pw_hist *h = &R.in[i].h;

		if (pw_hist_digits(h) != pw_hist_digits(h0) ||
		    pw_hist_highest(h) != pw_hist_highest(h0))
			return pw_cli_fail(
				&R.cli, 1,
				"%s has %u significant digits and highest "
				"value %" PRIu64 ", %s has %u and %" PRIu64
				": histograms of different layouts do not "
				"merge exactly",
				R.in[i].path, pw_hist_digits(h),
				pw_hist_highest(h), R.in[0].path,
				pw_hist_digits(h0), pw_hist_highest(h0));
		pw_hist_merge(&R.all, h);
	}
	return 0;
}

/* ---- the outputs ---------------------------------------------------------- */

static const struct {
	const char *label, *key;
	double p;
} cols[] = {
	{ "p50", "50", 50 },	      { "p90", "90", 90 },
	{ "p99", "99", 99 },	      { "p99.9", "99.9", 99.9 },
	{ "p99.99", "99.99", 99.99 }, { "max", "100", 100 },
};

#define NCOLS (sizeof(cols) / sizeof(cols[0]))

static void table_row(FILE *f, const char *name, const struct pw_hist *h)
{
	size_t n = strlen(name);

	/* A long name keeps its end, where the file name is. */
	fprintf(f, "  %-28s", n > 28 ? name + n - 28 : name);
	for (size_t c = 0; c < NCOLS; c++)
		fprintf(f, " %11.3f",
			(double)pw_hist_percentile(h, cols[c].p) / 1e3);
	fprintf(f, " %12" PRIu64 "\n", pw_hist_count(h));
}

static void print_table(FILE *f)
{
	fprintf(f, "latency of %u input%s merged, in us\n", R.nin,
		R.nin == 1 ? "" : "s");
	fprintf(f, "  %-28s", "input");
	for (size_t c = 0; c < NCOLS; c++)
		fprintf(f, " %11s", cols[c].label);
	fprintf(f, " %12s\n", "count");
	for (unsigned i = 0; i < R.nin; i++)
		table_row(f, R.in[i].path, &R.in[i].h);
	table_row(f, "merged", &R.all);
}

static int write_json(FILE *f)
{
	char *hdr = NULL;

	if (pw_hist_encode_hdr(&R.all, &hdr, NULL))
		return -ENOMEM;
	fprintf(f, "{\"inputs\": [");
	for (unsigned i = 0; i < R.nin; i++) {
		fprintf(f, "%s\n  {\"file\": ", i ? "," : "");
		pw_cli_json_str(f, R.in[i].path);
		fprintf(f,
			", \"kind\": \"%s\", \"histograms\": %" PRIu64
			", \"latency\": ",
			R.in[i].kind, R.in[i].histograms);
		pw_hist_write_json(&R.in[i].h, f);
		fputc('}', f);
	}
	fprintf(f, "\n], \"merged\": ");
	pw_hist_write_json(&R.all, f);
	fprintf(f, ", \"merged_hdr\": \"%s\"}\n", hdr);
	free(hdr);
	return fflush(f) || ferror(f) ? -EIO : 0;
}

static void plot_script(FILE *f)
{
	for (unsigned i = 0; i <= R.nin; i++) {
		fprintf(f, "$c%u << EOD\n", i);
		pw_plot_curve(f, i < R.nin ? &R.in[i].h : &R.all);
		fprintf(f, "EOD\n");
	}
	fprintf(f, "set terminal pngcairo size 900,500 font ',9'\n"
		   "set output ");
	pw_plot_str(f, R.plot);
	fprintf(f,
		"\nset title 'pinwheel report: latency by percentile, %u "
		"input%s merged'\n",
		R.nin, R.nin == 1 ? "" : "s");
	pw_plot_percentile_axes(f);
	fprintf(f, "plot ");
	for (unsigned i = 0; i <= R.nin; i++) {
		fprintf(f, "%s$c%u with linespoints pt 7 ps 0.4 lw %d title ",
			i ? ", " : "", i, i < R.nin ? 1 : 3);
		pw_plot_str(f, i < R.nin ? R.in[i].path : "merged");
	}
	fputc('\n', f);
}

/* Run gnuplot on a script written to a temporary file. Return: 0; 1
 * when gnuplot is missing (a note on stderr); -1 when it failed. */
static int draw_plot(void)
{
	char script[] = "/tmp/pinwheel-report-XXXXXX";
	char *argv[] = { "gnuplot", script, NULL };
	int fd = mkstemp(script), st = -1;
	pid_t pid;
	FILE *f;

	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	plot_script(f);
	if (fclose(f)) {
		unlink(script);
		return -1;
	}
	int err = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
	if (!err && waitpid(pid, &st, 0) == pid)
		st = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	unlink(script);
	if (err == ENOENT) {
		fprintf(stderr, "pinwheel report: no plot: gnuplot is not "
				"installed (apt-get install gnuplot-nox)\n");
		return 1;
	}
	return err || st ? -1 : 0;
}

/* ---- the command ---------------------------------------------------------- */

/* Is @a a flag that takes the next argument as its value? */
static bool takes_value(const char *a)
{
	for (size_t i = 0; i < sizeof(report_opts) / sizeof(report_opts[0]);
	     i++)
		if (!strcmp(a, report_opts[i].name))
			return true;
	return false;
}

/* Split @argv into flags (kept in @flags, for pw_cli_parse()) and input
 * files (R.in); "--" ends the flags. */
static int split_args(int argc, char **argv, char **flags, int *nflags)
{
	bool files_only = false;

	*nflags = 0;
	flags[(*nflags)++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!files_only && !strcmp(a, "--")) {
			files_only = true;
		} else if (!files_only &&
			   (!strncmp(a, "--", 2) || !strcmp(a, "-h"))) {
			flags[(*nflags)++] = argv[i];
			if (takes_value(a) && i + 1 < argc)
				flags[(*nflags)++] = argv[++i];
		} else {
			R.in[R.nin++].path = a;
		}
	}
	flags[*nflags] = NULL;
	return 0;
}

/* The outputs besides the table; 0, or 1 when one failed. */
static int write_outputs(void)
{
	int status = 0;

	if (R.json) {
		bool out = strcmp(R.json, "-") != 0;
		FILE *f = out ? fopen(R.json, "we") : stdout;
		if (!f || write_json(f) || (out && fclose(f)))
			status = pw_cli_fail(&R.cli, 1, "cannot write %s",
					     R.json);
	}
	if (R.hgrm && pw_hist_save_hgrm(&R.all, R.hgrm, PW_HDR_US))
		status = pw_cli_fail(&R.cli, 1, "cannot write %s", R.hgrm);
	if (R.plot && draw_plot() < 0)
		status = pw_cli_fail(&R.cli, 1, "gnuplot could not draw %s",
				     R.plot);
	return status;
}

static int report_main(int argc, char **argv, char **flags)
{
	int nflags, rc;

	split_args(argc, argv, flags, &nflags);
	rc = pw_cli_parse(&R.cli, &report_cmd, nflags, flags);
	if (rc)
		return pw_cli_status(rc);
	if (!R.nin)
		return pw_cli_fail(&R.cli, 2, "no FILE to merge (see --help)");
	for (unsigned i = 0; i < R.nin; i++) {
		if (read_input(&R.in[i]))
			return 1;
	}
	if (merge_inputs())
		return 1;
	print_table(stdout);
	rc = write_outputs();
	return fflush(stdout) ? 1 : rc;
}

int pw_app_report(int argc, char **argv)
{
	char **flags = calloc((size_t)argc + 1, sizeof(*flags));
	int status;

	memset(&R, 0, sizeof(R));
	R.in = calloc((size_t)argc, sizeof(*R.in));
	if (!flags || !R.in) {
		free(flags);
		free(R.in);
		fprintf(stderr, "pinwheel report: out of memory\n");
		return 1;
	}
	status = report_main(argc, argv, flags);
	for (unsigned i = 0; i < R.nin; i++)
		if (R.in[i].histograms)
			pw_hist_destroy(&R.in[i].h);
	pw_hist_destroy(&R.all);
	free(R.in);
	free(flags);
	return status;
}
