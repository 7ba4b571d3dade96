/* SPDX-License-Identifier: MIT */
/*
 * hist_hdr.c - HdrHistogram's file formats for pw_hist (see
 * pinwheel/hist_hdr.h): the ".hgrm" percentile distribution, the V2
 * compressed encoding (writer and a decoder that takes hostile input),
 * and the interval log.
 *
 * The bucket math is hist.c's (core/hist_int.h): a pw_hist bucket index
 * is HdrHistogram's counts index. What is here is the formats alone,
 * written from their public description.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "core/flush.h"
#include "core/hist_int.h"
#include "pinwheel/hist_hdr.h"
#include "pinwheel/version.h"

/* Cookies; the 0x10 bit of the low byte marks the V2 count encoding, and
 * readers compare with it (and the word size nibble) masked off. */
#define V2_COOKIE_BASE	   0x1c849303u
#define V2_ZIP_COOKIE_BASE 0x1c849304u
#define COOKIE_FLAGS	   0x10u
#define COOKIE_MASK	   0xffffff0fu
#define V2_HEADER	   40 /* bytes before the counts */
#define ZIP_HEADER	   8  /* cookie and compressed length */
#define LEB_MAX		   9  /* bytes of one count, at most */
#define B64_MAX		   (64u << 20)

static bool usable(const struct pw_hist *h)
{
	return h && h->counts && h->sub_bits;
}

unsigned pw_hist_digits(const struct pw_hist *h)
{
	return usable(h) ? pw__hist_digits(h) : 0;
}

uint64_t pw_hist_highest(const struct pw_hist *h)
{
	return usable(h) ? h->highest : 0;
}

/* ---- the percentile distribution ------------------------------------ */

/* The shortest decimal digits of @v that read back as @v, into @dig
 * (NUL-terminated), and the power of ten of the first one. */
