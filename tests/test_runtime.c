/* SPDX-License-Identifier: MIT */
/*
 * test_runtime.c - create, block_on and destroy: configuration checks,
 * clean shutdown with work in flight, handles used after destroy, calls
 * from the wrong thread, and io_uring being unavailable.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/common.h"

static enum pw_poll answer_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	return pw_ready(cx, 42);
}

Test(runtime, create_block_on_destroy_leaves_no_fd)
{
	int fds = pw_test_open_fds();
	for (int i = 0; i < 20; i++) {
		struct pw_runtime *rt = pw_test_runtime(1 + i % 2);
		cr_assert_eq(pw_runtime_shards(rt), 1 + i % 2);
		cr_assert_eq(pw_test_block_on(rt, answer_poll, NULL), 42);
		cr_assert_eq(pw_runtime_destroy(rt), 0);
	}
	cr_assert_eq(pw_test_open_fds(), fds);
}

Test(runtime, shard_is_pinned_and_uses_defer_taskrun)
{
	cpu_set_t set;
	cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	int first = -1;
	for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
		if (CPU_ISSET(c, &set))
			first = c;
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_shard_stats st;
	cr_assert_eq(pw_runtime_stats(rt, 0, &st), 0);
	cr_assert_eq(st.cpu, first);
	cr_assert(st.defer_taskrun, "kernel 6.1+ accepts DEFER_TASKRUN");
	cr_assert_eq(pw_runtime_destroy(rt), 0);

	struct pw_config cfg;
	pw_test_config_init(&cfg);
	cfg.flags = PW_CONFIG_NO_DEFER;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	cr_assert_eq(pw_runtime_stats(rt, 0, &st), 0);
	cr_assert(!st.defer_taskrun);
	cr_assert_eq(pw_test_block_on(rt, answer_poll, NULL), 42);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Shutdown with work in flight: readers blocked on pipes, tasks parked
 * forever, tasks queued; every drop hook runs once, every fd is back. */
static _Atomic int drops;

struct blocked {
	int fds[2];
	char buf[8];
	struct pw_op op;
	bool park;
};

static void prep_read(struct io_uring_sqe *sqe, void *arg)
{
	struct blocked *b = arg;
	io_uring_prep_read(sqe, b->fds[0], b->buf, sizeof(b->buf), 0);
}

static enum pw_poll blocked_poll(struct pw_cx *cx, void *state)
{
	struct blocked *b = state;
	int32_t res;
	if (b->park)
		return PW_PENDING;
	if (pw_op_poll(cx, &b->op, prep_read, b, &res) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, res);
}

static void blocked_drop(void *state)
{
	struct blocked *b = state;
	pw_op_cancel(&b->op);
	close(b->fds[0]);
	close(b->fds[1]);
	atomic_fetch_add(&drops, 1);
}

static _Atomic int spawners_done;

static enum pw_poll spawn_blocked(struct pw_cx *cx, void *state)
{
	int *n = state;
	for (int i = 0; i < *n; i++) {
		struct blocked b = { .park = i % 3 == 0 };
		cr_assert_eq(pipe(b.fds), 0);
		pw_op_init(&b.op);
		cr_assert_eq(pw_spawn(NULL, blocked_poll, &b, sizeof(b),
				      blocked_drop),
			     0);
	}
	atomic_fetch_add(&spawners_done, 1);
	return pw_ready(cx, 0);
}

/* Kernel operations in flight on @shards shards, as last published. */
static uint64_t inflight(struct pw_runtime *rt, unsigned shards)
{
	struct pw_shard_stats st;
	uint64_t n = 0;

	for (unsigned i = 0; i < shards; i++) {
		cr_assert_eq(pw_runtime_stats(rt, i, &st), 0);
		n += st.inflight_ops;
	}
	return n;
}

