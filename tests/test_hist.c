/* SPDX-License-Identifier: MIT */
/*
 * test_hist.c - latency histograms: bucket resolution, exact statistics,
 * percentiles on a known distribution, merge, coordinated-omission
 * correction against a naive reference, clamping, output.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common.h"
#include "pinwheel/hist.h"

static struct pw_hist make(uint64_t highest, unsigned digits)
{
	struct pw_hist h;

	cr_assert_eq(pw_hist_init(&h, highest, digits), 0);
	return h;
}

static void within(uint64_t got, uint64_t want, double rel, const char *what)
{
	double d = (double)got - (double)want;

	if (d < 0)
		d = -d;
	cr_expect_leq(d, rel * (double)want, "%s: %llu, want %llu +- %.2f%%",
		      what, (unsigned long long)got, (unsigned long long)want,
		      rel * 100);
}

/* The exact 128-bit sum, as the test computes it. */
static unsigned __int128 sum_of(const struct pw_hist *h)
{
	return ((unsigned __int128)h->sum_hi << 64) | h->sum_lo;
}

static void expect_same(const struct pw_hist *a, const struct pw_hist *b)
{
	cr_assert_eq(a->ncounts, b->ncounts);
	cr_expect_eq(memcmp(a->counts, b->counts,
			    a->ncounts * sizeof(*a->counts)),
		     0, "bucket counts differ");
	cr_expect_eq(a->total, b->total);
	cr_expect_eq(a->min, b->min);
	cr_expect_eq(a->max, b->max);
	cr_expect_eq(a->clamped, b->clamped);
	cr_expect(sum_of(a) == sum_of(b), "sums differ");
}

Test(hist, uniform_microseconds)
{
	struct pw_hist h = make(0, 0);

	for (uint64_t us = 1; us <= 1000000; us++)
		cr_assert_eq(pw_hist_record(&h, us * 1000), 0);
	cr_expect_eq(pw_hist_count(&h), 1000000);
	cr_expect_eq(pw_hist_min(&h), 1000);
	cr_expect_eq(pw_hist_max(&h), 1000000000);
	cr_expect_eq(pw_hist_clamped(&h), 0);
	/* Mean of 1..1e6 us is exactly 500000.5 us. */
	cr_expect_eq(pw_hist_mean(&h), 500000500.0);

	within(pw_hist_percentile(&h, 50), 500000000, 0.01, "p50");
	within(pw_hist_percentile(&h, 90), 900000000, 0.01, "p90");
	within(pw_hist_percentile(&h, 99), 990000000, 0.01, "p99");
	within(pw_hist_percentile(&h, 99.9), 999000000, 0.01, "p99.9");
	within(pw_hist_percentile(&h, 99.99), 999900000, 0.01, "p99.99");
	/* Exactly: the top of the bucket holding the value of that rank
	 * (the p-th per cent of 1e6 values is p * 1e4 us), capped at the
	 * maximum. */
	static const double ps[] = { 50, 90, 99, 99.9, 99.99 };
	static const uint64_t at[] = { 500000000, 900000000, 990000000,
				       999000000, 999900000 };
	for (unsigned i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		uint64_t top = pw_hist_highest_equivalent(&h, at[i]);
		if (top > pw_hist_max(&h))
			top = pw_hist_max(&h);
		cr_expect_eq(pw_hist_percentile(&h, ps[i]), top, "p%g: %llu",
			     ps[i],
			     (unsigned long long)pw_hist_percentile(&h, ps[i]));
	}
	cr_expect_eq(pw_hist_percentile(&h, 100), 1000000000);
	cr_expect_eq(pw_hist_percentile(&h, 0), 1000);
	/* The reported value is the top of the bucket: never below. */
	cr_expect_geq(pw_hist_percentile(&h, 50), 500000000);
	cr_expect_geq(pw_hist_percentile(&h, 99), 990000000);
	pw_hist_destroy(&h);
}