static int shortest_digits(double v, char *dig)
{
	char e[48], *p = e;
	int prec, n = 0;

	for (prec = 1; prec < 17; prec++) {
		snprintf(e, sizeof(e), "%.*e", prec - 1, v);
		if (strtod(e, NULL) == v)
			break;
	}
	snprintf(e, sizeof(e), "%.*e", prec - 1, v);
	for (; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			dig[n++] = *p;
	dig[n] = '\0';
	return *p ? atoi(p + 1) : 0;
}

/* The digit of the place 10^@q in digits @dig (@nd of them, the first
 * at 10^@exp10). */
static char digit_at(const char *dig, int nd, int exp10, int q)
{
	int k = exp10 - q;

	return k >= 0 && k < nd ? dig[k] : '0';
}

/*
 * @v (>= 0, finite) with @dec decimals, right-aligned in @width, as
 * HdrHistogram's Java formatter prints it: the shortest decimal that
 * reads back as @v, rounded half up (C's printf rounds the exact binary
 * value, so the two differ on ties such as 0.9997802734375).
 */
static void put_fixed(FILE *f, int width, int dec, double v)
{
	char dig[32], out[64], *o = out + 1;
	int top, nd, exp10;
	bool up;

	if (!(v >= 0) || v > 1e30) {
		fprintf(f, "%*.*f", width, dec, v);
		return;
	}
	exp10 = shortest_digits(v, dig);
	nd = (int)strlen(dig);
	top = exp10 > 0 ? exp10 : 0;
	out[0] = '0'; /* room for a carry */
	for (int q = top; q >= -dec; q--) {
		if (q == -1)
			*o++ = '.';
		*o++ = digit_at(dig, nd, exp10, q);
	}
	up = digit_at(dig, nd, exp10, -dec - 1) >= '5';
	*o = '\0';
	for (char *p = o - 1; up && p >= out; p--) {
		if (*p == '.')
			continue;
		up = *p == '9';
		*p = up ? '0' : (char)(*p + 1);
	}
	fprintf(f, "%*s", width, out[0] == '0' ? out + 1 : out);
}

/* HdrHistogram's middle value of bucket @i. */
static uint64_t bucket_mid(const struct pw_hist *h, uint32_t i)
{
	uint64_t low = pw__hist_bucket_low(h, i);

	return low + ((pw__hist_bucket_high(h, i) - low + 1) >> 1);
}

/* The percentile level after @level: fixed steps within each half of
 * the distance left to 100%, @ticks steps per half. */
static double next_level(double level, unsigned ticks)
{
	double halvings;

	if (!(level < 100.0))
		return HUGE_VAL;
	halvings = floor(log(100.0 / (100.0 - level)) / log(2.0));
	return level + 100.0 / ((double)ticks * pow(2.0, halvings + 1));
}

static void hgrm_row(FILE *f, const struct pw_hist *h, unsigned d, double ratio,
		     uint32_t i, double level, uint64_t cum)
{
	double q = level / 100.0;

	put_fixed(f, 12, (int)d, (double)pw__hist_bucket_high(h, i) / ratio);
	fputc(' ', f);
	put_fixed(f, 2, 12, q);
	fprintf(f, " %10llu", (unsigned long long)cum);
	if (level < 100.0) {
		fputc(' ', f);
		put_fixed(f, 14, 2, 1.0 / (1.0 - q));
	}
	fputc('\n', f);
}

/* The rows: walk the buckets once; a bucket gives a row for each level
 * its cumulative count reaches; then a last row at 100%. */
static void hgrm_rows(FILE *f, const struct pw_hist *h, unsigned d,
		      double ratio, unsigned ticks)
{
	/* Once the count is complete, only the row at 100% follows. */
	double level = 0.0, total = (double)h->total;
	uint64_t cum = 0;
	uint32_t i = 0, last = 0;

	for (; i < h->ncounts && cum < h->total; i++) {
		uint64_t c = h->counts[i];

		if (!c)
			continue;
		cum += c;
		last = i;
		while (100.0 * (double)cum / total >= level) {
			hgrm_row(f, h, d, ratio, i, level, cum);
			level = next_level(level, ticks);
			if (cum == h->total)
				break; /* the rest is the row at 100% */
		}
	}
	if (h->total)
		hgrm_row(f, h, d, ratio, last, 100.0, h->total);
}

/* HdrHistogram's mean and standard deviation: each bucket counted at its
 * middle value, summed in bucket order as it does. */
static void hgrm_moments(const struct pw_hist *h, double *mean, double *sd)
{
	double acc = 0;

	*mean = *sd = 0;
	if (!h->total)
		return;
	for (uint32_t i = 0; i < h->ncounts; i++)
		if (h->counts[i])
			acc += (double)bucket_mid(h, i) * (double)h->counts[i];
	*mean = acc / (double)h->total;
	acc = 0;
	for (uint32_t i = 0; i < h->ncounts; i++) {
		double dev = (double)bucket_mid(h, i) - *mean;

		if (h->counts[i])
			acc += dev * dev * (double)h->counts[i];
	}
	*sd = sqrt(acc / (double)h->total);
}

int pw_hist_write_hgrm(const struct pw_hist *h, FILE *f, double ratio,
		       unsigned ticks)
{
	double mean, sd;
	uint64_t max;
	unsigned d;

	if (!usable(h) || !f || !(ratio > 0))
		return -EINVAL;
	d = pw__hist_digits(h);
	fprintf(f, "%12s %14s %10s %14s\n\n", "Value", "Percentile",
		"TotalCount", "1/(1-Percentile)");
	hgrm_rows(f, h, d, ratio, ticks ? ticks : PW_HDR_TICKS);
	hgrm_moments(h, &mean, &sd);
	max = h->total ? pw_hist_highest_equivalent(h, h->max) : 0;
	fprintf(f, "#[Mean    = ");
	put_fixed(f, 12, (int)d, mean / ratio);
	fprintf(f, ", StdDeviation   = ");
	put_fixed(f, 12, (int)d, sd / ratio);
	fprintf(f, "]\n#[Max     = ");
	put_fixed(f, 12, (int)d, (double)max / ratio);
	fprintf(f, ", Total count    = %12llu]\n",
		(unsigned long long)h->total);
	fprintf(f, "#[Buckets = %12u, SubBuckets     = %12u]\n",
		pw__hist_buckets(h), 1u << h->sub_bits);
	return pw__flushed(f);
}

/* @path opened for writing, or stdout for "-". */
static FILE *open_out(const char *path, bool *owns)
{
	*owns = strcmp(path, "-") != 0;
	return *owns ? fopen(path, "we") : stdout;
}

int pw_hist_save_hgrm(const struct pw_hist *h, const char *path, double ratio)
{
	bool owns;
	FILE *f;
	int err;

	if (!usable(h) || !path || !(ratio > 0))
		return -EINVAL;
	f = open_out(path, &owns);
	if (!f)
		return -errno;
	err = pw_hist_write_hgrm(h, f, ratio, 0);
	if (owns && fclose(f) && !err)
		err = -EIO;
	return err;
}

/* ---- bytes: big-endian fields, ZigZag LEB128, base64 ---------------- */

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* One signed number as ZigZag LEB128, at most 9 bytes: 7 bits per byte
 * with a continuation bit, and all 8 bits in a ninth. Returns bytes. */
static size_t leb_put(uint8_t *p, int64_t v)
{
	uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	size_t n = 0;

	while (n < 8 && z >> 7) {
		p[n++] = (uint8_t)(z & 0x7f) | 0x80;
		z >>= 7;
	}
	p[n++] = (uint8_t)z;
	return n;
}

/* The number at *@p (before @end); advances *@p. false when cut short. */
static bool leb_get(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	uint64_t z = 0;
	unsigned k;

	for (k = 0; k < 8; k++) {
		if (*p >= end)
			return false;
		uint8_t b = *(*p)++;
		z |= (uint64_t)(b & 0x7f) << (7 * k);
		if (!(b & 0x80))
			break;
	}
	if (k == 8) {
		if (*p >= end)
			return false;
		z |= (uint64_t) * (*p)++ << 56;
	}
	*v = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
	return true;
}

static const char b64_digits[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const uint8_t *in, size_t n, size_t *len)
{
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t w = (uint32_t)in[i] << 16;
		if (i + 1 < n)
			w |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			w |= in[i + 2];
		*o++ = b64_digits[w >> 18];
		*o++ = b64_digits[(w >> 12) & 63];
		*o++ = i + 1 < n ? b64_digits[(w >> 6) & 63] : '=';
		*o++ = i + 2 < n ? b64_digits[w & 63] : '=';
	}
	*o = '\0';
	*len = (size_t)(o - out);
	return out;
}

