/* SPDX-License-Identifier: MIT */
/*
 * test_metrics.c - runtime metrics: exact counts in shard mode, the live
 * queue depths and the overflow count of stealing mode read from another
 * thread while the worker is busy, JSON that parses, Prometheus text with
 * HELP/TYPE lines and worker labels, the CLI dump, busy time in shard
 * mode, and bad arguments.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "apps/cli.h"
#include "tests/common.h"
#include "tests/json.h"

static enum pw_poll noop_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	return pw_ready(cx, 0);
}

/* A snapshot once @done(m) holds; fails the test, saying what was
 * awaited and what the last snapshot showed, after PW_TEST_WAIT_SECS. */
static void wait_metrics(struct pw_runtime *rt, struct pw_metrics *m,
			 bool (*done)(const struct pw_metrics *),
			 const char *what)
{
	uint64_t deadline =
		pw_test_now_ns() + PW_TEST_WAIT_SECS * 1000000000ull;

	for (;;) {
		cr_assert_eq(pw_metrics_read(rt, m), 0);
		if (done(m))
			return;
		uint64_t alive = m->num_alive_tasks;
		uint64_t polls = m->workers[0].poll_count;
		uint64_t parks = m->workers[0].park_count;
		pw_metrics_free(m);
		if (!pw_test_wait_step(deadline))
			cr_assert_fail("never %s: %llu alive, worker 0: %llu "
				       "polls, %llu parks",
				       what, (unsigned long long)alive,
				       (unsigned long long)polls,
				       (unsigned long long)parks);
	}
}

/* ---- Prometheus text: every sample line is name[{labels}] value, and
 * its name was declared by a TYPE line before it ----------------------- */

static bool prom_ok(char *text)
{
	char declared[8192] = " ";
	char *save = NULL;

	for (char *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char name[128];
		if (!strncmp(l, "# HELP ", 7))
			continue;
		if (sscanf(l, "# TYPE %127s", name) == 1) {
			strcat(declared, name);
			strcat(declared, " ");
			continue;
		}
		size_t n = strspn(l, "abcdefghijklmnopqrstuvwxyz_0123456789");
		if (!n || n >= sizeof(name))
			return false;
		memcpy(name, l, n);
		name[n] = 0;
		char key[140];
		snprintf(key, sizeof(key), " %s ", name);
		if (!strstr(declared, key))
			return false;
		const char *v = l + n;
		if (*v == '{') {
			unsigned w;
			int used = 0;
			if (sscanf(v, "{worker=\"%u\"}%n", &w, &used) != 1 &&
			    sscanf(v, "{sched=\"%*[a-z]\"}%n", &used) != 0)
				return false;
			if (!used)
				return false;
			v += used;
		}
		if (*v++ != ' ')
			return false;
		const char *e = pw__tj_number(v);
		if (!e || *e)
			return false;
	}
	return true;
}

/* ---- shard mode --------------------------------------------------------- */

#define SHARD_TASKS 100

static bool shard_drained(const struct pw_metrics *m)
{
	return m->num_alive_tasks == 0 &&
	       m->workers[0].poll_count == SHARD_TASKS;
}

