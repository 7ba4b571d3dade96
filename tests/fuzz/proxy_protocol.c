/* SPDX-License-Identifier: MIT */
/*
 * proxy_protocol.c - the libFuzzer target of the PROXY protocol parser
 * of apps/proxy_protocol.h. `make fuzz-proxy-protocol` builds it with
 * ASan and UBSan.
 *
 * Each input is parsed whole and then at every shorter prefix, each
 * copied into a heap block of exactly its size so that AddressSanitizer
 * stops a read past its end. The outcomes must agree with an incremental
 * reader: a prefix shorter than the header is "more" (or "bad" once it
 * can no longer begin one, and then every longer prefix is bad too); a
 * prefix that holds the whole header is "done" with the same length and
 * addresses. A header found is at most PW_PP_MAX bytes (PW_PP_V1_MAX for
 * version 1). Then the first bytes of the input, taken as two IPv4 or
 * IPv6 endpoints, are encoded both ways and must parse back to
 * themselves. A broken rule prints what differs and aborts.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/proxy_protocol.h"

static void fail(const char *what, size_t at)
{
	fprintf(stderr, "proxy_protocol fuzz: %s (prefix %zu)\n", what, at);
	abort();
}

static enum pw_pp_res parse_copy(const uint8_t *data, size_t len,
				 struct pw_pp_hdr *h)
{
	uint8_t *b = malloc(len ? len : 1);
	const char *why = NULL;
	enum pw_pp_res r;

	if (!b)
		abort();
	memcpy(b, data, len);
	memset(h, 0, sizeof(*h));
	r = pw_pp_parse(b, len, h, &why);
	free(b);
	if (r == PW_PP_BAD && !why)
		fail("bad without a reason", len);
	return r;
}

static bool same_hdr(const struct pw_pp_hdr *a, const struct pw_pp_hdr *b)
{
	return a->version == b->version && a->local == b->local &&
	       a->len == b->len &&
	       (a->local || (!memcmp(&a->src, &b->src, sizeof(a->src)) &&
			     !memcmp(&a->dst, &b->dst, sizeof(a->dst))));
}

static void check_prefixes(const uint8_t *data, size_t size)
{
	struct pw_pp_hdr whole, h;
	enum pw_pp_res r = parse_copy(data, size, &whole);
	bool bad_seen = false;

	if (r == PW_PP_DONE) {
		if (whole.len > size || whole.len > PW_PP_MAX ||
		    (whole.version == 1 && whole.len > PW_PP_V1_MAX))
			fail("header length out of bounds", size);
	}
	for (size_t i = 0; i < size; i++) {
		enum pw_pp_res p = parse_copy(data, i, &h);

		if (bad_seen && p != PW_PP_BAD)
			fail("bad, then not bad", i);
		bad_seen = p == PW_PP_BAD;
		if (r == PW_PP_DONE && i < whole.len && p != PW_PP_MORE)
			fail("a prefix of the header not 'more'", i);
		if (r == PW_PP_DONE && i >= whole.len &&
		    (p != PW_PP_DONE || !same_hdr(&h, &whole)))
			fail("a prefix past the header not the same", i);
		if (r == PW_PP_MORE && p != PW_PP_MORE)
			fail("a prefix of 'more' not 'more'", i);
	}
}

/* Two endpoints from the first bytes of @data, both IPv4 or IPv6. */
static void check_round_trip(const uint8_t *data, size_t size)
{
	struct pw_net_addr a[2];
	struct pw_pp_hdr h;
	char buf[PW_PP_ENCODE_MAX];
	bool v6;

	if (size < 1 + 2 * 18)
		return;
	v6 = data[0] & 1;
	memset(a, 0, sizeof(a));
	for (int i = 0; i < 2; i++) {
		const uint8_t *p = data + 1 + 18 * i;
		if (v6) {
			a[i].u.in6.sin6_family = AF_INET6;
			memcpy(&a[i].u.in6.sin6_addr, p, 16);
			memcpy(&a[i].u.in6.sin6_port, p + 16, 2);
			a[i].len = sizeof(a[i].u.in6);
		} else {
			a[i].u.in4.sin_family = AF_INET;
			memcpy(&a[i].u.in4.sin_addr, p, 4);
			memcpy(&a[i].u.in4.sin_port, p + 16, 2);
			a[i].len = sizeof(a[i].u.in4);
		}
	}
	for (int v = 1; v <= 2; v++) {
		int n = v == 1 ?
				pw_pp_encode_v1(buf, sizeof(buf), &a[0],
						&a[1]) :
				pw_pp_encode_v2(buf, sizeof(buf), &a[0], &a[1]);
		if (n <= 0)
			fail("encode failed", 0);
		if (parse_copy((const uint8_t *)buf, (size_t)n, &h) !=
			    PW_PP_DONE ||
		    h.len != (size_t)n || h.local ||
		    memcmp(&h.src, &a[0], sizeof(a[0])) ||
		    memcmp(&h.dst, &a[1], sizeof(a[1])))
			fail("an encoded header does not parse back",
			     (size_t)n);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4 * PW_PP_MAX)
		return 0;
	check_prefixes(data, size);
	check_round_trip(data, size);
	return 0;
}
