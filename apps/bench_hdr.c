/* SPDX-License-Identifier: MIT */
/*
 * bench_hdr.c - the HdrHistogram files of `pinwheel bench`: with --hgrm
 * DIR, each cell's latency over all its rounds as DIR/SCENARIO-SCHED.hgrm
 * (percentile distribution, microseconds); with --hdr-log DIR, each
 * cell's interval log DIR/SCENARIO-SCHED.hlog (SCENARIO-cK-SCHED when
 * more than one server core count K runs), one interval per measured
 * second of every round, in wall-clock time (rounds of the other columns
 * leave gaps between a cell's intervals). The encodings are
 * core/hist_hdr.c's; `pinwheel report` merges the logs.
 *
 * A log is opened at its cell's first interval and closed at the end of
 * the bench, or by bench_free() when the bench stops early.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pinwheel/hist_hdr.h"
#include "apps/bench_int.h"

/* DIR/SCENARIO-SCHED.EXT into @buf, DIR/SCENARIO-cK-SCHED.EXT (K server
 * cores) when @b runs more than one core count; -ENAMETOOLONG when it
 * does not fit. */
static int cell_path(char *buf, size_t len, const char *dir,
		     const struct bench *b, const struct row *r, int col,
		     const char *ext)
{
	char cores[16] = "";
	int n;

	if (b->ncounts > 1)
		snprintf(cores, sizeof(cores), "-c%u", r->nsrv);
	n = snprintf(buf, len, "%s/%s%s-%s.%s", dir, r->sc->name, cores,
		     pw_bench_col_name[col], ext);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int pw_bench_hdr_check(const char *dir, const char *flag)
{
	char probe[PATH_MAX];

	if (!*dir) {
		fprintf(stderr, "pinwheel bench: %s needs a folder\n", flag);
		return 2;
	}
	if (snprintf(probe, sizeof(probe), "%s/x", dir) >= (int)sizeof(probe)) {
		fprintf(stderr, "pinwheel bench: %s: the path is too long\n",
			flag);
		return 2;
	}
	pw_bench_make_parent(probe);
	if (access(dir, W_OK | X_OK)) {
		fprintf(stderr, "pinwheel bench: %s: cannot write in %s: %s\n",
			flag, dir, strerror(errno));
		return 2;
	}
	return 0;
}

void pw_bench_hdr_interval(const struct bench *b, struct row *r, int col,
			   const struct pw_load_interval *iv)
{
	struct cell *c = &r->cell[col];
	double at = (double)(iv->run_wall_ns + iv->start_ns) / 1e9;
	char path[PATH_MAX];

	if (!b->hdr_log || c->log_err)
		return;
	if (!c->log_open) {
		c->log_err = cell_path(path, sizeof(path), b->hdr_log, b, r,
				       col, "hlog");
		if (!c->log_err)
			c->log_err = pw_hdr_log_open(&c->log, path, at, 0);
		if (c->log_err)
			return;
		c->log_open = true;
		c->log_base_s = at;
	}
	pw_hdr_log_write(&c->log, iv->hist, at - c->log_base_s,
			 (double)iv->length_ns / 1e9);
}

/* Close @c's log; its first error, or 0. */
static int close_log(struct cell *c)
{
	int rc = c->log_err;

	if (c->log_open) {
		int e = pw_hdr_log_close(&c->log);
		rc = rc ? rc : e;
		c->log_open = false;
	}
	return rc;
}

void pw_bench_hdr_abandon(struct bench *b)
{
	for (unsigned i = 0; i < b->nrows; i++)
		for (int col = 0; col < NCOLS; col++)
			close_log(&b->rows[i].cell[col]);
}

/* Say that @path was written, or why not (@rc, a -errno); 0 or 1. */
static int say_written(const char *path, int rc)
{
	if (rc) {
		fprintf(stderr, "pinwheel bench: %s: %s\n", path,
			strerror(-rc));
		return 1;
	}
	printf("wrote %s\n", path);
	return 0;
}

/* The .hgrm of @r's column @col, and its log closed; 0 or 1. */
static int finish_cell(const struct bench *b, struct row *r, int col)
{
	struct cell *c = &r->cell[col];
	char path[PATH_MAX];
	int status = 0, rc;

	if (b->hdr_log && (c->log_open || c->log_err)) {
		rc = close_log(c);
		cell_path(path, sizeof(path), b->hdr_log, b, r, col, "hlog");
		status |= say_written(path, rc);
	}
	if (b->hgrm && c->n && c->have_hist) {
		rc = cell_path(path, sizeof(path), b->hgrm, b, r, col, "hgrm");
		if (!rc)
			rc = pw_hist_save_hgrm(&c->hist, path, PW_HDR_US);
		status |= say_written(path, rc);
	}
	return status;
}

int pw_bench_hdr_finish(struct bench *b)
{
	int status = 0;

	for (unsigned i = 0; i < b->nrows; i++) {
		struct row *r = &b->rows[i];

		if (!r->selected)
			continue;
		for (int col = 0; col < NCOLS; col++)
			status |= finish_cell(b, r, col);
	}
	fflush(stdout);
	return status;
}
