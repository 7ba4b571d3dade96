/* SPDX-License-Identifier: MIT */
/*
 * hist.c - log-linear latency histograms (see pinwheel/hist.h).
 *
 * With b sub-bucket bits and half = 2^(b-1), a value v whose top set bit
 * is m lands in bucket
 *
 *	shift = max(0, m + 1 - b),  index = shift * half + (v >> shift)
 *
 * Values below 2^b (shift 0) are their own index. For shift >= 1, v >>
 * shift lies in [half, 2 * half), so each shift owns half buckets of width
 * 2^shift, placed right after the previous shift's. Going back, a bucket
 * index i >= 2 * half has shift = i / half - 1 and lowest value
 * (i - shift * half) << shift. The width over the lowest value is at most
 * 1 / half: the relative error bound.
 *
 * The sum is kept as 128 bits so that an hour's worth of nanosecond
 * values can be summed 2^64 times over without wrapping.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/fault.h"
#include "core/flush.h"
#include "core/hist_int.h"
#include "pinwheel/hist.h"

#define HIST_HIGHEST_MAX PW__HIST_HIGHEST_MAX

static unsigned digits_to_bits(unsigned digits)
{
	uint64_t want = 1, half = 1;
	unsigned bits = 1;

	while (digits--)
		want *= 10;
	while (half < want) {
		half <<= 1;
		bits++;
	}
	return bits;
}

static unsigned bucket_of(unsigned bits, uint64_t v)
{
	unsigned msb = v ? 63u - (unsigned)__builtin_clzll(v) : 0;
	unsigned shift = msb + 1 >= bits ? msb + 1 - bits : 0;

	return (shift << (bits - 1)) + (unsigned)(v >> shift);
}

static uint64_t bucket_low(unsigned bits, unsigned i)
{
	unsigned half = 1u << (bits - 1);
	unsigned shift;

	if (i < 2 * half)
		return i;
	shift = i / half - 1;
	return (uint64_t)(i - shift * half) << shift;
}

static uint64_t bucket_high(unsigned bits, unsigned i)
{
	unsigned half = 1u << (bits - 1);
	unsigned shift = i < 2 * half ? 0 : i / half - 1;

	return bucket_low(bits, i) + (1ull << shift) - 1;
}

/* Normalised arguments, or false when out of range. */
static bool layout(uint64_t *highest, unsigned *digits, unsigned *bits,
		   uint32_t *ncounts)
{
	if (!*highest)
		*highest = PW_HIST_HOUR_NS;
	if (!*digits)
		*digits = PW_HIST_DIGITS;
	if (*highest < 2 || *highest > HIST_HIGHEST_MAX || *digits > 4)
		return false;
	*bits = digits_to_bits(*digits);
	*ncounts = bucket_of(*bits, *highest) + 1;
	return true;
}

size_t pw_hist_storage_size(uint64_t highest, unsigned digits)
{
	unsigned bits;
	uint32_t n;

	if (!layout(&highest, &digits, &bits, &n))
		return 0;
	return (size_t)n * sizeof(uint64_t);
}

static void setup(struct pw_hist *h, uint64_t highest, unsigned bits,
		  uint32_t n, uint64_t *counts, bool owns)
{
	memset(h, 0, sizeof(*h));
	h->counts = counts;
	h->ncounts = n;
	h->sub_bits = bits;
	h->highest = highest;
	h->owns_counts = owns;
	pw_hist_reset(h);
}

int pw_hist_init(struct pw_hist *h, uint64_t highest, unsigned digits)
{
	unsigned bits;
	uint32_t n;
	uint64_t *counts;

	if (!h || !layout(&highest, &digits, &bits, &n))
		return -EINVAL;
	counts = pw__fault_malloc(PW__FAULT_HIST, (size_t)n * sizeof(*counts));
	if (!counts)
		return -ENOMEM;
	setup(h, highest, bits, n, counts, true);
	return 0;
}

