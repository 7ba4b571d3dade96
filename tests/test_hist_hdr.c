/* SPDX-License-Identifier: MIT */
/*
 * test_hist_hdr.c - HdrHistogram's formats (pinwheel/hist_hdr.h).
 *
 * What pinwheel writes is read back by a decoder of the test's own,
 * written from the format's public description (its own base64, its own
 * ZigZag LEB128, zlib's uncompress, HdrHistogram's index-to-value rule),
 * and every bucket count and percentile is checked against pinwheel's
 * histogram. The ".hgrm" text is parsed back row by row; the product
 * decoder gets hostile input (truncated, wrong cookies, huge lengths,
 * random damage) and must fail cleanly; interval logs round-trip.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "tests/common.h"
#include "pinwheel/hist_hdr.h"

/* ---- the test's own decoder ------------------------------------------- */

struct tdec {
	uint32_t cookie, payload_len, offset, digits;
	uint64_t lowest, highest;
	double ratio;
	uint64_t *counts; /* by HdrHistogram counts index */
	size_t ncounts;
	uint64_t total;
	unsigned half_mag; /* log2 of half the sub-bucket count */
};

static int t_b64val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Base64 to bytes; the byte count, or -1. */
static long t_unbase64(const char *s, uint8_t *out, size_t cap)
{
	uint32_t acc = 0;
	int bits = 0;
	size_t n = 0;

	for (; *s && *s != '='; s++) {
		int v = t_b64val((unsigned char)*s);
		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n == cap)
				return -1;
			out[n++] = (uint8_t)(acc >> bits);
		}
	}
	return (long)n;
}

static void t_base64(const uint8_t *in, size_t n, char *out)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t k = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t w = (uint32_t)in[i] << 16 |
			     (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) |
			     (i + 2 < n ? in[i + 2] : 0);
		out[k++] = tab[w >> 18];
		out[k++] = tab[w >> 12 & 63];
		out[k++] = i + 1 < n ? tab[w >> 6 & 63] : '=';
		out[k++] = i + 2 < n ? tab[w & 63] : '=';
	}
	out[k] = '\0';
}