Test(hist, resolution)
{
	struct pw_hist h = make(0, 0);

	/* Exact below 256 ns; at most 512 ns wide up to 131 us, so every
	 * value there is known to better than 1 us. */
	for (uint64_t v = 0; v < 256; v++) {
		cr_assert_eq(pw_hist_lowest_equivalent(&h, v), v);
		cr_assert_eq(pw_hist_highest_equivalent(&h, v), v);
	}
	for (uint64_t v = 256; v <= 131071; v++) {
		uint64_t lo = pw_hist_lowest_equivalent(&h, v);
		uint64_t hi = pw_hist_highest_equivalent(&h, v);
		cr_assert(lo <= v && v <= hi);
		cr_assert_leq(hi - lo + 1, 512, "width at %llu",
			      (unsigned long long)v);
	}
	/* Under 1% relative width everywhere up to an hour. */
	for (uint64_t v = 256; v <= PW_HIST_HOUR_NS; v += v / 97 + 1) {
		uint64_t lo = pw_hist_lowest_equivalent(&h, v);
		uint64_t hi = pw_hist_highest_equivalent(&h, v);
		cr_assert(lo <= v && v <= hi);
		cr_assert_lt((double)(hi - lo + 1), 0.01 * (double)lo,
			     "width at %llu", (unsigned long long)v);
	}
	/* Neighbouring buckets tile the range. */
	for (uint64_t v = 0; v < 10000000;
	     v = pw_hist_highest_equivalent(&h, v) + 1)
		cr_assert_eq(pw_hist_lowest_equivalent(
				     &h, pw_hist_highest_equivalent(&h, v) + 1),
			     pw_hist_highest_equivalent(&h, v) + 1);
	/* An hour fits; digits 2 takes a few KiB, 3 digits more. */
	cr_expect_eq(pw_hist_record(&h, PW_HIST_HOUR_NS), 0);
	cr_expect_leq(pw_hist_storage_size(0, 2), 64 * 1024);
	cr_expect_gt(pw_hist_storage_size(0, 3), pw_hist_storage_size(0, 2));
	pw_hist_destroy(&h);
}

Test(hist, exact_counts_and_percentiles)
{
	struct pw_hist h = make(0, 0);

	cr_expect_eq(pw_hist_percentile(&h, 50), 0);
	cr_expect_eq(pw_hist_min(&h), 0);
	cr_expect_eq(pw_hist_mean(&h), 0);
	/* 90 x 100 ns, 9 x 200 ns, 1 x 250 ns: all exact buckets. */
	cr_assert_eq(pw_hist_record_n(&h, 100, 90), 0);
	cr_assert_eq(pw_hist_record_n(&h, 200, 9), 0);
	cr_assert_eq(pw_hist_record(&h, 250), 0);
	cr_assert_eq(pw_hist_record_n(&h, 7, 0), 0);
	cr_expect_eq(pw_hist_count(&h), 100);
	cr_expect_eq(pw_hist_count_at(&h, 100), 90);
	cr_expect_eq(pw_hist_count_at(&h, 200), 9);
	cr_expect_eq(pw_hist_count_at(&h, 7), 0);
	cr_expect_eq(pw_hist_percentile(&h, 50), 100);
	cr_expect_eq(pw_hist_percentile(&h, 90), 100);
	cr_expect_eq(pw_hist_percentile(&h, 90.5), 200);
	cr_expect_eq(pw_hist_percentile(&h, 99), 200);
	cr_expect_eq(pw_hist_percentile(&h, 99.9), 250);
	cr_expect_eq(pw_hist_percentile(&h, 100), 250);
	cr_expect_eq(pw_hist_min(&h), 100);
	cr_expect_eq(pw_hist_max(&h), 250);
	cr_expect_eq(pw_hist_mean(&h), (9000.0 + 1800 + 250) / 100);

	/* A larger value: the percentile is its bucket's top, capped at
	 * the exact maximum. */
	cr_assert_eq(pw_hist_record_n(&h, 1000000, 900), 0);
	uint64_t p = pw_hist_percentile(&h, 50);
	cr_expect_eq(p, 1000000);
	cr_assert_eq(pw_hist_record(&h, 1000001), 0);
	cr_expect_eq(pw_hist_percentile(&h, 50), 1000001);
	cr_assert_eq(pw_hist_record(&h, 2000000), 0);
	p = pw_hist_percentile(&h, 50);
	cr_expect_eq(p, pw_hist_highest_equivalent(&h, 1000000));
	cr_expect_gt(p, 1000001);
	cr_expect_lt(p, 1010000);

	pw_hist_reset(&h);
	cr_expect_eq(pw_hist_count(&h), 0);
	cr_expect_eq(pw_hist_count_at(&h, 100), 0);
	cr_expect_eq(pw_hist_max(&h), 0);
	pw_hist_destroy(&h);
}

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

