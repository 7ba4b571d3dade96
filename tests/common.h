/* SPDX-License-Identifier: MIT */
/*
 * common.h - helpers shared by pinwheel's Criterion tests.
 */
#ifndef PW_TESTS_COMMON_H
#define PW_TESTS_COMMON_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "pinwheel.h"

/*
 * Kill this test's process after @seconds (SIGALRM): the test then shows
 * as crashed, and the children it forked with pw_test_fork() die with it.
 * Every test already has a limit of PW_TEST_TIME_LIMIT_DEFAULT seconds
 * (tests/limit.c); this sets another, for a test that needs longer, or
 * a shorter one of at least twice PW_TEST_WAIT_SECS, so that a bounded
 * wait always reports what it waited for before the limit strikes. A
 * limit is a guard against a hang, never a speed check: a loaded machine
 * may run a test many times slower than an idle one. Used instead of Criterion's
 * .timeout, whose watchdog leaks in the runner under LeakSanitizer when
 * several timed tests run.
 */
#define PW_TEST_TIME_LIMIT_DEFAULT 300

static inline void pw_test_time_limit(unsigned seconds)
{
	alarm(seconds);
}

/*
 * fork() for a test: the child gets SIGKILL when the thread that forked
 * it ends (PR_SET_PDEATHSIG), so no server or scenario a test started
 * outlives a test that failed, crashed or ran out of time, holding the
 * runner's output open. Call it from the thread that waits for the
 * child. Returns as fork() does.
 */
static inline pid_t pw_test_fork(void)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid == 0 &&
	    (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent))
		_exit(126); /* the parent is gone already */
	return pid;
}

/*
 * The suite runs twice, once per scheduler: `make test` runs it with
 * PW_SCHED=shard, then with PW_SCHED=steal. This is where that choice is
 * read (the library reads no environment): pw_test_steal() says which
 * pass this is, and pw_test_config_init() gives every runtime a test
 * makes the pass's scheduler.
 */
static inline bool pw_test_steal(void)
{
	const char *s = getenv("PW_SCHED");
	return s && !strcmp(s, "steal");
}

/* The scheduler of this pass of the suite. */
static inline enum pw_sched pw_test_sched(void)
{
	return pw_test_steal() ? PW_SCHED_STEAL : PW_SCHED_SHARD;
}

/* pw_config_init() with the scheduler of this pass of the suite: the
 * defaults for a test's runtime, before the test adjusts them. */
static inline void pw_test_config_init(struct pw_config *cfg)
{
	pw_config_init(cfg);
	cfg->sched = pw_test_sched();
}

/*
 * For a test of shard-mode placement or order (which shard runs a task,
 * FIFO run order, mesh wake counters): skipped in stealing mode, whose
 * own exact orders and counts are tested in test_steal.c.
 */
#define PW_TEST_SHARD_ONLY()                                             \
	do {                                                             \
		if (pw_test_steal())                                     \
			cr_skip_test("shard-mode placement and order: "  \
				     "stealing mode has its own tests"); \
	} while (0)

/* FNV-1a over @n bytes, continuing from @h (start: PW_TEST_FNV_INIT):
 * checksums of the bytes that went through a server. */
#define PW_TEST_FNV_INIT 1469598103934665603ull

static inline uint64_t pw_test_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* xorshift64: a reproducible pseudo-random stream from *@s (non-zero). */
static inline uint64_t pw_test_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* PW_TEST_SCALE (a float, default 1) scales randomised op counts. */
static inline double pw_test_scale(void)
{
	const char *s = getenv("PW_TEST_SCALE");
	double v = s ? atof(s) : 1.0;
	return v > 0 ? v : 1.0;
}

/* Number of open fds of this process. */
static inline int pw_test_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	cr_assert_not_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", "..", and the DIR's own fd */
}

/* A runtime of @shards shards with default settings; fails the test if
 * it cannot start. More shards than CPUs are allowed: tests are about
 * behaviour, not placement, and must run on small machines. */
static inline struct pw_runtime *pw_test_runtime(unsigned shards)
{
	struct pw_config cfg;
	struct pw_runtime *rt = NULL;

	pw_test_config_init(&cfg);
	cfg.shards = shards;
	cfg.flags = PW_CONFIG_OVERSUBSCRIBE;
	int err = pw_runtime_create(&rt, &cfg);
	cr_assert_eq(err, 0, "pw_runtime_create: %d (%s)", err,
		     pw_strerror_setup(err));
	return rt;
}