static uint64_t t_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* LEB128, 64-bit variant: up to 8 bytes of 7 bits, then one of 8. */
static int64_t t_zigzag(const uint8_t **p)
{
	uint64_t v = 0;
	int shift = 0;

	for (;;) {
		uint8_t b = *(*p)++;
		if (shift == 56) {
			v |= (uint64_t)b << 56;
			break;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* HdrHistogram's value of counts index @i (lowest discernible value 1). */
static uint64_t t_value(const struct tdec *d, size_t i)
{
	uint64_t half = 1ull << d->half_mag;
	int64_t bucket = (int64_t)(i >> d->half_mag) - 1;
	uint64_t sub = (i & (half - 1)) + half;

	if (bucket < 0) {
		sub -= half;
		bucket = 0;
	}
	return sub << bucket;
}

static uint64_t t_value_high(const struct tdec *d, size_t i)
{
	int64_t bucket = (int64_t)(i >> d->half_mag) - 1;

	return t_value(d, i) + (bucket > 0 ? (1ull << bucket) : 1) - 1;
}

static void t_decode(const char *b64, struct tdec *d)
{
	size_t cap = strlen(b64);
	uint8_t *zip = malloc(cap), *raw;
	long n = t_unbase64(b64, zip, cap);

	memset(d, 0, sizeof(*d));
	cr_assert_geq(n, 8);
	cr_assert_eq(t_be(zip, 4), 0x1c849314u, "compressed cookie");
	uLongf rawlen = (uLongf)t_be(zip + 4, 4) * 64 + 4096;
	raw = malloc(rawlen);
	cr_assert_eq(t_be(zip + 4, 4), (uint64_t)n - 8, "compressed length");
	cr_assert_eq(uncompress(raw, &rawlen, zip + 8, (uLong)(n - 8)), Z_OK);
	cr_assert_geq(rawlen, 40);
	d->cookie = (uint32_t)t_be(raw, 4);
	d->payload_len = (uint32_t)t_be(raw + 4, 4);
	d->offset = (uint32_t)t_be(raw + 8, 4);
	d->digits = (uint32_t)t_be(raw + 12, 4);
	d->lowest = t_be(raw + 16, 8);
	d->highest = t_be(raw + 24, 8);
	uint64_t rb = t_be(raw + 32, 8);
	memcpy(&d->ratio, &rb, sizeof(d->ratio));
	cr_assert_eq(d->cookie, 0x1c849313u, "V2 cookie");
	cr_assert_eq(rawlen, 40 + (uLongf)d->payload_len, "payload length");
	/* sub-bucket count: 2^ceil(log2(2 * 10^digits)) */
	uint64_t want = 2;
	for (uint32_t k = 0; k < d->digits; k++)
		want *= 10;
	unsigned mag = 0;
	while ((1ull << mag) < want)
		mag++;
	d->half_mag = mag - 1;
	d->ncounts = 1u << 20;
	d->counts = calloc(d->ncounts, sizeof(uint64_t));
	const uint8_t *p = raw + 40, *end = raw + rawlen;
	size_t idx = 0;
	while (p < end) {
		int64_t v = t_zigzag(&p);
		cr_assert_leq(p, end);
		if (v < 0) {
			idx += (size_t)-v;
		} else {
			cr_assert_lt(idx, d->ncounts);
			d->counts[idx++] = (uint64_t)v;
			d->total += (uint64_t)v;
		}
	}
	free(raw);
	free(zip);
}

/* The test's percentile: HdrHistogram's getValueAtPercentile on the
 * decoded buckets (rank round(p * total), at least 1), capped at @max. */
static uint64_t t_percentile(const struct tdec *d, double p, uint64_t max)
{
	uint64_t rank = (uint64_t)(p / 100 * (double)d->total + 0.5), cum = 0;

	if (rank < 1)
		rank = 1;
	for (size_t i = 0; i < d->ncounts; i++) {
		cum += d->counts[i];
		if (cum >= rank) {
			uint64_t v = t_value_high(d, i);
			return v < max ? v : max;
		}
	}
	return max;
}

/* ---- samples ------------------------------------------------------------ */

/* Log-uniform values over 1 ns .. ~17 s, with clumps and a few clamped. */
static void fill(struct pw_hist *h, uint64_t *seed, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t r = pw_test_rng(seed);
		unsigned bits = (unsigned)(r % 35);
		uint64_t v = (pw_test_rng(seed) & ((2ull << bits) - 1)) + 1;

		if (r % 7 == 0)
			v = 40000 + r % 300; /* a clump near 40 us */
		pw_hist_record(h, v);
	}
	pw_hist_record(h, pw_hist_highest(h) + 5); /* clamped */
}

static void check_against(const struct pw_hist *h, const struct tdec *d)
{
	cr_assert_eq(d->digits, pw_hist_digits(h));
	cr_assert_eq(d->highest, pw_hist_highest(h));
	cr_assert_eq(d->lowest, 1);
	cr_assert_eq(d->offset, 0);
	cr_assert(d->ratio == 1.0);
	cr_assert_eq(d->total, pw_hist_count(h));
	/* Every bucket the test's decoder saw holds what pinwheel counted. */
	uint64_t seen = 0;
	for (size_t i = 0; i < d->ncounts; i++) {
		if (!d->counts[i])
			continue;
		uint64_t v = t_value(d, i);
		cr_assert_eq(pw_hist_lowest_equivalent(h, v), v, "index %zu",
			     i);
		cr_assert_eq(pw_hist_highest_equivalent(h, v),
			     t_value_high(d, i), "index %zu", i);
		cr_assert_eq(pw_hist_count_at(h, v), d->counts[i],
			     "bucket %zu (value %llu)", i,
			     (unsigned long long)v);
		seen += d->counts[i];
	}
	cr_assert_eq(seen, pw_hist_count(h));
	static const double ps[] = { 0.001, 1,	10,   25,    50,     75,
				     90,    99, 99.9, 99.99, 99.999, 99.9999 };
	for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++)
		cr_assert_eq(t_percentile(d, ps[k], pw_hist_max(h)),
			     pw_hist_percentile(h, ps[k]), "p%g", ps[k]);
}

Test(hist_hdr, independent_decoder_reads_every_bucket)
{
	static const unsigned digits[] = { 1, 2, 3, 4 };
	static const uint64_t highest[] = { 0, 1000000, 3600000000000ull,
					    1ull << 62 };
	uint64_t seed = 22;

	for (size_t i = 0; i < 4; i++) {
		struct pw_hist h;
		struct tdec d;
		char *b64;
		size_t len;

		cr_assert_eq(pw_hist_init(&h, highest[i], digits[i]), 0);
		fill(&h, &seed, 200000);
		cr_assert_eq(pw_hist_encode_hdr(&h, &b64, &len), 0);
		cr_assert_eq(strlen(b64), len);
		cr_assert_eq(strncmp(b64, "HISTF", 5), 0, "%.12s", b64);
		t_decode(b64, &d);
		check_against(&h, &d);

		/* And pinwheel's own decoder agrees bucket for bucket. */
		struct pw_hist back;
		cr_assert_eq(pw_hist_decode_hdr(&back, b64, len), 0);
		cr_assert_eq(pw_hist_count(&back), pw_hist_count(&h));
		cr_assert_eq(pw_hist_clamped(&back), 0);
		cr_assert_eq(back.ncounts, h.ncounts);
		cr_assert_eq(memcmp(back.counts, h.counts,
				    h.ncounts * sizeof(uint64_t)),
			     0);
		cr_assert_eq(pw_hist_percentile(&back, 99.9),
			     pw_hist_percentile(&h, 99.9));
		pw_hist_destroy(&back);
		free(d.counts);
		free(b64);
		pw_hist_destroy(&h);
	}
}

Test(hist_hdr, empty_and_single_value)
{
	struct pw_hist h, back;
	struct tdec d;
	char *b64;

	cr_assert_eq(pw_hist_init(&h, 0, 3), 0);
	cr_assert_eq(pw_hist_encode_hdr(&h, &b64, NULL), 0);
	t_decode(b64, &d);
	cr_assert_eq(d.total, 0);
	cr_assert_eq(d.payload_len, 1, "one empty bucket");
	free(d.counts);
	cr_assert_eq(pw_hist_decode_hdr(&back, b64, strlen(b64)), 0);
	cr_assert_eq(pw_hist_count(&back), 0);
	pw_hist_destroy(&back);
	free(b64);

	pw_hist_record(&h, 123456789);
	cr_assert_eq(pw_hist_encode_hdr(&h, &b64, NULL), 0);
	t_decode(b64, &d);
	check_against(&h, &d);
	free(d.counts);
	cr_assert_eq(pw_hist_decode_hdr(&back, b64, strlen(b64)), 0);
	cr_assert_eq(pw_hist_min(&back),
		     pw_hist_lowest_equivalent(&h, 123456789));
	cr_assert_eq(pw_hist_max(&back),
		     pw_hist_highest_equivalent(&h, 123456789));
	pw_hist_destroy(&back);
	free(b64);
	pw_hist_destroy(&h);
}

/* ---- .hgrm ---------------------------------------------------------------- */

struct hrow {
	double v, p;
	unsigned long long c;
};

/* Parse the .hgrm text @s: its rows into @rows, the footer numbers. */
static size_t parse_hgrm(char *s, struct hrow *rows, size_t cap, double *mean,
			 double *max, unsigned long long *count,
			 unsigned *buckets, unsigned *subs)
{
	size_t n = 0;
	char *line = strtok(s, "\n");

	cr_assert_str_eq(line, "       Value     Percentile TotalCount "
			       "1/(1-Percentile)");
	while ((line = strtok(NULL, "\n"))) {
		double inv;
		if (line[0] == '#') {
			sscanf(line, "#[Mean = %lf", mean);
			sscanf(line, "#[Mean    = %lf", mean);
			sscanf(line, "#[Max     = %lf, Total count    = %llu",
			       max, count);
			sscanf(line, "#[Buckets = %u, SubBuckets     = %u",
			       buckets, subs);
			continue;
		}
		cr_assert_lt(n, cap);
		int k = sscanf(line, "%lf %lf %llu %lf", &rows[n].v, &rows[n].p,
			       &rows[n].c, &inv);
		cr_assert(k == 4 || (k == 3 && rows[n].p == 1.0), "%s", line);
		if (k == 4)
			cr_assert(fabs(inv - 1 / (1 - rows[n].p)) <=
					  0.005 + 1e-9 * inv,
				  "%s", line);
		n++;
	}
	return n;
}

/* Values recorded in buckets up to and including @v's. */
static uint64_t cum_to(const struct pw_hist *h, uint64_t v)
{
	uint64_t c = 0, top = pw_hist_lowest_equivalent(h, v);

	for (uint64_t x = 0; x <= top; x = pw_hist_highest_equivalent(h, x) + 1)
		c += pw_hist_count_at(h, x);
	return c;
}

static void check_hgrm(const struct pw_hist *h, double ratio)
{
	static struct hrow rows[4096];
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	double mean = -1, max = -1;
	unsigned long long count = 0;
	unsigned buckets = 0, subs = 0, d = pw_hist_digits(h);
	double unit = pow(10, -(double)d) * ratio; /* a printed digit, ns */
	uint64_t n = pw_hist_count(h);

	cr_assert_eq(pw_hist_write_hgrm(h, f, ratio, 0), 0);
	fclose(f);
	size_t nrows = parse_hgrm(text, rows, 4096, &mean, &max, &count,
				  &buckets, &subs);
	cr_assert_gt(nrows, 10);
	cr_assert_eq(count, n);
	/* HdrHistogram's: the top of the maximum's bucket; the mean with
	 * each value at the middle of its bucket (within half a bucket of
	 * the exact mean). */
	cr_assert(fabs(max * ratio - (double)pw_hist_highest_equivalent(
					     h, pw_hist_max(h))) <= unit);
	cr_assert(fabs(mean * ratio - pw_hist_mean(h)) <=
			  unit + pw_hist_mean(h) / (1 << (h->sub_bits - 1)),
		  "%f %f", mean * ratio, pw_hist_mean(h));
	/* HdrHistogram's layout numbers. */
	uint64_t want = 2;
	for (unsigned k = 0; k < d; k++)
		want *= 10;
	unsigned sb = 1;
	while (sb < want)
		sb <<= 1;
	cr_assert_eq(subs, sb);
	unsigned nb = 1;
	for (uint64_t lim = sb; lim <= pw_hist_highest(h); lim <<= 1)
		nb++;
	cr_assert_eq(buckets, nb);

	double prev_p = -1;
	for (size_t r = 0; r < nrows; r++) {
		double p = rows[r].p * 100, vns = rows[r].v * ratio;
		/* The value: the top of the bucket of pinwheel's
		 * percentile at the row's exact rank, to the printed
		 * digits. */
		uint64_t at = pw_hist_highest_equivalent(
			h, pw_hist_percentile(h, 100.0 * (double)rows[r].c /
							 (double)n));
		cr_assert(fabs(vns - (double)at) <= unit / 2 + 1e-6,
			  "row %zu: %.*f vs %llu ns", r, (int)d, rows[r].v,
			  (unsigned long long)at);
		/* The count: every value up to the row's bucket. */
		cr_assert_eq(rows[r].c, cum_to(h, at), "row %zu", r);
		/* The level is reached there and not before (a bucket
		 * may give several rows). */
		cr_assert_geq((double)rows[r].c * 100.0,
			      p * (double)n * 0.999999999);
		cr_assert_geq(p, prev_p, "row %zu", r);
		/* Within a bucket of pinwheel's own percentile. */
		uint64_t pw = pw_hist_percentile(h, p);
		cr_assert_geq(at, pw, "row %zu p%g", r, p);
		prev_p = p;
	}
	cr_assert(rows[0].p == 0.0);
	cr_assert(rows[nrows - 1].p == 1.0);
	cr_assert_eq(rows[nrows - 1].c, n);
	free(text);
}

Test(hist_hdr, hgrm_rows_match_percentiles)
{
	uint64_t seed = 7;
	struct pw_hist h;

	cr_assert_eq(pw_hist_init(&h, 0, 3), 0);
	fill(&h, &seed, 100000);
	check_hgrm(&h, 1.0);
	check_hgrm(&h, PW_HDR_US);
	pw_hist_destroy(&h);
	cr_assert_eq(pw_hist_init(&h, 0, 2), 0);
	for (uint64_t v = 1000; v < 2000000; v += 997)
		pw_hist_record(&h, v);
	check_hgrm(&h, 1.0);
	check_hgrm(&h, PW_HDR_MS);
	pw_hist_destroy(&h);
}

Test(hist_hdr, hgrm_ticks_and_file)
{
	struct pw_hist h;
	char path[64], buf[256];

	cr_assert_eq(pw_hist_init(&h, 0, 2), 0);
	for (uint64_t v = 1; v <= 1000; v++)
		pw_hist_record(&h, v * 1000);
	/* 1000 distinct values, 5 ticks per half: HdrHistogram's levels
	 * 0, 10, 20, 30, 40, 50, 55, 60, ... */
	snprintf(path, sizeof(path), "/tmp/pw-hgrm-%d.hgrm", getpid());
	cr_assert_eq(pw_hist_save_hgrm(&h, path, PW_HDR_US), 0);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	double want[] = { 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65 };
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	cr_assert_str_eq(buf, "\n");
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		double v, p;
		cr_assert_not_null(fgets(buf, sizeof(buf), f));
		cr_assert_eq(sscanf(buf, "%lf %lf", &v, &p), 2);
		cr_assert(fabs(p - want[i]) < 1e-12, "row %zu: %s", i, buf);
	}
	fclose(f);
	unlink(path);
	/* Java's rounding: the shortest decimal of the level, half up
	 * (printf would print the tie 0.9997802734375 as ...437). */
	struct pw_hist d;
	char *text = NULL;
	size_t tlen = 0;
	cr_assert_eq(pw_hist_init(&d, 0, 3), 0);
	pw_hist_record_n(&d, 1, 1000000); /* a thin tail of exact buckets */
	for (uint64_t v = 2; v < 2048; v++)
		pw_hist_record(&d, v);
	f = open_memstream(&text, &tlen);
	cr_assert_eq(pw_hist_write_hgrm(&d, f, 1.0, 0), 0);
	fclose(f);
	cr_assert(strstr(text, " 0.999780273438 "), "%s", text);
	cr_assert(strstr(text, " 0.999926757813 "), "%s", text);
	free(text);
	pw_hist_destroy(&d);
	cr_assert_eq(pw_hist_save_hgrm(&h, "/nonexistent/dir/x.hgrm", 1e3),
		     -ENOENT);
	cr_assert_eq(pw_hist_write_hgrm(&h, stdout, 0, 0), -EINVAL);
	pw_hist_destroy(&h);
}

