/* SPDX-License-Identifier: MIT */
/*
 * demo.c - `pinwheel demo`: what the runtime does today, end to end.
 *
 * Starts a one-shard runtime, spawns a tree of tasks that pass numbers
 * through a pipe with io_uring reads and writes and join each other, then
 * prints the results and the shard's counters (with --metrics, every
 * shard's). The common runtime flags (--shards, --cpus, --sched) shape
 * the runtime, which the driver (driver.h) sets up and tears down.
 */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pinwheel.h"
#include "apps/apps.h"
#include "apps/cli.h"
#include "apps/driver.h"

struct rw_arg {
	int fd;
	void *buf;
	unsigned len;
};

static void prep_write(struct io_uring_sqe *sqe, void *arg)
{
	struct rw_arg *a = arg;
	io_uring_prep_write(sqe, a->fd, a->buf, a->len, 0);
}

static void prep_read(struct io_uring_sqe *sqe, void *arg)
{
	struct rw_arg *a = arg;
	io_uring_prep_read(sqe, a->fd, a->buf, a->len, 0);
}

/* One worker: writes its number into its pipe, reads it back, returns it
 * squared. */
struct worker {
	int fds[2];
	uint64_t value, back;
	int step;
	struct pw_op op;
};

static enum pw_poll worker_poll(struct pw_cx *cx, void *state)
{
	struct worker *w = state;
	struct rw_arg a;
	int32_t res;

	if (w->step == 0) {
		a = (struct rw_arg){ w->fds[1], &w->value, sizeof(w->value) };
		if (pw_op_poll(cx, &w->op, prep_write, &a, &res) == PW_PENDING)
			return PW_PENDING;
		if (res != (int32_t)sizeof(w->value))
			return pw_ready(cx, res < 0 ? res : -EIO);
		w->step = 1;
	}
	a = (struct rw_arg){ w->fds[0], &w->back, sizeof(w->back) };
	if (pw_op_poll(cx, &w->op, prep_read, &a, &res) == PW_PENDING)
		return PW_PENDING;
	if (res != (int32_t)sizeof(w->back))
		return pw_ready(cx, res < 0 ? res : -EIO);
	return pw_ready(cx, (int64_t)(w->back * w->back));
}

static void worker_drop(void *state)
{
	struct worker *w = state;
	pw_op_cancel(&w->op);
	close(w->fds[0]);
	close(w->fds[1]);
}

#define DEMO_MAX 4096

struct root {
	unsigned n, spawned, joined;
	int64_t sum;
	int err;
	struct pw_join joins[DEMO_MAX];
};

static enum pw_poll root_poll(struct pw_cx *cx, void *state)
{
	struct root *r = state;

	for (; r->spawned < r->n; r->spawned++) {
		struct worker w = { .value = r->spawned + 1 };
		pw_op_init(&w.op);
		if (pipe(w.fds) < 0)
			return pw_ready(cx, -errno);
		int err = pw_spawn(&r->joins[r->spawned], worker_poll, &w,
				   sizeof(w), worker_drop);
		if (err) {
			close(w.fds[0]);
			close(w.fds[1]);
			return pw_ready(cx, err);
		}
	}
	for (; r->joined < r->n; r->joined++) {
		int64_t v;
		if (pw_join_poll(cx, &r->joins[r->joined], &v) == PW_PENDING)
			return PW_PENDING;
		if (v < 0 && !r->err)
			r->err = (int)v;
		r->sum += v;
	}
	return pw_ready(cx, r->err ? r->err : r->sum);
}

/* ---- the command ------------------------------------------------------ */

static uint64_t demo_tasks;

static const struct pw_cli_opt demo_opts[] = {
	{ "--tasks", PW_CLI_UINT, &demo_tasks, 1, DEMO_MAX, "N",
	  "tasks to spawn, 1..4096 (default 1000)" },
};

static const struct pw_cli_cmd demo_cmd = {
	.name = "pinwheel demo",
	.about = "Spawns N tasks on shard 0; each writes a number into "
		 "a pipe and reads it back\nthrough io_uring, and the "
		 "root task joins them all and checks the sum of\n"
		 "squares.",
	.opts = demo_opts,
	.nopts = sizeof(demo_opts) / sizeof(demo_opts[0]),
	.common = PW_CLI_RUNTIME,
};

/* What the run did: its result against the expected sum, shard 0's
 * counters. Returns whether the sum is right. */
static bool demo_print(unsigned n, int64_t sum, double ms,
		       const struct pw_shard_stats *st)
{
	int64_t want = (int64_t)n * (n + 1) * (2 * n + 1) / 6;

	printf("pinwheel %s demo: %u tasks, pipe write+read each, joined\n",
	       pw_version(), n);
	printf("  sum of squares: %lld (expected %lld) %s\n", (long long)sum,
	       (long long)want, sum == want ? "ok" : "WRONG");
	printf("  wall time: %.3f ms on shard 0 (cpu %d, %s)\n", ms, st->cpu,
	       st->defer_taskrun ? "DEFER_TASKRUN" : "COOP_TASKRUN");
	printf("  spawned %llu, polls %llu, SQEs %llu, CQEs %llu, kernel "
	       "waits %llu\n",
	       (unsigned long long)st->spawned, (unsigned long long)st->polls,
	       (unsigned long long)st->sqes_submitted,
	       (unsigned long long)st->cqes_reaped,
	       (unsigned long long)st->kernel_waits);
	return sum == want;
}

/* The root task and its workers, timed; 0 when the sum is right. */
static int demo_run(struct pw_drv *d)
{
	unsigned n = (unsigned)demo_tasks;
	struct root *r = calloc(1, sizeof(*r));
	struct pw_shard_stats st;
	struct timespec a, b;
	int64_t sum;
	double ms;
	int err;

	if (!r)
		return pw_cli_fail(&d->cli, 1, "%s", strerror(ENOMEM));
	r->n = n;
	clock_gettime(CLOCK_MONOTONIC, &a);
	err = pw_block_on(d->rt, root_poll, r, &sum);
	clock_gettime(CLOCK_MONOTONIC, &b);
	pw_runtime_stats(d->rt, 0, &st);
	free(r);
	if (err || sum < 0)
		return pw_cli_fail(&d->cli, 1, "failed: %s",
				   strerror(err ? -err : (int)-sum));
	ms = (double)(b.tv_sec - a.tv_sec) * 1e3 +
	     (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	return demo_print(n, sum, ms, &st) ? 0 : 1;
}

static const struct pw_drv_ops demo_ops = {
	.run = demo_run,
	.no_signals = true,
};

int pw_app_demo(int argc, char **argv)
{
	demo_tasks = 1000;
	return pw_drv_main(&demo_cmd, &demo_ops, argc, argv);
}
