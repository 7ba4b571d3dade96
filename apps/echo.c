/* SPDX-License-Identifier: MIT */
/*
 * echo.c - `pinwheel echo`: a TCP or Unix-socket echo server.
 *
 * One acceptor task per shard takes connections from the listener (the
 * shard's own SO_REUSEPORT socket, or the shared one) and spawns one task
 * per connection: multishot recv into the shard's buffer ring, each
 * buffer sent back as is and returned to the ring (while a send waits,
 * the receive is parked: a client that does not read keeps the one
 * buffer being sent, and no other, net/recv.c), end of stream
 * answered with a half-close, then cancel-then-close. The command runs
 * on the driver (driver.h): SIGINT or SIGTERM stops the runtime
 * (dropping every task, which cancels its requests and closes its
 * socket) and prints the listener's counters. Connections and bytes are
 * counted per shard for the reports (apps/expo.h).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pinwheel.h"
#include "pinwheel/net.h"
#include "apps/apps.h"
#include "apps/cli.h"
#include "apps/driver.h"
#include "apps/echo.h"

enum { C_RECV, C_SEND, C_SHUT, C_CLOSE };

/*
 * The command's counters, one record per shard, written only by the
 * thread of that shard (the worker running the task under stealing too)
 * with a relaxed load and store, read by any thread in echo_counters().
 * Shared by every echo service of the process (the tests start several).
 */
static struct echo_ctr {
	_Alignas(64) _Atomic uint64_t opened, closed, bytes_in, bytes_out;
} echo_ctrs[PW_MAX_SHARDS];

/* Add @n to counter @field of the calling shard's record. */
#define ECHO_ADD(field, n)                                                     \
	do {                                                                   \
		int id_ = pw_shard_id();                                       \
		if (id_ >= 0 && id_ < PW_MAX_SHARDS) {                         \
			_Atomic uint64_t *c_ = &echo_ctrs[id_].field;          \
			/* Relaxed: one writer; pairs with echo_counters(). */ \
			atomic_store_explicit(                                 \
				c_,                                            \
				atomic_load_explicit(c_,                       \
						     memory_order_relaxed) +   \
					(n),                                   \
				memory_order_relaxed);                         \
		}                                                              \
	} while (0)

struct echo_conn {
	int fd;
	int step;
	bool have; /* buf is borrowed */
	struct pw_net_buf buf;
	struct pw_recv rx;
	struct pw_send tx;
	struct pw_close cl;
};

static enum pw_poll conn_poll(struct pw_cx *cx, void *state)
{
	struct echo_conn *c = state;
	int32_t res;

	for (;;) {
		switch (c->step) {
		case C_RECV:
			if (pw_recv_poll(cx, &c->rx, PW_TIME_NEVER, &c->buf,
					 &res) == PW_PENDING)
				return PW_PENDING;
			if (res < 0) {
				c->step = C_CLOSE;
				pw_close_init(&c->cl, c->fd);
			} else if (res == 0) {
				c->step = C_SHUT;
				pw_shutdown_init(&c->cl, c->fd, SHUT_WR);
			} else {
				ECHO_ADD(bytes_in, (uint64_t)res);
				c->have = true;
				c->step = C_SEND;
			}
			break;
		case C_SEND:
			if (pw_send_poll(cx, &c->tx, c->buf.data, c->buf.len,
					 PW_TIME_NEVER, &res) == PW_PENDING) {
				/* Keep no more ring buffers while the peer
				 * does not read; bytes of the leaf's own
				 * memory being sent must stay where they are. */
				if (c->buf.bid != PW_NET_BUF_OWN)
					pw_recv_park(&c->rx);
				return PW_PENDING;
			}
			if (res > 0)
				ECHO_ADD(bytes_out, (uint64_t)res);
			pw_net_buf_release(&c->buf);
			c->have = false;
			if (res < 0) {
				c->step = C_CLOSE;
				pw_close_init(&c->cl, c->fd);
			} else {
				c->step = C_RECV;
			}
			break;
		case C_SHUT:
			if (pw_close_poll(cx, &c->cl, &res) == PW_PENDING)
				return PW_PENDING;
			c->step = C_CLOSE;
			pw_close_init(&c->cl, c->fd);
			break;
		default:
			if (pw_close_poll(cx, &c->cl, &res) == PW_PENDING)
				return PW_PENDING;
			return pw_ready(cx, 0);
		}
	}
}

