/* SPDX-License-Identifier: MIT */
/*
 * limit.c - a time limit on every test, so that a test that hangs fails
 * by name instead of holding up the whole run.
 *
 * Criterion runs each test in a process of its own, which it starts by
 * executing this program again with BXFI_MAP in the environment. In such
 * a process this constructor arms SIGALRM for PW_TEST_TIME_LIMIT seconds
 * (default PW_TEST_TIME_LIMIT_DEFAULT); pw_test_time_limit() may set a
 * tighter limit. When it fires, the handler says so on stderr and lets
 * SIGALRM kill the process, which Criterion reports as a crash; the
 * children the test forked with pw_test_fork() die with it. The runner
 * itself (no BXFI_MAP) is left alone, and the ThreadSanitizer build's
 * runner (tests/tsan/runner.c) sets its own limits.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/common.h"

static void on_alarm(int sig)
{
	static const char msg[] = "[----] the test ran out of time (SIGALRM: "
				  "see pw_test_time_limit)\n";
	ssize_t r = write(2, msg, sizeof(msg) - 1);

	(void)r;
	signal(sig, SIG_DFL);
	raise(sig);
}

__attribute__((constructor)) static void pw_test_limit_arm(void)
{
	const char *env = getenv("PW_TEST_TIME_LIMIT");
	long limit = env ? atol(env) : PW_TEST_TIME_LIMIT_DEFAULT;
	struct sigaction sa;

	if (!getenv("BXFI_MAP") || limit <= 0)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm((unsigned)limit);
}