/* ---- hostile input ------------------------------------------------------ */

/* A compressed wrapper around the raw V2 bytes @raw, as base64. */
static char *wrap(const uint8_t *raw, size_t n, uint32_t cookie, long zfix)
{
	/* zfix: added to the true compressed length; above 2^31, the
	 * length itself */
	uLongf zl = compressBound((uLong)n);
	uint8_t *z = malloc(zl + 8);
	char *out;

	cr_assert_eq(compress2(z + 8, &zl, raw, (uLong)n, 6), Z_OK);
	uint64_t len = zfix > 0x7fffffffl ? (uint64_t)zfix :
					    (uint64_t)((long)zl + zfix);
	for (int i = 0; i < 4; i++) {
		z[i] = (uint8_t)(cookie >> (24 - 8 * i));
		z[4 + i] = (uint8_t)(len >> (24 - 8 * i));
	}
	out = malloc((zl + 8) / 3 * 4 + 8);
	t_base64(z, zl + 8, out);
	free(z);
	return out;
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* A V2 header for 3 digits, highest 1 hour, and @plen payload bytes. */
static size_t v2_raw(uint8_t *p, uint32_t plen, uint32_t digits,
		     uint64_t lowest, uint64_t highest)
{
	double one = 1.0;
	uint64_t bits;

	memcpy(&bits, &one, 8);
	put_be(p, 0x1c849313u, 4);
	put_be(p + 4, plen, 4);
	put_be(p + 8, 0, 4);
	put_be(p + 12, digits, 4);
	put_be(p + 16, lowest, 8);
	put_be(p + 24, highest, 8);
	put_be(p + 32, bits, 8);
	return 40;
}

static int decode(const char *b64)
{
	struct pw_hist h;
	int err = pw_hist_decode_hdr(&h, b64, strlen(b64));

	if (!err)
		pw_hist_destroy(&h);
	return err;
}

Test(hist_hdr, decoder_refuses_hostile_input)
{
	const uint64_t hour = 3600000000000ull;
	uint8_t raw[128];
	size_t n;
	char *s;

	/* A good one, built by hand: counts 5, 3 empty, 7. */
	n = v2_raw(raw, 3, 3, 1, hour);
	raw[n++] = 10; /* zigzag(5) */
	raw[n++] = 5;  /* zigzag(-3) */
	raw[n++] = 14; /* zigzag(7) */
	s = wrap(raw, n, 0x1c849314u, 0);
	struct pw_hist h;
	cr_assert_eq(pw_hist_decode_hdr(&h, s, strlen(s)), 0);
	cr_assert_eq(pw_hist_count(&h), 12);
	cr_assert_eq(pw_hist_count_at(&h, 0), 5);
	cr_assert_eq(pw_hist_count_at(&h, 4), 7);
	pw_hist_destroy(&h);
	/* Every proper prefix fails, cleanly. */
	for (size_t k = 0; k < strlen(s); k++) {
		char *p = strndup(s, k);
		int err = decode(p);
		cr_assert(err == -EINVAL || err == -EBADMSG, "prefix %zu: %d",
			  k, err);
		free(p);
	}
	free(s);
	/* Wrong cookies. */
	s = wrap(raw, n, 0x1c849313u, 0);
	cr_assert_eq(decode(s), -EINVAL);
	free(s);
	s = wrap(raw, n, 0xdeadbeefu, 0);
	cr_assert_eq(decode(s), -EINVAL);
	free(s);
	put_be(raw, 0x1c849301u, 4);
	s = wrap(raw, n, 0x1c849314u, 0);
	cr_assert_eq(decode(s), -EINVAL);
	free(s);
	put_be(raw, 0x1c849313u, 4);
	/* Compressed lengths: beyond the data, zero, huge. */
	s = wrap(raw, n, 0x1c849314u, 1);
	cr_assert_eq(decode(s), -EBADMSG);
	free(s);
	s = wrap(raw, n, 0x1c849314u, -1);
	cr_assert_eq(decode(s), -EBADMSG, "a stream cut short");
	free(s);
	s = wrap(raw, n, 0x1c849314u, 0x7fffff00l);
	cr_assert_eq(decode(s), -EBADMSG);
	free(s);
	s = wrap(raw, n, 0x1c849314u, 0xffffffffl);
	cr_assert_eq(decode(s), -EINVAL);
	free(s);
	/* Payload lengths: huge, longer than the data, shorter. */
	static const struct {
		uint32_t plen;
		int err;
	} pl[] = { { 0x7fffffffu, -EINVAL },
		   { 0xffffffffu, -EINVAL },
		   { 4, -EBADMSG },
		   { 2, -EBADMSG },
		   { 0, -EINVAL } };
	for (size_t i = 0; i < sizeof(pl) / sizeof(pl[0]); i++) {
		put_be(raw + 4, pl[i].plen, 4);
		s = wrap(raw, n, 0x1c849314u, 0);
		cr_assert_eq(decode(s), pl[i].err, "payload length %u",
			     pl[i].plen);
		free(s);
	}
	put_be(raw + 4, 3, 4);
	/* Layouts pinwheel does not take. */
	static const struct {
		uint32_t digits;
		uint64_t lowest, highest;
	} lay[] = { { 0, 1, hour },
		    { 5, 1, hour },
		    { 3, 1000, hour },
		    { 3, 1, 1ull << 63 },
		    { 3, 1, 1 } };
	for (size_t i = 0; i < sizeof(lay) / sizeof(lay[0]); i++) {
		v2_raw(raw, 3, lay[i].digits, lay[i].lowest, lay[i].highest);
		s = wrap(raw, n, 0x1c849314u, 0);
		cr_assert_eq(decode(s), -EINVAL, "layout %zu", i);
		free(s);
	}
	/* Counts past the end of the layout, a count cut short. */
	n = v2_raw(raw, 4, 3, 1, 1000000);
	raw[n++] = 0xfd; /* zigzag(-2^20 - ...): a long empty run */
	raw[n++] = 0xff;
	raw[n++] = 0x7f;
	raw[n++] = 2;
	s = wrap(raw, n, 0x1c849314u, 0);
	cr_assert_eq(decode(s), -EBADMSG);
	free(s);
	n = v2_raw(raw, 2, 3, 1, 1000000);
	raw[n++] = 2;
	raw[n++] = 0x80;
	s = wrap(raw, n, 0x1c849314u, 0);
	cr_assert_eq(decode(s), -EBADMSG);
	free(s);
	/* Not base64. */
	cr_assert_eq(decode("HISTF!!!"), -EINVAL);
	cr_assert_eq(decode("HIS"), -EINVAL);
	cr_assert_eq(decode(""), -EINVAL);
	cr_assert_eq(decode("HI=S"), -EINVAL);
}

Test(hist_hdr, decoder_survives_random_damage)
{
	uint64_t seed = 99;
	struct pw_hist h;
	char *good;
	size_t len;
	unsigned ok = 0;

	cr_assert_eq(pw_hist_init(&h, 0, 2), 0);
	fill(&h, &seed, 5000);
	cr_assert_eq(pw_hist_encode_hdr(&h, &good, &len), 0);
	pw_hist_destroy(&h);
	/* Damage the bytes under the base64 (so it still is base64). */
	uint8_t *bytes = malloc(len), *m = malloc(len);
	char *s = malloc(len + 8);
	long nb = t_unbase64(good, bytes, len);
	cr_assert_gt(nb, 16);
	for (int round = 0; round < 3000; round++) {
		memcpy(m, bytes, (size_t)nb);
		unsigned flips = 1 + (unsigned)(pw_test_rng(&seed) % 4);
		for (unsigned k = 0; k < flips; k++) {
			uint64_t r = pw_test_rng(&seed);
			m[r % (uint64_t)nb] ^= (uint8_t)(1u << (r >> 32) % 8);
		}
		size_t keep =
			round % 5 ? (size_t)nb :
				    (size_t)(pw_test_rng(&seed) % (uint64_t)nb);
		t_base64(m, keep, s);
		int err = decode(s);
		cr_assert(err == 0 || err == -EINVAL || err == -EBADMSG, "%d",
			  err);
		ok += err == 0;
	}
	/* Damage past zlib's checksum is caught: few survive. */
	cr_assert_lt(ok, 300);
	free(bytes);
	free(m);
	free(s);
	free(good);
}

Test(hist_hdr, add_refuses_another_layout)
{
	struct pw_hist a, b;
	char *s;

	cr_assert_eq(pw_hist_init(&a, 0, 3), 0);
	cr_assert_eq(pw_hist_init(&b, 0, 2), 0);
	pw_hist_record(&b, 1000);
	cr_assert_eq(pw_hist_encode_hdr(&b, &s, NULL), 0);
	cr_assert_eq(pw_hist_add_hdr(&a, s, strlen(s)), -EINVAL);
	cr_assert_eq(pw_hist_count(&a), 0);
	cr_assert_eq(pw_hist_add_hdr(&b, s, strlen(s)), 0);
	cr_assert_eq(pw_hist_count(&b), 2);
	cr_assert_eq(pw_hist_digits(&a), 3);
	cr_assert_eq(pw_hist_digits(&b), 2);
	cr_assert_eq(pw_hist_highest(&a), PW_HIST_HOUR_NS);
	free(s);
	pw_hist_destroy(&a);
	pw_hist_destroy(&b);
}

/* ---- the interval log ----------------------------------------------------- */

Test(hist_hdr, interval_log_round_trip)
{
	struct pw_hist iv[3], all, back;
	struct pw_hdr_log log;
	struct pw_hdr_log_info info;
	char *text = NULL;
	size_t tlen = 0;
	uint64_t seed = 3;
	FILE *f = open_memstream(&text, &tlen);

	cr_assert_eq(pw_hist_init(&all, 0, 3), 0);
	cr_assert_eq(pw_hdr_log_init(&log, f, 1733212800.25, 0), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(pw_hist_init(&iv[i], 0, 3), 0);
		fill(&iv[i], &seed, 3000 * (unsigned)(i + 1));
		pw_hist_merge(&all, &iv[i]);
		cr_assert_eq(pw_hdr_log_write(&log, &iv[i], i, 1.0), 0);
	}
	cr_assert_eq(pw_hdr_log_close(&log), 0);
	fclose(f);
	cr_assert(strstr(text, "#[StartTime: 1733212800.250 (seconds since "
			       "epoch), Tue Dec 03 08:00:00 UTC 2024]\n"),
		  "%s", text);
	cr_assert(strstr(text, "#[BaseTime: 1733212800.250 (seconds since "
			       "epoch)]\n"));
	cr_assert(strstr(text, "\n\"StartTimestamp\",\"Interval_Length\","
			       "\"Interval_Max\","
			       "\"Interval_Compressed_Histogram\"\n"));
	/* The test's own reading of each interval line. */
	char *save, *line = strtok_r(strdup(text), "\n", &save), *first = line;
	int k = 0;
	for (; line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || line[0] == '"')
			continue;
		double st, len, max;
		char b64[200000];
		cr_assert_eq(sscanf(line, "%lf,%lf,%lf,%199999s", &st, &len,
				    &max, b64),
			     4, "%s", line);
		cr_assert(fabs(st - k) < 1e-9 && len == 1.0);
		cr_assert(fabs(max - (double)pw_hist_max(&iv[k]) / 1e6) <=
			  0.0005);
		struct tdec d;
		t_decode(b64, &d);
		check_against(&iv[k], &d);
		free(d.counts);
		k++;
	}
	free(first);
	cr_assert_eq(k, 3);
	/* pinwheel's reader merges them. */
	f = fmemopen(text, tlen, "r");
	cr_assert_eq(pw_hdr_log_read(f, &back, &info), 0, "%s", info.error);
	fclose(f);
	cr_assert_eq(info.intervals, 3);
	cr_assert(fabs(info.start_s - 1733212800.25) < 1e-6);
	cr_assert(fabs(info.end_s - 3.0) < 1e-9);
	cr_assert_eq(pw_hist_count(&back), pw_hist_count(&all));
	cr_assert_eq(memcmp(back.counts, all.counts,
			    all.ncounts * sizeof(uint64_t)),
		     0);
	pw_hist_destroy(&back);
	for (int i = 0; i < 3; i++)
		pw_hist_destroy(&iv[i]);
	pw_hist_destroy(&all);
	free(text);
}