int pw_hist_init_buf(struct pw_hist *h, uint64_t highest, unsigned digits,
		     void *buf, size_t len)
{
	unsigned bits;
	uint32_t n;

	if (!h || !buf || (uintptr_t)buf % _Alignof(uint64_t) ||
	    !layout(&highest, &digits, &bits, &n) ||
	    len < (size_t)n * sizeof(uint64_t))
		return -EINVAL;
	setup(h, highest, bits, n, buf, false);
	return 0;
}

void pw_hist_destroy(struct pw_hist *h)
{
	if (!h)
		return;
	if (h->owns_counts)
		free(h->counts);
	memset(h, 0, sizeof(*h));
}

void pw_hist_reset(struct pw_hist *h)
{
	if (!h || !h->counts)
		return;
	memset(h->counts, 0, (size_t)h->ncounts * sizeof(*h->counts));
	h->total = 0;
	h->clamped = 0;
	h->min = UINT64_MAX;
	h->max = 0;
	h->sum_lo = 0;
	h->sum_hi = 0;
}

static void sum_add(struct pw_hist *h, unsigned __int128 x)
{
	unsigned __int128 s = ((unsigned __int128)h->sum_hi << 64) | h->sum_lo;

	s += x;
	h->sum_lo = (uint64_t)s;
	h->sum_hi = (uint64_t)(s >> 64);
}

int pw_hist_record_n(struct pw_hist *h, uint64_t value, uint64_t n)
{
	int ret = 0;

	if (!h || !h->counts)
		return -EINVAL;
	if (!n)
		return 0;
	if (value > h->highest) {
		value = h->highest;
		h->clamped += n;
		ret = -ERANGE;
	}
	h->counts[bucket_of(h->sub_bits, value)] += n;
	h->total += n;
	if (value < h->min)
		h->min = value;
	if (value > h->max)
		h->max = value;
	sum_add(h, (unsigned __int128)value * n);
	return ret;
}

int pw_hist_record(struct pw_hist *h, uint64_t value)
{
	return pw_hist_record_n(h, value, 1);
}

int pw_hist_record_corrected(struct pw_hist *h, uint64_t value,
			     uint64_t interval)
{
	int ret = pw_hist_record_n(h, value, 1);
	uint64_t cur, last;

	if (ret == -EINVAL)
		return ret;
	if (value > h->highest)
		value = h->highest;
	if (!interval || value < interval || value - interval < interval)
		return ret;
	/* The samples value - k * interval, from cur down to last. */
	cur = value - interval;
	last = value % interval + interval;
	for (;;) {
		unsigned i = bucket_of(h->sub_bits, cur);
		uint64_t low = bucket_low(h->sub_bits, i);
		uint64_t floor = low > last ? low : last;
		uint64_t n = (cur - floor) / interval + 1;

		h->counts[i] += n;
		h->total += n;
		/* cur + (cur - I) + ... + (cur - (n - 1) I); I (n - 1) fits
		 * in 64 bits because it is at most cur. */
		sum_add(h, (unsigned __int128)cur * n -
				   (unsigned __int128)n * (interval * (n - 1)) /
					   2);
		if (floor == last)
			break;
		cur -= n * interval;
	}
	if (last < h->min)
		h->min = last;
	return ret;
}