static void conn_drop(void *state)
{
	struct echo_conn *c = state;

	if (c->have)
		pw_net_buf_release(&c->buf);
	pw_recv_cancel(&c->rx);
	pw_send_cancel(&c->tx);
	if (!pw_close_cancel(&c->cl))
		close(c->fd);
	ECHO_ADD(closed, 1);
}

struct acceptor {
	struct pw_accept acc;
};

/* Start a connection task for @fd (the accept loop's start; on an
 * error the loop closes @fd). */
static int conn_spawn(void *arg, int fd)
{
	struct echo_conn c = { .fd = fd };

	(void)arg;
	pw_recv_init(&c.rx, fd);
	pw_send_init(&c.tx, fd);
	pw_close_init(&c.cl, fd);
	int err = pw_spawn(NULL, conn_poll, &c, sizeof(c), conn_drop);
	if (!err)
		ECHO_ADD(opened, 1);
	return err;
}

/* The accept loop's error: one line on stderr. */
static void accept_error(void *arg, int err)
{
	(void)arg;
	fprintf(stderr, "pinwheel echo: accept: %s\n", strerror(-err));
}

static const struct pw_accept_loop echo_loop = {
	.start = conn_spawn,
	.error = accept_error,
};

static enum pw_poll acceptor_poll(struct pw_cx *cx, void *state)
{
	struct acceptor *a = state;

	return pw_accept_loop_poll(cx, &a->acc, &echo_loop);
}

static void acceptor_drop(void *state)
{
	struct acceptor *a = state;

	pw_accept_cancel(&a->acc);
}

int pw_echo_serve(struct pw_runtime *rt, unsigned shard,
		  struct pw_net_listener *l)
{
	struct acceptor a;

	pw_accept_init(&a.acc, l, 0);
	return pw_runtime_spawn(rt, shard, acceptor_poll, &a, sizeof(a),
				acceptor_drop);
}

/* ---- the command ------------------------------------------------------ */

/* The flags of `pinwheel echo` and the listener they open. */
static struct echo_cmd {
	const char *listen;
	bool shared, reuse_port;
	struct pw_net_addr addr;
	struct pw_net_listener *l;
} E;

static const struct pw_cli_opt echo_opts[] = {
	{ "--listen", PW_CLI_STRING, &E.listen, 0, 0, "ADDR",
	  "127.0.0.1:PORT, [::1]:PORT or unix:/path (required)" },
	{ "--shared", PW_CLI_BOOL, &E.shared, 0, 0, NULL,
	  "one listening socket for all shards instead of one "
	  "SO_REUSEPORT socket per shard" },
	{ "--reuse-port", PW_CLI_BOOL, &E.reuse_port, 0, 0, NULL,
	  "share a port other servers already listen on (SO_REUSEPORT); "
	  "without it a port in use is refused" },
};

static const struct pw_cli_cmd echo_cmd = {
	.name = "pinwheel echo",
	.about = "Echo every byte received back to its sender until SIGINT "
		 "or SIGTERM.\n\nExit status: 0; 1 when the server "
		 "could not start; 2 for a bad flag; 130 or 143\nafter a "
		 "second SIGINT or SIGTERM during the stop.",
	.opts = echo_opts,
	.nopts = sizeof(echo_opts) / sizeof(echo_opts[0]),
	.common = PW_CLI_RUNTIME,
};

static int echo_setup(struct pw_drv *d)
{
	return pw_cli_addr(&d->cli, "--listen", E.listen, PW_CLI_ADDR_LISTEN,
			   &E.addr) ?
		       2 :
		       0;
}