Test(hist, merge_equals_recording_both)
{
	struct pw_hist a = make(0, 0), b = make(0, 0), all = make(0, 0);
	uint64_t s = 42;

	for (int i = 0; i < 100000; i++) {
		uint64_t v = lcg(&s) % (1ull << (lcg(&s) % 40));
		struct pw_hist *one = (lcg(&s) & 1) ? &a : &b;
		cr_assert_eq(pw_hist_record(one, v), 0);
		cr_assert_eq(pw_hist_record(&all, v), 0);
	}
	/* Values above an hour clamp in both. */
	pw_hist_record(&a, PW_HIST_HOUR_NS * 2);
	pw_hist_record(&all, PW_HIST_HOUR_NS * 2);
	cr_assert_eq(pw_hist_merge(&a, &b), 0);
	expect_same(&a, &all);
	cr_expect_eq(pw_hist_clamped(&a), 1);

	/* Merging an empty one changes nothing. */
	pw_hist_reset(&b);
	cr_assert_eq(pw_hist_merge(&a, &b), 0);
	expect_same(&a, &all);
	/* Into an empty one: a copy. */
	cr_assert_eq(pw_hist_merge(&b, &all), 0);
	expect_same(&b, &all);

	cr_expect_eq(pw_hist_merge(&a, &a), -EINVAL);
	cr_expect_eq(pw_hist_merge(NULL, &a), -EINVAL);
	cr_expect_eq(pw_hist_merge(&a, NULL), -EINVAL);
	pw_hist_destroy(&a);
	pw_hist_destroy(&b);
	pw_hist_destroy(&all);
}

Test(hist, merge_across_layouts)
{
	struct pw_hist fine = make(0, 3), coarse = make(1000000, 2);

	for (uint64_t v = 1; v <= 2000000; v += 7)
		pw_hist_record(&fine, v);
	cr_assert_eq(pw_hist_merge(&coarse, &fine), 0);
	cr_expect_eq(pw_hist_count(&coarse), pw_hist_count(&fine));
	cr_expect_eq(pw_hist_min(&coarse), 1);
	cr_expect_eq(pw_hist_max(&coarse), 1000000);
	/* Everything counted above 1 ms in the fine one clamps. */
	uint64_t above = 0;
	for (uint64_t v = 1; v <= 2000000; v += 7)
		if (pw_hist_lowest_equivalent(&fine, v) > 1000000)
			above++;
	cr_expect_eq(pw_hist_clamped(&coarse), above);
	within(pw_hist_percentile(&coarse, 25), 500000, 0.01, "p25");
	pw_hist_destroy(&fine);
	pw_hist_destroy(&coarse);
}

/* What the correction must do, one sample at a time. */
static void naive_corrected(struct pw_hist *h, uint64_t v, uint64_t interval)
{
	pw_hist_record(h, v);
	if (!interval)
		return;
	for (uint64_t m = v >= interval ? v - interval : 0;
	     v >= interval && m >= interval; m -= interval)
		pw_hist_record(h, m);
}