Test(hist_hdr, interval_log_reader_errors)
{
	static const struct {
		const char *text;
		int err;
		unsigned long line;
	} cases[] = {
		{ "#[StartTime: 5 (seconds since epoch)]\n", -ENODATA, 0 },
		{ "", -ENODATA, 0 },
		{ "#c\n0.0,1.0,2.0,HISTFAAAAB\n", -EINVAL, 2 },
		{ "0.0,1.0\n", -EINVAL, 1 },
		{ "garbage\n", -EINVAL, 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pw_hist h;
		struct pw_hdr_log_info info;
		FILE *f = fmemopen((void *)cases[i].text,
				   strlen(cases[i].text) + 1, "r");
		/* fmemopen of "" with size 1 reads a NUL: skip that one */
		if (!cases[i].text[0]) {
			fclose(f);
			f = fopen("/dev/null", "r");
		}
		cr_assert_eq(pw_hdr_log_read(f, &h, &info), cases[i].err,
			     "case %zu", i);
		cr_assert_eq(info.line, cases[i].line, "case %zu", i);
		cr_assert_not_null(info.error);
		fclose(f);
	}
	/* Two layouts in one log. */
	struct pw_hist a, b, h;
	struct pw_hdr_log log;
	struct pw_hdr_log_info info;
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	pw_hist_init(&a, 0, 3);
	pw_hist_init(&b, 0, 2);
	pw_hist_record(&a, 5);
	pw_hist_record(&b, 5);
	pw_hdr_log_init(&log, f, 0, 0);
	pw_hdr_log_write(&log, &a, 0, 1);
	pw_hdr_log_write(&log, &b, 1, 1);
	pw_hdr_log_close(&log);
	fclose(f);
	f = fmemopen(text, tlen, "r");
	cr_assert_eq(pw_hdr_log_read(f, &h, &info), -EINVAL);
	cr_assert_eq(info.line, 7);
	cr_assert(strstr(info.error, "significant digits"), "%s", info.error);
	fclose(f);
	free(text);
	pw_hist_destroy(&a);
	pw_hist_destroy(&b);
}

/* ---- HdrHistogram itself, when it is installed ---------------------------- */

static const char ref_java[] =
	"import org.HdrHistogram.*;\n"
	"public class Ref {\n"
	"  public static void main(String[] a) throws Exception {\n"
	"    HistogramLogReader r = new HistogramLogReader(a[0]);\n"
	"    Histogram sum = null;\n"
	"    EncodableHistogram e;\n"
	"    while ((e = r.nextIntervalHistogram()) != null) {\n"
	"      if (sum == null) sum = ((Histogram) e).copy();\n"
	"      else sum.add((Histogram) e);\n"
	"    }\n"
	"    sum.outputPercentileDistribution(System.out, 5,\n"
	"        Double.parseDouble(a[1]));\n"
	"  }\n"
	"}\n";

/*
 * HdrHistogram's Java library (Debian: libhdrhistogram-java, with a JDK)
 * reads pinwheel's interval log, and the percentile distribution it
 * prints of it is pinwheel's .hgrm byte for byte. Skipped without it.
 */
Test(hist_hdr, hdrhistogram_reads_the_log_and_prints_the_same_hgrm)
{
	static const char jar[] = "/usr/share/java/hdrhistogram.jar";
	char dir[64], cmd[512], path[128];
	struct pw_hist h[2];
	struct pw_hdr_log log;
	uint64_t seed = 11;

	if (access(jar, R_OK) || system("javac -version >/dev/null 2>&1"))
		cr_skip_test("needs %s and javac (libhdrhistogram-java, "
			     "default-jdk)",
			     jar);
	snprintf(dir, sizeof(dir), "/tmp/pw-hdr-ref-%d", getpid());
	cr_assert_eq(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/Ref.java", dir);
	FILE *f = fopen(path, "w");
	fputs(ref_java, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/run.hlog", dir);
	cr_assert_eq(pw_hdr_log_open(&log, path, 1733212800.0, 0), 0);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(pw_hist_init(&h[i], 0, 3), 0);
		fill(&h[i], &seed, 40000);
		cr_assert_eq(pw_hdr_log_write(&log, &h[i], i, 1.0), 0);
	}
	cr_assert_eq(pw_hdr_log_close(&log), 0);
	pw_hist_merge(&h[0], &h[1]);
	snprintf(path, sizeof(path), "%s/pw.hgrm", dir);
	cr_assert_eq(pw_hist_save_hgrm(&h[0], path, PW_HDR_US), 0);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && javac -cp %s Ref.java && java -cp %s:. Ref "
		 "run.hlog 1000 > ref.hgrm && cmp ref.hgrm pw.hgrm",
		 dir, jar, jar);
	int st = system(cmd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
	cr_assert_eq(st, 0, "HdrHistogram's .hgrm differs from pinwheel's");
	pw_hist_destroy(&h[0]);
	pw_hist_destroy(&h[1]);
}
