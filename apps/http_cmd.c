/* SPDX-License-Identifier: MIT */
/*
 * http_cmd.c - the `pinwheel http` command: its flags (each limit with
 * its nginx-like default, 0 for off), the server they start on the
 * driver (driver.h), its banner, its per-shard counters (apps/expo.h,
 * in every report) and its summary.
 * The server itself is http.c, reached only through http.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pinwheel.h"
#include "pinwheel/net.h"
#include "apps/apps.h"
#include "apps/cli.h"
#include "apps/driver.h"
#include "apps/http.h"
#include "apps/http_parse.h"
#include "apps/http_static.h"

/* ---- the command ---------------------------------------------------------- */

/* The flags of `pinwheel http` and the server they start. */
static struct http_cmd {
	const char *listen, *body, *takeover, *root;
	uint64_t head_max, drain_ns, work, accept_shards;
	uint64_t head_ns, keepalive_ns, send_ns;
	uint64_t max_conns, max_requests, max_body, sndbuf;
	bool shared, fanout, reuse_port;
	struct pw_http_opts ho;
	struct pw_net_addr addr;
	struct pw_http_server *srv;
} H;

static const struct http_cmd http_defaults = {
	.head_max = PW_HTTP_HEAD_MAX_DEFAULT,
	.drain_ns = 5 * PW_NSEC_PER_SEC,
	.head_ns = PW_HTTP_HEAD_TIMEOUT_DEFAULT,
	.keepalive_ns = PW_HTTP_KEEPALIVE_DEFAULT,
	.send_ns = PW_HTTP_SEND_TIMEOUT_DEFAULT,
	.max_requests = PW_HTTP_MAX_REQUESTS_DEFAULT,
	.max_body = PW_HTTP_MAX_BODY_DEFAULT,
	.sndbuf = PW_HTTP_SNDBUF_DEFAULT,
};

#define DAY_NS (24 * 3600 * PW_NSEC_PER_SEC)

static const struct pw_cli_opt http_opts[] = {
	{ "--listen", PW_CLI_STRING, &H.listen, 0, 0, "ADDR",
	  "127.0.0.1:PORT, [::1]:PORT or unix:/path (required)" },
	{ "--body", PW_CLI_STRING, &H.body, 0, 0, "TEXT",
	  "the response body, up to 256 bytes (default "
	  "\"" PW_HTTP_BODY_DEFAULT "\")" },
	{ "--root", PW_CLI_STRING, &H.root, 0, 0, "DIR",
	  "serve the files beneath DIR (GET and HEAD) instead of the "
	  "body: a directory's index.html, 404 when missing, 403 for "
	  "paths refused (.., encoded slashes, symlinks)" },
	{ "--head-max", PW_CLI_SIZE, &H.head_max, 64, 1u << 20, "SIZE",
	  "cap on a request head; larger gets 431 (default 8k)" },
	{ "--drain", PW_CLI_DURATION, &H.drain_ns, 0, 3600 * PW_NSEC_PER_SEC,
	  "DURATION",
	  "on SIGINT/SIGTERM, time open connections get to "
	  "finish (default 5s)" },
	{ "--shared", PW_CLI_BOOL, &H.shared, 0, 0, NULL,
	  "one listening socket for all shards instead of one "
	  "SO_REUSEPORT socket per shard" },
	{ "--reuse-port", PW_CLI_BOOL, &H.reuse_port, 0, 0, NULL,
	  "share a port other servers already listen on (SO_REUSEPORT); "
	  "without it a port in use is refused" },
	{ "--work", PW_CLI_UINT, &H.work, 0, 1000000000, "K",
	  "per request, a child task spins K iterations; joined "
	  "before the response (default 0)" },
	{ "--fanout", PW_CLI_BOOL, &H.fanout, 0, 0, NULL,
	  "per request, call every shard and gather the answers "
	  "before the response" },
	{ "--head-timeout", PW_CLI_DURATION, &H.head_ns, 0, DAY_NS, "DURATION",
	  "a request not whole this long after its first byte (a body: "
	  "after its last read) gets 408 and the connection closes; 0: "
	  "never (default 60s)" },
	{ "--keepalive-timeout", PW_CLI_DURATION, &H.keepalive_ns, 0, DAY_NS,
	  "DURATION",
	  "close a connection that completes no request this long after "
	  "its last response; 0: never (default 75s)" },
	{ "--timeout", PW_CLI_DURATION, &H.keepalive_ns, PW_NSEC_PER_MSEC,
	  DAY_NS, "DURATION",
	  "the old name of --keepalive-timeout (1ms and up)" },
	{ "--send-timeout", PW_CLI_DURATION, &H.send_ns, 0, DAY_NS, "DURATION",
	  "reset a connection whose send moves no byte this long; 0: "
	  "never (default 60s)" },
	{ "--max-conns", PW_CLI_UINT, &H.max_conns, 0, 1000000000, "N",
	  "connections open at once per shard; the excess waits in the "
	  "listen backlog; 0: no cap (default 0)" },
	{ "--max-requests", PW_CLI_UINT, &H.max_requests, 0, UINT32_MAX, "N",
	  "requests per connection, the last answered with "
	  "Connection: close; 0: no cap (default 1000)" },
	{ "--max-body", PW_CLI_SIZE, &H.max_body, 0, 0, "SIZE",
	  "a request declaring a longer body gets 413 and the connection "
	  "closes; 0: no cap (default 1m)" },
	{ "--sndbuf", PW_CLI_SIZE, &H.sndbuf, 0, 1u << 30, "SIZE",
	  "each connection's socket send buffer: what a client that "
	  "does not read can have queued; 0: the kernel's autotuning "
	  "(default 16k)" },
	{ "--takeover", PW_CLI_STRING, &H.takeover, 0, 0, "PATH",
	  "take the listening sockets from the process serving on the "
	  "Unix socket PATH (it drains and exits), else bind; then "
	  "serve PATH for the next one" },
	{ "--accept-shards", PW_CLI_UINT, &H.accept_shards, 1, PW_MAX_SHARDS,
	  "N", "only shards 0..N-1 accept connections (default all)" },
};

