/* SPDX-License-Identifier: MIT */
/*
 * bench_stats.h - the statistics of `pinwheel bench` (internal to the
 * pinwheel command; the tests use them): the median and spread of a
 * figure over rounds, a bootstrap confidence interval of a ratio between
 * two columns, and the verdict that interval supports, in words.
 *
 * Every function here is pure: the same input gives the same output, the
 * bootstrap included (its pseudo-random generator has a fixed seed).
 */
#ifndef PW_APPS_BENCH_STATS_H
#define PW_APPS_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Resamples of a bootstrap interval, and the generator's fixed seed. */
#define PW_STATS_RESAMPLES 10000u
#define PW_STATS_SEED	   0x70696e776865656cull /* "pinwheel" */

/* The noise threshold: a ratio whose median lies within 2% of 1 names
 * no winner even when its interval leaves 1 out (a difference that small
 * is below what this kind of measurement can tell apart from the
 * machine's drift between rounds; Criterion.rs has the same rule). */
#define PW_STATS_NOISE 0.02

/* Paired rounds a verdict needs at least; fewer give no verdict. */
#define PW_STATS_MIN_ROUNDS 5u

/* The values a summary takes at most (--rounds is at most 99). */
#define PW_STATS_MAX 128u

/* Median and spread of one figure over rounds. */
struct pw_stats_summary {
	unsigned n;		 /* values summarised */
	double median, min, max; /* of the values */
	double q1, q3, iqr;	 /* quartiles (linear interpolation) and
				     q3 - q1 */
	double mean, sd, cv;	 /* sd: sample standard deviation (n - 1);
				     cv = sd / mean, 0 for n < 2 */
};

/* A ratio between two columns over paired rounds, with its interval. */
struct pw_stats_ci {
	unsigned n;    /* paired rounds */
	double ratio;  /* median of the per-round ratios */
	double lo, hi; /* 95% bootstrap interval of that median */
};

/* Which way is better for a figure. */
enum pw_stats_sense {
	PW_STATS_HIGHER_BETTER, /* throughput */
	PW_STATS_LOWER_BETTER,	/* latency, CPU per request */
};

/**
 * pw_stats_quantile - the @p quantile (0..1) of the @n ascending values
 * @sorted, interpolated linearly between the two nearest ranks (position
 * p * (n - 1), counted from 0): the median of an even count is the mean
 * of the middle two.
 * Return: the quantile; 0 when @n is 0.
 * Context: any thread.
 */
double pw_stats_quantile(const double *sorted, unsigned n, double p);

/**
 * pw_stats_summarize - median, min, max, quartiles, IQR, mean, sample
 * standard deviation and coefficient of variation of @v[0..@n).
 * Return: 0; -EINVAL for NULL arguments, @n == 0 or @n > PW_STATS_MAX.
 * Context: any thread.
 */
int pw_stats_summarize(const double *v, unsigned n, struct pw_stats_summary *s);

/**
 * pw_stats_boot_ratio - the ratio @a[i] / @b[i] of each paired round, its
 * median, and a 95% percentile-bootstrap interval of that median:
 * PW_STATS_RESAMPLES resamples of the @n pairs with replacement (a
 * splitmix64 generator seeded with @seed), each one's median of ratios,
 * sorted; the interval runs from the 250th to the 9750th of them.
 * Resampling whole pairs keeps what a round's two measurements share
 * (the machine's state in the seconds they ran) out of the noise.
 * Return: 0; -EINVAL for NULL arguments, @n == 0, @n > PW_STATS_MAX or a
 * value that is not above 0.
 * Context: any thread.
 */
int pw_stats_boot_ratio(const double *a, const double *b, unsigned n,
			uint64_t seed, struct pw_stats_ci *ci);

/**
 * pw_stats_verdict - the verdict @ci supports, in words, into @buf:
 * "@na faster by X% (95% CI A%..B%)" when the whole interval says @na
 * has more throughput (for PW_STATS_HIGHER_BETTER: the ratio @na / @nb
 * above 1) or "@nb faster by ..." the other way; for
 * PW_STATS_LOWER_BETTER "@na's @what lower by X% (95% CI A%..B%)" or
 * "@nb's ..."; "no difference within the noise (95% CI Ax..Bx)" when the
 * interval holds 1.0 (its ends included); "no difference above the 2%
 * noise threshold (median Rx, 95% CI Ax..Bx)" when it does not but the
 * median ratio is within PW_STATS_NOISE of 1; "too few rounds to decide (N
 * paired; 5 or more needed)" below PW_STATS_MIN_ROUNDS. Throughput: X%
 * is how much more the winner does (winner / loser - 1); latency: how
 * much less it takes (1 - winner / loser); A..B the interval the same
 * way. One decimal each.
 * Return: 1 when it names a side, 0 when not; -EINVAL for NULL arguments.
 * Context: any thread.
 */
int pw_stats_verdict(const struct pw_stats_ci *ci, enum pw_stats_sense sense,
		     const char *na, const char *nb, const char *what,
		     char *buf, size_t len);

#endif /* PW_APPS_BENCH_STATS_H */
