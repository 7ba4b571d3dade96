/* SPDX-License-Identifier: MIT */
/*
 * proxy_protocol.h - the PROXY protocol, versions 1 (text) and 2
 * (binary), as HAProxy's proxy-protocol.txt specifies it: encoding a
 * header from two addresses and parsing one from the bytes received so
 * far. Pure code: no I/O, no allocation, any thread.
 *
 * The parser is stateless and incremental: it is given every byte
 * received since the connection began, as many times as bytes arrive,
 * and answers "more" while they are a valid prefix of a header, "done"
 * with the header's length and addresses once it is whole, or "bad"
 * with a reason as soon as the prefix can no longer begin a valid header.
 * It never looks past the header's end: what follows is the payload.
 */
#ifndef PW_APPS_PROXY_PROTOCOL_H
#define PW_APPS_PROXY_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pinwheel/net.h"

/* Longest version 1 header, "PROXY ... \r\n" included (the spec's 107). */
#define PW_PP_V1_MAX 107
/* The fixed part of a version 2 header: signature, command, family and
 * length. */
#define PW_PP_V2_HDR 16
/* Most bytes after the fixed part a version 2 header may announce
 * (addresses and TLVs) before it is refused: the spec allows 65535, which
 * would let every client make the proxy hold 64 KiB; the addresses take
 * at most 216 (unix), leaving room for the TLVs load balancers send. */
#define PW_PP_V2_MAX_LEN 1024
/* Most bytes of any header this parser accepts. */
#define PW_PP_MAX (PW_PP_V2_HDR + PW_PP_V2_MAX_LEN)
/* Room an encoded header needs (a version 1 line is the longest). */
#define PW_PP_ENCODE_MAX 108

/* pw_pp_parse() results. */
enum pw_pp_res {
	PW_PP_BAD = -1, /* not a valid header: close the connection */
	PW_PP_MORE = 0, /* a valid prefix: wait for more bytes */
	PW_PP_DONE = 1, /* a whole header */
};

/* A parsed header. */
struct pw_pp_hdr {
	uint8_t version; /* 1 or 2 */
	bool local;	 /* no addresses to use (v1 UNKNOWN, v2 LOCAL, or an
			    UNSPEC or unix family): take the connection's own */
	size_t len;	 /* bytes of the header; the payload begins there */
	struct pw_net_addr src, dst; /* when !local: the client's, and the
					address it connected to */
};

/**
 * pw_pp_parse - parse the bytes @buf[0..@len) received so far.
 * Return: PW_PP_DONE with *@out filled; PW_PP_MORE when the bytes are a
 * valid beginning of a header (*@out untouched); PW_PP_BAD with *@why set
 * to a short static reason ("no PROXY signature", "v1 line too long",
 * "v2 length above the limit", ...).
 * Context: any thread.
 */
enum pw_pp_res pw_pp_parse(const void *buf, size_t len, struct pw_pp_hdr *out,
			   const char **why);

/**
 * pw_pp_encode_v1 - write the version 1 line for a connection from @src
 * to @dst into @buf: "PROXY TCP4 ..." or "PROXY TCP6 ..." when both are
 * of that family, else "PROXY UNKNOWN\r\n".
 * Return: its length (at most PW_PP_V1_MAX); -EINVAL for NULL; -ENOSPC
 * when @size is below what it needs (PW_PP_ENCODE_MAX always suffices).
 * Context: any thread.
 */
int pw_pp_encode_v1(char *buf, size_t size, const struct pw_net_addr *src,
		    const struct pw_net_addr *dst);

/**
 * pw_pp_encode_v2 - write the version 2 header for a connection from
 * @src to @dst into @buf: command PROXY, TCP over IPv4 (28 bytes) or IPv6
 * (52 bytes) when both are of that family, else command LOCAL with no
 * address (16 bytes). No TLV.
 * Return: its length; -EINVAL for NULL; -ENOSPC when @size is too small.
 * Context: any thread.
 */
int pw_pp_encode_v2(void *buf, size_t size, const struct pw_net_addr *src,
		    const struct pw_net_addr *dst);

#endif /* PW_APPS_PROXY_PROTOCOL_H */