static const struct pw_cli_cmd http_cmd = {
	.name = "pinwheel http",
	.about = "Answers every HTTP/1.1 request with 200 and a fixed body, "
		 "keeping connections\nalive; pipelined requests are "
		 "answered in one send; HEAD gets the same headers\n"
		 "without the body. With --root DIR, the files beneath DIR "
		 "instead (Last-Modified,\nIf-Modified-Since; large "
		 "bodies spliced from the file to the socket).\n"
		 "Malformed requests get 400 and "
		 "oversized heads 431, then the\nconnection closes. "
		 "SIGINT or SIGTERM stops accepting and drains; a second "
		 "one\ncloses the open connections at once and exits 130 "
		 "(SIGINT) or 143 (SIGTERM)\nafter the summary. SIGUSR1 "
		 "prints the counters with --metrics.\n"
		 "Limits against hostile clients (each 0 for off): "
		 "--head-timeout (slow request\nheads get 408), "
		 "--keepalive-timeout (idle connections), --send-timeout "
		 "(clients\nthat do not read are reset), --max-conns "
		 "(per shard), --max-requests (per\nconnection), "
		 "--max-body (413).\n"
		 "--work, --fanout, --timeout and --accept-shards "
		 "shape the load for comparing\nthe schedulers: CPU "
		 "work in a stealable child task, a call to every "
		 "shard,\na timer reset per request, connections "
		 "all landing on a few shards.",
	.opts = http_opts,
	.nopts = sizeof(http_opts) / sizeof(http_opts[0]),
	.common = PW_CLI_RUNTIME,
};

/* Check the flags and turn them into the server's options. */
static int http_setup(struct pw_drv *d)
{
	size_t body_len = H.body ? strlen(H.body) : 0;

	if (pw_cli_addr(&d->cli, "--listen", H.listen, PW_CLI_ADDR_LISTEN,
			&H.addr))
		return 2;
	if (H.root && H.body)
		return pw_cli_fail(&d->cli, 2, "--root and --body: choose one");
	if (H.root && !*H.root)
		return pw_cli_fail(&d->cli, 2, "--root: an empty path");
	if (body_len > PW_HTTP_BODY_MAX)
		return pw_cli_fail(&d->cli, 2,
				   "--body: %zu bytes is more than %d",
				   body_len, PW_HTTP_BODY_MAX);
	if (H.accept_shards > d->cfg.shards)
		return pw_cli_fail(&d->cli, 2,
				   "--accept-shards: %llu is more than the "
				   "%u shard%s",
				   (unsigned long long)H.accept_shards,
				   d->cfg.shards,
				   d->cfg.shards == 1 ? "" : "s");
	H.ho = (struct pw_http_opts){
		.body = H.body,
		.body_len = body_len,
		.head_max = (size_t)H.head_max,
		.listen_flags = (H.shared ? PW_NET_LISTEN_SHARED : 0) |
				(H.reuse_port ? PW_NET_LISTEN_SHARE_PORT : 0),
		.work = H.work,
		.fanout = H.fanout,
		.accept_shards = (unsigned)H.accept_shards,
		.keepalive_ns = H.keepalive_ns,
		.head_timeout_ns = H.head_ns,
		.send_timeout_ns = H.send_ns,
		.max_conns = (unsigned)H.max_conns,
		.max_requests = H.max_requests,
		.max_body = H.max_body,
		.sndbuf = H.sndbuf,
		.root = H.root,
	};
	/* Under stealing an acceptor may run on any worker: accept from one
	 * socket so that no worker's socket is left without an acceptor. */
	if (d->cfg.sched == PW_SCHED_STEAL)
		H.ho.listen_flags |= PW_NET_LISTEN_SHARED;
	d->drain_ns = H.drain_ns;
	d->takeover = H.takeover;
	d->listen = &H.addr;
	return 0;
}

