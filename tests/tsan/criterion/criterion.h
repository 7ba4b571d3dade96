/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for <criterion/criterion.h> used by the ThreadSanitizer
 * build only. Criterion 2.4 cannot start inside a TSan process (its
 * inheritable arena collides with TSan's memory layout), so `make tsan`
 * compiles the same test files against this header and tests/tsan/runner.c:
 * the same Test() and cr_assert*() forms, one forked process per test,
 * and Criterion's closing "Synthesis" line.
 */
#ifndef PW_TSAN_CRITERION_H
#define PW_TSAN_CRITERION_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct pw_tc_opts {
	double timeout; /* seconds; 0 for the runner's default */
	const char *description;
};

struct pw_tc {
	const char *suite, *name;
	void (*fn)(void);
	struct pw_tc_opts opts;
	struct pw_tc *next;
};

void pw_tc_register(struct pw_tc *t);
_Noreturn void pw_tc_fail(const char *file, int line, const char *expr,
			  const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#pragma GCC diagnostic ignored "-Wformat-zero-length"
_Noreturn void pw_tc_skip(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

#define Test(suite_, name_, ...)                                               \
	static void pw_tc_fn_##suite_##_##name_(void);                         \
	static struct pw_tc pw_tc_##suite_##_##name_ = {                       \
		#suite_, #name_, pw_tc_fn_##suite_##_##name_,                  \
		{ __VA_ARGS__ }, NULL                                          \
	};                                                                     \
	__attribute__((constructor)) static void                               \
		pw_tc_reg_##suite_##_##name_(void)                             \
	{                                                                      \
		pw_tc_register(&pw_tc_##suite_##_##name_);                     \
	}                                                                      \
	static void pw_tc_fn_##suite_##_##name_(void)

#define PW_TC_CHECK(cond, expr, ...)                                           \
	do {                                                                   \
		if (!(cond))                                                   \
			pw_tc_fail(__FILE__, __LINE__, expr, "" __VA_ARGS__);  \
	} while (0)

#define cr_assert(c, ...) PW_TC_CHECK((c), #c, __VA_ARGS__)
#define cr_assert_not(c, ...) PW_TC_CHECK(!(c), "!(" #c ")", __VA_ARGS__)
#define cr_assert_eq(a, b, ...) PW_TC_CHECK((a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) PW_TC_CHECK((a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) PW_TC_CHECK((a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) PW_TC_CHECK((a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) PW_TC_CHECK((a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) PW_TC_CHECK((a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_null(p, ...) PW_TC_CHECK((p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) PW_TC_CHECK((p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...)                                            \
	PW_TC_CHECK(strcmp((a), (b)) == 0, #a " == " #b, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...)                                           \
	PW_TC_CHECK(strcmp((a), (b)) != 0, #a " != " #b, __VA_ARGS__)
#define cr_assert_fail(...) pw_tc_fail(__FILE__, __LINE__, "fail", "" __VA_ARGS__)
/* Expectations stop the test at the first failure here: stricter than
 * Criterion's, which record and go on. */
#define cr_expect cr_assert
#define cr_expect_not cr_assert_not
#define cr_expect_eq cr_assert_eq
#define cr_expect_neq cr_assert_neq
#define cr_expect_lt cr_assert_lt
#define cr_expect_leq cr_assert_leq
#define cr_expect_gt cr_assert_gt
#define cr_expect_geq cr_assert_geq
#define cr_expect_null cr_assert_null
#define cr_expect_not_null cr_assert_not_null
#define cr_expect_str_eq cr_assert_str_eq
#define cr_expect_str_neq cr_assert_str_neq
#define cr_skip_test(...) pw_tc_skip("" __VA_ARGS__)
#define cr_log_info(...) ((void)0)

#endif /* PW_TSAN_CRITERION_H */