Test(runtime, destroy_drops_tasks_and_cancels_operations)
{
	int fds = pw_test_open_fds();
	struct pw_runtime *rt = pw_test_runtime(2);
	int n = 300;
	pw_test_block_on(rt, spawn_blocked, &n);
	cr_assert_eq(
		pw_runtime_spawn(rt, 1, spawn_blocked, &n, sizeof(n), NULL), 0);
	/* Until the second spawner has run, then until every reader's read
	 * is in flight (two of each three tasks read, a third parks). */
	PW_TEST_WAIT_UNTIL(atomic_load(&spawners_done) == 2, PW_TEST_WAIT_SECS,
			   "%d of 2 spawners ran", atomic_load(&spawners_done));
	uint64_t reads = 0, want = 2 * (uint64_t)(n - (n + 2) / 3);
	PW_TEST_WAIT_UNTIL((reads = inflight(rt, 2)) == want, PW_TEST_WAIT_SECS,
			   "%llu of %llu reads in flight",
			   (unsigned long long)reads, (unsigned long long)want);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(atomic_load(&drops), 2 * n);
	cr_assert_eq(pw_test_open_fds(), fds);
}

/*
 * The counters pw_block_on()'s caller reads are those of the moment its
 * task ended, not of the last loop turn: a staller keeps the shard inside
 * that task's turn until the caller has looked, while a reader it spawned
 * holds its memory and a read on an empty pipe.
 */
static struct fresh {
	int fds[2], step;
	_Atomic bool root_done, looked;
} fresh;

struct fresh_reader {
	int fd;
	char buf[8];
	struct pw_op op;
};

static void prep_fresh_read(struct io_uring_sqe *sqe, void *arg)
{
	struct fresh_reader *r = arg;
	io_uring_prep_read(sqe, r->fd, r->buf, sizeof(r->buf), 0);
}

static enum pw_poll fresh_reader_poll(struct pw_cx *cx, void *state)
{
	struct fresh_reader *r = state;
	int32_t res;
	if (pw_op_poll(cx, &r->op, prep_fresh_read, r, &res) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, res);
}

static enum pw_poll fresh_staller_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	if (!atomic_load(&fresh.root_done))
		return pw_yield(cx);
	/* Holds the shard inside this turn until the caller has looked. */
	PW_TEST_WAIT_UNTIL(atomic_load(&fresh.looked), PW_TEST_WAIT_SECS,
			   "the pw_block_on() caller never read the counters");
	return pw_ready(cx, 0);
}

static enum pw_poll fresh_root_poll(struct pw_cx *cx, void *state)
{
	struct fresh *f = state;
	if (f->step == 0) {
		struct fresh_reader r = { .fd = f->fds[0] };
		pw_op_init(&r.op);
		cr_assert_eq(pw_spawn(NULL, fresh_reader_poll, &r, sizeof(r),
				      NULL),
			     0);
		cr_assert_eq(pw_spawn(NULL, fresh_staller_poll, NULL, 0, NULL),
			     0);
		f->step = 1;
		return pw_yield(cx);
	}
	atomic_store(&f->root_done, true);
	return pw_ready(cx, 7);
}

Test(runtime, block_on_returns_with_the_shard_counters_current)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_shard_stats st;
	cr_assert_eq(pipe(fresh.fds), 0);
	cr_assert_eq(pw_test_block_on(rt, fresh_root_poll, &fresh), 7);
	cr_assert_eq(pw_runtime_stats(rt, 0, &st), 0);
	atomic_store(&fresh.looked, true);
	/* The reader and the staller; in shard mode the root too, whose
	 * memory is freed after its caller is released (stealing mode
	 * makes the root outside the shard's slab). */
	uint64_t live = pw_test_steal() ? 2 : 3;
	cr_assert_eq(st.live_tasks, live, "%llu live tasks, %llu expected",
		     (unsigned long long)st.live_tasks,
		     (unsigned long long)live);
	cr_assert_eq(st.inflight_ops, 1, "the reader's read is in flight");
	cr_assert_eq(write(fresh.fds[1], "x", 1), 1);
	cr_assert_eq(pw_test_wait_live(rt, 0, 0).live_tasks, 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(fresh.fds[0]);
	close(fresh.fds[1]);
}

Test(runtime, handles_after_destroy_are_refused)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_shard_stats st;
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_runtime_destroy(rt), -EINVAL);
	cr_assert_eq(pw_block_on(rt, answer_poll, NULL, NULL), -EINVAL);
	cr_assert_eq(pw_runtime_stats(rt, 0, &st), -EINVAL);
	cr_assert_eq(pw_runtime_shards(rt), -EINVAL);
	cr_assert_eq(pw_runtime_destroy(NULL), -EINVAL);
}

