/* SPDX-License-Identifier: MIT */
/*
 * test_bench_stats.c - the statistics of `pinwheel bench`
 * (apps/bench_stats.c): medians of odd and even counts, quartiles and
 * IQR, the coefficient of variation, the bootstrap interval of a ratio
 * on known samples with the fixed seed (expected values from an
 * independent implementation of the same procedure, and where the
 * interval is provable by hand, by hand), and the verdict text at its
 * boundaries. The suite is "bench" so that it runs in one pass.
 */
#include <errno.h>
#include <string.h>

#include "tests/common.h"
#include "apps/bench_stats.h"

/* Whether @a is within @eps of @b. */
static bool near(double a, double b, double eps)
{
	return a - b <= eps && b - a <= eps;
}

/* @a within @eps of @b (Criterion's float comparison, which the TSan
 * build's stand-in lacks). */
#define expect_near(a, b, eps)                                             \
	cr_expect(near((a), (b), (eps)), "%s = %.15g, expected %.15g", #a, \
		  (double)(a), (double)(b))

#define EPS 1e-9

Test(bench, stats_median_of_odd_and_even_counts)
{
	struct pw_stats_summary s;
	const double odd[] = { 5, 1, 3 };
	const double even[] = { 4, 1, 3, 2 };
	const double one[] = { 7 };

	cr_assert_eq(pw_stats_summarize(odd, 3, &s), 0);
	expect_near(s.median, 3.0, EPS);
	expect_near(s.min, 1.0, EPS);
	expect_near(s.max, 5.0, EPS);
	cr_assert_eq(pw_stats_summarize(even, 4, &s), 0);
	expect_near(s.median, 2.5, EPS);
	cr_assert_eq(pw_stats_summarize(one, 1, &s), 0);
	expect_near(s.median, 7.0, EPS);
	expect_near(s.iqr, 0.0, EPS);
	expect_near(s.sd, 0.0, EPS);
	expect_near(s.cv, 0.0, EPS);
	cr_expect_eq(pw_stats_summarize(odd, 0, &s), -EINVAL);
	cr_expect_eq(pw_stats_summarize(NULL, 3, &s), -EINVAL);
	cr_expect_eq(pw_stats_summarize(odd, 3, NULL), -EINVAL);
	cr_expect_eq(pw_stats_summarize(odd, PW_STATS_MAX + 1, &s), -EINVAL);
}

Test(bench, stats_quartiles_iqr_and_cv)
{
	struct pw_stats_summary s;
	const double five[] = { 9, 1, 5, 3, 7 };
	const double eight[] = { 2, 4, 4, 4, 5, 5, 7, 9 };

	/* Sorted 1 3 5 7 9: q1 at rank 1, q3 at rank 3. */
	cr_assert_eq(pw_stats_summarize(five, 5, &s), 0);
	expect_near(s.q1, 3.0, EPS);
	expect_near(s.q3, 7.0, EPS);
	expect_near(s.iqr, 4.0, EPS);
	expect_near(s.mean, 5.0, EPS);
	expect_near(s.sd, 3.16227766016838, 1e-12);
	expect_near(s.cv, 0.632455532033676, 1e-12);
	/* Ranks 1.75 and 5.25 interpolate: 4 and 5 + 0.25 * 2. */
	cr_assert_eq(pw_stats_summarize(eight, 8, &s), 0);
	expect_near(s.median, 4.5, EPS);
	expect_near(s.q1, 4.0, EPS);
	expect_near(s.q3, 5.5, EPS);
	expect_near(s.iqr, 1.5, EPS);
	expect_near(s.sd, 2.13808993529940, 1e-12);
	expect_near(s.cv, 0.427617987059880, 1e-12);
	expect_near(pw_stats_quantile(NULL, 0, 0.5), 0.0, EPS);
}

Test(bench, stats_bootstrap_interval_on_known_samples)
{
	const double a8[] = { 110, 105, 98, 120, 101, 99, 115, 108 };
	const double b8[] = { 100, 100, 100, 100, 100, 100, 100, 100 };
	const double a5[] = { 90, 95, 93, 110, 97 };
	const double ones[] = { 1, 1, 1, 1, 1, 1 };
	struct pw_stats_ci ci, again;

	/* Expected from a separate implementation of the same procedure
	 * (splitmix64, fixed seed, 10,000 resamples of pairs). */
	cr_assert_eq(pw_stats_boot_ratio(a8, b8, 8, PW_STATS_SEED, &ci), 0);
	cr_expect_eq(ci.n, 8u);
	expect_near(ci.ratio, 1.065, 1e-12);
	expect_near(ci.lo, 0.99, 1e-12);
	expect_near(ci.hi, 1.15, 1e-12);
	/* The same input, the same interval. */
	cr_assert_eq(pw_stats_boot_ratio(a8, b8, 8, PW_STATS_SEED, &again), 0);
	cr_expect(ci.n == again.n && ci.ratio == again.ratio &&
		  ci.lo == again.lo && ci.hi == again.hi);
	/*
	 * Five pairs: a resample's median is the smallest ratio when three
	 * or more of its five draws are, with probability 5.8%; so the
	 * 2.5th and 97.5th percentiles are the smallest and largest ratio.
	 */
	cr_assert_eq(pw_stats_boot_ratio(a5, b8, 5, PW_STATS_SEED, &ci), 0);
	expect_near(ci.ratio, 0.95, 1e-12);
	expect_near(ci.lo, 0.90, 1e-12);
	expect_near(ci.hi, 1.10, 1e-12);
	cr_assert_eq(pw_stats_boot_ratio(ones, ones, 6, PW_STATS_SEED, &ci), 0);
	expect_near(ci.lo, 1.0, EPS);
	expect_near(ci.hi, 1.0, EPS);
	/* Errors: nothing to pair, a zero, a negative. */
	const double zero[] = { 1, 0 }, neg[] = { 1, -1 };
	cr_expect_eq(pw_stats_boot_ratio(a8, b8, 0, 1, &ci), -EINVAL);
	cr_expect_eq(pw_stats_boot_ratio(zero, ones, 2, 1, &ci), -EINVAL);
	cr_expect_eq(pw_stats_boot_ratio(ones, neg, 2, 1, &ci), -EINVAL);
	cr_expect_eq(pw_stats_boot_ratio(NULL, ones, 2, 1, &ci), -EINVAL);
	cr_expect_eq(pw_stats_boot_ratio(ones, ones, 2, 1, NULL), -EINVAL);
}

