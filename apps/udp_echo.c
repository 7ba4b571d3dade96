/* SPDX-License-Identifier: MIT */
/*
 * udp_echo.c - `pinwheel udp-echo`: a UDP echo server.
 *
 * One SO_REUSEPORT socket per shard (pw_udp_socket_create(), so the
 * kernel hashes each peer to one shard) and one task per shard on it:
 * wait for a datagram, take every other one already queued (up to
 * UE_BATCH), send them all back to their senders in one pw_udp_batch (one
 * submission of many sendmsg requests), release them, and wait again. A
 * datagram longer than a receive buffer holds (--buffer-size less
 * PW_UDP_RECV_OVERHEAD) arrives truncated: it is counted and never
 * echoed cut. An echo is counted as sent when it joins the batch (so a
 * report never lags what a peer received), and as a send error too if
 * its send then fails. What the kernel dropped
 * because a socket's queue was full is read from the sockets
 * (pw_udp_drops()) by every report.
 *
 * The command runs on the driver (driver.h): SIGINT or SIGTERM stops the
 * runtime, which drops the tasks (their receives and sends cancelled),
 * and prints the counters. Nothing else needs draining: a datagram
 * service holds no connection.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pinwheel.h"
#include "pinwheel/async.h"
#include "pinwheel/net.h"
#include "apps/apps.h"
#include "apps/cli.h"
#include "apps/driver.h"

/* Datagrams taken from the queue and sent back in one batch. */
#define UE_BATCH 64

/* The largest UDP payload over IPv4. */
#define UE_DGRAM_MAX 65507u

enum { UE_IN, UE_OUT, UE_BYTES_IN, UE_BYTES_OUT, UE_TRUNC, UE_SEND_ERR, UE_N };

/*
 * The counters, one record per shard, written only by the thread of that
 * shard (the worker running the task under stealing too) with a relaxed
 * load and store, read by any thread in ue_counters().
 */
static struct ue_ctr {
	_Alignas(64) _Atomic uint64_t v[UE_N];
} ue_ctrs[PW_MAX_SHARDS];