/* A runtime of @shards shards with the paused (virtual) clock. */
static inline struct pw_runtime *pw_test_paused_runtime(unsigned shards)
{
	struct pw_config cfg;
	struct pw_runtime *rt = NULL;

	pw_test_config_init(&cfg);
	cfg.shards = shards;
	cfg.flags = PW_CONFIG_PAUSED_CLOCK | PW_CONFIG_OVERSUBSCRIBE;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	return rt;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t pw_test_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The bound of every wait for an event in a test: long enough that only
 * a lost event reaches it on a loaded machine (ThreadSanitizer included),
 * short enough that the test fails by name well before its time limit.
 */
#define PW_TEST_WAIT_SECS 60

/*
 * One step of PW_TEST_WAIT_UNTIL: false once CLOCK_MONOTONIC has passed
 * @deadline_ns, else pause one millisecond and return true. The pause is
 * the interval between two looks at a value another thread publishes
 * (a runtime counter, an atomic flag), not the synchronisation: the
 * caller's condition is.
 */
static inline bool pw_test_wait_step(uint64_t deadline_ns)
{
	struct timespec ms = { 0, 1000000 };

	if (pw_test_now_ns() >= deadline_ns)
		return false;
	nanosleep(&ms, NULL); /* poll interval of a bounded wait, see above */
	return true;
}

/*
 * Wait until @cond holds, for at most @secs seconds; if it never does,
 * fail the test with the printf-style message that follows (say what was
 * awaited and what was seen). For state published by another thread
 * that has no file descriptor to wait on; where there is one (a pipe, an
 * eventfd, a child's output), wait on it with poll() instead.
 */
#define PW_TEST_WAIT_UNTIL(cond, secs, ...)                                \
	do {                                                               \
		uint64_t pw_test_dl_ =                                     \
			pw_test_now_ns() + (uint64_t)(secs)*1000000000ull; \
		while (!(cond))                                            \
			if (!pw_test_wait_step(pw_test_dl_))               \
				cr_assert_fail(__VA_ARGS__);               \
	} while (0)

/*
 * Shard @shard's counters once it holds exactly @live tasks' memory
 * (counters are published once per loop turn); fails the test if that
 * does not happen within PW_TEST_WAIT_SECS.
 */
static inline struct pw_shard_stats
pw_test_wait_live(struct pw_runtime *rt, unsigned shard, uint64_t live)
{
	struct pw_shard_stats st = { 0 };

	PW_TEST_WAIT_UNTIL(
		pw_runtime_stats(rt, shard, &st) == 0 && st.live_tasks == live,
		PW_TEST_WAIT_SECS, "shard %u: %llu live tasks, %llu expected",
		shard, (unsigned long long)st.live_tasks,
		(unsigned long long)live);
	return st;
}

/* Run @fn(@state) on shard 0 and return its result. */

static inline int64_t pw_test_block_on(struct pw_runtime *rt, pw_poll_fn fn,
				       void *state)
{
	int64_t res = 0;
	int err = pw_block_on(rt, fn, state, &res);
	cr_assert_eq(err, 0, "pw_block_on: %d", err);
	return res;
}

/* The state of the task of pw_test_advance(). */
struct pw_test_advance_arg {
	uint64_t ns;
	_Atomic int *done; /* pw_test_advance()'s count of advances made */
};

/* The task of pw_test_advance(): moves the paused clock, then counts. */
static inline enum pw_poll pw_test_advance_poll(struct pw_cx *cx, void *state)
{
	struct pw_test_advance_arg *a = state;

	cr_assert_eq(pw_time_advance(a->ns), 0);
	/* Pairs with the loads in pw_test_advance(): the advance is made
	 * before the count says so. */
	atomic_fetch_add(a->done, 1);
	return pw_ready(cx, 0);
}

/*
 * Move the paused clock of @rt (made with PW_CONFIG_PAUSED_CLOCK) forward
 * by @ns: a task spawned on its shard 0 calls pw_time_advance(), and this
 * returns once it has. Fails the test if the spawn or the advance fails,
 * or if the task has not run within PW_TEST_WAIT_SECS. Called from the
 * test's thread, never from one of @rt's shards (it waits for them).
 */
static inline void pw_test_advance(struct pw_runtime *rt, uint64_t ns)
{
	/* Advances made (by tasks of every runtime of this test); pairs
	 * with the fetch_add in pw_test_advance_poll(). */
	static _Atomic int advances;
	struct pw_test_advance_arg a = { .ns = ns, .done = &advances };
	int n = atomic_load(&advances);

	cr_assert_eq(pw_runtime_spawn(rt, 0, pw_test_advance_poll, &a,
				      sizeof(a), NULL),
		     0);
	PW_TEST_WAIT_UNTIL(atomic_load(&advances) > n, PW_TEST_WAIT_SECS,
			   "the clock was not advanced");
}

/*
 * rm -r of the folder @dir, @depth levels of folders below it at most
 * (0: only its files): what a test made there, removed at its end.
 * Best effort: what cannot be removed stays, silently (a test that must
 * see its folder gone checks that itself). Any thread.
 */
static inline void pw_test_rm_tree(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[PATH_MAX];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		int n = snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (n < 0 || (size_t)n >= sizeof(p))
			continue; /* too long to be one of a test's */
		if (unlink(p) && depth > 0)
			pw_test_rm_tree(p, depth - 1);
	}
	closedir(d);
	rmdir(dir);
}