static int b64_value(char c)
{
	const char *p = c ? strchr(b64_digits, c) : NULL;

	return p ? (int)(p - b64_digits) : -1;
}

/* Strict base64 (padded, nothing else) into a malloc'd buffer. */
static int b64_decode(const char *s, size_t len, uint8_t **out, size_t *n)
{
	size_t pad = 0, k = 0;
	uint8_t *buf;

	if (!len || len % 4 || len > B64_MAX)
		return -EINVAL;
	pad = (s[len - 1] == '=') + (s[len - 2] == '=');
	if (s[len - 1] != '=' && s[len - 2] == '=')
		return -EINVAL;
	buf = malloc(len / 4 * 3);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < len; i += 4) {
		uint32_t w = 0;
		for (size_t j = 0; j < 4; j++) {
			int v = i + j >= len - pad ? 0 : b64_value(s[i + j]);
			if (v < 0) {
				free(buf);
				return -EINVAL;
			}
			w = w << 6 | (uint32_t)v;
		}
		buf[k++] = (uint8_t)(w >> 16);
		buf[k++] = (uint8_t)(w >> 8);
		buf[k++] = (uint8_t)w;
	}
	*out = buf;
	*n = k - pad;
	return 0;
}

/* ---- the V2 encoding ------------------------------------------------- */

/* The counts of @h as V2 payload into @p (room for LEB_MAX per bucket
 * used); returns its length, or 0 for a count the format cannot hold. */
static size_t v2_counts(const struct pw_hist *h, uint8_t *p)
{
	uint32_t limit = 0, i = 0;
	size_t n = 0;

	for (uint32_t j = 0; j < h->ncounts; j++)
		if (h->counts[j])
			limit = j + 1;
	if (!limit)
		limit = 1; /* an empty histogram: one empty bucket */
	while (i < limit) {
		uint64_t c = h->counts[i];
		uint32_t zeros = 0;

		if (c > INT64_MAX)
			return 0;
		while (!c && i + zeros < limit && !h->counts[i + zeros])
			zeros++;
		if (zeros > 1) {
			n += leb_put(p + n, -(int64_t)zeros);
			i += zeros;
		} else {
			n += leb_put(p + n, (int64_t)c);
			i++;
		}
	}
	return n;
}

/* The uncompressed V2 encoding of @h, malloc'd. */
static int v2_encode(const struct pw_hist *h, uint8_t **out, size_t *len)
{
	uint8_t *p = malloc(V2_HEADER + (size_t)h->ncounts * LEB_MAX + LEB_MAX);
	size_t n;
	double one = 1.0;
	uint64_t bits;

	if (!p)
		return -ENOMEM;
	n = v2_counts(h, p + V2_HEADER);
	if (!n) {
		free(p);
		return -ERANGE;
	}
	memcpy(&bits, &one, sizeof(bits));
	put32(p, V2_COOKIE_BASE | COOKIE_FLAGS);
	put32(p + 4, (uint32_t)n);
	put32(p + 8, 0); /* normalizing index offset */
	put32(p + 12, pw__hist_digits(h));
	put64(p + 16, 1); /* lowest discernible value */
	put64(p + 24, h->highest);
	put64(p + 32, bits); /* integer to double ratio */
	*out = p;
	*len = V2_HEADER + n;
	return 0;
}

