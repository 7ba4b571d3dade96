/* SPDX-License-Identifier: MIT */
/*
 * bench_stats.c - the statistics of `pinwheel bench`: the median and
 * spread of a figure over its rounds, the bootstrap interval of a ratio
 * between two columns over paired rounds, and the verdict in words.
 *
 * Why paired rounds: a round measures the columns one after the other,
 * seconds apart, so whatever state the machine is in (a slow phase of
 * the VM, another program's burst) weighs on both; the ratio within a
 * round divides it out, and resampling rounds whole keeps it out of the
 * interval. Why the median: one round disturbed by something else on the
 * machine moves it little. The generator is splitmix64 with a fixed
 * seed, so a run's figures always give the same interval.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/bench_stats.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The square root of @x >= 0 by Newton's method (the command links no
 * libm): exact to the last bit or two, which is all a spread needs. */
static double root(double x)
{
	double r = x > 1 ? x : 1;

	if (x <= 0)
		return 0;
	for (int i = 0; i < 200; i++) {
		double next = (r + x / r) / 2;
		if (next >= r)
			break;
		r = next;
	}
	return r;
}

double pw_stats_quantile(const double *sorted, unsigned n, double p)
{
	double pos, frac;
	unsigned i;

	if (!n)
		return 0;
	if (p <= 0)
		return sorted[0];
	if (p >= 1)
		return sorted[n - 1];
	pos = p * (double)(n - 1);
	i = (unsigned)pos;
	frac = pos - (double)i;
	if (i + 1 >= n)
		return sorted[n - 1];
	return sorted[i] + (sorted[i + 1] - sorted[i]) * frac;
}

int pw_stats_summarize(const double *v, unsigned n, struct pw_stats_summary *s)
{
	double w[PW_STATS_MAX], sum = 0, sq = 0;

	if (!v || !s || !n || n > PW_STATS_MAX)
		return -EINVAL;
	memcpy(w, v, n * sizeof(*v));
	qsort(w, n, sizeof(w[0]), cmp_double);
	memset(s, 0, sizeof(*s));
	s->n = n;
	s->min = w[0];
	s->max = w[n - 1];
	s->median = pw_stats_quantile(w, n, 0.5);
	s->q1 = pw_stats_quantile(w, n, 0.25);
	s->q3 = pw_stats_quantile(w, n, 0.75);
	s->iqr = s->q3 - s->q1;
	for (unsigned i = 0; i < n; i++)
		sum += w[i];
	s->mean = sum / n;
	if (n < 2)
		return 0;
	for (unsigned i = 0; i < n; i++)
		sq += (w[i] - s->mean) * (w[i] - s->mean);
	s->sd = root(sq / (n - 1));
	s->cv = s->mean != 0 ? s->sd / (s->mean < 0 ? -s->mean : s->mean) : 0;
	return 0;
}

/* splitmix64: one step of the generator whose state is *@x. */
static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The median of @n values, sorting @v in place. */
static double median_of(double *v, unsigned n)
{
	qsort(v, n, sizeof(v[0]), cmp_double);
	return pw_stats_quantile(v, n, 0.5);
}

int pw_stats_boot_ratio(const double *a, const double *b, unsigned n,
			uint64_t seed, struct pw_stats_ci *ci)
{
	double r[PW_STATS_MAX], w[PW_STATS_MAX];
	double *meds;
	uint64_t x = seed;

	if (!a || !b || !ci || !n || n > PW_STATS_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (!(a[i] > 0) || !(b[i] > 0))
			return -EINVAL;
		r[i] = a[i] / b[i];
	}
	meds = malloc(PW_STATS_RESAMPLES * sizeof(*meds));
	if (!meds)
		return -ENOMEM;
	for (unsigned k = 0; k < PW_STATS_RESAMPLES; k++) {
		for (unsigned i = 0; i < n; i++)
			w[i] = r[((splitmix64(&x) >> 32) * n) >> 32];
		meds[k] = median_of(w, n);
	}
	qsort(meds, PW_STATS_RESAMPLES, sizeof(meds[0]), cmp_double);
	ci->n = n;
	memcpy(w, r, n * sizeof(r[0]));
	ci->ratio = median_of(w, n);
	ci->lo = meds[PW_STATS_RESAMPLES / 40];
	ci->hi = meds[PW_STATS_RESAMPLES - 1 - PW_STATS_RESAMPLES / 40];
	free(meds);
	return 0;
}

/* "NAME faster by X% (95% CI A%..B%)" for the winner's ratio @r over
 * the loser with interval @lo..@hi (all above 1). */
static void say_faster(char *buf, size_t len, const char *name, double r,
		       double lo, double hi)
{
	snprintf(buf, len, "%s faster by %.1f%% (95%% CI %.1f%%..%.1f%%)", name,
		 (r - 1) * 100, (lo - 1) * 100, (hi - 1) * 100);
}

/* "NAME's WHAT lower by X% (95% CI A%..B%)" for the winner's ratio @r
 * to the loser with interval @lo..@hi (all below 1). */
static void say_lower(char *buf, size_t len, const char *name, const char *what,
		      double r, double lo, double hi)
{
	snprintf(buf, len, "%s's %s lower by %.1f%% (95%% CI %.1f%%..%.1f%%)",
		 name, what, (1 - r) * 100, (1 - hi) * 100, (1 - lo) * 100);
}

int pw_stats_verdict(const struct pw_stats_ci *ci, enum pw_stats_sense sense,
		     const char *na, const char *nb, const char *what,
		     char *buf, size_t len)
{
	bool up, down;

	if (!ci || !na || !nb || !what || !buf || !len)
		return -EINVAL;
	if (ci->n < PW_STATS_MIN_ROUNDS) {
		snprintf(buf, len,
			 "too few rounds to decide (%u paired; %u or more "
			 "needed)",
			 ci->n, PW_STATS_MIN_ROUNDS);
		return 0;
	}
	up = ci->lo > 1.0;   /* a's figure above b's, all the interval */
	down = ci->hi < 1.0; /* below */
	if (!up && !down) {
		snprintf(buf, len,
			 "no difference within the noise (95%% CI "
			 "%.3fx..%.3fx)",
			 ci->lo, ci->hi);
		return 0;
	}
	if (ci->ratio <= 1 + PW_STATS_NOISE &&
	    ci->ratio >= 1 / (1 + PW_STATS_NOISE)) {
		snprintf(buf, len,
			 "no difference above the %.0f%% noise threshold "
			 "(median %.3fx, 95%% CI %.3fx..%.3fx)",
			 PW_STATS_NOISE * 100, ci->ratio, ci->lo, ci->hi);
		return 0;
	}
	if (sense == PW_STATS_HIGHER_BETTER && up)
		say_faster(buf, len, na, ci->ratio, ci->lo, ci->hi);
	else if (sense == PW_STATS_HIGHER_BETTER)
		say_faster(buf, len, nb, 1 / ci->ratio, 1 / ci->hi, 1 / ci->lo);
	else if (down)
		say_lower(buf, len, na, what, ci->ratio, ci->lo, ci->hi);
	else
		say_lower(buf, len, nb, what, 1 / ci->ratio, 1 / ci->hi,
			  1 / ci->lo);
	return 1;
}