/* Add @n to counter @i of the calling shard's record. */
static void ue_add(unsigned i, uint64_t n)
{
	int id = pw_shard_id();

	if (id < 0 || id >= PW_MAX_SHARDS || !n)
		return;
	_Atomic uint64_t *c = &ue_ctrs[id].v[i];
	/* Relaxed: one writer; pairs with the loads in ue_sum(). */
	atomic_store_explicit(c,
			      atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* Counter @i summed over the shards. Any thread. */
static uint64_t ue_sum(unsigned i)
{
	uint64_t s = 0;

	for (unsigned k = 0; k < PW_MAX_SHARDS; k++)
		/* Relaxed: counters; pair with the stores in ue_add(). */
		s += atomic_load_explicit(&ue_ctrs[k].v[i],
					  memory_order_relaxed);
	return s;
}

/* One shard's echo: its state lives in the command's array (the task is
 * spawned with size 0, so it runs in place). */
struct ue_task {
	pw_async_t at;
	int fd;
	unsigned k;   /* datagrams lent (being sent back) */
	int32_t res;  /* the last poll's result */
	uint32_t net; /* 0: the shard's buffer ring as it is */
	const struct pw_net_config *cfg;
	uint32_t rflags; /* PW_UDP_NO_GRO or 0 */
	unsigned share;	 /* pw_udp_recv share, 0: the default */
	struct pw_udp_recv r;
	struct pw_udp_batch b;
	struct pw_udp_dgram d[UE_BATCH];
	struct pw_udp_out out[UE_BATCH];
	struct iovec iov[UE_BATCH];
};

/* Keep datagram t->d[t->k] for the batch, or count and release it when it
 * came truncated. */
static void ue_take(struct ue_task *t)
{
	struct pw_udp_dgram *d = &t->d[t->k];

	ue_add(UE_IN, 1);
	ue_add(UE_BYTES_IN, d->full_len);
	if (d->flags & PW_UDP_TRUNC) {
		ue_add(UE_TRUNC, 1);
		pw_udp_dgram_release(d);
		return;
	}
	/* Counted as sent once it is in the batch: before the peer can see
	 * its echo, so a report never lags what a peer has received. */
	ue_add(UE_OUT, 1);
	ue_add(UE_BYTES_OUT, d->len);
	t->iov[t->k].iov_base = d->data;
	t->iov[t->k].iov_len = d->len;
	t->out[t->k].iov = &t->iov[t->k];
	t->out[t->k].iovcnt = 1;
	t->out[t->k].to = &d->peer;
	t->k++;
}

/* Take what the receive has queued already, without waiting. */
static void ue_drain(struct pw_cx *cx, struct ue_task *t)
{
	int32_t res;

	while (t->k < UE_BATCH &&
	       pw_udp_recv_poll(cx, &t->r, 0, &t->d[t->k], &res) == PW_READY &&
	       res >= 0)
		ue_take(t);
}

/* Count the batch's failed sends and give its datagrams back. */
static void ue_sent(struct ue_task *t)
{
	for (unsigned i = 0; i < t->k; i++) {
		if (t->out[i].res < 0)
			ue_add(UE_SEND_ERR, 1);
		pw_udp_dgram_release(&t->d[i]);
	}
	t->k = 0;
}

static enum pw_poll ue_poll(struct pw_cx *cx, void *state)
{
	struct ue_task *t = state;

	PW_ASYNC_BEGIN(cx, &t->at);
	/* Before this shard's first receive makes its ring; -EBUSY (a ring
	 * made already) keeps the old geometry. */
	if (t->cfg)
		(void)pw_net_configure(t->cfg);
	pw_udp_recv_init(&t->r, t->fd, t->rflags);
	t->r.share = t->share;
	pw_udp_batch_init(&t->b, t->fd);
	for (;;) {
		t->k = 0;
		PW_AWAIT(pw_udp_recv_poll(cx, &t->r, PW_TIME_NEVER, &t->d[0],
					  &t->res));
		if (t->res == -ECANCELED || t->res == -EBADF)
			PW_RETURN(t->res); /* the socket is gone */
		if (t->res < 0)
			continue; /* an ICMP error, reported once */
		ue_take(t);
		ue_drain(cx, t);
		if (!t->k)
			continue;
		PW_AWAIT(pw_udp_batch_poll(cx, &t->b, t->out, t->k,
					   PW_TIME_NEVER, &t->res));
		ue_sent(t);
	}
	PW_ASYNC_END();
}

/* The runtime stops: cancel both requests. Lent datagrams are released
 * only when no send may still read them. */
static void ue_drop(void *state)
{
	struct ue_task *t = state;

	pw_udp_recv_cancel(&t->r);
	pw_udp_batch_cancel(&t->b);
	if (!pw_udp_batch_in_flight(&t->b))
		for (unsigned i = 0; i < t->k; i++)
			pw_udp_dgram_release(&t->d[i]);
	t->k = 0;
}

/* ---- the command ------------------------------------------------------ */

/* The flags of `pinwheel udp-echo` and what they open. */
static struct ue_cmd {
	const char *listen;
	bool shared, reuse_port, no_gro;
	uint64_t nbufs, bufsz, rcvbuf, sndbuf;
	struct pw_net_addr addr;
	struct pw_net_config net;
	struct pw_udp_socket *u;
	struct ue_task *tasks;
	unsigned ntasks;
} U;

static const struct ue_cmd ue_defaults = {
	.nbufs = 512,
	.bufsz = 4096,
};

static const struct pw_cli_opt ue_opts[] = {
	{ "--listen", PW_CLI_STRING, &U.listen, 0, 0, "ADDR",
	  "127.0.0.1:PORT or [::1]:PORT (required)" },
	{ "--shared", PW_CLI_BOOL, &U.shared, 0, 0, NULL,
	  "one socket for all shards instead of one SO_REUSEPORT socket "
	  "per shard" },
	{ "--reuse-port", PW_CLI_BOOL, &U.reuse_port, 0, 0, NULL,
	  "share a port other sockets hold (SO_REUSEPORT); without it a "
	  "port in use is refused" },
	{ "--buffers", PW_CLI_UINT, &U.nbufs, 8, 32768, "N",
	  "receive buffers per shard, a power of two (512)" },
	{ "--buffer-size", PW_CLI_SIZE, &U.bufsz, 256, 1 << 20, "SIZE",
	  "bytes per receive buffer, rounded up to a multiple of 64 (4k); "
	  "a datagram longer than SIZE less 112 is counted as truncated, "
	  "not echoed (65619 echoes any)" },
	{ "--rcvbuf", PW_CLI_SIZE, &U.rcvbuf, 0, 1 << 30, "SIZE",
	  "SO_RCVBUF of each socket (0: the kernel's default)" },
	{ "--sndbuf", PW_CLI_SIZE, &U.sndbuf, 0, 1 << 30, "SIZE",
	  "SO_SNDBUF of each socket (0: the kernel's default)" },
	{ "--no-gro", PW_CLI_BOOL, &U.no_gro, 0, 0, NULL,
	  "never turn UDP_GRO on (it is on with 64k+ buffers)" },
};

static const struct pw_cli_cmd ue_cmd = {
	.name = "pinwheel udp-echo",
	.about = "Send every UDP datagram received back to its sender, whole, "
		 "until SIGINT or\nSIGTERM. Datagrams that arrive truncated "
		 "(longer than a buffer holds) and\nsends that fail are "
		 "counted, as are the datagrams the kernel dropped on a "
		 "full\nsocket queue.\n\nExit status: 0; 1 when the server "
		 "could not start; 2 for a bad flag; 130 or 143\nafter a "
		 "second SIGINT or SIGTERM during the stop.",
	.opts = ue_opts,
	.nopts = sizeof(ue_opts) / sizeof(ue_opts[0]),
	.common = PW_CLI_RUNTIME,
};

static int ue_setup(struct pw_drv *d)
{
	if (pw_cli_addr(&d->cli, "--listen", U.listen, PW_CLI_ADDR_LISTEN,
			&U.addr))
		return 2;
	if (U.addr.u.sa.sa_family != AF_INET &&
	    U.addr.u.sa.sa_family != AF_INET6)
		return pw_cli_fail(&d->cli, 2,
				   "--listen: '%s' is not an IPv4 or IPv6 "
				   "address",
				   U.listen);
	if (U.nbufs & (U.nbufs - 1))
		return pw_cli_fail(&d->cli, 2,
				   "--buffers: %" PRIu64
				   " is not a power of two",
				   U.nbufs);
	/* A multiple of 64: each buffer starts with the kernel's header,
	 * read in place (an odd size would misalign every other one). */
	U.bufsz = (U.bufsz + 63) / 64 * 64;
	pw_net_config_init(&U.net);
	U.net.buf_count = (uint32_t)U.nbufs;
	U.net.buf_size = (uint32_t)U.bufsz;
	return 0;
}

/* The largest datagram echoed whole. */
static uint64_t ue_max_dgram(void)
{
	uint64_t room = U.bufsz - PW_UDP_RECV_OVERHEAD;

	return room < UE_DGRAM_MAX ? room : UE_DGRAM_MAX;
}

/* The sockets, then one echo task per shard. */
static int ue_start(struct pw_drv *d)
{
	struct pw_udp_opts o = {
		.flags = (U.shared ? PW_UDP_SHARED : 0) |
			 (U.reuse_port ? PW_UDP_SHARE_PORT : 0),
		.rcvbuf = (int)U.rcvbuf,
		.sndbuf = (int)U.sndbuf,
	};
	int err = pw_udp_socket_create(&U.u, d->rt, &U.addr, &o);

	if (err) {
		U.u = NULL;
		return pw_cli_fail(&d->cli, 1, "cannot bind %s: %s", U.listen,
				   strerror(-err));
	}
	U.tasks = calloc(d->cfg.shards, sizeof(*U.tasks));
	if (!U.tasks)
		return pw_cli_fail(&d->cli, 1, "out of memory");
	for (unsigned i = 0; i < d->cfg.shards && !err; i++) {
		struct ue_task *t = &U.tasks[i];
		t->fd = pw_udp_socket_fd(U.u, i);
		t->cfg = &U.net;
		t->rflags = U.no_gro ? PW_UDP_NO_GRO : 0;
		t->share = U.nbufs / 4 < UE_BATCH ? 0 : UE_BATCH;
		err = pw_runtime_spawn(d->rt, i, ue_poll, t, 0, ue_drop);
		if (!err)
			U.ntasks++;
	}
	if (err)
		return pw_cli_fail(&d->cli, 1, "%s", strerror(-err));
	pw_udp_socket_addr(U.u, &d->addr);
	return 0;
}

static void ue_banner(struct pw_drv *d, FILE *f)
{
	fprintf(f, " (udp) with %u shard%s, datagrams up to %" PRIu64 " bytes",
		d->cfg.shards, d->cfg.shards == 1 ? "" : "s", ue_max_dgram());
}

/* Datagrams the kernel dropped on the sockets' full queues. Any thread,
 * while the sockets are open. */
static uint64_t ue_drops(void)
{
	uint64_t sum = 0, n;
	unsigned socks = U.shared ? 1 : U.ntasks;

	for (unsigned i = 0; U.u && i < socks; i++)
		if (!pw_udp_drops(pw_udp_socket_fd(U.u, i), &n))
			sum += n;
	return sum;
}

/* The runtime is gone: the counters, then the sockets and the tasks'
 * memory. */
static int ue_stop(struct pw_drv *d, int status)
{
	(void)d;
	if (U.u) {
		printf("pinwheel udp-echo: stopped; %" PRIu64
		       " datagrams in, %" PRIu64 " sent back, %" PRIu64
		       " truncated, %" PRIu64 " send errors, %" PRIu64
		       " dropped by the kernel\n",
		       ue_sum(UE_IN), ue_sum(UE_OUT), ue_sum(UE_TRUNC),
		       ue_sum(UE_SEND_ERR), ue_drops());
		pw_udp_socket_destroy(U.u);
		U.u = NULL;
	}
	free(U.tasks);
	U.tasks = NULL;
	return status;
}

static void ue_one(struct pw_expo *e, const char *name, const char *help,
		   uint64_t v)
{
	pw_expo_metric(e, name, help, PW_EXPO_COUNTER);
	pw_expo_sample(e, NULL, v);
}

/* The counters, summed over the shards (any thread). */
static void ue_counters(struct pw_drv *d, struct pw_expo *e)
{
	(void)d;
	ue_one(e, "received_datagrams", "Datagrams received.", ue_sum(UE_IN));
	ue_one(e, "sent_datagrams",
	       "Echoes sent (send_errors counts those that failed).",
	       ue_sum(UE_OUT));
	ue_one(e, "received_bytes", "Bytes of the datagrams received.",
	       ue_sum(UE_BYTES_IN));
	ue_one(e, "sent_bytes", "Bytes of the echoes sent.",
	       ue_sum(UE_BYTES_OUT));
	ue_one(e, "truncated_datagrams",
	       "Datagrams longer than a buffer: counted, not echoed.",
	       ue_sum(UE_TRUNC));
	ue_one(e, "send_errors", "Echoes whose send failed.",
	       ue_sum(UE_SEND_ERR));
	ue_one(e, "kernel_drops",
	       "Datagrams the kernel dropped on a full socket queue.",
	       ue_drops());
}

static const struct pw_drv_ops ue_ops = {
	.setup = ue_setup,
	.start = ue_start,
	.banner = ue_banner,
	.stop = ue_stop,
	.counters = ue_counters,
};

int pw_app_udp_echo(int argc, char **argv)
{
	U = ue_defaults;
	memset(ue_ctrs, 0, sizeof(ue_ctrs));
	return pw_drv_main(&ue_cmd, &ue_ops, argc, argv);
}
