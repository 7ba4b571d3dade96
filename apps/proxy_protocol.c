/* SPDX-License-Identifier: MIT */
/*
 * proxy_protocol.c - the PROXY protocol header of proxy_protocol.h:
 * version 1 and 2 encoders, and the one parser that detects the version
 * from the first byte and validates what the specification requires.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "apps/proxy_protocol.h"

static const uint8_t v2_sig[12] = { 0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
				    0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a };
static const char v1_sig[6] = "PROXY ";

/* Bytes of a v2 address block by family (high nibble of byte 13). */
static const uint16_t v2_addr_len[4] = { 0, 12, 36, 216 };

static enum pw_pp_res bad(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return PW_PP_BAD;
}

/* ---- version 1 ---------------------------------------------------------- */

/* A port: 1 to 5 digits, no leading zero (but "0"), at most 65535. */
static bool v1_port(const char *s, size_t n, uint16_t *out)
{
	unsigned v = 0;

	if (!n || n > 5 || (s[0] == '0' && n > 1))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > 65535)
		return false;
	*out = (uint16_t)v;
	return true;
}

/* An address of @family from the @n bytes at @s into @a with @port. */
static bool v1_addr(int family, const char *s, size_t n, struct pw_net_addr *a)
{
	char tmp[64];

	if (!n || n >= sizeof(tmp))
		return false;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	memset(a, 0, sizeof(*a));
	if (family == AF_INET) {
		a->u.in4.sin_family = AF_INET;
		a->len = sizeof(a->u.in4);
		return inet_pton(AF_INET, tmp, &a->u.in4.sin_addr) == 1;
	}
	a->u.in6.sin6_family = AF_INET6;
	a->len = sizeof(a->u.in6);
	return inet_pton(AF_INET6, tmp, &a->u.in6.sin6_addr) == 1;
}

static void set_port(struct pw_net_addr *a, uint16_t port)
{
	if (a->u.sa.sa_family == AF_INET)
		a->u.in4.sin_port = htons(port);
	else
		a->u.in6.sin6_port = htons(port);
}

/* The four fields after "TCP4 " or "TCP6 " in @s[0..@n), single spaces
 * between them. */
static enum pw_pp_res v1_fields(int family, const char *s, size_t n,
				struct pw_pp_hdr *h, const char **why)
{
	const char *f[4];
	size_t fl[4];
	unsigned k = 0;
	uint16_t sp, dp;

	f[0] = s;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != ' ')
			continue;
		fl[k] = (size_t)(s + i - f[k]);
		if (!fl[k])
			return bad(why, "v1 empty field");
		if (++k == 4) {
			if (i != n)
				return bad(why, "v1 too many fields");
			break;
		}
		if (i == n)
			return bad(why, "v1 too few fields");
		f[k] = s + i + 1;
	}
	if (!v1_addr(family, f[0], fl[0], &h->src) ||
	    !v1_addr(family, f[1], fl[1], &h->dst))
		return bad(why, "v1 bad address");
	if (!v1_port(f[2], fl[2], &sp) || !v1_port(f[3], fl[3], &dp))
		return bad(why, "v1 bad port");
	set_port(&h->src, sp);
	set_port(&h->dst, dp);
	return PW_PP_DONE;
}