int pw_hist_merge(struct pw_hist *dst, const struct pw_hist *src)
{
	if (!dst || !src || dst == src || !dst->counts || !src->counts)
		return -EINVAL;
	if (!src->total)
		return 0;
	if (dst->sub_bits == src->sub_bits && dst->highest == src->highest) {
		for (uint32_t i = 0; i < src->ncounts; i++)
			dst->counts[i] += src->counts[i];
		dst->clamped += src->clamped;
	} else {
		for (uint32_t i = 0; i < src->ncounts; i++) {
			uint64_t c = src->counts[i], v;

			if (!c)
				continue;
			v = bucket_low(src->sub_bits, i);
			if (v > dst->highest) {
				v = dst->highest;
				dst->clamped += c;
			}
			dst->counts[bucket_of(dst->sub_bits, v)] += c;
		}
		dst->clamped += src->clamped;
	}
	dst->total += src->total;
	if (src->min < dst->min)
		dst->min = src->min < dst->highest ? src->min : dst->highest;
	if (src->max > dst->max)
		dst->max = src->max < dst->highest ? src->max : dst->highest;
	sum_add(dst, ((unsigned __int128)src->sum_hi << 64) |
			     (unsigned __int128)src->sum_lo);
	return 0;
}

uint64_t pw_hist_percentile(const struct pw_hist *h, double p)
{
	uint64_t rank, seen = 0;

	if (!h || !h->counts || !h->total)
		return 0;
	if (!(p > 0))
		return h->min;
	if (p >= 100)
		return h->max;
	rank = (uint64_t)((long double)p / 100 * h->total + 0.5L);
	if (rank < 1)
		rank = 1;
	if (rank > h->total)
		rank = h->total;
	for (uint32_t i = 0; i < h->ncounts; i++) {
		seen += h->counts[i];
		if (seen >= rank) {
			uint64_t v = bucket_high(h->sub_bits, i);
			return v < h->max ? v : h->max;
		}
	}
	return h->max;
}

uint64_t pw_hist_count(const struct pw_hist *h)
{
	return h ? h->total : 0;
}

uint64_t pw_hist_min(const struct pw_hist *h)
{
	return h && h->total ? h->min : 0;
}

uint64_t pw_hist_max(const struct pw_hist *h)
{
	return h && h->total ? h->max : 0;
}

uint64_t pw_hist_clamped(const struct pw_hist *h)
{
	return h ? h->clamped : 0;
}

double pw_hist_mean(const struct pw_hist *h)
{
	unsigned __int128 s;

	if (!h || !h->total)
		return 0;
	s = ((unsigned __int128)h->sum_hi << 64) | h->sum_lo;
	return (double)((long double)s / h->total);
}

uint64_t pw_hist_lowest_equivalent(const struct pw_hist *h, uint64_t value)
{
	if (!h || !h->sub_bits)
		return 0;
	if (value > h->highest)
		value = h->highest;
	return bucket_low(h->sub_bits, bucket_of(h->sub_bits, value));
}

uint64_t pw_hist_highest_equivalent(const struct pw_hist *h, uint64_t value)
{
	if (!h || !h->sub_bits)
		return 0;
	if (value > h->highest)
		value = h->highest;
	return bucket_high(h->sub_bits, bucket_of(h->sub_bits, value));
}

uint64_t pw_hist_count_at(const struct pw_hist *h, uint64_t value)
{
	if (!h || !h->counts)
		return 0;
	if (value > h->highest)
		value = h->highest;
	return h->counts[bucket_of(h->sub_bits, value)];
}

static const struct {
	double p;
	const char *key, *label;
} table[] = {
	{ 50, "50", "p50" },
	{ 75, "75", "p75" },
	{ 90, "90", "p90" },
	{ 99, "99", "p99" },
	{ 99.9, "99.9", "p99.9" },
	{ 99.99, "99.99", "p99.99" },
	{ 99.999, "99.999", "p99.999" },
	{ 100, "100", "max" },
};

#define NTABLE (sizeof(table) / sizeof(table[0]))