Test(metrics, shard_mode_exact_counts)
{
	PW_TEST_SHARD_ONLY();
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_metrics m;

	for (int i = 0; i < SHARD_TASKS; i++)
		cr_assert_eq(pw_runtime_spawn(rt, 0, noop_poll, NULL, 0, NULL),
			     0);
	wait_metrics(rt, &m, shard_drained, "drained");
	cr_expect_eq(m.sched, PW_SCHED_SHARD);
	cr_expect_eq(m.num_workers, 1);
	cr_expect_eq(m.num_alive_tasks, 0);
	cr_expect_eq(m.spawned_tasks_count, SHARD_TASKS);
	cr_expect_eq(m.global_queue_depth, 0);
	cr_expect_eq(m.remote_schedule_count, 0);
	cr_expect_eq(m.budget_forced_yield_count, 0);
	const struct pw_metrics_worker *w = &m.workers[0];
	cr_expect_eq(w->poll_count, SHARD_TASKS);
	cr_expect_eq(w->spawned, SHARD_TASKS);
	cr_expect_eq(w->local_schedule_count, 0);
	cr_expect_eq(w->steal_count, 0);
	cr_expect_eq(w->steal_operations, 0);
	cr_expect_eq(w->overflow_count, 0);
	cr_expect_eq(w->noop_count, 0);
	cr_expect_eq(w->local_queue_depth, 0);
	cr_expect_eq(w->park_count, w->kernel_waits);
	cr_expect_eq(w->park_unpark_count, 2 * w->kernel_waits);
	pw_metrics_free(&m);
	cr_expect_eq(pw_metrics_num_workers(rt), 1);
	cr_expect_eq(pw_metrics_num_alive_tasks(rt), 0);
	cr_expect_eq(pw_metrics_global_queue_depth(rt), 0);
	cr_expect_eq(pw_metrics_worker_local_queue_depth(rt, 0), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- busy time in shard mode ------------------------------------------ */

#define SPIN_NS (20 * 1000000ull)

/* Spins SPIN_NS of CPU in one poll, then finishes. */
static enum pw_poll spin_poll(struct pw_cx *cx, void *state)
{
	uint64_t t0 = pw_test_now_ns();

	(void)state;
	while (pw_test_now_ns() - t0 < SPIN_NS)
		;
	return pw_ready(cx, 0);
}

static bool spun(const struct pw_metrics *m)
{
	return m->num_alive_tasks == 0 &&
	       m->workers[0].total_busy_ns >= SPIN_NS;
}

/*
 * A shard that spins 20 ms in one poll and then waits in the kernel
 * reads at least 20 ms of busy time; no shard reads more than the time
 * the runtime has lived.
 */
Test(metrics, shard_mode_busy_time)
{
	PW_TEST_SHARD_ONLY();
	uint64_t t0 = pw_test_now_ns();
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_metrics m;

	cr_assert_eq(pw_runtime_spawn(rt, 0, spin_poll, NULL, 0, NULL), 0);
	wait_metrics(rt, &m, spun, "busy for 20 ms");
	uint64_t lived = pw_test_now_ns() - t0;
	cr_expect_geq(m.workers[0].total_busy_ns, SPIN_NS);
	cr_expect_leq(m.workers[0].total_busy_ns, lived);
	/* Shard 1 did no work: its busy time is its start, which a loaded
	 * machine may stretch, but never past the runtime's life. */
	cr_expect_leq(m.workers[1].total_busy_ns, lived);
	pw_metrics_free(&m);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Wakes itself five times through its waker, then finishes. */
static enum pw_poll self_wake_poll(struct pw_cx *cx, void *state)
{
	int *n = state;

	if ((*n)++ == 5)
		return pw_ready(cx, 0);
	struct pw_waker w = pw_cx_waker(cx);
	pw_waker_wake_by_ref(&w);
	return PW_PENDING;
}

static bool one_poll_of_six(const struct pw_metrics *m)
{
	return m->num_alive_tasks == 0 && m->workers[1].poll_count == 6;
}

Test(metrics, shard_mode_local_wakes_are_local_schedules)
{
	PW_TEST_SHARD_ONLY();
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_metrics m;
	int n = 0;

	cr_assert_eq(pw_runtime_spawn(rt, 1, self_wake_poll, &n, sizeof(n),
				      NULL),
		     0);
	wait_metrics(rt, &m, one_poll_of_six, "six polls on worker 1");
	cr_expect_eq(m.num_workers, 2);
	cr_expect_eq(m.workers[1].poll_count, 6);
	cr_expect_eq(m.workers[1].local_schedule_count, 5);
	cr_expect_eq(m.workers[1].spawned, 1);
	cr_expect_eq(m.workers[0].poll_count, 0);
	cr_expect_eq(m.num_alive_tasks, 0);
	pw_metrics_free(&m);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- stealing mode ------------------------------------------------------ */

#define STEAL_TASKS 300

struct spawner {
	_Atomic int spawned; /* set once the 300 are queued */
	_Atomic int release; /* set by the test thread */
};

static enum pw_poll spawner_poll(struct pw_cx *cx, void *state)
{
	struct spawner *sp = state;

	for (int i = 0; i < STEAL_TASKS; i++)
		cr_assert_eq(pw_spawn(NULL, noop_poll, NULL, 0, NULL), 0);
	/* seq_cst: pairs with the test thread's load; release below
	 * pairs with its store. */
	atomic_store(&sp->spawned, 1);
	PW_TEST_WAIT_UNTIL(atomic_load(&sp->release), PW_TEST_WAIT_SECS,
			   "the spawner was never released");
	return pw_ready(cx, 0);
}

/* Parks the worker had published while the spawner ran. */
static uint64_t parks_before;

static bool steal_parked_again(const struct pw_metrics *m)
{
	/* Worker counters are published when it parks; it parks again
	 * only once every queued task has run. */
	return m->workers[0].park_count > parks_before;
}

Test(metrics, steal_mode_depths_and_overflow)
{
	struct pw_config cfg;
	struct pw_runtime *rt = NULL;
	struct spawner sp = { 0 };
	struct pw_metrics m;

	pw_config_init(&cfg);
	cfg.shards = 1;
	cfg.sched = PW_SCHED_STEAL;
	cfg.flags = PW_CONFIG_OVERSUBSCRIBE;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	cr_assert_eq(pw_runtime_spawn(rt, PW_SHARD_ANY, spawner_poll, &sp, 0,
				      NULL),
		     0);
	PW_TEST_WAIT_UNTIL(atomic_load(&sp.spawned), PW_TEST_WAIT_SECS,
			   "the spawner never ran");

	/* The spawner still runs: 1 task in the LIFO slot, 299 pushed to
	 * the local queue, whose 257th push moved the newest 128 and the
	 * new task to the global queue: 129 there, 128 + 42 = 170 local. */
	cr_expect_eq(pw_metrics_global_queue_depth(rt), 129);
	cr_expect_eq(pw_metrics_worker_local_queue_depth(rt, 0), 170);
	cr_assert_eq(pw_metrics_read(rt, &m), 0);
	cr_expect_eq(m.sched, PW_SCHED_STEAL);
	cr_expect_eq(m.global_queue_depth, 129);
	cr_expect_eq(m.workers[0].local_queue_depth, 170);
	cr_expect_eq(m.num_alive_tasks, STEAL_TASKS + 1);
	cr_expect_eq(m.spawned_tasks_count, STEAL_TASKS + 1);
	cr_expect_eq(m.remote_schedule_count, 1, "the spawner came in");
	/* Worker counters are published in batches, as Tokio's: the
	 * overflow shows once the worker reaches maintenance or parks. */
	cr_expect_eq(m.workers[0].overflow_count, 0);
	cr_expect_eq(m.workers[0].poll_count, 0);
	parks_before = m.workers[0].park_count;
	pw_metrics_free(&m);
	atomic_store(&sp.release, 1);

	/* Everything drains; the batch published at the next park shows
	 * the one overflow and every poll. */
	wait_metrics(rt, &m, steal_parked_again, "parked after the drain");
	cr_expect_eq(m.num_alive_tasks, 0);
	cr_expect_eq(m.global_queue_depth, 0);
	const struct pw_metrics_worker *w = &m.workers[0];
	cr_expect_eq(w->local_queue_depth, 0);
	cr_expect_eq(w->poll_count, STEAL_TASKS + 1);
	cr_expect_eq(w->overflow_count, 1);
	cr_expect_eq(w->local_schedule_count, STEAL_TASKS);
	cr_expect_eq(w->steal_count, 0, "one worker has no victim");
	cr_expect_eq(w->steal_operations, 0);
	/* One park since; published as it parks, so every park but the
	 * current one has its unpark counted. */
	cr_expect_eq(w->park_count, parks_before + 1);
	cr_expect_eq(w->park_unpark_count, 2 * w->park_count - 1);
	cr_expect_gt(w->total_busy_ns, 0);
	cr_expect_eq(m.spawned_tasks_count, STEAL_TASKS + 1);
	cr_expect_eq(m.remote_schedule_count, 1);
	pw_metrics_free(&m);
	cr_expect_eq(pw_metrics_global_queue_depth(rt), 0);
	cr_expect_eq(pw_metrics_worker_local_queue_depth(rt, 0), 0);
	cr_expect_eq(pw_metrics_num_alive_tasks(rt), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- writers ------------------------------------------------------------ */

/* A snapshot with known values, written by @fn into a string. */
static char *render(const struct pw_metrics *m,
		    int (*fn)(const struct pw_metrics *, FILE *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	cr_assert_eq(fn(m, f), 0);
	fclose(f);
	return buf;
}

static void fake(struct pw_metrics *m, struct pw_metrics_worker w[2])
{
	memset(m, 0, sizeof(*m));
	memset(w, 0, 2 * sizeof(*w));
	m->sched = PW_SCHED_STEAL;
	m->num_workers = 2;
	m->num_alive_tasks = 7;
	m->global_queue_depth = 129;
	m->spawned_tasks_count = 301;
	w[0].poll_count = 42;
	w[0].total_busy_ns = 1500000000u;
	w[0].mean_poll_ns = 2500;
	w[0].has_arena = true;
	w[0].arena_bytes = 4096;
	w[1].local_queue_depth = 170;
	w[1].cpu = -1;
	m->workers = w;
}

Test(metrics, json_has_tokio_names_and_parses)
{
	struct pw_metrics m;
	struct pw_metrics_worker w[2];

	fake(&m, w);
	char *s = render(&m, pw_metrics_write_json);
	cr_expect(pw_test_json_valid(s), "not JSON: %s", s);
	cr_expect_not_null(strstr(s, "\"sched\":\"steal\""));
	cr_expect_not_null(strstr(s, "\"num_workers\":2"));
	cr_expect_not_null(strstr(s, "\"num_alive_tasks\":7"));
	cr_expect_not_null(strstr(s, "\"global_queue_depth\":129"));
	cr_expect_not_null(strstr(s, "\"spawned_tasks_count\":301"));
	cr_expect_not_null(strstr(s, "\"num_blocking_threads\":0"));
	cr_expect_not_null(strstr(s, "\"workers\":[{\"worker\":0"));
	cr_expect_not_null(strstr(s, "\"worker_poll_count\":42"));
	cr_expect_not_null(
		strstr(s, "\"worker_total_busy_duration_ns\":1500000000"));
	cr_expect_not_null(strstr(s, "\"worker_mean_poll_time_ns\":2500"));
	cr_expect_not_null(strstr(s, "\"arena_bytes\":4096"));
	cr_expect_not_null(strstr(s, "{\"worker\":1,\"cpu\":-1"));
	cr_expect_not_null(strstr(s, "\"worker_local_queue_depth\":170"));
	cr_expect_not_null(strstr(s, "\"arena_bytes\":null"));
	free(s);
}

Test(metrics, prometheus_has_help_type_and_labels)
{
	struct pw_metrics m;
	struct pw_metrics_worker w[2];

	fake(&m, w);
	char *s = render(&m, pw_metrics_write_prometheus);
	cr_expect_not_null(
		strstr(s, "# HELP pinwheel_worker_poll_count_total "));
	cr_expect_not_null(
		strstr(s, "# TYPE pinwheel_worker_poll_count_total counter\n"));
	cr_expect_not_null(strstr(
		s, "pinwheel_worker_poll_count_total{worker=\"0\"} 42\n"));
	cr_expect_not_null(strstr(
		s, "pinwheel_worker_poll_count_total{worker=\"1\"} 0\n"));
	cr_expect_not_null(strstr(s,
				  "# TYPE pinwheel_global_queue_depth gauge\n"
				  "pinwheel_global_queue_depth 129\n"));
	cr_expect_not_null(strstr(s, "pinwheel_num_workers 2\n"));
	cr_expect_not_null(
		strstr(s, "# TYPE pinwheel_worker_total_busy_duration_seconds_"
			  "total counter\n"));
	cr_expect_not_null(
		strstr(s, "pinwheel_worker_total_busy_duration_seconds_total"
			  "{worker=\"0\"} 1.500000000\n"));
	cr_expect_not_null(
		strstr(s, "pinwheel_worker_mean_poll_time_seconds{worker=\"0\"}"
			  " 0.000002500\n"));
	cr_expect_not_null(
		strstr(s, "pinwheel_worker_local_queue_depth{worker=\"1\"} "
			  "170\n"));
	cr_expect_not_null(
		strstr(s, "pinwheel_worker_arena_bytes{worker=\"0\"} 4096\n"));
	cr_expect_null(strstr(s, "pinwheel_worker_arena_bytes{worker=\"1\"}"));
	cr_expect_not_null(strstr(s, "pinwheel_info{sched=\"steal\"} 1\n"));
	cr_expect(prom_ok(s), "bad exposition syntax");
	free(s);
}

Test(metrics, live_snapshot_writes_in_both_formats)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_metrics m;

	cr_assert_eq(pw_metrics_read(rt, &m), 0);
	cr_assert_eq(m.num_workers, 2);
	char *j = render(&m, pw_metrics_write_json);
	cr_expect(pw_test_json_valid(j), "not JSON: %s", j);
	char *p = render(&m, pw_metrics_write_prometheus);
	cr_expect(prom_ok(p), "bad exposition syntax");
	free(j);
	free(p);
	pw_metrics_free(&m);
	cr_expect_null(m.workers, "freed and cleared");
	pw_metrics_free(&m);

	/* The CLI's dump: JSON by default, Prometheus on request. */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cr_assert_eq(pw_cli_metrics_dump(f, rt), 0);
	fclose(f);
	cr_expect(pw_test_json_valid(buf), "not JSON: %s", buf);
	cr_expect_not_null(strstr(buf, "\"worker_poll_count\""));
	free(buf);
	f = open_memstream(&buf, &len);
	cr_assert_eq(pw_cli_metrics_write(f, rt, PW_CLI_METRICS_PROMETHEUS), 0);
	fclose(f);
	cr_expect_not_null(strstr(buf, "# TYPE pinwheel_num_workers gauge"));
	cr_expect(prom_ok(buf), "bad exposition syntax");
	free(buf);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/*
 * A stream that fails (unbuffered /dev/full: every write is ENOSPC):
 * both writers report -EIO, for a real snapshot and a made-up one.
 */
/* Both writers on /dev/full with buffering @mode: -EIO, whether the
 * failure comes with the first byte or only at the flush. */
static void expect_writers_fail(const struct pw_metrics *m, int mode)
{
	FILE *f = fopen("/dev/full", "w");

	cr_assert_not_null(f);
	cr_assert_eq(setvbuf(f, NULL, mode, 0), 0);
	cr_expect_eq(pw_metrics_write_json(m, f), -EIO, "buffering %d", mode);
	clearerr(f);
	cr_expect_eq(pw_metrics_write_prometheus(m, f), -EIO, "buffering %d",
		     mode);
	fclose(f);
}

Test(metrics, writers_report_a_failed_write)
{
	struct pw_metrics m;
	struct pw_metrics_worker w[2];

	fake(&m, w);
	expect_writers_fail(&m, _IONBF);
	expect_writers_fail(&m, _IOFBF);

	struct pw_runtime *rt = pw_test_runtime(1);
	cr_assert_eq(pw_metrics_read(rt, &m), 0);
	expect_writers_fail(&m, _IONBF);
	expect_writers_fail(&m, _IOFBF);
	pw_metrics_free(&m);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- bad arguments ------------------------------------------------------ */

Test(metrics, bad_arguments)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_metrics m, zero;
	struct pw_metrics_worker w;
	int fake_rt;

	memset(&zero, 0, sizeof(zero));
	cr_expect_eq(pw_metrics_read(NULL, &m), -EINVAL);
	cr_expect_eq(pw_metrics_read((struct pw_runtime *)&fake_rt, &m),
		     -EINVAL);
	cr_expect_eq(pw_metrics_read(rt, NULL), -EINVAL);
	cr_expect_eq(pw_metrics_num_workers(NULL), -EINVAL);
	cr_expect_eq(pw_metrics_num_alive_tasks(NULL), -EINVAL);
	cr_expect_eq(pw_metrics_global_queue_depth(NULL), -EINVAL);
	cr_expect_eq(pw_metrics_worker_local_queue_depth(NULL, 0), -EINVAL);
	cr_expect_eq(pw_metrics_worker_local_queue_depth(rt, 1), -ENODEV);
	cr_expect_eq(pw_metrics_worker(rt, 1, &w), -ENODEV);
	cr_expect_eq(pw_metrics_worker(rt, 0, NULL), -EINVAL);
	cr_expect_eq(pw_metrics_worker(NULL, 0, &w), -EINVAL);
	cr_expect_eq(pw_metrics_worker(rt, 0, &w), 0);
	cr_expect_eq(pw_metrics_write_json(NULL, stdout), -EINVAL);
	cr_expect_eq(pw_metrics_write_json(&zero, stdout), -EINVAL);
	cr_expect_eq(pw_metrics_write_prometheus(NULL, stdout), -EINVAL);
	cr_expect_eq(pw_metrics_write_prometheus(&zero, stdout), -EINVAL);
	cr_assert_eq(pw_metrics_read(rt, &m), 0);
	cr_expect_eq(pw_metrics_write_json(&m, NULL), -EINVAL);
	cr_expect_eq(pw_metrics_write_prometheus(&m, NULL), -EINVAL);
	pw_metrics_free(&m);
	pw_metrics_free(NULL);
	cr_expect_eq(pw_cli_metrics_dump(NULL, rt), -EINVAL);
	cr_expect_eq(pw_cli_metrics_write(stdout, rt, 99), -EINVAL);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_expect_eq(pw_metrics_read(rt, &m), -EINVAL, "destroyed");
	cr_expect_eq(pw_metrics_num_workers(rt), -EINVAL);
}

Test(metrics, cli_metrics_format_flag)
{
	static const struct pw_cli_cmd cmd = { "pinwheel t", NULL, NULL, 0,
					       PW_CLI_RUNTIME };
	struct pw_cli c;
	char *argv[4] = { "t", "--metrics", NULL, NULL };

	cr_assert_eq(pw_cli_parse(&c, &cmd, 2, argv), 0);
	cr_expect(c.metrics);
	cr_expect_eq(c.metrics_format, PW_CLI_METRICS_JSON, "the default");
	argv[2] = "--metrics-format=prometheus";
	cr_assert_eq(pw_cli_parse(&c, &cmd, 3, argv), 0);
	cr_expect_eq(c.metrics_format, PW_CLI_METRICS_PROMETHEUS);
	argv[2] = "--metrics-format";
	argv[3] = "json";
	cr_assert_eq(pw_cli_parse(&c, &cmd, 4, argv), 0);
	cr_expect_eq(c.metrics_format, PW_CLI_METRICS_JSON);
	argv[3] = "xml";
	cr_expect_eq(pw_cli_parse(&c, &cmd, 4, argv), -EINVAL);
	cr_expect_not_null(strstr(c.error, "--metrics-format"));
}
