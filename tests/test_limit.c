/* SPDX-License-Identifier: MIT */
/*
 * test_limit.c - the time limit every test has (tests/limit.c) and
 * pw_test_fork(): a test that hangs, with a child of its own holding the
 * run's output open, fails by name once its limit is up, and the output
 * of the run ends, because nothing the test forked outlives it.
 */
#include <poll.h>

#include "tests/common.h"

extern char **environ;

/* Hangs for ever, and so does a child it forks, which shares its stdout
 * and stderr. Run by the test below through PW_TEST_HANG; skipped in the
 * suite. */
Test(limit, hang_probe)
{
	if (!getenv("PW_TEST_HANG"))
		cr_skip_test(
			"run by limit/a_hung_test_fails_and_leaves_nothing");
	pid_t pid = pw_test_fork();
	cr_assert_geq(pid, 0);
	for (;;)
		pause();
}

Test(limit, a_hung_test_fails_and_leaves_nothing)
{
	char *env[256], *argv[] = { "pinwheel-tests",
				    "--filter=limit/hang_probe", NULL };
	char out[8192];
	size_t got = 0, n = 0;
	int fd, st;

	/* A runner (no BXFI_MAP), whose test hangs and has a 1 s limit;
	 * the variables set here replace any the caller set. */
	for (char **e = environ; *e; e++) {
		if (!strncmp(*e, "BXFI_MAP=", 9) ||
		    !strncmp(*e, "PW_TEST_HANG=", 13) ||
		    !strncmp(*e, "PW_TEST_TIME_LIMIT=", 19))
			continue;
		cr_assert_lt(n, 253, "too many environment variables");
		env[n++] = *e;
	}
	env[n++] = "PW_TEST_HANG=1";
	env[n++] = "PW_TEST_TIME_LIMIT=1";
	env[n] = NULL;
	pid_t pid =
		pw_test_spawn(PW_BUILDDIR "/pinwheel-tests", argv, env, &fd);
	/* The end of the output comes when the last process holding it is
	 * gone: the runner, the timed-out test and the test's child. */
	uint64_t deadline = (uint64_t)time(NULL) + 30;
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		cr_assert_eq(poll(&p, 1, 1000) >= 0, true);
		cr_assert_lt((uint64_t)time(NULL), deadline,
			     "the output is still open after 30 s: %.*s",
			     (int)got, out);
		if (!p.revents)
			continue;
		ssize_t r = read(fd, out + got, sizeof(out) - 1 - got);
		cr_assert_geq(r, 0);
		if (r == 0)
			break;
		got += (size_t)r;
		cr_assert_lt(got, sizeof(out) - 1, "too much output");
	}
	out[got] = '\0';
	close(fd);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "status %#x", st);
	cr_assert_not_null(strstr(out, "limit::hang_probe"), "%s", out);
	cr_assert_not_null(strstr(out, "Crashing: 1 "), "%s", out);
}