/*
 * @c is refused with @err by both pw_runtime_create() and
 * pw_config_check(), whose message starts with @says (@what names the
 * case).
 */
static void expect_refused(const struct pw_config *c, int err, const char *says,
			   const char *what)
{
	struct pw_runtime *rt = (void *)1;
	char msg[256];

	cr_assert_eq(pw_runtime_create(&rt, c), err, "%s", what);
	cr_assert_null(rt);
	cr_assert_eq(pw_config_check(c, msg, sizeof(msg)), err, "%s: %s", what,
		     msg);
	cr_assert_eq(strncmp(msg, says, strlen(says)), 0,
		     "%s: \"%s\", not \"%s...\"", what, msg, says);
}

Test(runtime, bad_configuration)
{
	struct pw_config c;
	cr_assert_eq(pw_runtime_create(NULL, NULL), -EINVAL);
#define BAD(field, value, says)                                         \
	do {                                                            \
		pw_test_config_init(&c);                                \
		c.field = value;                                        \
		expect_refused(&c, -EINVAL, says, #field " = " #value); \
	} while (0)
	BAD(shards, 0, "shards: 0 is out of range 1..1024");
	BAD(shards, PW_MAX_SHARDS + 1, "shards: 1025 is out of range 1..1024");
	BAD(ring_entries, 7,
	    "ring_entries: 7 is not a power of two in 8..32768");
	BAD(ring_entries, 100, "ring_entries: 100 is not a power of two");
	BAD(ring_entries, 65536, "ring_entries: 65536 is not a power of two");
	BAD(cq_factor, 0, "cq_factor: 0 is out of range 1..64");
	BAD(cq_factor, 65, "cq_factor: 65 is out of range 1..64");
	BAD(batch, 0, "batch: 0 is below 1");
	BAD(tick_ns, 999, "tick_ns: 999 is out of range 1000..1000000000");
	BAD(tick_ns, 2000000000, "tick_ns: 2000000000 is out of range");
	BAD(flags, 0x80, "flags: 0x80 has bits no PW_CONFIG_* flag names");
	BAD(mesh_slots, 3,
	    "mesh_slots: 3 is neither 0 (the default) nor a power of two in 2..65536");
	BAD(mesh_slots, 131072, "mesh_slots: 131072 is neither 0");
	BAD(mesh_batch, 0, "mesh_batch: 0 is below 1");
	BAD(max_blocking_threads, 0, "max_blocking_threads: 0 is below 1");
	BAD(idle_poll_ns, PW_IDLE_POLL_MAX_NS + 1,
	    "idle_poll_ns: 1000000001 is out of range 0..1000000000");
	BAD(batch_wait_ns, PW_BATCH_WAIT_MAX_NS + 1,
	    "batch_wait_ns: 1000000001 is out of range 0..1000000000");
	BAD(sched, (enum pw_sched)7, "sched: 7 is not shard or steal");
	static const int neg[] = { -1 };
	static const int huge[] = { 1 << 20 };
	BAD(cpus, neg, "cpus[0]: CPU -1 is negative");
#undef BAD
	/* The stealing scheduler's own intervals. */
	pw_config_init(&c);
	c.sched = PW_SCHED_STEAL;
	c.event_interval = 0;
	expect_refused(&c, -EINVAL, "event_interval: 0 is below 1",
		       "event_interval = 0");
	c.event_interval = 61;
	c.global_queue_interval = 0;
	expect_refused(&c, -EINVAL,
		       "global_queue_interval: 0 is neither at least 1 nor "
		       "PW_INTERVAL_AUTO",
		       "global_queue_interval = 0");
	/* A CPU that does not exist (see test_numa.c for the rest). */
	pw_test_config_init(&c);
	c.shards = 1;
	c.cpus = huge;
	expect_refused(&c, -ENODEV, "cpus[0]: CPU 1048576 does not exist",
		       "cpus = huge");
	pw_config_init(NULL); /* no crash */
	cr_assert_eq(pw_block_on(NULL, answer_poll, NULL, NULL), -EINVAL);
	cr_assert_eq(pw_runtime_stats(NULL, 0, NULL), -EINVAL);
	struct pw_runtime *ok = pw_test_runtime(1);
	cr_assert_eq(pw_block_on(ok, NULL, NULL, NULL), -EINVAL);
	struct pw_shard_stats st;
	cr_assert_eq(pw_runtime_stats(ok, 1, &st), -ENODEV);
	cr_assert_eq(pw_runtime_stats(ok, 0, NULL), -EINVAL);
	cr_assert_eq(pw_runtime_destroy(ok), 0);
	cr_assert_str_neq(pw_strerror_setup(-ENOSYS), "");
	cr_assert(strstr(pw_strerror_setup(-EINVAL), "pw_config_check()"));
	cr_assert_str_eq(pw_version(), PW_VERSION);
}

/* Placement mistakes: the CPU list, the policy, more shards than CPUs. */
Test(runtime, config_check_names_the_placement_mistake)
{
	static const int zero[] = { 0 }, twice[] = { 0, 0 };
	struct pw_placement_opts o = { 0 };
	struct pw_config c;

#define PLACED(err, says, ...)                                 \
	do {                                                   \
		pw_test_config_init(&c);                       \
		c.shards = 1;                                  \
		o = (struct pw_placement_opts){ __VA_ARGS__ }; \
		c.placement = &o;                              \
		expect_refused(&c, err, says, #__VA_ARGS__);   \
	} while (0)
	PLACED(-EINVAL, "placement.shards: 2 is neither 0 nor shards (1)",
	       .shards = 2);
	PLACED(-EINVAL, "placement.unit: 9 is not cores or PUs",
	       .unit = (enum pw_place_unit)9);
	PLACED(-EINVAL, "placement.order: 9 is not compact or spread",
	       .order = (enum pw_place_order)9);
	PLACED(-EINVAL,
	       "placement.cpus: \"0-\" is not a list such as \"0-3,8\"",
	       .cpus = "0-");
	PLACED(-ENODEV, "placement.cpus: \"100000\" has a number beyond 65535",
	       .cpus = "100000");
	PLACED(-EINVAL, "placement.nodes: \"\" is not a list", .nodes = "");
	PLACED(-ENODEV, "placement.nodes: node 999 does not exist",
	       .nodes = "999");
#undef PLACED
	pw_test_config_init(&c);
	c.shards = 1;
	c.cpus = zero;
	c.placement = &o;
	expect_refused(&c, -EINVAL,
		       "placement: set together with cpus (give one)",
		       "cpus and placement");

	struct pw_topo *t;
	cr_assert_eq(pw_topo_load(&t), 0);
	unsigned cores = t->ncores;
	pw_topo_free(t);
	char want[128];
	pw_test_config_init(&c);
	c.shards = cores + 1;
	snprintf(want, sizeof(want), "shards: %u is more than the %u CPUs",
		 cores + 1, cores);
	expect_refused(&c, -E2BIG, want, "default placement");
	c.shards = 2;
	c.cpus = twice;
	expect_refused(&c, -E2BIG, "cpus[1]: CPU 0 is cpus[0] too",
		       "one CPU twice");

	/* A good configuration: 0 and an empty message; no message room. */
	char msg[8] = "x";
	pw_test_config_init(&c);
	cr_assert_eq(pw_config_check(&c, msg, sizeof(msg)), 0);
	cr_assert_str_eq(msg, "");
	c.flags = PW_CONFIG_OVERSUBSCRIBE;
	cr_assert_eq(pw_config_check(&c, NULL, 0), 0, "one CPU twice, shared");
	c.shards = 0;
	cr_assert_eq(pw_config_check(&c, NULL, 0), -EINVAL);
	/* A short buffer holds the start of the line. */
	cr_assert_eq(pw_config_check(&c, msg, sizeof(msg)), -EINVAL);
	cr_assert_str_eq(msg, "shards:");
	cr_assert_eq(pw_config_check(NULL, msg, sizeof(msg)), -EINVAL);
	cr_assert_str_eq(msg, "config:");
}

/* A CPU the process may not run on is named (in a child: its mask
 * shrinks, as in test_numa.c). */
Test(runtime, config_check_names_a_cpu_outside_the_mask)
{
	cpu_set_t set;
	cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	if (CPU_COUNT(&set) < 2)
		cr_skip_test("needs 2 CPUs");
	int last = -1;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			last = i;
	CPU_CLR(last, &set);
	char want[128];
	snprintf(want, sizeof(want),
		 "cpus[0]: CPU %d is offline or outside this process's "
		 "affinity mask",
		 last);
	pid_t pid = pw_test_fork();
	if (pid == 0) {
		struct pw_config c;
		char msg[256];
		int cpus[1] = { last };
		if (pw_test_restrict_threads(&set))
			_exit(2);
		pw_test_config_init(&c);
		c.shards = 1;
		c.cpus = cpus;
		_exit(pw_config_check(&c, msg, sizeof(msg)) == -ENODEV &&
				      !strcmp(msg, want) ?
			      0 :
			      1);
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "cpu %d outside the mask: -ENODEV and \"%s\" (status %d)",
		  last, want, status);
}

/* The library reads no environment: PW_SCHED is the program's to read. */
Test(runtime, config_init_ignores_the_environment)
{
	const char *was = getenv("PW_SCHED");
	char *keep = was ? strdup(was) : NULL;
	struct pw_config c;

	cr_assert_eq(setenv("PW_SCHED", "steal", 1), 0);
	pw_config_init(&c);
	cr_assert_eq(c.sched, PW_SCHED_SHARD);
	if (keep)
		setenv("PW_SCHED", keep, 1);
	else
		unsetenv("PW_SCHED");
	free(keep);
}

/* Calls a shard may not make. */
static struct pw_runtime *RT;

static enum pw_poll wrong_thread_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	struct pw_runtime *other;
	cr_assert_eq(pw_block_on(RT, answer_poll, NULL, NULL), -EDEADLK);
	cr_assert_eq(pw_runtime_destroy(RT), -EDEADLK);
	cr_assert_eq(pw_runtime_create(&other, NULL), -EDEADLK);
	return pw_ready(cx, 1);
}

Test(runtime, shard_thread_cannot_block_or_destroy)
{
	RT = pw_test_runtime(1);
	cr_assert_eq(pw_test_block_on(RT, wrong_thread_poll, NULL), 1);
	cr_assert_eq(pw_runtime_destroy(RT), 0);
}

/* io_uring refused by a seccomp filter, as a container profile does. */
static void forbid_io_uring(int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K,
			 SECCOMP_RET_ERRNO |
				 ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	cr_assert_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
}

Test(runtime, io_uring_unavailable_is_a_clear_error)
{
	int fds = pw_test_open_fds();
	forbid_io_uring(ENOSYS);
	struct pw_runtime *rt = (void *)1;
	cr_assert_eq(pw_runtime_create(&rt, NULL), -ENOSYS);
	cr_assert_null(rt);
	cr_assert_eq(pw_test_open_fds(), fds, "a failed start leaks no fd");
	cr_assert(strstr(pw_strerror_setup(-ENOSYS), "seccomp"));

	/* The command says what is wrong and how to fix it. */
	int pfd[2];
	cr_assert_eq(pipe(pfd), 0);
	pid_t pid = pw_test_fork();
	if (pid == 0) {
		dup2(pfd[1], 2);
		execl(PW_BUILDDIR "/pinwheel", "pinwheel", "demo", (char *)0);
		_exit(127);
	}
	close(pfd[1]);
	char out[1024] = { 0 };
	size_t got = 0;
	pw_test_read_rest(pfd[0], out, sizeof(out), &got);
	int status;
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status));
	cr_assert_eq(WEXITSTATUS(status), 1, "exit status");
	cr_assert(strstr(out, "io_uring"), "message: %s", out);
	cr_assert(strstr(out, "seccomp"), "message: %s", out);
}

