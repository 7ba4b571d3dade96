/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/hist_hdr.h - HdrHistogram's file formats for struct pw_hist.
 *
 * A pw_hist has HdrHistogram's bucket layout (lowest discernible value
 * 1, the same sub-buckets for the same significant digits), so it can be
 * written in the formats HdrHistogram's tools read, and read back:
 *
 *   - the percentile distribution (".hgrm"), as HdrHistogram's
 *     outputPercentileDistribution prints it: a row per percentile level
 *     reached (HdrHistogram's levels: @ticks equal steps in each half of
 *     the distance left to 100%), then a last row at 100%; then the
 *     mean, standard deviation, maximum, count and layout as "#[...]"
 *     lines. Values are
 *     divided by a unit ratio: pinwheel records nanoseconds, so 1000
 *     writes microseconds, 1e6 milliseconds;
 *   - the V2 compressed encoding of one histogram, as base64 text: the
 *     compressed wrapper (cookie, length) around a zlib stream of the V2
 *     encoding (cookie, payload length, normalizing index offset,
 *     significant digits, lowest and highest trackable value, integer to
 *     double ratio, all big-endian, then the counts as ZigZag LEB128
 *     numbers, a run of empty buckets as one negative number);
 *   - the interval log (".hlog"): "#[StartTime: ...]", "#[BaseTime: ...]"
 *     and legend lines, then one line per interval: its start (seconds
 *     after the base time), its length, its maximum (in a unit ratio of
 *     its own, milliseconds by HdrHistogram's convention) and its
 *     histogram in the encoding above.
 *
 * The ".hgrm" text is what HdrHistogram itself prints for the same
 * histogram, byte for byte: each row shows the highest value of its
 * bucket, the footer the mean and standard deviation with every value at
 * its bucket's middle and the maximum's bucket top, and numbers are
 * rounded as Java's formatter rounds them (the exact statistics are in
 * pinwheel/hist.h). A decoded histogram knows only buckets: its minimum,
 * maximum and sum follow from them.
 *
 * Threads: like pinwheel/hist.h; the writers read @h while no writer
 * records into it; a struct pw_hdr_log belongs to one thread at a time.
 */
#ifndef PINWHEEL_HIST_HDR_H
#define PINWHEEL_HIST_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "export.h"
#include "hist.h"