static enum pw_pp_res v1_parse(const char *b, size_t len, struct pw_pp_hdr *out,
			       const char **why)
{
	size_t lim = len < PW_PP_V1_MAX ? len : PW_PP_V1_MAX, end;
	struct pw_pp_hdr h;
	enum pw_pp_res r;

	if (memcmp(b, v1_sig, len < 6 ? len : 6))
		return bad(why, "no PROXY signature");
	for (end = 6; end < lim; end++) {
		if (b[end] == '\n')
			return bad(why, "v1 LF without CR");
		if (b[end] == '\r')
			break;
		if ((unsigned char)b[end] < 0x20 ||
		    (unsigned char)b[end] > 0x7e)
			return bad(why, "v1 byte not printable");
	}
	if (end + 1 >= lim) /* no CR, or a CR its LF may still follow */
		return len >= PW_PP_V1_MAX ? bad(why, "v1 line too long") :
					     PW_PP_MORE;
	if (b[end + 1] != '\n')
		return bad(why, "v1 CR without LF");
	memset(&h, 0, sizeof(h));
	h.version = 1;
	h.len = end + 2;
	const char *s = b + 6;
	size_t n = end - 6;
	if (n >= 7 && !memcmp(s, "UNKNOWN", 7) && (n == 7 || s[7] == ' ')) {
		h.local = true; /* the rest of the line is ignored */
		r = PW_PP_DONE;
	} else if (n > 5 && !memcmp(s, "TCP4 ", 5)) {
		r = v1_fields(AF_INET, s + 5, n - 5, &h, why);
	} else if (n > 5 && !memcmp(s, "TCP6 ", 5)) {
		r = v1_fields(AF_INET6, s + 5, n - 5, &h, why);
	} else {
		return bad(why, "v1 unknown protocol");
	}
	if (r == PW_PP_DONE)
		*out = h;
	return r;
}

/* ---- version 2 ---------------------------------------------------------- */

/* The TLVs in @p[0..@n): each a type, a 16-bit length and its value,
 * the last ending exactly at the end. */
static bool v2_tlvs_ok(const uint8_t *p, size_t n)
{
	size_t off = 0;

	while (off < n) {
		if (n - off < 3)
			return false;
		size_t l = (size_t)p[off + 1] << 8 | p[off + 2];
		if (n - off - 3 < l)
			return false;
		off += 3 + l;
	}
	return true;
}

/* The addresses of a PROXY command of family @fam from @a. */
static void v2_addrs(unsigned fam, const uint8_t *a, struct pw_pp_hdr *h)
{
	memset(&h->src, 0, sizeof(h->src));
	memset(&h->dst, 0, sizeof(h->dst));
	if (fam == 1) {
		h->src.u.in4.sin_family = h->dst.u.in4.sin_family = AF_INET;
		memcpy(&h->src.u.in4.sin_addr, a, 4);
		memcpy(&h->dst.u.in4.sin_addr, a + 4, 4);
		memcpy(&h->src.u.in4.sin_port, a + 8, 2);
		memcpy(&h->dst.u.in4.sin_port, a + 10, 2);
		h->src.len = h->dst.len = sizeof(h->src.u.in4);
		return;
	}
	h->src.u.in6.sin6_family = h->dst.u.in6.sin6_family = AF_INET6;
	memcpy(&h->src.u.in6.sin6_addr, a, 16);
	memcpy(&h->dst.u.in6.sin6_addr, a + 16, 16);
	memcpy(&h->src.u.in6.sin6_port, a + 32, 2);
	memcpy(&h->dst.u.in6.sin6_port, a + 34, 2);
	h->src.len = h->dst.len = sizeof(h->src.u.in6);
}

static enum pw_pp_res v2_parse(const uint8_t *b, size_t len,
			       struct pw_pp_hdr *out, const char **why)
{
	unsigned cmd, fam, proto;
	size_t blen, alen;
	struct pw_pp_hdr h;

	if (memcmp(b, v2_sig, len < 12 ? len : 12))
		return bad(why, "no PROXY signature");
	if (len < 13)
		return PW_PP_MORE;
	if (b[12] >> 4 != 2)
		return bad(why, "v2 version not 2");
	cmd = b[12] & 0xf;
	if (cmd > 1)
		return bad(why, "v2 unknown command");
	if (len < 14)
		return PW_PP_MORE;
	fam = b[13] >> 4;
	proto = b[13] & 0xf;
	if (fam > 3 || proto > 2)
		return bad(why, "v2 unknown family or protocol");
	if (len < PW_PP_V2_HDR)
		return PW_PP_MORE;
	blen = (size_t)b[14] << 8 | b[15];
	if (blen > PW_PP_V2_MAX_LEN)
		return bad(why, "v2 length above the limit");
	memset(&h, 0, sizeof(h));
	h.version = 2;
	h.len = PW_PP_V2_HDR + blen;
	/* LOCAL: the block is ignored; PROXY of an unspecified or unix
	 * family: the connection's own addresses are used. */
	h.local = cmd == 0 || fam == 0 || fam == 3 || proto == 0;
	alen = cmd == 1 ? v2_addr_len[fam] : 0;
	if (cmd == 1 && proto == 2)
		return bad(why, "v2 datagram on a stream");
	if (blen < alen)
		return bad(why, "v2 address block too short");
	if (len < h.len)
		return PW_PP_MORE;
	if (cmd == 1 && !v2_tlvs_ok(b + PW_PP_V2_HDR + alen, blen - alen))
		return bad(why, "v2 TLV past the end");
	if (!h.local)
		v2_addrs(fam, b + PW_PP_V2_HDR, &h);
	*out = h;
	return PW_PP_DONE;
}

