/* SPDX-License-Identifier: MIT */
/*
 * echo.c - `pinwheel echo`: a TCP or Unix-socket echo server.
 *
 * One acceptor task per shard takes connections from the listener (the
 * shard's own SO_REUSEPORT socket, or the shared one) and spawns one task
 * per connection: multishot recv into the shard's buffer ring, each
 * buffer sent back as is and returned to the ring, end of stream
 * answered with a half-close, then cancel-then-close. SIGINT or SIGTERM
 * stops the runtime (dropping every task, which cancels its requests and
 * closes its socket) and prints the listener's counters.
 *
 * Flags are parsed here, locally, so that a shared parser can replace it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pinwheel.h"
#include "pinwheel/net.h"
#include "apps/apps.h"
#include "apps/cli.h"
#include "apps/echo.h"

enum { C_RECV, C_SEND, C_SHUT, C_CLOSE };

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
				c->have = true;
				c->step = C_SEND;
			}
			break;
		case C_SEND:
			if (pw_send_poll(cx, &c->tx, c->buf.data, c->buf.len,
					 PW_TIME_NEVER, &res) == PW_PENDING)
				return PW_PENDING;
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
}

struct acceptor {
	struct pw_accept acc;
};

/* Start a connection task for @fd (pw_cli_accept_loop()'s take). */
static void conn_spawn(void *arg, int fd)
{
	struct echo_conn c = { .fd = fd };

	(void)arg;
	pw_recv_init(&c.rx, fd);
	pw_send_init(&c.tx, fd);
	pw_close_init(&c.cl, fd);
	if (pw_spawn(NULL, conn_poll, &c, sizeof(c), conn_drop))
		close(fd);
}

static enum pw_poll acceptor_poll(struct pw_cx *cx, void *state)
{
	struct acceptor *a = state;

	return pw_cli_accept_loop(cx, &a->acc, "pinwheel echo", NULL,
				  conn_spawn, NULL);
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

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pinwheel echo --listen ADDR [--shards N] [--shared]\n"
		"\n"
		"Echo every byte received back to its sender until SIGINT or "
		"SIGTERM.\n"
		"\n"
		"  --listen ADDR  127.0.0.1:PORT, [::1]:PORT or unix:/path\n"
		"  --shards N     shards (default: one per physical core)\n"
		"  --shared       one listening socket for all shards instead "
		"of one\n"
		"                 SO_REUSEPORT socket per shard\n"
		"  --help         this text\n");
}

/* Value of flag argv[*i] ("--f V" or "--f=V"), or NULL if missing. */
static const char *flag_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);

	if (!strncmp(argv[*i], name, n) && argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (*i + 1 < argc)
		return argv[++*i];
	return NULL;
}

static bool is_flag(const char *arg, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(arg, name, n) && (arg[n] == '\0' || arg[n] == '=');
}

int pw_app_echo(int argc, char **argv)
{
	const char *listen_at = NULL;
	unsigned shards = 0;
	bool shared = false;

	for (int i = 1; i < argc; i++) {
		const char *v;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (is_flag(argv[i], "--listen")) {
			v = flag_value(argc, argv, &i, "--listen");
			if (!v) {
				fprintf(stderr, "pinwheel echo: --listen "
						"needs an address\n");
				return 2;
			}
			listen_at = v;
		} else if (is_flag(argv[i], "--shards")) {
			v = flag_value(argc, argv, &i, "--shards");
			char *end = NULL;
			unsigned long n = v ? strtoul(v, &end, 10) : 0;
			if (!v || !*v || *end || n < 1 || n > PW_MAX_SHARDS) {
				fprintf(stderr,
					"pinwheel echo: --shards needs a "
					"number from 1 to %u\n",
					(unsigned)PW_MAX_SHARDS);
				return 2;
			}
			shards = (unsigned)n;
		} else if (!strcmp(argv[i], "--shared")) {
			shared = true;
		} else {
			fprintf(stderr,
				"pinwheel echo: unknown argument '%s'\n",
				argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (!listen_at) {
		fprintf(stderr, "pinwheel echo: --listen ADDR is required\n");
		usage(stderr);
		return 2;
	}
	struct pw_net_addr addr;
	if (pw_net_addr_parse(&addr, listen_at)) {
		fprintf(stderr,
			"pinwheel echo: bad address '%s' (expected "
			"A.B.C.D:PORT, [IPv6]:PORT or unix:/path)\n",
			listen_at);
		return 2;
	}

	/* Shard threads inherit this mask: only sigwait() sees the
	 * signals. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct pw_config cfg;
	pw_config_init(&cfg);
	if (shards)
		cfg.shards = shards;
	struct pw_runtime *rt;
	int err = pw_runtime_create(&rt, &cfg);
	if (err) {
		fprintf(stderr, "pinwheel echo: %s\n", pw_strerror_setup(err));
		return 1;
	}
	struct pw_net_listener *l;
	struct pw_net_listen_opts o = { 0, shared ? PW_NET_LISTEN_SHARED : 0 };
	err = pw_net_listener_create(&l, rt, &addr, &o);
	if (err) {
		fprintf(stderr, "pinwheel echo: cannot listen on %s: %s\n",
			listen_at, strerror(-err));
		pw_runtime_destroy(rt);
		return 1;
	}
	for (unsigned i = 0; i < cfg.shards && !err; i++)
		err = pw_echo_serve(rt, i, l);
	char text[PW_NET_ADDR_STRLEN];
	pw_net_listener_addr(l, &addr);
	pw_net_addr_format(&addr, text, sizeof(text));
	if (!err) {
		printf("pinwheel echo: listening on %s with %u shard%s\n", text,
		       cfg.shards, cfg.shards == 1 ? "" : "s");
		fflush(stdout);
		int sig = 0;
		sigwait(&set, &sig);
	} else {
		fprintf(stderr, "pinwheel echo: %s\n", strerror(-err));
	}
	pw_runtime_destroy(rt);
	struct pw_net_listener_stats st;
	pw_net_listener_stats(l, &st);
	printf("pinwheel echo: stopped; %llu connections accepted, %llu "
	       "accept errors\n",
	       (unsigned long long)st.accepted,
	       (unsigned long long)st.accept_errors);
	pw_net_listener_destroy(l);
	return err ? 1 : 0;
}
