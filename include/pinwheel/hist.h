/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/hist.h - latency histograms with bounded relative error.
 *
 * A struct pw_hist counts values (nanoseconds, by convention) in
 * log-linear buckets: values below 2^b are counted exactly; above that,
 * each power-of-two range [2^k, 2^(k+1)) is split into 2^(b-1) equal
 * buckets, so every bucket is narrower than 1/2^(b-1) of its lowest
 * value. b follows from the number of significant decimal digits asked
 * for: 2 digits gives b = 8 (128 buckets per doubling, under 0.79%
 * relative error), 3 digits b = 11. With 2 digits, every value up to
 * 131 us falls in a bucket at most 512 ns wide (below 256 ns it is exact).
 *
 * The counters are one array allocated at init (or supplied by the
 * caller); recording is O(1) and never allocates. Values above the
 * histogram's highest trackable value are clamped to it and counted as
 * clamped. Reported percentiles are the highest value equivalent to the
 * bucket that holds the wanted sample (never above the exact maximum);
 * count, min, max and the sum (hence the mean) are exact.
 *
 * Threads: one writer per histogram (one per shard); readers, merge and
 * reset run when the writer is done (e.g. after joining the shards).
 */
#ifndef PINWHEEL_HIST_H
#define PINWHEEL_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One hour in nanoseconds: the default highest trackable value. */
#define PW_HIST_HOUR_NS 3600000000000ull
/* Default significant decimal digits (under 1% relative error). */
#define PW_HIST_DIGITS 2

/* A histogram. Fields are read-only outside hist.c; use the functions. */
struct pw_hist {
	uint64_t *counts;  /* ncounts buckets */
	uint32_t ncounts;  /* buckets in counts[] */
	uint32_t sub_bits; /* b above: 2^b exact slots, 2^(b-1) per doubling */
	uint64_t highest;  /* largest value kept; larger ones clamp to it */
	uint64_t total;	   /* values recorded (synthetic ones included) */
	uint64_t clamped;  /* values that were above @highest */
	uint64_t min, max; /* exact; min is UINT64_MAX while empty */
	uint64_t sum_lo;   /* exact sum of the recorded values, */
	uint64_t sum_hi;   /* as a 128-bit number */
	bool owns_counts;  /* counts[] came from malloc in pw_hist_init */
};

/**
 * pw_hist_storage_size - bytes of counters a histogram tracking 0..@highest
 * with @digits significant digits needs (for pw_hist_init_buf()).
 * @highest: 2..2^62; 0 means PW_HIST_HOUR_NS. @digits: 1..4; 0 means
 * PW_HIST_DIGITS.
 * Return: the size in bytes, or 0 for arguments out of range.
 * Context: any thread.
 */
PW_API size_t pw_hist_storage_size(uint64_t highest, unsigned digits);

/**
 * pw_hist_init - set up an empty histogram, allocating its counters once.
 * @highest, @digits: as pw_hist_storage_size().
 * Return: 0; -EINVAL for a NULL @h or arguments out of range; -ENOMEM.
 * Free with pw_hist_destroy().
 * Context: any thread.
 */
PW_API int pw_hist_init(struct pw_hist *h, uint64_t highest, unsigned digits);

/**
 * pw_hist_init_buf - as pw_hist_init(), but in caller-provided storage.
 * @buf: at least pw_hist_storage_size(@highest, @digits) bytes, aligned
 * for uint64_t; it must outlive the histogram. @len: its size.
 * Return: 0; -EINVAL for a NULL @h or @buf, a misaligned @buf, arguments
 * out of range, or @len too small.
 * Context: any thread.
 */
PW_API int pw_hist_init_buf(struct pw_hist *h, uint64_t highest,
			    unsigned digits, void *buf, size_t len);

/**
 * pw_hist_destroy - free what pw_hist_init() allocated (nothing for
 * pw_hist_init_buf() storage). @h is unusable afterwards until set up
 * again. NULL is a no-op.
 * Context: the thread that owns @h.
 */
PW_API void pw_hist_destroy(struct pw_hist *h);

/**
 * pw_hist_reset - forget every recorded value; keeps the counters.
 * Context: the thread that owns @h.
 */
PW_API void pw_hist_reset(struct pw_hist *h);

/**
 * pw_hist_record - count one @value. O(1), no allocation.
 * Return: 0; -ERANGE when @value was above the highest trackable value: it
 * was counted as that value, and in pw_hist_clamped(); -EINVAL for a NULL
 * @h (nothing counted).
 * Context: the one thread that writes @h.
 */
PW_API int pw_hist_record(struct pw_hist *h, uint64_t value);

