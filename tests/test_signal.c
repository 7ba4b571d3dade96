/* SPDX-License-Identifier: MIT */
/*
 * test_signal.c - pinwheel/signal.h: signals sent to the process from a
 * task arrive with their exact numbers, a SIGUSR1 and a SIGINT sent
 * while a read waits are both seen, a second SIGINT after the first was
 * read is seen too (the servers' "second signal forces exit"), ctrl_c,
 * a wait that costs no CPU, and bad input.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tests/common.h"
#include "pinwheel/signal.h"

#define MS PW_NSEC_PER_MSEC

/* Block SIGINT and SIGUSR1 before the runtime starts, as a program does:
 * its shard threads inherit the mask. */
static struct pw_runtime *signal_runtime(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	cr_assert_eq(pw_signal_block(&set), 0);
	return pw_test_runtime(2);
}

static int usr1_int(struct pw_signal *s)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	return pw_signal_init(s, &set);
}

/* Send one signal after a sleep, from another task. */
struct sender {
	struct pw_sleep sl;
	int signo[2];
	int n, i;
};

static enum pw_poll sender_poll(struct pw_cx *cx, void *state)
{
	struct sender *k = state;

	while (k->i < k->n) {
		if (pw_sleep_poll(cx, &k->sl) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(kill(getpid(), k->signo[k->i]), 0);
		k->i++;
		pw_sleep_reset_after(&k->sl, 5 * MS);
	}
	return pw_ready(cx, 0);
}

struct reader {
	struct pw_signal s;
	int step;
	int got[4];
	int n;
};

static void reader_drop(void *state)
{
	struct reader *r = state;

	if (r->step) /* opened */
		pw_signal_close(&r->s);
}

/* The signals come from this task: each is read after it was sent. */
static enum pw_poll in_turn_poll(struct pw_cx *cx, void *state)
{
	static const int send[4] = { SIGUSR1, SIGINT, SIGINT, SIGUSR1 };
	struct reader *r = state;
	int signo;