Test(hist, coordinated_omission)
{
	struct pw_hist h = make(0, 0), ref = make(0, 0);

	/* 10 ms with a request due every 1 ms: 10, 9, ..., 1 ms. */
	cr_assert_eq(pw_hist_record_corrected(&h, 10000000, 1000000), 0);
	cr_expect_eq(pw_hist_count(&h), 10);
	for (uint64_t ms = 1; ms <= 10; ms++)
		cr_expect_eq(pw_hist_count_at(&h, ms * 1000000), 1, "%llu ms",
			     (unsigned long long)ms);
	cr_expect_eq(pw_hist_min(&h), 1000000);
	cr_expect_eq(pw_hist_max(&h), 10000000);
	cr_expect_eq(pw_hist_mean(&h), 5500000.0);

	/* 10.5 ms: 9.5 ... 1.5 ms (9 more); under two intervals: none. */
	pw_hist_reset(&h);
	pw_hist_record_corrected(&h, 10500000, 1000000);
	cr_expect_eq(pw_hist_count(&h), 10);
	cr_expect_eq(pw_hist_min(&h), 1500000);
	pw_hist_reset(&h);
	pw_hist_record_corrected(&h, 1999999, 1000000);
	cr_expect_eq(pw_hist_count(&h), 1);
	pw_hist_record_corrected(&h, 2000000, 1000000);
	cr_expect_eq(pw_hist_count(&h), 3);
	pw_hist_record_corrected(&h, 5, 0);
	cr_expect_eq(pw_hist_count(&h), 4);

	/* Bulk bucket filling equals the one-by-one reference. */
	pw_hist_reset(&h);
	uint64_t s = 7;
	for (int i = 0; i < 300; i++) {
		uint64_t iv = 1000 + lcg(&s) % 100000;
		uint64_t v = lcg(&s) % 50000000;
		pw_hist_record_corrected(&h, v, iv);
		naive_corrected(&ref, v, iv);
	}
	expect_same(&h, &ref);

	/* An hour at a 1 ns interval: 3.6e12 samples, bounded work. */
	pw_hist_reset(&h);
	cr_assert_eq(pw_hist_record_corrected(&h, PW_HIST_HOUR_NS, 1), 0);
	cr_expect_eq(pw_hist_count(&h), PW_HIST_HOUR_NS);
	cr_expect_eq(pw_hist_min(&h), 1);
	cr_expect(sum_of(&h) == (unsigned __int128)PW_HIST_HOUR_NS *
					(PW_HIST_HOUR_NS + 1) / 2);
	pw_hist_destroy(&h);
	pw_hist_destroy(&ref);
}

Test(hist, clamping)
{
	struct pw_hist h = make(1000000, 2);

	cr_expect_eq(pw_hist_record(&h, 999999), 0);
	cr_expect_eq(pw_hist_record(&h, 1000000), 0);
	cr_expect_eq(pw_hist_record(&h, 1000001), -ERANGE);
	cr_expect_eq(pw_hist_record_n(&h, UINT64_MAX, 3), -ERANGE);
	cr_expect_eq(pw_hist_count(&h), 6);
	cr_expect_eq(pw_hist_clamped(&h), 4);
	cr_expect_eq(pw_hist_max(&h), 1000000);
	cr_expect_eq(pw_hist_percentile(&h, 100), 1000000);
	cr_expect_eq(pw_hist_percentile(&h, 99), 1000000);
	cr_expect_eq(pw_hist_count_at(&h, UINT64_MAX),
		     pw_hist_count_at(&h, 1000000));
	/* A clamped value is corrected as the highest value. */
	pw_hist_reset(&h);
	cr_expect_eq(pw_hist_record_corrected(&h, 5000000, 250000), -ERANGE);
	cr_expect_eq(pw_hist_count(&h), 4); /* 1 ms, .75, .5, .25 */
	cr_expect_eq(pw_hist_clamped(&h), 1);
	pw_hist_destroy(&h);
}

