/* SPDX-License-Identifier: MIT */
/*
 * bench_udp.c - UDP echo round trips over loopback, through pinwheel's
 * UDP leaves and through a plain recvmmsg/sendmmsg loop (the floor), and
 * the cost of a batch of sendmsg SQEs linked or not.
 *
 *   bm_udp_echo_pinwheel/W   a one-shard runtime echoes with a poll task:
 *                            multishot recvmsg, what is queued taken at
 *                            once, sent back in one pw_udp_batch
 *   bm_udp_echo_floor/W      a thread echoes with recvmmsg(MSG_WAITFORONE)
 *                            and sendmmsg of up to 64 datagrams
 *   bm_udp_sqes_unlinked/N   N sendmsg SQEs per submission, independent
 *   bm_udp_sqes_linked/N     the same N as one IOSQE_IO_LINK chain
 *
 * Echo: the client is the benchmark thread, on a connected socket, with
 * W 64-byte datagrams in flight (sendmmsg, then recvmmsg); one iteration
 * is one round trip. The server runs on CPU 0, the client on CPU 1 when
 * the machine has two. srv_cpu_ns is the server's CPU per datagram: the
 * process's CPU time less the client thread's, over the measured loop
 * (the runtime's other threads sleep). The SQE benchmarks use a private
 * ring and time one datagram per iteration.
 */
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/udp_floor.h"
#include "pinwheel.h"
#include "pinwheel/async.h"

#define BATCH 64
#define DGRAM 64

static const int64_t windows[] = { 1, 32 };
static const int64_t chains[] = { 8, 32 };

static uint64_t cpu_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu >= sysconf(_SC_NPROCESSORS_ONLN))
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* A socket on a free loopback port; its address in *@a. */
static int bound(struct pw_net_addr *a)
{
	socklen_t len = sizeof(a->u);
	int fd = pw_udp_open(a, NULL, NULL);

	if (fd >= 0 && !getsockname(fd, &a->u.sa, &len))
		a->len = len;
	return fd;
}

/* ---- the client ------------------------------------------------------------ */

/* Send @k datagrams on connected @fd. */
static void client_send(int fd, unsigned k)
{
	static char payload[DGRAM];
	struct iovec iov = { payload, sizeof(payload) };
	struct mmsghdr m[BATCH];

	memset(m, 0, sizeof(m));
	for (unsigned i = 0; i < BATCH; i++) {
		m[i].msg_hdr.msg_iov = &iov;
		m[i].msg_hdr.msg_iovlen = 1;
	}
	while (k) {
		int n = sendmmsg(fd, m, k < BATCH ? k : BATCH, 0);
		if (n <= 0)
			return;
		k -= (unsigned)n;
	}
}

/* @n round trips with @w in flight; a datagram lost (none on loopback
 * unless the machine stalls a second) is sent again. */
static void client_run(int fd, uint64_t n, unsigned w)
{
	static char in[BATCH][DGRAM];
	struct iovec iov[BATCH];
	struct mmsghdr m[BATCH];
	uint64_t sent = n < w ? n : w, got = 0;

	for (unsigned i = 0; i < BATCH; i++) {
		iov[i].iov_base = in[i];
		iov[i].iov_len = DGRAM;
		memset(&m[i], 0, sizeof(m[i]));
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	client_send(fd, (unsigned)sent);
	while (got < n) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 1000) == 0) {
			client_send(fd, (unsigned)(sent - got));
			continue;
		}
		int k = recvmmsg(fd, m, BATCH, MSG_DONTWAIT, NULL);
		if (k <= 0)
			continue;
		got += (uint64_t)k;
		unsigned more = (unsigned)(n - sent < (uint64_t)k ?
						   n - sent :
						   (uint64_t)k);
		client_send(fd, more);
		sent += more;
	}
}

/* Time @n-round-trip batches against the server at @srv. */
static void client_bench(struct pw_bench *b, const struct pw_net_addr *srv)
{
	unsigned w = (unsigned)pw_bench_arg(b);
	int fd = pw_udp_open(NULL, srv, NULL);
	uint64_t total = 0, p0, c0;

	if (fd < 0) {
		pw_bench_skip(b, "no client socket");
		return;
	}
	cpu_set_t was;
	pthread_getaffinity_np(pthread_self(), sizeof(was), &was);
	pin_self(1);
	p0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
	c0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	while (pw_bench_run(b, 4096)) {
		client_run(fd, 4096, w);
		total += 4096;
	}
	uint64_t cli = cpu_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	uint64_t all = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - p0;
	if (total) {
		pw_bench_counter(b, "srv_cpu_ns",
				 (double)(all - cli) / (double)total, false);
		pw_bench_counter(b, "cli_cpu_ns", (double)cli / (double)total,
				 false);
	}
	pw_bench_items(b, (int64_t)total);
	pthread_setaffinity_np(pthread_self(), sizeof(was), &was);
	close(fd);
}

/* ---- the pinwheel server ------------------------------------------------- */

struct echo {
	pw_async_t at;
	int fd;
	int32_t res;
	unsigned k;
	struct pw_udp_recv r;
	struct pw_udp_batch b;
	struct pw_udp_dgram d[BATCH];
	struct pw_udp_out out[BATCH];
	struct iovec iov[BATCH];
};

static enum pw_poll echo_poll(struct pw_cx *cx, void *state)
{
	struct echo *e = state;

