/* SPDX-License-Identifier: MIT */
/*
 * test_proxy_protocol.c - the PROXY protocol header of
 * apps/proxy_protocol.c, pure: the specification's examples, every
 * malformed form the parser refuses, encode-then-parse round trips, and
 * each header fed a byte at a time (more, more, ..., done at its last
 * byte, never a byte of the payload after it).
 */
#include <arpa/inet.h>
#include <string.h>

#include "tests/common.h"
#include "apps/proxy_protocol.h"

static const char sig[] = "\r\n\r\n\0\r\nQUIT\n";

/* Parse @len bytes at @b a byte at a time: more at every prefix, then
 * the result of the whole. */
static enum pw_pp_res feed(const void *b, size_t len, struct pw_pp_hdr *h,
			   const char **why)
{
	for (size_t i = 0; i < len; i++) {
		enum pw_pp_res r = pw_pp_parse(b, i, h, why);
		if (r != PW_PP_MORE)
			return r;
	}
	return pw_pp_parse(b, len, h, why);
}

static void addr_is(const struct pw_net_addr *a, const char *text)
{
	char buf[PW_NET_ADDR_STRLEN];

	cr_assert_gt(pw_net_addr_format(a, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, text);
}

static void good_v1(const char *line, const char *src, const char *dst)
{
	char buf[256];
	struct pw_pp_hdr h;
	const char *why = NULL;
	size_t n = strlen(line);

	/* The payload after the header is never taken. */
	snprintf(buf, sizeof(buf), "%sGET / HTTP/1.0\r\n", line);
	cr_assert_eq(feed(line, n, &h, &why), PW_PP_DONE, "%s: %s", line,
		     why ? why : "");
	cr_assert_eq(pw_pp_parse(buf, strlen(buf), &h, &why), PW_PP_DONE);
	cr_assert_eq(h.len, n);
	cr_assert_eq(h.version, 1);
	cr_assert_eq(h.local, src == NULL);
	if (src) {
		addr_is(&h.src, src);
		addr_is(&h.dst, dst);
	}
}

Test(proxy_protocol, v1_spec_examples)
{
	good_v1("PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n",
		"255.255.255.255:65535", "255.255.255.255:65535");
	good_v1("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n",
		"192.168.0.1:56324", "192.168.0.11:443");
	good_v1("PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n",
		"[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535",
		"[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535");
	good_v1("PROXY TCP6 ::1 2001:db8::2 0 8080\r\n", "[::1]:0",
		"[2001:db8::2]:8080");
	good_v1("PROXY UNKNOWN\r\n", NULL, NULL);
	/* The worst case, 107 bytes: accepted, the rest ignored. */
	const char *w =
		"PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
	cr_assert_eq(strlen(w), PW_PP_V1_MAX);
	good_v1(w, NULL, NULL);
}

static void bad_is(const void *b, size_t len, const char *reason)
{
	struct pw_pp_hdr h;
	const char *why = NULL;

	cr_assert_eq(feed(b, len, &h, &why), PW_PP_BAD, "accepted: %.*s",
		     (int)len, (const char *)b);
	cr_assert_not_null(why);
	cr_assert_str_eq(why, reason, "%.*s: %s", (int)len, (const char *)b,
			 why);
}

static void bad_v1(const char *line, const char *reason)
{
	bad_is(line, strlen(line), reason);
}

Test(proxy_protocol, v1_malformed)
{
	bad_v1("GET / HTTP/1.1\r\n", "no PROXY signature");
	bad_v1("PROXY\r\n", "no PROXY signature");
	bad_v1("proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n", "no PROXY signature");
	bad_v1("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", "v1 LF without CR");
	bad_v1("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX", "v1 CR without LF");
	bad_v1("PROXY TCP4 1.2.3.4 5.6.7.8 1\t2\r\n", "v1 byte not printable");
	bad_v1("PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n", "v1 unknown protocol");
	bad_v1("PROXY TCP4\r\n", "v1 unknown protocol");
	bad_v1("PROXY UNKNOWNX\r\n", "v1 unknown protocol");
	bad_v1("PROXY  TCP4 1.2.3.4 5.6.7.8 1 2\r\n", "v1 unknown protocol");
	bad_v1("PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n", "v1 empty field");
	bad_v1("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n", "v1 too many fields");
	bad_v1("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n", "v1 too many fields");
	bad_v1("PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", "v1 too few fields");
	bad_v1("PROXY TCP4 1.2.3.4 5.6.7.8\r\n", "v1 too few fields");
	bad_v1("PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n", "v1 bad address");
	bad_v1("PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n", "v1 bad address");
	bad_v1("PROXY TCP4 ::1 5.6.7.8 1 2\r\n", "v1 bad address");
	bad_v1("PROXY TCP6 1.2.3.4 ::1 1 2\r\n", "v1 bad address");
	bad_v1("PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n", "v1 bad port");
	bad_v1("PROXY TCP4 1.2.3.4 5.6.7.8 080 2\r\n", "v1 bad port");
	bad_v1("PROXY TCP4 1.2.3.4 5.6.7.8 1 -2\r\n", "v1 bad port");
	bad_v1("PROXY TCP4 1.2.3.4 5.6.7.8 1 123456\r\n", "v1 bad port");
	/* 108 bytes without a CRLF inside the first 107. */
	char big[200];
	memset(big, 'f', sizeof(big));
	memcpy(big, "PROXY UNKNOWN ", 14);
	bad_is(big, 108, "v1 line too long");
	big[105] = '\r';
	big[106] = '\n';
	struct pw_pp_hdr h;
	cr_assert_eq(pw_pp_parse(big, 120, &h, NULL), PW_PP_DONE);
	cr_assert_eq(h.len, 107);
	big[105] = 'f';
	big[106] = '\r';
	big[107] = '\n';
	bad_is(big, 108, "v1 line too long");
}

/* A v2 header: signature, @vc, @fam, then @blen bytes of @block. */
static size_t v2(uint8_t *b, uint8_t vc, uint8_t fam, const void *block,
		 size_t blen)
{
	memcpy(b, sig, 12);
	b[12] = vc;
	b[13] = fam;
	b[14] = (uint8_t)(blen >> 8);
	b[15] = (uint8_t)blen;
	if (blen)
		memcpy(b + 16, block, blen);
	return 16 + blen;
}

Test(proxy_protocol, v2_spec_forms)
{
	uint8_t b[2048], blk[1100];
	struct pw_pp_hdr h;
	const char *why = NULL;
	size_t n;

	/* TCP over IPv4, a TLV (NOOP) after the addresses. */
	const uint8_t in4[] = { 10,   0,    0,	  1, 192, 168, 1,   2,	0x30,
				0x39, 0x01, 0xbb, 4, 0,	  2,   'h', 'i' };
	n = v2(b, 0x21, 0x11, in4, sizeof(in4));
	memcpy(b + n, "payload", 7);
	cr_assert_eq(feed(b, n, &h, &why), PW_PP_DONE);
	cr_assert_eq(pw_pp_parse(b, n + 7, &h, &why), PW_PP_DONE);
	cr_assert_eq(h.version, 2);
	cr_assert_eq(h.len, n);
	cr_assert(!h.local);
	addr_is(&h.src, "10.0.0.1:12345");
	addr_is(&h.dst, "192.168.1.2:443");
	/* TCP over IPv6. */
	uint8_t in6[36] = { 0 };
	in6[15] = 1;
	in6[16] = 0x20;
	in6[17] = 0x01;
	in6[18] = 0x0d;
	in6[19] = 0xb8;
	in6[31] = 2;
	in6[33] = 80;
	in6[34] = 0x1f;
	in6[35] = 0x90;
	n = v2(b, 0x21, 0x21, in6, sizeof(in6));
	cr_assert_eq(feed(b, n, &h, &why), PW_PP_DONE);
	addr_is(&h.src, "[::1]:80");
	addr_is(&h.dst, "[2001:db8::2]:8080");
	/* LOCAL (a health check): any block, ignored. */
	n = v2(b, 0x20, 0x00, NULL, 0);
	cr_assert_eq(feed(b, n, &h, &why), PW_PP_DONE);
	cr_assert(h.local);
	cr_assert_eq(h.len, 16);
	n = v2(b, 0x20, 0x11, in4, 5);
	cr_assert_eq(feed(b, n, &h, &why), PW_PP_DONE);
	cr_assert(h.local);
	/* PROXY of an unspecified or unix family: the socket's own. */
	n = v2(b, 0x21, 0x00, NULL, 0);
	cr_assert_eq(feed(b, n, &h, &why), PW_PP_DONE);
	cr_assert(h.local);
	memset(blk, 0, sizeof(blk));
	n = v2(b, 0x21, 0x31, blk, 216);
	cr_assert_eq(feed(b, n, &h, &why), PW_PP_DONE);
	cr_assert(h.local);
	/* The largest block accepted, TLVs included. */
	memcpy(blk, in4, 12);
	blk[12] = 0x04;
	blk[13] = (uint8_t)((PW_PP_V2_MAX_LEN - 15) >> 8);
	blk[14] = (uint8_t)(PW_PP_V2_MAX_LEN - 15);
	n = v2(b, 0x21, 0x11, blk, PW_PP_V2_MAX_LEN);
	cr_assert_eq(n, PW_PP_MAX);
	cr_assert_eq(feed(b, n, &h, &why), PW_PP_DONE, "%s", why);
	cr_assert_eq(h.len, PW_PP_MAX);
}

Test(proxy_protocol, v2_malformed)
{
	uint8_t b[2048], blk[1100] = { 0 };
	size_t n;

	memcpy(b, sig, 12);
	b[11] = 'X';
	bad_is(b, 12, "no PROXY signature");
	bad_is("\r\n\r\n\r", 5, "no PROXY signature");
	bad_is("\x01", 1, "no PROXY signature");
	n = v2(b, 0x11, 0x11, blk, 12);
	bad_is(b, n, "v2 version not 2");
	n = v2(b, 0x31, 0x11, blk, 12);
	bad_is(b, n, "v2 version not 2");
	n = v2(b, 0x22, 0x11, blk, 12);
	bad_is(b, n, "v2 unknown command");
	n = v2(b, 0x21, 0x41, blk, 12);
	bad_is(b, n, "v2 unknown family or protocol");
	n = v2(b, 0x21, 0x13, blk, 12);
	bad_is(b, n, "v2 unknown family or protocol");
	n = v2(b, 0x21, 0x12, blk, 12);
	bad_is(b, n, "v2 datagram on a stream");
	n = v2(b, 0x21, 0x11, blk, 11);
	bad_is(b, n, "v2 address block too short");
	n = v2(b, 0x21, 0x21, blk, 35);
	bad_is(b, n, "v2 address block too short");
	n = v2(b, 0x21, 0x31, blk, 215);
	bad_is(b, n, "v2 address block too short");
	n = v2(b, 0x21, 0x11, blk, PW_PP_V2_MAX_LEN + 1);
	bad_is(b, 16, "v2 length above the limit");
	/* A TLV whose length runs past the block; one cut in its head. */
	blk[12] = 0x04;
	blk[13] = 0;
	blk[14] = 5;
	n = v2(b, 0x21, 0x11, blk, 12 + 3 + 4);
	bad_is(b, n, "v2 TLV past the end");
	n = v2(b, 0x21, 0x11, blk, 12 + 2);
	bad_is(b, n, "v2 TLV past the end");
}

/* Encode @s to @d both ways, parse back, compare. */
static void round_trip(const char *s, const char *d, const char *line)
{
	struct pw_net_addr src, dst;
	struct pw_pp_hdr h;
	char buf[PW_PP_ENCODE_MAX];
	int n;

	cr_assert_eq(pw_net_addr_parse(&src, s), 0);
	cr_assert_eq(pw_net_addr_parse(&dst, d), 0);
	n = pw_pp_encode_v1(buf, sizeof(buf), &src, &dst);
	cr_assert_gt(n, 0);
	cr_assert_eq((size_t)n, strlen(line));
	cr_assert_str_eq(buf, line);
	cr_assert_eq(feed(buf, (size_t)n, &h, NULL), PW_PP_DONE);
	cr_assert_eq(h.len, (size_t)n);
	n = pw_pp_encode_v2(buf, sizeof(buf), &src, &dst);
	cr_assert_eq(feed(buf, (size_t)n, &h, NULL), PW_PP_DONE);
	cr_assert_eq(h.len, (size_t)n);
	cr_assert_eq(h.local, strstr(line, "UNKNOWN") != NULL);
	if (!h.local) {
		addr_is(&h.src, s);
		addr_is(&h.dst, d);
		cr_assert_eq(n, src.u.sa.sa_family == AF_INET ? 28 : 52);
	} else {
		cr_assert_eq(n, 16);
		cr_assert_eq((uint8_t)buf[12], 0x20);
	}
}

Test(proxy_protocol, encode_round_trip)
{
	char small[10];
	struct pw_net_addr a;

	round_trip("127.0.0.1:40000", "127.0.0.2:8080",
		   "PROXY TCP4 127.0.0.1 127.0.0.2 40000 8080\r\n");
	round_trip("[::1]:1", "[fe80::1]:65535",
		   "PROXY TCP6 ::1 fe80::1 1 65535\r\n");
	round_trip("unix:/tmp/x", "unix:/tmp/y", "PROXY UNKNOWN\r\n");
	round_trip("127.0.0.1:1", "[::1]:2", "PROXY UNKNOWN\r\n");
	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:1"), 0);
	cr_assert_eq(pw_pp_encode_v1(small, sizeof(small), &a, &a), -ENOSPC);
	cr_assert_eq(pw_pp_encode_v2(small, sizeof(small), &a, &a), -ENOSPC);
	cr_assert_eq(pw_pp_encode_v1(NULL, 0, &a, &a), -EINVAL);
	cr_assert_eq(pw_pp_encode_v2(small, sizeof(small), NULL, &a), -EINVAL);
}
