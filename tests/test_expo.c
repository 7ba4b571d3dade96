/* SPDX-License-Identifier: MIT */
/*
 * test_expo.c - apps/expo.c: the same calls give the exact Prometheus
 * text and JSON expected, label values and help escaped; mistakes (bad
 * names, a metric or a series twice, labels mixed with none) are refused
 * and never written; a failed write is reported.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/expo.h"
#include "tests/common.h"
#include "tests/json.h"
#include "tests/prom.h"

/* The calls of one small exposition, in @fmt, into a malloc'd string. */
static char *write_sample(enum pw_expo_format fmt, int *end)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct pw_expo e;

	cr_assert_not_null(f);
	cr_assert_eq(pw_expo_begin(&e, f, fmt, "http"), 0);
	cr_assert_eq(pw_expo_metric(&e, "requests", "Requests answered.",
				    PW_EXPO_COUNTER),
		     0);
	cr_assert_eq(pw_expo_sample(&e, NULL, 42), 0);
	cr_assert_eq(pw_expo_metric(&e, "active", "Open now.", PW_EXPO_GAUGE),
		     0);
	cr_assert_eq(pw_expo_sample(&e, NULL, 3), 0);
	/* A metric without samples is left out of both formats. */
	cr_assert_eq(pw_expo_metric(&e, "unused", "Never sampled.",
				    PW_EXPO_COUNTER),
		     0);
	cr_assert_eq(pw_expo_metric(&e, "responses",
				    "By status;\nback\\slash in help.",
				    PW_EXPO_COUNTER),
		     0);
	cr_assert_eq(pw_expo_sample(
			     &e, (const char *[]){ "status", "200", NULL }, 40),
		     0);
	cr_assert_eq(
		pw_expo_sample(&e,
			       (const char *[]){ "status", "a\\b\"c\nd", NULL },
			       2),
		0);
	*end = pw_expo_end(&e);
	fclose(f);
	return text;
}

Test(expo, prometheus_exact_and_escaped)
{
	static const char want[] =
		"# HELP pinwheel_http_requests_total Requests answered.\n"
		"# TYPE pinwheel_http_requests_total counter\n"
		"pinwheel_http_requests_total 42\n"
		"# HELP pinwheel_http_active Open now.\n"
		"# TYPE pinwheel_http_active gauge\n"
		"pinwheel_http_active 3\n"
		"# HELP pinwheel_http_responses_total By status;\\nback\\\\slash "
		"in help.\n"
		"# TYPE pinwheel_http_responses_total counter\n"
		"pinwheel_http_responses_total{status=\"200\"} 40\n"
		"pinwheel_http_responses_total{status=\"a\\\\b\\\"c\\nd\"} 2\n";
	char why[512];
	int end;
	char *text = write_sample(PW_EXPO_PROMETHEUS, &end);

	cr_expect_eq(end, 0);
	cr_expect_str_eq(text, want);
	cr_expect(pw_test_prom_check(text, why, sizeof(why)), "%s", why);
	cr_expect_eq(pw_test_prom_sum(text, "pinwheel_http_responses_total",
				      NULL, NULL),
		     42);
	free(text);
}

Test(expo, json_exact_and_parses)
{
	static const char want[] =
		"{\"pinwheel_http_requests_total\":42,"
		"\"pinwheel_http_active\":3,"
		"\"pinwheel_http_responses_total\":["
		"{\"status\":\"200\",\"value\":40},"
		"{\"status\":\"a\\\\b\\\"c\\u000ad\",\"value\":2}]}\n";
	int end;
	char *text = write_sample(PW_EXPO_JSON, &end);

	cr_expect_eq(end, 0);
	cr_expect_str_eq(text, want);
	cr_expect(pw_test_json_valid(text), "%s", text);
	free(text);
}

/* Members of an object the caller opened; a second prefix. */
Test(expo, json_members_and_prefix)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct pw_expo e;

	fputs("{\"sched\":\"shard\"", f);
	cr_assert_eq(pw_expo_begin_members(&e, f, PW_EXPO_JSON, "echo"), 0);
	pw_expo_metric(&e, "sent_bytes", "Bytes.", PW_EXPO_COUNTER);
	pw_expo_sample(&e, NULL, 7);
	cr_assert_eq(pw_expo_prefix(&e, NULL), 0);
	pw_expo_metric(&e, "scrapes", "Scrapes.", PW_EXPO_COUNTER);
	pw_expo_sample(&e, NULL, 1);
	cr_expect_eq(pw_expo_end(&e), 0);
	fclose(f);
	cr_expect_str_eq(text, "{\"sched\":\"shard\","
			       "\"pinwheel_echo_sent_bytes_total\":7,"
			       "\"pinwheel_scrapes_total\":1}\n");
	cr_expect(pw_test_json_valid(text), "%s", text);
	free(text);
}