	PW_ASYNC_BEGIN(cx, &e->at);
	pw_udp_recv_init(&e->r, e->fd, 0);
	e->r.share = BATCH;
	pw_udp_batch_init(&e->b, e->fd);
	for (;;) {
		PW_AWAIT(pw_udp_recv_poll(cx, &e->r, PW_TIME_NEVER, &e->d[0],
					  &e->res));
		if (e->res < 0)
			PW_RETURN(e->res);
		e->k = 1;
		while (e->k < BATCH &&
		       pw_udp_recv_poll(cx, &e->r, 0, &e->d[e->k], &e->res) ==
			       PW_READY &&
		       e->res >= 0)
			e->k++;
		for (unsigned i = 0; i < e->k; i++) {
			e->iov[i].iov_base = e->d[i].data;
			e->iov[i].iov_len = e->d[i].len;
			e->out[i].iov = &e->iov[i];
			e->out[i].iovcnt = 1;
			e->out[i].to = &e->d[i].peer;
		}
		PW_AWAIT(pw_udp_batch_poll(cx, &e->b, e->out, e->k,
					   PW_TIME_NEVER, &e->res));
		for (unsigned i = 0; i < e->k; i++)
			pw_udp_dgram_release(&e->d[i]);
	}
	PW_ASYNC_END();
}

static void echo_drop(void *state)
{
	struct echo *e = state;

	pw_udp_recv_cancel(&e->r);
	pw_udp_batch_cancel(&e->b);
}

static void bm_udp_echo_pinwheel(struct pw_bench *b)
{
	static struct echo e;
	struct pw_config cfg;
	struct pw_runtime *rt = NULL;
	struct pw_net_addr a;
	int cpu = 0;

	pw_config_init(&cfg);
	cfg.shards = 1;
	cfg.cpus = &cpu;
	pw_net_addr_parse(&a, "127.0.0.1:0");
	memset(&e, 0, sizeof(e));
	e.fd = bound(&a);
	int err = e.fd < 0 ? e.fd : pw_runtime_create(&rt, &cfg);
	if (err) {
		if (e.fd >= 0)
			close(e.fd);
		pw_bench_skip(b, pw_strerror_setup(err));
		return;
	}
	pw_runtime_spawn(rt, 0, echo_poll, &e, 0, echo_drop);
	client_bench(b, &a);
	pw_runtime_destroy(rt);
	close(e.fd);
}
PW_BENCH_ARGS(bm_udp_echo_pinwheel, windows);

/* ---- the floor --------------------------------------------------------------- */

static void *floor_main(void *arg)
{
	int fd = *(int *)arg;
	static char buf[BATCH][DGRAM];
	static struct udp_floor f = { .buf = buf[0], .dgram = DGRAM };

	pin_self(0);
	while (udp_floor_round(fd, &f, true) >= 0)
		;
	return NULL; /* an empty datagram: stop */
}

static void bm_udp_echo_floor(struct pw_bench *b)
{
	struct pw_net_addr a;
	pthread_t th;

	pw_net_addr_parse(&a, "127.0.0.1:0");
	int fd = bound(&a);
	if (fd < 0 || pthread_create(&th, NULL, floor_main, &fd)) {
		pw_bench_skip(b, "no server");
		return;
	}
	client_bench(b, &a);
	int q = pw_udp_open(NULL, &a, NULL);
	if (q < 0 || send(q, "", 0, 0) != 0)
		shutdown(fd, SHUT_RDWR); /* cannot happen on loopback */
	pthread_join(th, NULL);
	if (q >= 0)
		close(q);
	close(fd);
}
PW_BENCH_ARGS(bm_udp_echo_floor, windows);

/* ---- a batch of SQEs, linked or not ----------------------------------------- */

static void sqes(struct pw_bench *b, bool link)
{
	unsigned n = (unsigned)pw_bench_arg(b);
	struct pw_net_addr sink;
	struct io_uring ring;
	static char payload[DGRAM];
	struct iovec iov = { payload, sizeof(payload) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	pw_net_addr_parse(&sink, "127.0.0.1:0");
	int rx = bound(&sink);
	int fd = pw_udp_open(NULL, &sink, NULL);
	if (rx < 0 || fd < 0 || io_uring_queue_init(256, &ring, 0)) {
		pw_bench_skip(b, "no ring");
		return;
	}
	while (pw_bench_run(b, n)) {
		struct io_uring_cqe *cqe;
		for (unsigned i = 0; i < n; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			io_uring_prep_sendmsg(sqe, fd, &msg, 0);
			if (link && i + 1 < n)
				sqe->flags |= IOSQE_IO_LINK;
		}
		io_uring_submit_and_wait(&ring, n);
		for (unsigned i = 0; i < n; i++) {
			io_uring_wait_cqe(&ring, &cqe);
			io_uring_cqe_seen(&ring, cqe);
		}
	}
	io_uring_queue_exit(&ring);
	close(fd);
	close(rx); /* what it received is dropped at once: a sink */
}

static void bm_udp_sqes_unlinked(struct pw_bench *b)
{
	sqes(b, false);
}
PW_BENCH_ARGS(bm_udp_sqes_unlinked, chains);

static void bm_udp_sqes_linked(struct pw_bench *b)
{
	sqes(b, true);
}
PW_BENCH_ARGS(bm_udp_sqes_linked, chains);
