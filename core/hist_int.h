/* SPDX-License-Identifier: MIT */
/*
 * hist_int.h - what the histogram's other library files (hist_hdr.c, the
 * HdrHistogram formats) need of its bucket layout (core/hist.c), so that
 * the bucket math lives in one place.
 *
 * The layout is HdrHistogram's with a lowest discernible value of 1:
 * bucket index i here is HdrHistogram's counts index i.
 */
#ifndef PW_CORE_HIST_INT_H
#define PW_CORE_HIST_INT_H

#include <stdint.h>

#include "pinwheel/hist.h"

/* The largest highest trackable value pw_hist_init() takes. */
#define PW__HIST_HIGHEST_MAX (1ull << 62)

/*
 * pw__hist_bucket_low, pw__hist_bucket_high - the lowest and highest
 * value counted in bucket @i of @h (any index, also past h->ncounts, as
 * HdrHistogram's counts array may be longer). Context: any thread.
 */
uint64_t pw__hist_bucket_low(const struct pw_hist *h, uint32_t i);
uint64_t pw__hist_bucket_high(const struct pw_hist *h, uint32_t i);

/*
 * pw__hist_digits - the significant decimal digits @h was set up with
 * (1..4), from its sub-bucket bits. Context: any thread.
 */
unsigned pw__hist_digits(const struct pw_hist *h);

/*
 * pw__hist_buckets - HdrHistogram's bucket count for @h's highest value:
 * 1 plus the doublings above the exact range that reaching it takes.
 * HdrHistogram's counts array is (buckets + 1) * 2^(sub_bits - 1) long.
 * Context: any thread.
 */
uint32_t pw__hist_buckets(const struct pw_hist *h);

/*
 * pw__hist_set_counts - after the caller filled h->counts (of @h, set up
 * empty), count @clamped of them as clamped and rebuild the statistics
 * from the buckets: the total, min (the lowest value of the first bucket
 * used), max (the highest value of the last one, capped at the highest
 * trackable value) and the sum (each bucket's count at its middle value).
 * Return: 0; -EOVERFLOW when the counts add up beyond 2^64 - 1 (nothing
 * set). Context: the thread that owns @h.
 */
int pw__hist_set_counts(struct pw_hist *h, uint64_t clamped);

/*
 * pw__hist_set_max - set the exact maximum of @h, a value in the bucket of
 * its current maximum (e.g. a maximum recorded next to the buckets).
 * Return: 0; -EINVAL when @max is not in that bucket (nothing changes).
 * Context: the thread that owns @h.
 */
int pw__hist_set_max(struct pw_hist *h, uint64_t max);

#endif /* PW_CORE_HIST_INT_H */