int pw_hist_print(const struct pw_hist *h, FILE *f, unsigned indent)
{
	int w = (int)indent;

	if (!h || !f)
		return -EINVAL;
	fprintf(f, "%*s%-10s %14s\n", w, "", "percentile", "latency us");
	for (size_t i = 0; i < NTABLE; i++) {
		uint64_t v = pw_hist_percentile(h, table[i].p);

		fprintf(f, "%*s%-10s %10llu.%03llu\n", w, "", table[i].label,
			(unsigned long long)(v / 1000),
			(unsigned long long)(v % 1000));
	}
	fprintf(f,
		"%*scount %llu, min %.3f us, mean %.3f us, max %.3f us, "
		"clamped %llu\n",
		w, "", (unsigned long long)pw_hist_count(h),
		(double)pw_hist_min(h) / 1e3, pw_hist_mean(h) / 1e3,
		(double)pw_hist_max(h) / 1e3,
		(unsigned long long)pw_hist_clamped(h));
	return pw__flushed(f);
}

int pw_hist_write_json(const struct pw_hist *h, FILE *f)
{
	if (!h || !f)
		return -EINVAL;
	fprintf(f,
		"{\"unit\": \"ns\", \"count\": %llu, \"min\": %llu, "
		"\"max\": %llu, \"mean\": %.1f, \"clamped\": %llu, "
		"\"percentiles\": {",
		(unsigned long long)pw_hist_count(h),
		(unsigned long long)pw_hist_min(h),
		(unsigned long long)pw_hist_max(h), pw_hist_mean(h),
		(unsigned long long)pw_hist_clamped(h));
	for (size_t i = 0; i < NTABLE; i++)
		fprintf(f, "%s\"%s\": %llu", i ? ", " : "", table[i].key,
			(unsigned long long)pw_hist_percentile(h, table[i].p));
	fprintf(f, "}}");
	return pw__flushed(f);
}

/* ---- for the HdrHistogram formats (core/hist_int.h) ------------------- */

uint64_t pw__hist_bucket_low(const struct pw_hist *h, uint32_t i)
{
	return bucket_low(h->sub_bits, i);
}

uint64_t pw__hist_bucket_high(const struct pw_hist *h, uint32_t i)
{
	return bucket_high(h->sub_bits, i);
}

unsigned pw__hist_digits(const struct pw_hist *h)
{
	for (unsigned d = 1; d <= 4; d++)
		if (digits_to_bits(d) == h->sub_bits)
			return d;
	return 0;
}

uint32_t pw__hist_buckets(const struct pw_hist *h)
{
	unsigned msb = 63u - (unsigned)__builtin_clzll(h->highest | 1);

	return msb + 1 >= h->sub_bits ? msb + 2 - h->sub_bits : 1;
}

int pw__hist_set_counts(struct pw_hist *h, uint64_t clamped)
{
	unsigned __int128 sum = 0;
	uint64_t total = 0;
	uint32_t first = UINT32_MAX, last = 0;

	for (uint32_t i = 0; i < h->ncounts; i++) {
		uint64_t c = h->counts[i], low, mid;

		if (!c)
			continue;
		if (__builtin_add_overflow(total, c, &total))
			return -EOVERFLOW;
		if (first == UINT32_MAX)
			first = i;
		last = i;
		low = bucket_low(h->sub_bits, i);
		mid = low + (bucket_high(h->sub_bits, i) - low + 1) / 2;
		sum += (unsigned __int128)c *
		       (mid < h->highest ? mid : h->highest);
	}
	h->total = total;
	h->clamped = clamped;
	h->sum_lo = (uint64_t)sum;
	h->sum_hi = (uint64_t)(sum >> 64);
	if (!total) {
		h->min = UINT64_MAX;
		h->max = 0;
		return 0;
	}
	h->min = bucket_low(h->sub_bits, first);
	h->max = bucket_high(h->sub_bits, last);
	if (h->max > h->highest)
		h->max = h->highest;
	return 0;
}

int pw__hist_set_max(struct pw_hist *h, uint64_t max)
{
	if (!h->total || max > h->highest ||
	    bucket_of(h->sub_bits, max) != bucket_of(h->sub_bits, h->max) ||
	    max < h->min)
		return -EINVAL;
	h->max = max;
	return 0;
}