#ifdef __cplusplus
extern "C" {
#endif

/* HdrHistogram's default percentile ticks per half distance to 100%. */
#define PW_HDR_TICKS 5
/* Unit ratios for nanosecond values: to microseconds, to milliseconds. */
#define PW_HDR_US 1e3
#define PW_HDR_MS 1e6

/**
 * pw_hist_digits, pw_hist_highest - the significant decimal digits (1..4)
 * and the highest trackable value @h was set up with: two histograms
 * merge exactly when both are equal.
 * Return: the value; 0 for a NULL or unset @h.
 * Context: any thread.
 */
PW_API unsigned pw_hist_digits(const struct pw_hist *h);
PW_API uint64_t pw_hist_highest(const struct pw_hist *h);

/**
 * pw_hist_write_hgrm - write @h's percentile distribution to @f in
 * HdrHistogram's ".hgrm" text format (the one its plotters read).
 * @ratio: values are divided by it (PW_HDR_US: microseconds); > 0.
 * @ticks: percentile steps per half distance to 100%; 0 means
 * PW_HDR_TICKS.
 * Return: 0; -EINVAL for a NULL or unset argument or @ratio <= 0; -EIO
 * when writing failed.
 * Context: any thread, while no writer runs on @h.
 */
PW_API int pw_hist_write_hgrm(const struct pw_hist *h, FILE *f, double ratio,
			      unsigned ticks);

/**
 * pw_hist_save_hgrm - pw_hist_write_hgrm() with PW_HDR_TICKS into the
 * file @path (created or truncated; "-" is stdout).
 * Return: as pw_hist_write_hgrm(); or the -errno of opening @path.
 * Context: any thread, while no writer runs on @h.
 */
PW_API int pw_hist_save_hgrm(const struct pw_hist *h, const char *path,
			     double ratio);

/**
 * pw_hist_encode_hdr - @h in HdrHistogram's V2 compressed encoding, as
 * base64 text.
 * @out: gets a malloc'd NUL-terminated string (free it with free()).
 * @len: if not NULL, gets its length.
 * Return: 0; -EINVAL for a NULL or unset argument; -ERANGE for a bucket
 * count above 2^63 - 1 (the format's limit); -ENOMEM.
 * Context: any thread, while no writer runs on @h.
 */
PW_API int pw_hist_encode_hdr(const struct pw_hist *h, char **out, size_t *len);

/**
 * pw_hist_decode_hdr - set up @h (as pw_hist_init() does) from the base64
 * text @b64 of @len bytes, in the encoding pw_hist_encode_hdr() writes
 * (also HdrHistogram's, with a lowest discernible value of 1, 1 to 4
 * significant digits and a highest trackable value up to 2^62). Counts
 * above the highest trackable value, which HdrHistogram can hold in its
 * last bucket, are counted at it, as clamped.
 * Return: 0 with @h set up (free it with pw_hist_destroy()); else @h is
 * left unset and: -EINVAL for text that is not base64, a wrong cookie, a
 * length that cannot be, digits, lowest value, highest value, offset or
 * ratio that pinwheel does not take; -EBADMSG for data that is truncated
 * or corrupt (a zlib error, counts past the end of the layout, a count
 * cut short, bytes left over); -ENOMEM.
 * Context: any thread.
 */
PW_API int pw_hist_decode_hdr(struct pw_hist *h, const char *b64, size_t len);

/**
 * pw_hist_add_hdr - add the histogram encoded in @b64 (as
 * pw_hist_decode_hdr() takes it) into @dst.
 * Return: 0; -EINVAL when it has other significant digits or another
 * highest trackable value than @dst (nothing is added), or as
 * pw_hist_decode_hdr().
 * Context: the thread that owns @dst.
 */
PW_API int pw_hist_add_hdr(struct pw_hist *dst, const char *b64, size_t len);

/* An interval log being written. Fields are private to hist_hdr.c. */
struct pw_hdr_log {
	FILE *f;
	bool owns_f;	  /* opened by pw_hdr_log_open() */
	double max_ratio; /* Interval_Max unit ratio */
	int err;	  /* the first error, kept */
};

/**
 * pw_hdr_log_init - start an interval log on @f: the "Logged with",
 * format version, StartTime and BaseTime lines (both @start_s, wall-clock
 * seconds since the epoch) and the legend.
 * @max_ratio: the unit ratio of the Interval_Max column (> 0; 0 means
 * PW_HDR_MS, HdrHistogram's default).
 * Return: 0; -EINVAL for a NULL argument or a negative @max_ratio; -EIO.
 * Context: any thread; then the log is that thread's.
 */
PW_API int pw_hdr_log_init(struct pw_hdr_log *log, FILE *f, double start_s,
			   double max_ratio);

/**
 * pw_hdr_log_open - pw_hdr_log_init() on the file @path, created or
 * truncated ("-" is stdout).
 * Return: as pw_hdr_log_init(); or the -errno of opening @path.
 * Context: any thread.
 */
PW_API int pw_hdr_log_open(struct pw_hdr_log *log, const char *path,
			   double start_s, double max_ratio);

/**
 * pw_hdr_log_write - add one interval: @h, recorded from @start_s to
 * @start_s + @length_s (seconds after the log's start time).
 * Return: 0; -EINVAL for a NULL or unset argument; an error of
 * pw_hist_encode_hdr(); -EIO. Context: the log's thread, while no writer
 * runs on @h.
 */
PW_API int pw_hdr_log_write(struct pw_hdr_log *log, const struct pw_hist *h,
			    double start_s, double length_s);

/**
 * pw_hdr_log_close - flush the log, close a file pw_hdr_log_open()
 * opened, and report the first error the log met.
 * Return: 0; -EIO or the first error of a write. NULL is a no-op (0).
 * Context: the log's thread.
 */
PW_API int pw_hdr_log_close(struct pw_hdr_log *log);

/* What pw_hdr_log_read() found. */
struct pw_hdr_log_info {
	uint64_t intervals; /* interval lines merged */
	double start_s;	    /* #[StartTime: ...]; 0 when absent */
	double base_s;	    /* #[BaseTime: ...]; 0 when absent */
	double first_s;	    /* the first interval's start */
	double end_s;	    /* the latest interval end */
	unsigned long line; /* on error: the line (from 1), 0 if none */
	const char *error;  /* on error: what was wrong, in words */
};

/**
 * pw_hdr_log_read - read an interval log from @f and merge every interval
 * into @sum, which is set up from the first interval's layout.
 * Return: 0 with @sum set up and @info filled; else @sum is left unset,
 * @info->line and @info->error say where and what, and: -ENODATA when the
 * log holds no interval; -EINVAL for an interval with other significant
 * digits or another highest value than the first, or a line that is not
 * an interval; an error of pw_hist_decode_hdr(); -ENOMEM; -EIO.
 * Context: any thread.
 */
PW_API int pw_hdr_log_read(FILE *f, struct pw_hist *sum,
			   struct pw_hdr_log_info *info);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_HIST_HDR_H */