int pw_hist_encode_hdr(const struct pw_hist *h, char **out, size_t *len)
{
	uint8_t *raw, *zip;
	uLongf zlen;
	size_t n, blen;
	int err;

	if (!usable(h) || !out)
		return -EINVAL;
	if ((err = v2_encode(h, &raw, &n)))
		return err;
	zlen = compressBound((uLong)n);
	zip = malloc(ZIP_HEADER + zlen);
	if (!zip) {
		free(raw);
		return -ENOMEM;
	}
	err = compress2(zip + ZIP_HEADER, &zlen, raw, (uLong)n,
			Z_DEFAULT_COMPRESSION);
	free(raw);
	if (err != Z_OK) {
		free(zip);
		return -ENOMEM;
	}
	put32(zip, V2_ZIP_COOKIE_BASE | COOKIE_FLAGS);
	put32(zip + 4, (uint32_t)zlen);
	*out = b64_encode(zip, ZIP_HEADER + zlen, &blen);
	free(zip);
	if (!*out)
		return -ENOMEM;
	if (len)
		*len = blen;
	return 0;
}

/* ---- decoding --------------------------------------------------------- */

/* Inflate into @dst exactly @n bytes; -EBADMSG on a zlib error or a
 * stream that ends first. */
static int inflate_exact(z_stream *z, uint8_t *dst, size_t n)
{
	z->next_out = dst;
	z->avail_out = (uInt)n;
	while (z->avail_out) {
		int rc = inflate(z, Z_NO_FLUSH);
		if (rc == Z_STREAM_END && z->avail_out)
			return -EBADMSG;
		if (rc == Z_STREAM_END)
			break;
		if (rc != Z_OK)
			return rc == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
	}
	return 0;
}

/* The stream is whole and holds nothing more. */
static int inflate_end_check(z_stream *z)
{
	uint8_t extra;
	int rc;

	z->next_out = &extra;
	z->avail_out = 1;
	rc = inflate(z, Z_FINISH);
	return rc == Z_STREAM_END && z->avail_out == 1 ? 0 : -EBADMSG;
}

/* Check a V2 header and set up @h for it; *@payload gets the counts'
 * length in bytes. */
static int v2_header(const uint8_t *p, struct pw_hist *h, size_t *payload)
{
	uint32_t digits = get32(p + 12), len = get32(p + 4);
	uint64_t lowest = get64(p + 16), highest = get64(p + 24);
	uint64_t ratio = get64(p + 32), one;
	double d1 = 1.0;
	int err;

	memcpy(&one, &d1, sizeof(one));
	if ((get32(p) & COOKIE_MASK) != V2_COOKIE_BASE || get32(p + 8) ||
	    digits < 1 || digits > 4 || lowest != 1 || highest < 2 ||
	    highest > PW__HIST_HIGHEST_MAX || ratio != one || !len)
		return -EINVAL;
	if ((err = pw_hist_init(h, highest, digits)))
		return err;
	/* No layout needs more than LEB_MAX bytes per bucket. */
	if ((uint64_t)len > ((uint64_t)pw__hist_buckets(h) + 1) *
				    (1u << (h->sub_bits - 1)) * LEB_MAX) {
		pw_hist_destroy(h);
		return -EINVAL;
	}
	*payload = len;
	return 0;
}

/* Count one bucket, index @i of HdrHistogram's array (@cap long). */
static int v2_count(struct pw_hist *h, uint64_t i, uint64_t cap, uint64_t c,
		    uint64_t *clamped)
{
	uint64_t *slot;

	if (i >= cap)
		return -EBADMSG;
	if (i >= h->ncounts) {
		if (__builtin_add_overflow(*clamped, c, clamped))
			return -EBADMSG;
		i = h->ncounts - 1;
	}
	slot = &h->counts[i];
	return __builtin_add_overflow(*slot, c, slot) ? -EBADMSG : 0;
}

