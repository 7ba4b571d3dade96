/* SPDX-License-Identifier: MIT */
/*
 * bench_load.c - how well the load generator (apps/load.c) keeps an
 * open-loop schedule on this machine, against an echo server of plain
 * blocking threads in the same process (so that what is timed is
 * pinwheel's client side).
 *
 *   bm_load_open_loop/R  one 500 ms open-loop run of R requests/s over 4
 *			  connections on 2 shards (10 us tick, as `pinwheel
 *			  load`) per iteration, after a 100 ms warm-up
 *
 * Counters: rate_kept (answers per second over R: 1 when the schedule
 * holds), and the p50 / p95 / p99 latency (from the due time, so a
 * request sent late counts its delay) and p95 service time (from the
 * send) in microseconds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"
#include "pinwheel.h"
#include "apps/load.h"

#define CONNS 4

struct echo_srv {
	int lfd;
	pthread_t th;
};

static void *echo_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[4096];
	ssize_t r;

	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t at = 0; at < r;) {
			ssize_t w = send(fd, buf + at, (size_t)(r - at),
					 MSG_NOSIGNAL);
			if (w <= 0)
				goto out;
			at += w;
		}
	}
out:
	close(fd);
	return NULL;
}

static void *echo_accept(void *arg)
{
	struct echo_srv *s = arg;
	pthread_attr_t a;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	for (;;) {
		int one = 1, fd = accept(s->lfd, NULL, NULL);
		pthread_t th;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (pthread_create(&th, &a, echo_conn, (void *)(intptr_t)fd))
			close(fd);
	}
	pthread_attr_destroy(&a);
	return NULL;
}

/* Listen on a loopback port of the kernel's choosing; its number in
 * *@port. 0 on success. */
static int echo_start(struct echo_srv *s, int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		return -1;
	if (bind(s->lfd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(s->lfd, 128) ||
	    getsockname(s->lfd, (struct sockaddr *)&sin, &len) ||
	    pthread_create(&s->th, NULL, echo_accept, s)) {
		close(s->lfd);
		return -1;
	}
	*port = ntohs(sin.sin_port);
	return 0;
}

/* Stop accepting; connection threads end when their clients close. */
static void echo_stop(struct echo_srv *s)
{
	shutdown(s->lfd, SHUT_RDWR);
	pthread_join(s->th, NULL);
	close(s->lfd);
}

static void bm_load_open_loop(struct pw_bench *b)
{
	uint64_t rate = (uint64_t)pw_bench_arg(b);
	struct pw_load_config lc;
	struct pw_runtime *rt;
	struct pw_config cfg;
	struct echo_srv s;
	char at[64];
	int port, err;
	double kept = 0, runs = 0;
	uint64_t p50 = 0, p95 = 0, p99 = 0, s95 = 0;

	if (echo_start(&s, &port)) {
		pw_bench_skip(b, "no loopback listener");
		return;
	}
	pw_config_init(&cfg);
	cfg.shards = 2;
	cfg.flags = PW_CONFIG_OVERSUBSCRIBE;
	cfg.tick_ns = 10 * PW_NSEC_PER_USEC;
	err = pw_runtime_create(&rt, &cfg);
	if (err) {
		echo_stop(&s);
		pw_bench_skip(b, pw_strerror_setup(err));
		return;
	}
	pw_load_config_init(&lc);
	snprintf(at, sizeof(at), "127.0.0.1:%d", port);
	pw_net_addr_parse(&lc.target, at);
	lc.proto = PW_LOAD_ECHO;
	lc.conns = CONNS;
	lc.rate = rate;
	lc.warmup_ns = 100 * PW_NSEC_PER_MSEC;
	lc.duration_ns = 500 * PW_NSEC_PER_MSEC;
	while (pw_bench_run(b, 1)) {
		struct pw_load_result res;

		if (pw_load_run(rt, &lc, &res)) {
			pw_bench_skip(b, "pw_load_run failed");
			break;
		}
		kept += res.throughput / (double)rate;
		runs++;
		p50 += pw_hist_percentile(&res.latency, 50);
		p95 += pw_hist_percentile(&res.latency, 95);
		p99 += pw_hist_percentile(&res.latency, 99);
		s95 += pw_hist_percentile(&res.service, 95);
		pw_load_result_destroy(&res);
	}
	if (runs > 0) {
		pw_bench_counter(b, "rate_kept", kept / runs, false);
		pw_bench_counter(b, "lat_p50_us", (double)p50 / runs / 1e3,
				 false);
		pw_bench_counter(b, "lat_p95_us", (double)p95 / runs / 1e3,
				 false);
		pw_bench_counter(b, "lat_p99_us", (double)p99 / runs / 1e3,
				 false);
		pw_bench_counter(b, "svc_p95_us", (double)s95 / runs / 1e3,
				 false);
	}
	pw_runtime_destroy(rt);
	echo_stop(&s);
}
static const int64_t load_rates[] = { 2000, 20000 };
PW_BENCH_ARGS(bm_load_open_loop, load_rates);