/* The verdict for @ci as text; @named receives the return value. */
static const char *verdict(double ratio, double lo, double hi, unsigned n,
			   enum pw_stats_sense sense, int *named)
{
	static char buf[160];
	struct pw_stats_ci ci = { .n = n, .ratio = ratio, .lo = lo, .hi = hi };

	*named = pw_stats_verdict(&ci, sense, "steal", "shard", "p99", buf,
				  sizeof(buf));
	return buf;
}

Test(bench, stats_verdict_text_at_the_boundaries)
{
	const enum pw_stats_sense up = PW_STATS_HIGHER_BETTER,
				  down = PW_STATS_LOWER_BETTER;
	int named;

	cr_expect_str_eq(verdict(1.2, 1.1, 1.3, 5, up, &named),
			 "steal faster by 20.0% (95% CI 10.0%..30.0%)");
	cr_expect_eq(named, 1);
	/* An interval that touches 1.0 holds it. */
	cr_expect_str_eq(verdict(1.2, 1.0, 1.3, 5, up, &named),
			 "no difference within the noise (95% CI "
			 "1.000x..1.300x)");
	cr_expect_eq(named, 0);
	cr_expect_str_eq(verdict(1.2, 1.0000001, 1.3, 5, up, &named),
			 "steal faster by 20.0% (95% CI 0.0%..30.0%)");
	cr_expect_eq(named, 1);
	/* A clear but small difference: within the 2% noise threshold,
	 * its ends included, either way. */
	cr_expect_str_eq(verdict(1.015, 1.005, 1.06, 5, up, &named),
			 "no difference above the 2% noise threshold (median "
			 "1.015x, 95% CI 1.005x..1.060x)");
	cr_expect_eq(named, 0);
	cr_expect_str_eq(verdict(1.02, 1.01, 1.03, 5, up, &named),
			 "no difference above the 2% noise threshold (median "
			 "1.020x, 95% CI 1.010x..1.030x)");
	cr_expect_eq(named, 0);
	cr_expect_str_eq(verdict(1.0201, 1.01, 1.03, 5, up, &named),
			 "steal faster by 2.0% (95% CI 1.0%..3.0%)");
	cr_expect_eq(named, 1);
	cr_expect_str_eq(verdict(0.985, 0.95, 0.99, 5, down, &named),
			 "no difference above the 2% noise threshold (median "
			 "0.985x, 95% CI 0.950x..0.990x)");
	cr_expect_eq(named, 0);
	cr_expect_str_eq(verdict(0.8, 0.5, 1.0, 5, up, &named),
			 "no difference within the noise (95% CI "
			 "0.500x..1.000x)");
	cr_expect_eq(named, 0);
	cr_expect_str_eq(verdict(0.8, 0.5, 0.999, 5, up, &named),
			 "shard faster by 25.0% (95% CI 0.1%..100.0%)");
	cr_expect_eq(named, 1);
	/* Latency: lower is better. */
	cr_expect_str_eq(verdict(0.8, 0.7, 0.9, 5, down, &named),
			 "steal's p99 lower by 20.0% (95% CI 10.0%..30.0%)");
	cr_expect_str_eq(verdict(1.25, 1.1, 2.0, 5, down, &named),
			 "shard's p99 lower by 20.0% (95% CI 9.1%..50.0%)");
	cr_expect_str_eq(verdict(0.9, 0.8, 1.0, 5, down, &named),
			 "no difference within the noise (95% CI "
			 "0.800x..1.000x)");
	/* Too few rounds: no verdict, however clear. */
	cr_expect_str_eq(verdict(2.0, 1.9, 2.1, 4, up, &named),
			 "too few rounds to decide (4 paired; 5 or more "
			 "needed)");
	cr_expect_eq(named, 0);
	struct pw_stats_ci ci = { .n = 5 };
	char buf[8];
	cr_expect_eq(pw_stats_verdict(NULL, up, "a", "b", "x", buf, 8),
		     -EINVAL);
	cr_expect_eq(pw_stats_verdict(&ci, up, "a", "b", "x", NULL, 8),
		     -EINVAL);
}