enum pw_pp_res pw_pp_parse(const void *buf, size_t len, struct pw_pp_hdr *out,
			   const char **why)
{
	const uint8_t *b = buf;

	if (!buf || !out)
		return bad(why, "no buffer");
	if (!len)
		return PW_PP_MORE;
	if (b[0] == 'P')
		return v1_parse(buf, len, out, why);
	if (b[0] == v2_sig[0])
		return v2_parse(b, len, out, why);
	return bad(why, "no PROXY signature");
}

/* ---- encoders ----------------------------------------------------------- */

/* Whether @src and @dst are both of @family. */
static bool both(const struct pw_net_addr *src, const struct pw_net_addr *dst,
		 int family)
{
	return src->u.sa.sa_family == family && dst->u.sa.sa_family == family;
}

int pw_pp_encode_v1(char *buf, size_t size, const struct pw_net_addr *src,
		    const struct pw_net_addr *dst)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	int n;

	if (!buf || !src || !dst)
		return -EINVAL;
	if (both(src, dst, AF_INET)) {
		inet_ntop(AF_INET, &src->u.in4.sin_addr, s, sizeof(s));
		inet_ntop(AF_INET, &dst->u.in4.sin_addr, d, sizeof(d));
		n = snprintf(buf, size, "PROXY TCP4 %s %s %u %u\r\n", s, d,
			     ntohs(src->u.in4.sin_port),
			     ntohs(dst->u.in4.sin_port));
	} else if (both(src, dst, AF_INET6)) {
		inet_ntop(AF_INET6, &src->u.in6.sin6_addr, s, sizeof(s));
		inet_ntop(AF_INET6, &dst->u.in6.sin6_addr, d, sizeof(d));
		n = snprintf(buf, size, "PROXY TCP6 %s %s %u %u\r\n", s, d,
			     ntohs(src->u.in6.sin6_port),
			     ntohs(dst->u.in6.sin6_port));
	} else {
		n = snprintf(buf, size, "PROXY UNKNOWN\r\n");
	}
	return n < 0 || (size_t)n >= size ? -ENOSPC : n;
}

int pw_pp_encode_v2(void *buf, size_t size, const struct pw_net_addr *src,
		    const struct pw_net_addr *dst)
{
	uint8_t *b = buf;
	size_t alen;

	if (!buf || !src || !dst)
		return -EINVAL;
	alen = both(src, dst, AF_INET) ? 12 : both(src, dst, AF_INET6) ? 36 : 0;
	if (size < PW_PP_V2_HDR + alen)
		return -ENOSPC;
	memcpy(b, v2_sig, 12);
	b[12] = alen ? 0x21 : 0x20;
	b[13] = alen == 12 ? 0x11 : alen == 36 ? 0x21 : 0x00;
	b[14] = 0;
	b[15] = (uint8_t)alen;
	if (alen == 12) {
		memcpy(b + 16, &src->u.in4.sin_addr, 4);
		memcpy(b + 20, &dst->u.in4.sin_addr, 4);
		memcpy(b + 24, &src->u.in4.sin_port, 2);
		memcpy(b + 26, &dst->u.in4.sin_port, 2);
	} else if (alen == 36) {
		memcpy(b + 16, &src->u.in6.sin6_addr, 16);
		memcpy(b + 32, &dst->u.in6.sin6_addr, 16);
		memcpy(b + 48, &src->u.in6.sin6_port, 2);
		memcpy(b + 50, &dst->u.in6.sin6_port, 2);
	}
	return (int)(PW_PP_V2_HDR + alen);
}