/* Each mistake is refused, counted, and leaves nothing in the output. */
static void mistakes(enum pw_expo_format fmt)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct pw_expo e;

	cr_assert_eq(pw_expo_begin(&e, f, fmt, "t"), 0);
	cr_expect_eq(pw_expo_sample(&e, NULL, 1), -EINVAL, "no metric yet");
	cr_expect_eq(pw_expo_metric(&e, "bad-name", "x", PW_EXPO_GAUGE),
		     -EINVAL);
	cr_expect_eq(pw_expo_metric(&e, "", "x", PW_EXPO_GAUGE), -EINVAL);
	cr_expect_eq(pw_expo_metric(&e, "g", "x", 7), -EINVAL);
	cr_assert_eq(pw_expo_metric(&e, "g", "A gauge.", PW_EXPO_GAUGE), 0);
	cr_expect_eq(pw_expo_sample(&e, (const char *[]){ "k", "1", NULL }, 1),
		     0);
	cr_expect_eq(pw_expo_sample(&e, (const char *[]){ "k", "1", NULL }, 2),
		     -EINVAL, "the same series twice");
	cr_expect_eq(pw_expo_sample(&e, NULL, 3), -EINVAL, "labels, then none");
	cr_expect_eq(pw_expo_sample(&e, (const char *[]){ "1k", "1", NULL }, 4),
		     -EINVAL, "a label name starting with a digit");
	cr_expect_eq(pw_expo_sample(&e, (const char *[]){ "k", NULL }, 5),
		     -EINVAL, "a label without a value");
	cr_expect_eq(pw_expo_sample(&e, (const char *[]){ "value", "x", NULL },
				    6),
		     -EINVAL, "the JSON key of the value");
	cr_expect_eq(pw_expo_metric(&e, "g", "Again.", PW_EXPO_GAUGE), -EINVAL,
		     "a metric twice");
	cr_assert_eq(pw_expo_metric(&e, "c", "A counter.", PW_EXPO_COUNTER), 0);
	cr_expect_eq(pw_expo_sample(&e, NULL, 8), 0);
	cr_expect_eq(pw_expo_sample(&e, NULL, 9), -EINVAL, "one series only");
	cr_expect_eq(pw_expo_end(&e), -EINVAL);
	cr_expect_eq(e.refused, 11);
	fclose(f);
	if (fmt == PW_EXPO_JSON) {
		cr_expect_str_eq(text,
				 "{\"pinwheel_t_g\":[{\"k\":\"1\","
				 "\"value\":1}],\"pinwheel_t_c_total\":8}\n");
		cr_expect(pw_test_json_valid(text), "%s", text);
	} else {
		char why[256];
		cr_expect(pw_test_prom_check(text, why, sizeof(why)), "%s: %s",
			  why, text);
		cr_expect_eq(pw_test_prom_sum(text, "pinwheel_t_g", NULL, NULL),
			     1);
		cr_expect_eq(pw_test_prom_sum(text, "pinwheel_t_c_total", NULL,
					      NULL),
			     8);
	}
	free(text);
}

Test(expo, mistakes_are_refused_prometheus)
{
	mistakes(PW_EXPO_PROMETHEUS);
}

Test(expo, mistakes_are_refused_json)
{
	mistakes(PW_EXPO_JSON);
}

Test(expo, bad_begin_and_failed_write)
{
	struct pw_expo e;
	FILE *f = fopen("/dev/full", "w");

	cr_expect_eq(pw_expo_begin(&e, NULL, PW_EXPO_JSON, "x"), -EINVAL);
	cr_expect_eq(pw_expo_begin(&e, stdout, 9, "x"), -EINVAL);
	cr_expect_eq(pw_expo_begin(&e, stdout, PW_EXPO_JSON, "a b"), -EINVAL);
	cr_expect_eq(pw_expo_metric(&e, "m", "x", PW_EXPO_GAUGE), -EINVAL,
		     "refused after a bad begin");
	cr_expect_eq(pw_expo_end(&e), -EINVAL);
	if (!f)
		cr_skip_test("no /dev/full");
	cr_assert_eq(pw_expo_begin(&e, f, PW_EXPO_PROMETHEUS, "x"), 0);
	pw_expo_metric(&e, "m", "A gauge.", PW_EXPO_GAUGE);
	pw_expo_sample(&e, NULL, 1);
	cr_expect_eq(pw_expo_end(&e), -EIO);
	fclose(f);
}

/* The strict checker itself refuses what it must. */
Test(expo, checker_refuses_bad_text)
{
	static const char *const bad[] = {
		"x 1\n", /* no TYPE */
		"# HELP x h\n# TYPE x counter\nx 1\n",
		"# HELP x_total h\n# TYPE x_total counter\nx_total one\n",
		"# HELP y h\n# TYPE y gauge\ny{a=\"1\"} 1\ny{a=\"1\"} 2\n",
		"# HELP y h\n# TYPE y gauge\ny{a=\"\\q\"} 1\n",
		"# HELP y h\n# TYPE y gauge\ny{1a=\"x\"} 1\n",
		"# HELP y h\n# TYPE y gauge\n# HELP z h\n# TYPE z gauge\ny 1\n",
		"# HELP y h\n# TYPE y gauge\ny 1",
	};
	char why[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect(!pw_test_prom_check(bad[i], why, sizeof(why)),
			  "case %zu passed", i);
	cr_expect(pw_test_prom_check("# HELP y h\n# TYPE y gauge\n"
				     "y{a=\"\\\\\\\"\\n\"} 1.5\n",
				     why, sizeof(why)),
		  "%s", why);
}