/**
 * pw_hist_record_n - count @value @n times (as pw_hist_record()).
 * Return: as pw_hist_record(); @n == 0 counts nothing and returns 0.
 * Context: the one thread that writes @h.
 */
PW_API int pw_hist_record_n(struct pw_hist *h, uint64_t value, uint64_t n);

/**
 * pw_hist_record_corrected - count @value, corrected for coordinated
 * omission.
 * @interval: the expected time between two requests of an open-loop
 * load; 0 turns the correction off.
 *
 * A request that took @value when one was due every @interval delayed
 * the ones behind it, which a closed-loop measurement never sends. So
 * besides @value this counts the synthetic samples @value - k * @interval
 * for k = 1, 2, ... while they are >= @interval (none when @value <
 * 2 * @interval), as HdrHistogram does. The clamped value is corrected
 * when @value is above the highest trackable value. The cost is bounded
 * by the number of buckets, not the number of samples.
 * Return: as pw_hist_record().
 * Context: the one thread that writes @h.
 */
PW_API int pw_hist_record_corrected(struct pw_hist *h, uint64_t value,
				    uint64_t interval);

/**
 * pw_hist_merge - add every value of @src into @dst (e.g. per-shard
 * histograms into one). With the same highest and digits the result is
 * exactly as if every value had been recorded into @dst; otherwise each
 * of @src's buckets is counted at its lowest equivalent value in @dst
 * (clamped as pw_hist_record()), and min, max and sum stay exact.
 * Return: 0; -EINVAL for a NULL argument or @dst == @src.
 * Context: a thread that owns both; no writer may run on either.
 */
PW_API int pw_hist_merge(struct pw_hist *dst, const struct pw_hist *src);

/**
 * pw_hist_percentile - the value at or below which @p percent of the
 * recorded values lie: the highest value equivalent to the bucket of the
 * sample of rank round(@p / 100 * count) (at least 1), capped at the exact
 * maximum. @p <= 0 gives the exact minimum, @p >= 100 the exact maximum.
 * Return: the value, or 0 when @h is empty or NULL.
 * Context: any thread, while no writer runs on @h.
 */
PW_API uint64_t pw_hist_percentile(const struct pw_hist *h, double p);

/* Exact statistics; each returns 0 for an empty or NULL histogram.
 * pw_hist_clamped() counts the values recorded above the highest
 * trackable value. Context: any thread, while no writer runs on @h. */
PW_API uint64_t pw_hist_count(const struct pw_hist *h);
PW_API uint64_t pw_hist_min(const struct pw_hist *h);
PW_API uint64_t pw_hist_max(const struct pw_hist *h);
PW_API uint64_t pw_hist_clamped(const struct pw_hist *h);
PW_API double pw_hist_mean(const struct pw_hist *h);

/**
 * pw_hist_lowest_equivalent, pw_hist_highest_equivalent - the smallest
 * and largest value counted in the same bucket as @value (@value clamped
 * to the highest trackable value first).
 * Return: the value; 0 for a NULL @h.
 * Context: any thread.
 */
PW_API uint64_t pw_hist_lowest_equivalent(const struct pw_hist *h,
					  uint64_t value);
PW_API uint64_t pw_hist_highest_equivalent(const struct pw_hist *h,
					   uint64_t value);

/**
 * pw_hist_count_at - how many values were counted in @value's bucket.
 * Return: the count; 0 for a NULL @h.
 * Context: any thread, while no writer runs on @h.
 */
PW_API uint64_t pw_hist_count_at(const struct pw_hist *h, uint64_t value);

/**
 * pw_hist_print - write a percentile table (p50, p75, p90, p99, p99.9,
 * p99.99, p99.999, max) and a line with count, min, mean, max and clamped
 * to @f. Values are nanoseconds shown in microseconds with 3 decimals;
 * each row is indented by @indent spaces.
 * Return: 0; -EINVAL for a NULL argument; -EIO when writing failed.
 * Context: any thread, while no writer runs on @h.
 */
PW_API int pw_hist_print(const struct pw_hist *h, FILE *f, unsigned indent);

/**
 * pw_hist_write_json - write one JSON object (no trailing newline, so it
 * can be nested) with "unit": "ns", "count", "min", "max", "mean",
 * "clamped" and "percentiles": {"50": .., "75": .., "90": .., "99": ..,
 * "99.9": .., "99.99": .., "99.999": .., "100": ..}, integers in ns.
 * Return: 0; -EINVAL for a NULL argument; -EIO when writing failed.
 * Context: any thread, while no writer runs on @h.
 */
PW_API int pw_hist_write_json(const struct pw_hist *h, FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_HIST_H */
