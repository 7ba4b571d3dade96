/* SPDX-License-Identifier: MIT */
/*
 * udp_floor.h - the floor's one echo round, shared by the standalone
 * floor server (bench/udp_floor.c, run by bench/udp.sh) and the floor of
 * the micro benchmark (bench/bench_udp.c): recvmmsg() of up to
 * UDP_FLOOR_BATCH datagrams, waiting for the first one only, then
 * sendmmsg() of them back to their senders. Nothing else: no library, no
 * ring. Header only, so that udp-floor stays a program of one file.
 */
#ifndef PW_BENCH_UDP_FLOOR_H
#define PW_BENCH_UDP_FLOOR_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define UDP_FLOOR_BATCH 64

/*
 * The state of one floor: the caller points @buf at UDP_FLOOR_BATCH
 * buffers of @dgram bytes each, one after the other; the rest is
 * udp_floor_round()'s. Large: keep it static.
 */
struct udp_floor {
	char *buf;
	size_t dgram;
	struct sockaddr_storage from[UDP_FLOOR_BATCH];
	struct iovec iov[UDP_FLOOR_BATCH];
	struct mmsghdr m[UDP_FLOOR_BATCH];
};

/*
 * udp_floor_round() - one round on the bound socket @fd: receive a batch
 * into @f, send it back. With @stop_on_empty, a batch holding an empty
 * datagram is not echoed (the stop signal of the micro benchmark).
 * Returns the datagrams echoed (>= 0; fewer than received when sendmmsg()
 * fails), -1 when recvmmsg() received nothing (errno tells why: EINTR
 * after a signal), -2 on an empty datagram with @stop_on_empty. Called by
 * the one thread that owns @f.
 */
static inline int udp_floor_round(int fd, struct udp_floor *f,
				  bool stop_on_empty)
{
	int k, done = 0;

	for (unsigned i = 0; i < UDP_FLOOR_BATCH; i++) {
		f->iov[i].iov_base = f->buf + i * f->dgram;
		f->iov[i].iov_len = f->dgram;
		memset(&f->m[i], 0, sizeof(f->m[i]));
		f->m[i].msg_hdr.msg_iov = &f->iov[i];
		f->m[i].msg_hdr.msg_iovlen = 1;
		f->m[i].msg_hdr.msg_name = &f->from[i];
		f->m[i].msg_hdr.msg_namelen = sizeof(f->from[i]);
	}
	k = recvmmsg(fd, f->m, UDP_FLOOR_BATCH, MSG_WAITFORONE, NULL);
	if (k <= 0)
		return -1;
	for (int i = 0; i < k; i++)
		if (!(f->iov[i].iov_len = f->m[i].msg_len) && stop_on_empty)
			return -2;
	while (done < k) {
		int n = sendmmsg(fd, f->m + done, (unsigned)(k - done), 0);
		if (n <= 0)
			break;
		done += n;
	}
	return done;
}

#endif