/*
 * Restrict every thread of this process to @set (the mask of a process is
 * the union of its threads', and a sanitizer may run threads of its own).
 * Returns 0, or -1 when a thread could not be restricted. For a child made
 * with pw_test_fork(), before it makes a runtime.
 */
static inline int pw_test_restrict_threads(const cpu_set_t *set)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int rc = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' &&
		    sched_setaffinity((pid_t)atoi(e->d_name), sizeof(*set),
				      set) != 0)
			rc = -1;
	closedir(d);
	return rc;
}

/* The whole file @path, NUL-terminated, malloc'd (free it); its length
 * in *@len when @len is not NULL. NULL when it cannot be opened. */
static inline char *pw_test_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t got;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	cr_assert_not_null(buf);
	got = fread(buf, 1, (size_t)n, f);
	buf[got] = '\0';
	fclose(f);
	if (len)
		*len = got;
	return buf;
}

/* Whether gnuplot is installed where the plots look for it. */
static inline bool pw_test_have_gnuplot(void)
{
	return !access("/usr/bin/gnuplot", X_OK) ||
	       !access("/usr/local/bin/gnuplot", X_OK);
}

/*
 * Start the program @path with @argv, and with @envp as its environment
 * (NULL: this process's), and return its pid. Its stdout and stderr go
 * to a pipe whose read end is put in *@fd, or nowhere when @fd is NULL.
 */
static inline pid_t pw_test_spawn(const char *path, char *const argv[],
				  char *const envp[], int *fd)
{
	int pfd[2] = { -1, -1 };

	if (fd)
		cr_assert_eq(pipe(pfd), 0);
	pid_t pid = pw_test_fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int out = fd ? pfd[1] : open("/dev/null", O_WRONLY);
		dup2(out, 1);
		dup2(out, 2);
		if (fd)
			close(pfd[0]);
		if (envp)
			execve(path, argv, envp);
		else
			execv(path, argv);
		_exit(127);
	}
	if (fd) {
		close(pfd[1]);
		*fd = pfd[0];
	}
	return pid;
}

/*
 * Append what a child writes to @fd to @text (NUL-terminated, *@len bytes
 * so far, at most @size - 1) until a whole line holding @key has come,
 * and return where @key starts. Fails the test, with what the child
 * said, if the child ends or PW_TEST_WAIT_SECS pass first.
 */
static inline const char *pw_test_read_until(int fd, char *text, size_t size,
					     size_t *len, const char *key)
{
	uint64_t dl = pw_test_now_ns() + PW_TEST_WAIT_SECS * PW_NSEC_PER_SEC;
	const char *at;

	text[*len] = '\0';
	while (!(at = strstr(text, key)) || !strchr(at, '\n')) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = pw_test_now_ns();
		cr_assert_lt(now, dl, "no line with '%s'; the command said: %s",
			     key, text);
		cr_assert_lt(*len + 1, size, "no room left: %s", text);
		if (poll(&p, 1, (int)((dl - now) / PW_NSEC_PER_MSEC) + 1) < 1)
			continue;
		ssize_t n = read(fd, text + *len, size - 1 - *len);
		cr_assert_gt(n, 0, "the command ended; it said: %s", text);
		*len += (size_t)n;
		text[*len] = '\0';
	}
	return at;
}

/*
 * pw_test_read_until() the banner line "listening on ADDR ..." of a
 * server command started on 127.0.0.1:0, and put ADDR, with the port
 * the command was given, in *@a.
 */