Test(runtime, io_uring_disabled_by_sysctl_is_eperm)
{
	forbid_io_uring(EPERM);
	struct pw_runtime *rt;
	cr_assert_eq(pw_runtime_create(&rt, NULL), -EPERM);
	cr_assert(strstr(pw_strerror_setup(-EPERM), "io_uring_disabled"));
}

/* ---- calls refused while the runtime stops ------------------------- */

static _Atomic bool pending_polled;

/* Never finishes: only shutdown ends it. */
static enum pw_poll pending_poll(struct pw_cx *cx, void *state)
{
	(void)cx;
	(void)state;
	atomic_store(&pending_polled, true);
	return PW_PENDING;
}

struct block_on_call {
	struct pw_runtime *rt;
	int err;
	int64_t res;
};

static void *block_on_thread(void *arg)
{
	struct block_on_call *c = arg;

	c->err = pw_block_on(c->rt, pending_poll, NULL, &c->res);
	return NULL;
}

/* A pw_block_on() whose task is dropped by pw_runtime_destroy() returns
 * -ESHUTDOWN and leaves the result alone. */
Test(runtime, block_on_is_refused_when_the_runtime_stops)
{
	pw_test_time_limit(120);
	struct block_on_call c = { .rt = pw_test_runtime(1),
				   .err = 1,
				   .res = -7 };
	pthread_t th;

	atomic_store(&pending_polled, false);
	cr_assert_eq(pthread_create(&th, NULL, block_on_thread, &c), 0);
	PW_TEST_WAIT_UNTIL(atomic_load(&pending_polled), PW_TEST_WAIT_SECS,
			   "the pw_block_on() task was never polled");
	cr_assert_eq(pw_runtime_destroy(c.rt), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(c.err, -ESHUTDOWN);
	cr_assert_eq(c.res, -7, "no result for a dropped task");
}

/*
 * From a drop hook that runs at shutdown, on the stopping shard, both
 * spawns are refused with -ESHUTDOWN: the refused task is never polled,
 * its drop hook is never called, its state stays the caller's (freed
 * here; LeakSanitizer sees the rest) and no task memory is left behind.
 */
static struct pw_runtime *stopping_rt;
static _Atomic int refused_polls, refused_drops, hook_runs;
static int spawn_err, runtime_spawn_err, runtime_spawn_any_err;

static enum pw_poll refused_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	atomic_fetch_add(&refused_polls, 1);
	return pw_ready(cx, 0);
}