	if (r->step == 0) {
		cr_assert_eq(usr1_int(&r->s), 0);
		r->step = 1;
	}
	while (r->n < 4) {
		if (r->step == 1) {
			cr_assert_eq(kill(getpid(), send[r->n]), 0);
			r->step = 2;
		}
		if (pw_signal_poll(cx, &r->s, &signo) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(signo, send[r->n], "signal %d: %d", r->n, signo);
		r->got[r->n++] = signo;
		r->step = 1;
	}
	pw_signal_close(&r->s);
	cr_assert_eq(pw_signal_poll(cx, &r->s, &signo), PW_READY);
	cr_assert_eq(signo, -EBADF, "closed");
	return pw_ready(cx, r->n);
}

Test(signal, exact_numbers_and_a_second_sigint)
{
	struct pw_runtime *rt = signal_runtime();
	struct reader r = { 0 };

	cr_assert_eq(pw_test_block_on(rt, in_turn_poll, &r), 4);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* A read waits; another task sends SIGUSR1, then SIGINT 5 ms later. */
static enum pw_poll waiting_poll(struct pw_cx *cx, void *state)
{
	struct reader *r = state;
	int signo;

	if (r->step == 0) {
		struct sender k = { .signo = { SIGUSR1, SIGINT }, .n = 2 };

		cr_assert_eq(usr1_int(&r->s), 0);
		pw_sleep_init(&k.sl, 10 * MS);
		cr_assert_eq(pw_spawn(NULL, sender_poll, &k, sizeof(k), NULL),
			     0);
		r->step = 1;
	}
	while (r->n < 2) {
		if (pw_signal_poll(cx, &r->s, &signo) == PW_PENDING)
			return PW_PENDING;
		r->got[r->n++] = signo;
	}
	cr_assert_eq(r->got[0], SIGUSR1);
	cr_assert_eq(r->got[1], SIGINT);
	pw_signal_close(&r->s);
	return pw_ready(cx, r->n);
}

Test(signal, two_signals_sent_while_waiting_are_both_seen)
{
	struct pw_runtime *rt = signal_runtime();
	struct reader r = { 0 };

	cr_assert_eq(pw_test_block_on(rt, waiting_poll, &r), 2);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ctrl_c: two SIGINTs, each awaited; the second one too. */
static enum pw_poll ctrl_c_poll(struct pw_cx *cx, void *state)
{
	struct reader *r = state;
	int res;

	if (r->step == 0) {
		struct sender k = { .signo = { SIGINT, SIGINT }, .n = 2 };

		cr_assert_eq(pw_ctrl_c_init(&r->s), 0);
		pw_sleep_init(&k.sl, 10 * MS);
		cr_assert_eq(pw_spawn(NULL, sender_poll, &k, sizeof(k), NULL),
			     0);
		r->step = 1;
	}
	while (r->n < 2) {
		if (pw_ctrl_c_poll(cx, &r->s, &res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, 0);
		r->n++;
	}
	pw_signal_close(&r->s);
	return pw_ready(cx, r->n);
}

Test(signal, ctrl_c_twice)
{
	struct pw_runtime *rt = signal_runtime();
	struct reader r = { 0 };

	cr_assert_eq(pw_test_block_on(rt, ctrl_c_poll, &r), 2);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* A wait costs no CPU: the read sleeps in the kernel. The signal comes
 * from a plain thread 200 ms later. */
static void *late_kill(void *arg)
{
	struct timespec ts = { 0, 200 * 1000 * 1000 };

	(void)arg;
	nanosleep(&ts, NULL); /* the time the reader waits */
	kill(getpid(), SIGUSR1);
	return NULL;
}

static enum pw_poll one_poll(struct pw_cx *cx, void *state)
{
	struct reader *r = state;
	int signo;

	if (r->step == 0) {
		cr_assert_eq(usr1_int(&r->s), 0);
		r->step = 1;
	}
	if (pw_signal_poll(cx, &r->s, &signo) == PW_PENDING)
		return PW_PENDING;
	pw_signal_close(&r->s);
	return pw_ready(cx, signo);
}

static uint64_t cpu_us(const struct rusage *u)
{
	return (uint64_t)(u->ru_utime.tv_sec + u->ru_stime.tv_sec) * 1000000 +
	       (uint64_t)(u->ru_utime.tv_usec + u->ru_stime.tv_usec);
}

Test(signal, a_wait_sleeps_in_the_kernel)
{
	struct pw_runtime *rt = signal_runtime();
	struct reader r = { 0 };
	struct rusage u0, u1;
	pthread_t th;

	cr_assert_eq(getrusage(RUSAGE_SELF, &u0), 0);
	cr_assert_eq(pthread_create(&th, NULL, late_kill, NULL), 0);
	cr_assert_eq(pw_test_block_on(rt, one_poll, &r), SIGUSR1);
	pthread_join(th, NULL);
	cr_assert_eq(getrusage(RUSAGE_SELF, &u1), 0);
	cr_assert_lt(cpu_us(&u1) - cpu_us(&u0), 100000,
		     "%llu us of CPU in a 200 ms wait",
		     (unsigned long long)(cpu_us(&u1) - cpu_us(&u0)));
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

static _Atomic bool waiting; /* forever_poll's read is in flight */

/* A task dropped while its read waits: the drop hook closes it. */
static enum pw_poll forever_poll(struct pw_cx *cx, void *state)
{
	struct reader *r = state;
	int signo;

	if (r->step == 0) {
		cr_assert_eq(usr1_int(&r->s), 0);
		r->step = 1;
	}
	cr_assert_eq(pw_signal_poll(cx, &r->s, &signo), PW_PENDING);
	atomic_store(&waiting, true);
	return PW_PENDING;
}

Test(signal, bad_input_and_a_drop_while_waiting)
{
	int fds = pw_test_open_fds();
	struct pw_runtime *rt = signal_runtime();
	struct pw_signal s;
	sigset_t empty;
	struct reader r = { 0 };

	sigemptyset(&empty);
	cr_assert_eq(pw_signal_init(NULL, &empty), -EINVAL);
	cr_assert_eq(pw_signal_init(&s, NULL), -EINVAL);
	cr_assert_eq(s.fd, -1);
	cr_assert_eq(pw_signal_init(&s, &empty), -EINVAL);
	cr_assert_eq(pw_signal_block(NULL), -EINVAL);
	pw_signal_close(&s);
	pw_signal_close(NULL);
	cr_assert_eq(pw_runtime_spawn(rt, 1, forever_poll, &r, sizeof(r),
				      reader_drop),
		     0);
	PW_TEST_WAIT_UNTIL(atomic_load(&waiting), PW_TEST_WAIT_SECS,
			   "the read never started");
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_test_open_fds(), fds, "the signalfd was closed: %d, %d",
		     pw_test_open_fds(), fds);
}