static inline void pw_test_banner_addr(int fd, char *text, size_t size,
				       size_t *len, struct pw_net_addr *a)
{
	static const char key[] = "listening on ";
	const char *at = pw_test_read_until(fd, text, size, len, key);
	char addr[PW_NET_ADDR_STRLEN + 1];

	at += sizeof(key) - 1;
	size_t n = strcspn(at, " \n");
	cr_assert_lt(n, sizeof(addr), "%s", text);
	memcpy(addr, at, n);
	addr[n] = '\0';
	cr_assert_eq(pw_net_addr_parse(a, addr), 0, "banner: %s", text);
	cr_assert_eq(a->u.sa.sa_family, AF_INET, "banner: %s", text);
	cr_assert_neq(a->u.in4.sin_port, 0, "banner: %s", text);
}

/*
 * Append what a child writes to @fd, up to its end, to @text
 * (NUL-terminated, *@len bytes so far, at most @size - 1 kept; what does
 * not fit is left unread), then close @fd. For after pw_test_read_until(),
 * or alone with *@len 0.
 */
static inline void pw_test_read_rest(int fd, char *text, size_t size,
				     size_t *len)
{
	ssize_t n;

	while (*len + 1 < size &&
	       (n = read(fd, text + *len, size - 1 - *len)) > 0)
		*len += (size_t)n;
	text[*len] = '\0';
	close(fd);
}

#ifdef PW_BUILDDIR
/* pw_test_spawn() of the built pinwheel command (argv[0] is only its
 * name). */
static inline pid_t pw_test_cmd_start(char *const argv[], int *fd)
{
	return pw_test_spawn(PW_BUILDDIR "/pinwheel", argv, NULL, fd);
}

/*
 * Wait for the command @pid started by pw_test_cmd_start() or
 * pw_test_spawn() and return its exit status (-1 if it did not exit).
 * Unless @fd is -1, what it writes to @fd goes to @out first
 * (NUL-terminated, at most @len - 1 bytes kept), and @fd is closed.
 */
static inline int pw_test_cmd_wait(pid_t pid, int fd, char *out, size_t len)
{
	size_t got = 0;
	int status;

	if (fd >= 0)
		pw_test_read_rest(fd, out, len, &got);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * Run the built pinwheel command with @argv (argv[0] is only its name)
 * and return its exit status (-1 if it did not exit). Its stdout and
 * stderr go to @out (NUL-terminated, at most @len - 1 bytes kept), or
 * nowhere when @out is NULL.
 */
static inline int pw_test_run_cmd(char *out, size_t len, char *const argv[])
{
	int fd = -1;
	pid_t pid = pw_test_cmd_start(argv, out ? &fd : NULL);

	return pw_test_cmd_wait(pid, fd, out, len);
}

/* A run of the pinwheel command and what it must do. */
struct pw_test_cmd_case {
	char *argv[8];	  /* argv[0] is only the command's name */
	int status;	  /* its exit status */
	const char *says; /* a piece of its output */
};

/*
 * Run each of the @n commands of @cases and expect its exit status and
 * its piece of output; a usage error (status 2) must be one line.
 */
static inline void pw_test_cmd_cases(const struct pw_test_cmd_case *cases,
				     size_t n)
{
	static char out[16384];

	for (size_t i = 0; i < n; i++) {
		int st = pw_test_run_cmd(out, sizeof(out), cases[i].argv);
		cr_expect_eq(st, cases[i].status, "case %zu: status %d: %s", i,
			     st, out);
		cr_expect(strstr(out, cases[i].says), "case %zu: %s", i, out);
		if (cases[i].status == 2)
			cr_expect_eq(strchr(out, '\n'), out + strlen(out) - 1,
				     "case %zu: one line: %s", i, out);
	}
}
#endif

/*
 * pw_test_bench_lock - take the lock that the tests running real
 * benchmarks (a `pinwheel bench` with its server and load pinned to this
 * machine's CPUs) hold while they run, so that no two of them compete
 * for the same CPUs: a second benchmark pinned beside the first starves
 * it (a round of one got no answer for a second). Criterion runs each
 * test in its own process, so the lock (flock(2) on a file in /tmp) is
 * held until pw_test_bench_unlock() or the test's process ends.
 * Return: the descriptor to hand to pw_test_bench_unlock().
 * Context: the test's thread.
 */
static inline int pw_test_bench_lock(void)
{
	int fd = open("/tmp/pinwheel-tests-bench.lock",
		      O_RDWR | O_CREAT | O_CLOEXEC, 0666);

	cr_assert_geq(fd, 0, "bench lock: %s", strerror(errno));
	while (flock(fd, LOCK_EX) && errno == EINTR)
		;
	return fd;
}

/* pw_test_bench_unlock - let go of pw_test_bench_lock()'s lock @fd. */
static inline void pw_test_bench_unlock(int fd)
{
	close(fd);
}

#endif /* PW_TESTS_COMMON_H */