/* The payload's counts into @h. */
static int v2_payload(struct pw_hist *h, const uint8_t *p, size_t n)
{
	const uint8_t *end = p + n;
	uint64_t cap =
		((uint64_t)pw__hist_buckets(h) + 1) * (1u << (h->sub_bits - 1));
	uint64_t i = 0, clamped = 0;
	int64_t v;
	int err;

	while (p < end) {
		if (!leb_get(&p, end, &v))
			return -EBADMSG;
		if (v < 0) {
			if (v == INT64_MIN || (uint64_t)-v > cap - i)
				return -EBADMSG;
			i += (uint64_t)-v;
			continue;
		}
		if ((err = v2_count(h, i++, cap, (uint64_t)v, &clamped)))
			return err;
	}
	return pw__hist_set_counts(h, clamped) ? -EBADMSG : 0;
}

/* The compressed wrapper @zip (@n bytes) into @h. */
static int v2_unzip(struct pw_hist *h, const uint8_t *zip, size_t n)
{
	uint8_t head[V2_HEADER], *payload = NULL;
	z_stream z;
	size_t plen = 0;
	uint32_t zlen;
	int err;

	if (n < ZIP_HEADER || (get32(zip) & COOKIE_MASK) != V2_ZIP_COOKIE_BASE)
		return -EINVAL;
	zlen = get32(zip + 4);
	if (!zlen || zlen > INT32_MAX)
		return -EINVAL;
	if (zlen > n - ZIP_HEADER)
		return -EBADMSG;
	memset(&z, 0, sizeof(z));
	if (inflateInit(&z) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)(uintptr_t)(zip + ZIP_HEADER);
	z.avail_in = zlen;
	err = inflate_exact(&z, head, sizeof(head));
	if (!err)
		err = v2_header(head, h, &plen);
	if (!err && !(payload = malloc(plen)))
		err = -ENOMEM;
	else if (!err && !(err = inflate_exact(&z, payload, plen)) &&
		 !(err = inflate_end_check(&z)))
		err = v2_payload(h, payload, plen);
	if (err && plen)
		pw_hist_destroy(h);
	free(payload);
	inflateEnd(&z);
	return err;
}

int pw_hist_decode_hdr(struct pw_hist *h, const char *b64, size_t len)
{
	uint8_t *zip;
	size_t n;
	int err;

	if (!h || !b64)
		return -EINVAL;
	if ((err = b64_decode(b64, len, &zip, &n)))
		return err;
	err = v2_unzip(h, zip, n);
	free(zip);
	return err;
}

int pw_hist_add_hdr(struct pw_hist *dst, const char *b64, size_t len)
{
	struct pw_hist h;
	int err;

	if (!usable(dst))
		return -EINVAL;
	if ((err = pw_hist_decode_hdr(&h, b64, len)))
		return err;
	if (h.sub_bits != dst->sub_bits || h.highest != dst->highest)
		err = -EINVAL;
	else
		err = pw_hist_merge(dst, &h);
	pw_hist_destroy(&h);
	return err;
}

/* ---- the interval log ------------------------------------------------- */

int pw_hdr_log_init(struct pw_hdr_log *log, FILE *f, double start_s,
		    double max_ratio)
{
	char when[64] = "";
	time_t t = (time_t)start_s;
	struct tm tm;

	if (!log || !f || max_ratio < 0)
		return -EINVAL;
	log->f = f;
	log->owns_f = false;
	log->max_ratio = max_ratio > 0 ? max_ratio : PW_HDR_MS;
	log->err = 0;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%a %b %d %H:%M:%S UTC %Y", &tm);
	fprintf(f, "#[Logged with pinwheel %s]\n", PW_VERSION);
	fprintf(f, "#[Histogram log format version 1.3]\n");
	fprintf(f, "#[StartTime: %.3f (seconds since epoch), %s]\n", start_s,
		when);
	fprintf(f, "#[BaseTime: %.3f (seconds since epoch)]\n", start_s);
	fprintf(f, "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\","
		   "\"Interval_Compressed_Histogram\"\n");
	return log->err = pw__flushed(f);
}

int pw_hdr_log_open(struct pw_hdr_log *log, const char *path, double start_s,
		    double max_ratio)
{
	bool owns;
	FILE *f;
	int err;

	if (!log || !path || max_ratio < 0)
		return -EINVAL;
	f = open_out(path, &owns);
	if (!f)
		return -errno;
	err = pw_hdr_log_init(log, f, start_s, max_ratio);
	log->owns_f = owns;
	if (err && owns) {
		fclose(f);
		log->f = NULL;
	}
	return err;
}