Test(hist, setup_errors_and_storage)
{
	struct pw_hist h;
	static uint64_t buf[8192];

	cr_expect_eq(pw_hist_init(NULL, 0, 0), -EINVAL);
	cr_expect_eq(pw_hist_init(&h, 1, 2), -EINVAL);
	cr_expect_eq(pw_hist_init(&h, 0, 5), -EINVAL);
	cr_expect_eq(pw_hist_init(&h, 1ull << 63, 2), -EINVAL);
	cr_expect_eq(pw_hist_storage_size(0, 9), 0);
	cr_expect_eq(pw_hist_record(NULL, 1), -EINVAL);
	cr_expect_eq(pw_hist_record_corrected(NULL, 1, 1), -EINVAL);
	cr_expect_eq(pw_hist_count(NULL), 0);
	cr_expect_eq(pw_hist_percentile(NULL, 50), 0);
	pw_hist_destroy(NULL);

	size_t need = pw_hist_storage_size(0, 2);
	cr_assert_leq(need, sizeof(buf));
	cr_expect_eq(pw_hist_init_buf(&h, 0, 2, buf, need - 1), -EINVAL);
	cr_expect_eq(pw_hist_init_buf(&h, 0, 2, (char *)buf + 1, need),
		     -EINVAL);
	cr_assert_eq(pw_hist_init_buf(&h, 0, 2, buf, need), 0);
	cr_expect_eq(pw_hist_record(&h, 12345), 0);
	cr_expect_eq(pw_hist_count_at(&h, 12345), 1);
	pw_hist_destroy(&h); /* frees nothing */
	cr_expect_eq(pw_hist_record(&h, 1), -EINVAL);
}

Test(hist, print_and_json)
{
	struct pw_hist h = make(0, 0);
	char *out = NULL;
	size_t len = 0;

	for (uint64_t v = 1; v <= 1000; v++)
		pw_hist_record(&h, v * 1000);
	FILE *f = open_memstream(&out, &len);
	cr_assert_not_null(f);
	cr_assert_eq(pw_hist_write_json(&h, f), 0);
	fclose(f);
	cr_expect(strstr(out, "\"count\": 1000,"), "%s", out);
	cr_expect(strstr(out, "\"min\": 1000,"), "%s", out);
	cr_expect(strstr(out, "\"max\": 1000000,"), "%s", out);
	cr_expect(strstr(out, "\"mean\": 500500.0,"), "%s", out);
	cr_expect(strstr(out, "\"100\": 1000000}}"), "%s", out);
	cr_expect(strstr(out, "\"99.99\": "), "%s", out);
	cr_expect_eq(out[0], '{');
	free(out);

	out = NULL;
	f = open_memstream(&out, &len);
	cr_assert_eq(pw_hist_print(&h, f, 2), 0);
	fclose(f);
	cr_expect(strstr(out, "  p50 "), "%s", out);
	cr_expect(strstr(out, "  p99.99 "), "%s", out);
	cr_expect(strstr(out, "  max       "), "%s", out);
	cr_expect(strstr(out, " 1000.000\n"), "%s", out);
	cr_expect(strstr(out, "count 1000, min 1.000 us, mean 500.500 us, "
			      "max 1000.000 us, clamped 0"),
		  "%s", out);
	free(out);
	cr_expect_eq(pw_hist_print(NULL, stdout, 0), -EINVAL);
	pw_hist_destroy(&h);
}

/*
 * A stream that fails (unbuffered /dev/full: every write is ENOSPC):
 * both writers report -EIO, for a full and an empty histogram.
 */
static void expect_writers_fail(const struct pw_hist *h, int mode)
{
	FILE *f = fopen("/dev/full", "w");

	cr_assert_not_null(f);
	cr_assert_eq(setvbuf(f, NULL, mode, 0), 0);
	cr_expect_eq(pw_hist_write_json(h, f), -EIO, "buffering %d", mode);
	clearerr(f);
	cr_expect_eq(pw_hist_print(h, f, 4), -EIO, "buffering %d", mode);
	fclose(f);
}

/* A stream that cannot be written gives -EIO from both writers, whether
 * the failure comes with the first byte (unbuffered) or only when the
 * buffer is flushed (fully buffered: the writers flush before they
 * answer). */
Test(hist, writers_report_a_failed_write)
{
	struct pw_hist h = make(0, 0);

	expect_writers_fail(&h, _IONBF);
	expect_writers_fail(&h, _IOFBF);
	for (uint64_t v = 1; v <= 1000; v++)
		cr_assert_eq(pw_hist_record(&h, v * 1000), 0);
	expect_writers_fail(&h, _IONBF);
	expect_writers_fail(&h, _IOFBF);
	pw_hist_destroy(&h);
}
