/* SPDX-License-Identifier: MIT */
/*
 * runner.c - runs the tests registered through tests/tsan/criterion/
 * criterion.h: each in its own forked process (and process group, killed
 * when the test ends) with a time limit, in name order, then prints
 * Criterion's closing line. Exit 1 if any failed.
 *
 *   pinwheel-tests [--filter=GLOB] [-jN (ignored)]
 *
 * GLOB is an extended glob over suite/test, as Criterion's: !(a/x|b/y)
 * runs every test but those.
 */
#include <fnmatch.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "criterion/criterion.h"

/* Seconds a test may take, unless PW_TEST_TIME_LIMIT says otherwise. */
#define DEFAULT_TIMEOUT 600

static struct pw_tc *all;
static size_t count;

void pw_tc_register(struct pw_tc *t)
{
	t->next = all;
	all = t;
	count++;
}

void pw_tc_fail(const char *file, int line, const char *expr,
		const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[----] %s:%d: Assertion Failed\n[----]   %s\n", file,
		line, expr);
	if (fmt && *fmt) {
		fprintf(stderr, "[----]   ");
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fprintf(stderr, "\n");
	}
	exit(1);
}

void pw_tc_skip(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[SKIP] ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(77);
}

static int by_name(const void *a, const void *b)
{
	const struct pw_tc *x = *(struct pw_tc *const *)a;
	const struct pw_tc *y = *(struct pw_tc *const *)b;
	int c = strcmp(x->suite, y->suite);
	return c ? c : strcmp(x->name, y->name);
}

int main(int argc, char **argv)
{
	const char *filter = NULL;
	int tested = 0, passed = 0, failed = 0, crashed = 0;

	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "--filter=", 9))
			filter = argv[i] + 9;
	struct pw_tc **v = calloc(count ? count : 1, sizeof(*v));
	size_t n = 0;
	for (struct pw_tc *t = all; t; t = t->next)
		v[n++] = t;
	qsort(v, n, sizeof(*v), by_name);
	for (size_t i = 0; i < n; i++) {
		char full[256];
		snprintf(full, sizeof(full), "%s/%s", v[i]->suite, v[i]->name);
		if (filter && fnmatch(filter, full, FNM_EXTMATCH))
			continue;
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			/* A group of its own, so that whatever the test
			 * leaves running is killed below. */
			setpgid(0, 0);
			const char *env = getenv("PW_TEST_TIME_LIMIT");
			long def = env && atol(env) > 0 ? atol(env) :
							  DEFAULT_TIMEOUT;
			unsigned limit = v[i]->opts.timeout > 0 ?
						 (unsigned)v[i]->opts.timeout :
						 (unsigned)def;
			alarm(limit);
			v[i]->fn();
			fflush(NULL);
			_exit(0);
		}
		setpgid(pid, pid); /* as the child does: no race either way */
		int st;
		waitpid(pid, &st, 0);
		kill(-pid, SIGKILL);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
			continue;
		tested++;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			passed++;
		} else if (WIFEXITED(st)) {
			failed++;
			fprintf(stderr, "[FAIL] %s::%s (exit %d)\n",
				v[i]->suite, v[i]->name, WEXITSTATUS(st));
		} else {
			crashed++;
			fprintf(stderr, "[FAIL] %s::%s: CRASH (signal %d%s)\n",
				v[i]->suite, v[i]->name, WTERMSIG(st),
				WTERMSIG(st) == SIGALRM ? ", timed out" : "");
		}
	}
	free(v);
	printf("[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | "
	       "Crashing: %d \n",
	       tested, passed, failed, crashed);
	return failed || crashed ? 1 : 0;
}