static int http_start(struct pw_drv *d)
{
	int err;

	H.ho.adopt = d->adopt;
	H.ho.nadopt = d->nadopt;
	err = pw_http_server_start(&H.srv, d->rt, &H.addr, &H.ho);

	if (err)
		return pw_cli_fail(&d->cli, 1, "cannot serve on %s: %s",
				   H.listen, strerror(-err));
	pw_http_server_addr(H.srv, &d->addr);
	d->listener = pw_http_server_listener(H.srv);
	return 0;
}

static void http_banner(struct pw_drv *d, FILE *f)
{
	fprintf(f, " with %u shard%s (%s)", d->cfg.shards,
		d->cfg.shards == 1 ? "" : "s",
		d->cfg.sched == PW_SCHED_STEAL ? "steal" : "shard");
}

/* One per-shard counter of struct pw_http_stats. */
struct http_ctr {
	const char *name, *help;
	size_t off;
	enum pw_expo_type type;
};

#define CTR(f, n, t, h)                                    \
	{                                                  \
		n, h, offsetof(struct pw_http_stats, f), t \
	}
static const struct http_ctr http_ctrs[] = {
	CTR(accepted, "connections_accepted", PW_EXPO_COUNTER,
	    "Connections accepted."),
	CTR(active, "connections_active", PW_EXPO_GAUGE,
	    "Connections open now."),
	CTR(full, "accept_paused", PW_EXPO_COUNTER,
	    "Times the acceptor paused at --max-conns (the excess waits in "
	    "the backlog)."),
	CTR(requests, "requests", PW_EXPO_COUNTER,
	    "Requests answered with 200."),
	CTR(bytes_in, "received_bytes", PW_EXPO_COUNTER,
	    "Bytes received from clients."),
	CTR(bytes_out, "sent_bytes", PW_EXPO_COUNTER,
	    "Bytes of responses sent."),
	CTR(linger_resets, "linger_resets", PW_EXPO_COUNTER,
	    "Closes turned into resets: the client sent on past the linger."),
	CTR(work, "work_tasks", PW_EXPO_COUNTER, "--work child tasks run."),
	CTR(calls, "fanout_calls", PW_EXPO_COUNTER, "--fanout calls answered."),
};
#undef CTR

/* One sample per shard of counter @c (label shard="i"). */
static void http_ctr(struct pw_expo *e, const struct http_ctr *c)
{
	struct pw_http_stats st;
	char shard[16];
	uint64_t v;

	pw_expo_metric(e, c->name, c->help, c->type);
	for (unsigned i = 0; !pw_http_server_stats(H.srv, i, &st); i++) {
		snprintf(shard, sizeof(shard), "%u", i);
		memcpy(&v, (const char *)&st + c->off, sizeof(v));
		pw_expo_sample(e, (const char *[]){ "shard", shard, NULL }, v);
	}
}

/* One per-shard counter of struct pw_http_static_stats (--root). */
#define FCTR(f, n, h)                                           \
	{                                                       \
		n, h, offsetof(struct pw_http_static_stats, f), \
			PW_EXPO_COUNTER                         \
	}
static const struct http_ctr file_ctrs[] = {
	FCTR(files, "files_served", "Files answered with 200 (GET and HEAD)."),
	FCTR(file_bytes, "file_sent_bytes", "Bytes of file bodies sent."),
	FCTR(not_modified, "not_modified", "Answers 304 to If-Modified-Since."),
	FCTR(spliced, "file_bodies_spliced",
	     "Bodies sent by splice, file to pipe to socket."),
	FCTR(copied, "file_bodies_read",
	     "Bodies sent by reads after their head (small, or no pipe)."),
	FCTR(truncated, "file_sends_cut",
	     "Responses cut: the file got shorter while sent."),
};
#undef FCTR

/* One sample per shard of --root counter @c. */
static void file_ctr(struct pw_expo *e, const struct http_ctr *c)
{
	struct pw_http_static *st = pw_http_server_files(H.srv);
	struct pw_http_static_stats fs;
	char shard[16];
	uint64_t v;

	pw_expo_metric(e, c->name, c->help, c->type);
	for (unsigned i = 0; !pw_http_static_stats(st, i, &fs); i++) {
		snprintf(shard, sizeof(shard), "%u", i);
		memcpy(&v, (const char *)&fs + c->off, sizeof(v));
		pw_expo_sample(e, (const char *[]){ "shard", shard, NULL }, v);
	}
}