static void refused_drop(void *state)
{
	(void)state;
	atomic_fetch_add(&refused_drops, 1);
}

static void spawning_drop(void *state)
{
	(void)state;
	char *mine = malloc(64);
	int one = 1;
	cr_assert_not_null(mine);
	spawn_err = pw_spawn(NULL, refused_poll, mine, 0, refused_drop);
	runtime_spawn_err = pw_runtime_spawn(stopping_rt, 0, refused_poll, &one,
					     sizeof(one), refused_drop);
	runtime_spawn_any_err = pw_runtime_spawn(
		stopping_rt, PW_SHARD_ANY, refused_poll, mine, 0, refused_drop);
	free(mine);
	atomic_fetch_add(&hook_runs, 1);
}

Test(runtime, spawns_are_refused_while_the_runtime_stops)
{
	pw_test_time_limit(120);
	stopping_rt = pw_test_runtime(1);
	atomic_store(&pending_polled, false);
	cr_assert_eq(pw_runtime_spawn(stopping_rt, 0, pending_poll, NULL, 0,
				      spawning_drop),
		     0);
	PW_TEST_WAIT_UNTIL(atomic_load(&pending_polled), PW_TEST_WAIT_SECS,
			   "the parked task was never polled");
	cr_assert_eq(pw_runtime_destroy(stopping_rt), 0);
	cr_assert_eq(atomic_load(&hook_runs), 1);
	cr_assert_eq(spawn_err, -ESHUTDOWN);
	cr_assert_eq(runtime_spawn_err, -ESHUTDOWN);
	cr_assert_eq(runtime_spawn_any_err, -ESHUTDOWN);
	cr_assert_eq(atomic_load(&refused_polls), 0);
	cr_assert_eq(atomic_load(&refused_drops), 0);
	/* From another thread the destroyed handle is refused as bad. */
	cr_assert_eq(pw_runtime_spawn(stopping_rt, 0, refused_poll, NULL, 0,
				      refused_drop),
		     -EINVAL);
	cr_assert_eq(atomic_load(&refused_drops), 0);
}

/* The suite's second pass really runs the stealing scheduler: the test
 * runner, not the library, hands the pass's choice to every runtime. */
Test(runtime, test_runtimes_follow_the_pass)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_metrics m;

	cr_assert_eq(pw_metrics_read(rt, &m), 0);
	cr_assert_eq(m.sched, pw_test_sched(), "sched %d in the %s pass",
		     (int)m.sched, pw_test_steal() ? "steal" : "shard");
	pw_metrics_free(&m);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}
