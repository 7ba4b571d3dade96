/* SPDX-License-Identifier: MIT */
/*
 * udp_floor.c - the floor of bench/udp.sh: the least a UDP echo server
 * can do. One thread, one socket: recvmmsg() of up to 64 datagrams
 * (waiting for the first one only), sendmmsg() of them back to their
 * senders, again; nothing else. No library, no ring, no counters beyond
 * the datagrams echoed, printed at the end. The round itself is
 * bench/udp_floor.h's, shared with the floor of bench/bench_udp.c.
 *
 *   build/udp-floor ADDR      ADDR: A.B.C.D:PORT or [IPv6]:PORT (port 0:
 *                             any); prints "udp-floor: listening on
 *                             ADDR" and echoes until SIGINT or SIGTERM
 *
 * Built by `make udp-floor`; not part of the library or of the
 * micro benchmarks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/udp_floor.h"

#define DGRAM 65536

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Parse A.B.C.D:PORT or [IPv6]:PORT into @ss; its length, or 0. */
static socklen_t parse(const char *s, struct sockaddr_storage *ss)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	size_t n;
	long port;

	if (!colon || !colon[1])
		return 0;
	port = strtol(colon + 1, NULL, 10);
	n = (size_t)(colon - s);
	if (port < 0 || port > 65535 || n >= sizeof(host))
		return 0;
	memcpy(host, s, n);
	host[n] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		host[n - 1] = '\0';
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		return inet_pton(AF_INET6, host + 1, &a->sin6_addr) == 1 ?
			       sizeof(*a) :
			       0;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? sizeof(*a) : 0;
}

/* Print the bound address as parse() reads it. */
static void banner(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";

	getsockname(fd, (struct sockaddr *)&ss, &len);
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		printf("udp-floor: listening on [%s]:%u\n", host,
		       ntohs(a->sin6_port));
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		printf("udp-floor: listening on %s:%u\n", host,
		       ntohs(a->sin_port));
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static char buf[UDP_FLOOR_BATCH][DGRAM];
	static struct udp_floor f = { .buf = buf[0], .dgram = DGRAM };
	struct sockaddr_storage ss;
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned long long echoed = 0;
	socklen_t len;
	int fd;

	if (argc != 2 || !(len = parse(argv[1], &ss))) {
		fprintf(stderr, "usage: udp-floor A.B.C.D:PORT|[IPv6]:PORT\n");
		return 2;
	}
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len)) {
		fprintf(stderr, "udp-floor: %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: recvmmsg returns */
	sigaction(SIGTERM, &sa, NULL);
	banner(fd);
	while (!stop) {
		int done = udp_floor_round(fd, &f, false);
		if (done < 0)
			continue; /* EINTR: look at stop */
		echoed += (unsigned long long)done;
	}
	printf("udp-floor: stopped; %llu datagrams echoed\n", echoed);
	close(fd);
	return 0;
}