/* The --root answers other than 200, by status, on shard @i. */
static void file_statuses(struct pw_expo *e, unsigned i, const char *shard)
{
	static const int codes[PW_HTTP_STATIC_NSTATUS] =
		PW_HTTP_STATIC_STATUSES;
	struct pw_http_static_stats fs;
	char code[16];

	if (pw_http_static_stats(pw_http_server_files(H.srv), i, &fs))
		return;
	for (unsigned k = 0; k < PW_HTTP_STATIC_NSTATUS; k++) {
		/* 400 is the server's own status, counted with its 400s. */
		if (codes[k] == 400)
			continue;
		snprintf(code, sizeof(code), "%d", codes[k]);
		pw_expo_sample(e,
			       (const char *[]){ "shard", shard, "status", code,
						 NULL },
			       fs.status[k]);
	}
}

/* Responses by status (200 is requests) and closes by cause, per shard. */
static void http_ctr_causes(struct pw_expo *e)
{
	static const int statuses[PW_HTTP_NSTATUS] = PW_HTTP_STATUSES;
	struct pw_http_stats st;
	char shard[16], code[16];

	pw_expo_metric(e, "responses", "Responses sent, by status.",
		       PW_EXPO_COUNTER);
	for (unsigned i = 0; !pw_http_server_stats(H.srv, i, &st); i++) {
		snprintf(shard, sizeof(shard), "%u", i);
		pw_expo_sample(e,
			       (const char *[]){ "shard", shard, "status",
						 "200", NULL },
			       st.requests);
		for (unsigned k = 0; k < PW_HTTP_NSTATUS; k++) {
			snprintf(code, sizeof(code), "%d", statuses[k]);
			pw_expo_sample(e,
				       (const char *[]){ "shard", shard,
							 "status", code, NULL },
				       st.status[k]);
		}
		file_statuses(e, i, shard);
	}
	pw_expo_metric(e, "connections_closed", "Connections closed, by cause.",
		       PW_EXPO_COUNTER);
	for (unsigned i = 0; !pw_http_server_stats(H.srv, i, &st); i++) {
		snprintf(shard, sizeof(shard), "%u", i);
		for (unsigned k = 0; k < PW_HTTP_CLOSE_N; k++)
			pw_expo_sample(
				e,
				(const char *[]){ "shard", shard, "cause",
						  pw_http_close_name(k), NULL },
				st.closes[k]);
	}
}

/* The server's counters, per shard, for every report (any thread). */
static void http_counters(struct pw_drv *d, struct pw_expo *e)
{
	(void)d;
	if (!H.srv)
		return;
	for (size_t i = 0; i < sizeof(http_ctrs) / sizeof(http_ctrs[0]); i++)
		http_ctr(e, &http_ctrs[i]);
	for (size_t i = 0; pw_http_server_files(H.srv) &&
			   i < sizeof(file_ctrs) / sizeof(file_ctrs[0]);
	     i++)
		file_ctr(e, &file_ctrs[i]);
	http_ctr_causes(e);
}

static void http_drain(struct pw_drv *d)
{
	(void)d;
	pw_http_server_drain(H.srv);
}

static int http_open(struct pw_drv *d)
{
	(void)d;
	return pw_http_server_open(H.srv);
}

/* The runtime is gone: the totals, then the server. */
static int http_stop(struct pw_drv *d, int status)
{
	uint64_t acc = 0, req = 0, bad = 0;
	struct pw_net_listener_stats ls;

	if (!H.srv)
		return status;
	struct pw_http_stats st;

	/* The shards' records outlive the runtime: read until the last. */
	for (unsigned i = 0; d->served && !pw_http_server_stats(H.srv, i, &st);
	     i++) {
		acc += st.accepted;
		req += st.requests;
		bad += st.errors;
	}
	if (d->served && !pw_http_server_listener_stats(H.srv, &ls))
		printf("pinwheel http: stopped; %llu connections, %llu "
		       "requests, %llu refused, %llu accept errors, %llu "
		       "dropped unread\n",
		       (unsigned long long)acc, (unsigned long long)req,
		       (unsigned long long)bad,
		       (unsigned long long)ls.accept_errors,
		       (unsigned long long)ls.dropped);
	fflush(stdout); /* the summary reaches a pipe before anything else */
	pw_http_server_destroy(H.srv);
	return status;
}

static const struct pw_drv_ops http_ops = {
	.setup = http_setup,
	.start = http_start,
	.banner = http_banner,
	.counters = http_counters,
	.drain = http_drain,
	.open = http_open,
	.stop = http_stop,
};

int pw_app_http(int argc, char **argv)
{
	H = http_defaults;
	return pw_drv_main(&http_cmd, &http_ops, argc, argv);
}