/* The listener, then one acceptor per shard. */
static int echo_start(struct pw_drv *d)
{
	struct pw_net_listen_opts o = {
		.flags = (E.shared ? PW_NET_LISTEN_SHARED : 0) |
			 (E.reuse_port ? PW_NET_LISTEN_SHARE_PORT : 0)
	};
	int err = pw_net_listener_create(&E.l, d->rt, &E.addr, &o);

	if (err) {
		E.l = NULL;
		return pw_cli_fail(&d->cli, 1, "cannot listen on %s: %s",
				   E.listen, strerror(-err));
	}
	for (unsigned i = 0; i < d->cfg.shards && !err; i++)
		err = pw_echo_serve(d->rt, i, E.l);
	if (err)
		return pw_cli_fail(&d->cli, 1, "%s", strerror(-err));
	pw_net_listener_addr(E.l, &d->addr);
	return 0;
}

static void echo_banner(struct pw_drv *d, FILE *f)
{
	fprintf(f, " with %u shard%s", d->cfg.shards,
		d->cfg.shards == 1 ? "" : "s");
}

/* The runtime is gone: the listener's counters, then the listener. */
static int echo_stop(struct pw_drv *d, int status)
{
	struct pw_net_listener_stats st;

	if (!E.l)
		return status;
	if (!pw_net_listener_stats(E.l, &st))
		printf("pinwheel echo: stopped; %llu connections accepted, "
		       "%llu accept errors\n",
		       (unsigned long long)st.accepted,
		       (unsigned long long)st.accept_errors);
	pw_net_listener_destroy(E.l);
	(void)d;
	return status;
}

/* The echo counters, summed over the shards (any thread). */
static void echo_counters(struct pw_drv *d, struct pw_expo *e)
{
	uint64_t v[4] = { 0 };
	struct pw_net_listener_stats ls;

	(void)d;
	for (unsigned i = 0; i < PW_MAX_SHARDS; i++) {
		const struct echo_ctr *c = &echo_ctrs[i];
		/* Relaxed: counters; pair with the stores of ECHO_ADD. */
		v[0] += atomic_load_explicit(&c->opened, memory_order_relaxed);
		v[1] += atomic_load_explicit(&c->closed, memory_order_relaxed);
		v[2] += atomic_load_explicit(&c->bytes_in,
					     memory_order_relaxed);
		v[3] += atomic_load_explicit(&c->bytes_out,
					     memory_order_relaxed);
	}
	pw_expo_metric(e, "connections_accepted", "Connections accepted.",
		       PW_EXPO_COUNTER);
	pw_expo_sample(e, NULL, v[0]);
	pw_expo_metric(e, "connections_active", "Connections open now.",
		       PW_EXPO_GAUGE);
	pw_expo_sample(e, NULL, v[0] > v[1] ? v[0] - v[1] : 0);
	pw_expo_metric(e, "received_bytes", "Bytes received.", PW_EXPO_COUNTER);
	pw_expo_sample(e, NULL, v[2]);
	pw_expo_metric(e, "sent_bytes", "Bytes echoed back.", PW_EXPO_COUNTER);
	pw_expo_sample(e, NULL, v[3]);
	if (E.l && !pw_net_listener_stats(E.l, &ls)) {
		pw_expo_metric(e, "accept_errors",
			       "Accepts that failed (EMFILE, ...).",
			       PW_EXPO_COUNTER);
		pw_expo_sample(e, NULL, ls.accept_errors);
	}
}

static const struct pw_drv_ops echo_ops = {
	.setup = echo_setup,
	.start = echo_start,
	.banner = echo_banner,
	.stop = echo_stop,
	.counters = echo_counters,
};

int pw_app_echo(int argc, char **argv)
{
	E = (struct echo_cmd){ 0 };
	return pw_drv_main(&echo_cmd, &echo_ops, argc, argv);
}