int pw_hdr_log_write(struct pw_hdr_log *log, const struct pw_hist *h,
		     double start_s, double length_s)
{
	char *b64;
	int err;

	if (!log || !log->f || !usable(h))
		return -EINVAL;
	if ((err = pw_hist_encode_hdr(h, &b64, NULL))) {
		if (!log->err)
			log->err = err;
		return err;
	}
	fprintf(log->f, "%.3f,%.3f,%.3f,%s\n", start_s, length_s,
		(double)pw_hist_max(h) / log->max_ratio, b64);
	free(b64);
	err = ferror(log->f) ? -EIO : 0;
	if (err && !log->err)
		log->err = err;
	return err;
}

int pw_hdr_log_close(struct pw_hdr_log *log)
{
	int err;

	if (!log || !log->f)
		return 0;
	err = pw__flushed(log->f);
	if (log->owns_f && fclose(log->f))
		err = -EIO;
	log->f = NULL;
	return log->err ? log->err : err;
}

/* A "#[NAME: seconds ..." line's number into *@v, if it is one. */
static void log_time(const char *line, const char *name, double *v)
{
	size_t n = strlen(name);

	if (!strncmp(line, name, n))
		*v = strtod(line + n, NULL);
}

/* Parse an interval line (its end of line cut) into @h and its times. */
static int log_interval(char *line, struct pw_hist *h, double *start,
			double *length, const char **why)
{
	char *p = line, *e;
	int err;

	if (!strncmp(p, "Tag=", 4)) {
		p = strchr(p, ',');
		if (!p++)
			goto bad;
	}
	*start = strtod(p, &e);
	if (e == p || *e != ',')
		goto bad;
	*length = strtod(p = e + 1, &e);
	if (e == p || *e != ',')
		goto bad;
	strtod(p = e + 1, &e); /* the maximum: the buckets have it */
	if (e == p || *e != ',')
		goto bad;
	p = e + 1;
	err = pw_hist_decode_hdr(h, p, strlen(p));
	if (err)
		*why = err == -ENOMEM ? "out of memory" :
		       err == -EINVAL ? "not a histogram pinwheel can read" :
					"a truncated or corrupt histogram";
	return err;
bad:
	*why = "not an interval line (start,length,max,histogram)";
	return -EINVAL;
}

/* Merge one interval @h into @sum (set up by the first). */
static int log_merge(struct pw_hist *sum, struct pw_hist *h,
		     struct pw_hdr_log_info *info)
{
	int err = 0;

	if (!info->intervals) {
		*sum = *h;
		return 0;
	}
	if (h->sub_bits != sum->sub_bits || h->highest != sum->highest) {
		info->error = "the intervals differ in significant digits "
			      "or highest value";
		err = -EINVAL;
	} else {
		err = pw_hist_merge(sum, h);
	}
	pw_hist_destroy(h);
	return err;
}

/* One line of the log; *@sum and @info updated. */
static int log_line(char *line, struct pw_hist *sum,
		    struct pw_hdr_log_info *info)
{
	struct pw_hist h;
	double start, length;
	int err;

	line[strcspn(line, "\r\n")] = '\0';
	if (line[0] == '#') {
		log_time(line, "#[StartTime: ", &info->start_s);
		log_time(line, "#[BaseTime: ", &info->base_s);
		return 0;
	}
	if (!line[0] || !strncmp(line, "\"StartTimestamp\"", 16))
		return 0;
	if ((err = log_interval(line, &h, &start, &length, &info->error)))
		return err;
	if ((err = log_merge(sum, &h, info)))
		return err;
	if (!info->intervals++)
		info->first_s = start;
	if (start + length > info->end_s)
		info->end_s = start + length;
	return 0;
}

int pw_hdr_log_read(FILE *f, struct pw_hist *sum, struct pw_hdr_log_info *info)
{
	char *line = NULL;
	size_t cap = 0;
	int err = 0;

	if (!f || !sum || !info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	while (getline(&line, &cap, f) >= 0) {
		info->line++;
		if ((err = log_line(line, sum, info)))
			break;
	}
	free(line);
	if (!err && ferror(f)) {
		err = -EIO;
		info->error = "read error";
	}
	if (!err && !info->intervals) {
		info->line = 0;
		info->error = "no interval histogram in the log";
		return -ENODATA;
	}
	if (err) {
		if (info->intervals)
			pw_hist_destroy(sum);
		return err;
	}
	info->line = 0;
	return 0;
}
