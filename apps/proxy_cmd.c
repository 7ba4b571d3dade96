/* SPDX-License-Identifier: MIT */
/*
 * proxy_cmd.c - the `pinwheel proxy` command: its flags, the proxy they
 * start on the driver (driver.h), its banner, its counters line (every
 * second with --stats, on SIGUSR1) and its summary at the end. The proxy
 * itself is proxy.c, reached only through proxy.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pinwheel.h"
#include "pinwheel/net.h"
#include "apps/access_log.h"
#include "apps/apps.h"
#include "apps/cli.h"
#include "apps/driver.h"
#include "apps/proxy.h"
#include "apps/proxy_udp.h"

/* ---- the command ---------------------------------------------------- */

/* The flags of `pinwheel proxy` and the proxy they start. */
static struct px_cmd {
	const char *listen, *upstreams, *balance, *takeover;
	uint64_t hw, idle, sto, cto, maxc, drain, nbufs, bufsz, sndbuf;
	uint64_t chk_int, chk_tmo, rise, fall, max_fails, fail_tmo, res_int;
	bool stats, reuse_port;
	bool send_proxy, send_proxy_v2, accept_proxy;
	uint64_t pp_timeout, log_buf;
	const char *access_log;
	struct pw_proxy_config cfg;
	struct pw_proxy *p;
	/* --udp: the forwarder of proxy_udp.h instead. */
	bool udp;
	uint64_t udp_idle, udp_max_flows, udp_responses;
	struct pw_proxy_udp *u;
	int argc;
	char **argv;
} P;

static const struct px_cmd px_defaults = {
	.hw = 256 * 1024,
	.idle = 60 * PW_NSEC_PER_SEC,
	.sto = 60 * PW_NSEC_PER_SEC,
	.cto = 5 * PW_NSEC_PER_SEC,
	.drain = 5 * PW_NSEC_PER_SEC,
	.nbufs = 1024,
	.bufsz = 16 * 1024,
	.chk_int = 2 * PW_NSEC_PER_SEC,
	.chk_tmo = PW_NSEC_PER_SEC,
	.rise = 2,
	.fall = 3,
	.max_fails = 3,
	.fail_tmo = 10 * PW_NSEC_PER_SEC,
	.res_int = 60 * PW_NSEC_PER_SEC,
	.pp_timeout = 5 * PW_NSEC_PER_SEC,
	.udp_idle = 30 * PW_NSEC_PER_SEC,
	.udp_max_flows = 65536,
};

static const struct pw_cli_opt px_opts[] = {
	{ "--listen", PW_CLI_STRING, &P.listen, 0, 0, "ADDR",
	  "address to accept on, e.g. 127.0.0.1:8080 (required)" },
	{ "--upstream", PW_CLI_STRING, &P.upstreams, 0, 0,
	  "HOST:PORT[@W][,...]",
	  "upstream servers, names resolved (each address a server), "
	  "weight W 1..256 (1) (required)" },
	{ "--balance", PW_CLI_STRING, &P.balance, 0, 0, "roundrobin|leastconn",
	  "how a connection's server is chosen, per shard (roundrobin)" },
	{ "--check-interval", PW_CLI_DURATION, &P.chk_int, 0,
	  3600 * PW_NSEC_PER_SEC, "DURATION",
	  "TCP connect check of each server; 0: no checks (2s)" },
	{ "--check-timeout", PW_CLI_DURATION, &P.chk_tmo, 1,
	  3600 * PW_NSEC_PER_SEC, "DURATION", "of one check (1s)" },
	{ "--rise", PW_CLI_UINT, &P.rise, 1, 1000, "N",
	  "good checks in a row that bring a server up (2)" },
	{ "--fall", PW_CLI_UINT, &P.fall, 1, 1000, "N",
	  "failed checks in a row that take a server down (3)" },
	{ "--max-fails", PW_CLI_UINT, &P.max_fails, 0, 1000, "N",
	  "client connect failures in a row that take a server down; "
	  "0: never (3)" },
	{ "--fail-timeout", PW_CLI_DURATION, &P.fail_tmo, 1,
	  3600 * PW_NSEC_PER_SEC, "DURATION",
	  "with checks off, a server taken down is tried again after it "
	  "(10s)" },
	{ "--resolve-interval", PW_CLI_DURATION, &P.res_int, 0,
	  24 * 3600 * PW_NSEC_PER_SEC, "DURATION",
	  "host names resolved again; 0: only at start (60s)" },
	{ "--high-water", PW_CLI_SIZE, &P.hw, 1, 1ull << 30, "SIZE",
	  "unsent bytes that pause reading a side (256k)" },
	{ "--sndbuf", PW_CLI_SIZE, &P.sndbuf, 0, 1u << 30, "SIZE",
	  "each socket's send buffer: what a peer that does not read can "
	  "have queued in the kernel; 0: the kernel's autotuning (0)" },
	{ "--idle-timeout", PW_CLI_DURATION, &P.idle, 0, 0, "DURATION",
	  "close connections idle this long; 0: never (60s)" },
	{ "--send-timeout", PW_CLI_DURATION, &P.sto, 0, 0, "DURATION",
	  "reset connections whose send makes no progress this long; "
	  "0: never (60s)" },
	{ "--connect-timeout", PW_CLI_DURATION, &P.cto, 1,
	  3600 * PW_NSEC_PER_SEC, "DURATION",
	  "per upstream connect attempt (5s)" },
	{ "--max-conns", PW_CLI_UINT, &P.maxc, 0, 0, "N",
	  "open connections per shard, the excess waits in the backlog; "
	  "0: no limit (0)" },
	{ "--drain", PW_CLI_DURATION, &P.drain, 0, 0, "DURATION",
	  "on SIGINT/SIGTERM, wait this long for connections (5s)" },
	{ "--buffers", PW_CLI_UINT, &P.nbufs, 1, 32768, "N",
	  "receive buffers per shard, a power of two (1024)" },
	{ "--buffer-size", PW_CLI_SIZE, &P.bufsz, 64, 1 << 20, "SIZE",
	  "bytes per receive buffer (16k)" },
	{ "--stats", PW_CLI_BOOL, &P.stats, 0, 0, NULL,
	  "print connections, bytes and errors every second" },
	{ "--takeover", PW_CLI_STRING, &P.takeover, 0, 0, "PATH",
	  "take the listening sockets from the process serving on the "
	  "Unix socket PATH (it drains and exits), else bind; then "
	  "serve PATH for the next one" },
	{ "--reuse-port", PW_CLI_BOOL, &P.reuse_port, 0, 0, NULL,
	  "share a port other servers already listen on (SO_REUSEPORT); "
	  "without it a port in use is refused" },
	{ "--send-proxy", PW_CLI_BOOL, &P.send_proxy, 0, 0, NULL,
	  "send a PROXY protocol v1 header to the upstream first" },
	{ "--send-proxy-v2", PW_CLI_BOOL, &P.send_proxy_v2, 0, 0, NULL,
	  "send a PROXY protocol v2 header to the upstream first" },
	{ "--accept-proxy", PW_CLI_BOOL, &P.accept_proxy, 0, 0, NULL,
	  "read a PROXY protocol header (v1 or v2) from each client first" },
	{ "--accept-proxy-timeout", PW_CLI_DURATION, &P.pp_timeout, 1,
	  3600 * PW_NSEC_PER_SEC, "DURATION",
	  "close a client whose PROXY header is not whole by then (5s)" },
	{ "--access-log", PW_CLI_STRING, &P.access_log, 0, 0, "FILE",
	  "one line per closed connection, appended to FILE; '-': stdout" },
	{ "--access-log-buffer", PW_CLI_SIZE, &P.log_buf, 4096, 1ull << 30,
	  "SIZE",
	  "the size of each of a shard's two access log buffers (one "
	  "filling, one being written); records beyond both are dropped "
	  "(256k)" },
	{ "--udp", PW_CLI_BOOL, &P.udp, 0, 0, NULL,
	  "forward UDP datagrams instead, by flow (client address)" },
	{ "--udp-idle", PW_CLI_DURATION, &P.udp_idle, PW_NSEC_PER_MSEC,
	  24 * 3600 * PW_NSEC_PER_SEC, "DURATION",
	  "--udp: close a flow with no datagram either way this long (30s)" },
	{ "--udp-max-flows", PW_CLI_UINT, &P.udp_max_flows, 1, 1u << 24, "N",
	  "--udp: flows per shard; new clients beyond are dropped (65536)" },
	{ "--udp-responses", PW_CLI_UINT, &P.udp_responses, 0, 1000000, "N",
	  "--udp: close a flow once each of its datagrams has N replies "
	  "(DNS: 1); 0: only when idle (0)" },
};

static const struct pw_cli_cmd px_cmd = {
	.name = "pinwheel proxy",
	.about = "Forward TCP connections (with --udp: UDP datagrams) from "
		 "--listen to the --upstream "
		 "servers until SIGINT or SIGTERM.",
	.opts = px_opts,
	.nopts = sizeof(px_opts) / sizeof(px_opts[0]),
	.common = PW_CLI_RUNTIME,
};

/* --upstream into P.cfg (names resolved now, on the main thread), or
 * the message naming the item that is wrong and why. */
static int px_upstreams(struct pw_drv *d)
{
	char why[512];

	if (!P.upstreams)
		return pw_cli_fail(&d->cli, 2,
				   "--upstream HOST:PORT[,...] is required "
				   "(see --help)");
	if (pw_proxy_upstreams_set(&P.cfg, P.upstreams, why, sizeof(why)))
		return pw_cli_fail(&d->cli, 2, "--upstream: %s", why);
	return 0;
}

/* The PROXY protocol and access log flags into P.cfg; SIGHUP reopens
 * the log. */
static int px_setup_pp(struct pw_drv *d)
{
	int err;

	if (P.send_proxy && P.send_proxy_v2)
		return pw_cli_fail(&d->cli, 2,
				   "--send-proxy and --send-proxy-v2 "
				   "exclude each other");
	if (P.access_log && !*P.access_log)
		return pw_cli_fail(&d->cli, 2, "--access-log: an empty name");
	P.cfg.send_proxy = P.send_proxy ? 1 : P.send_proxy_v2 ? 2 : 0;
	P.cfg.accept_proxy = P.accept_proxy;
	P.cfg.accept_proxy_timeout_ns = P.pp_timeout;
	P.cfg.access_log = P.access_log;
	P.cfg.access_log_buf = P.log_buf;
	if (P.access_log && strcmp(P.access_log, "-")) {
		int fd = open(P.access_log,
			      O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK |
				      O_CLOEXEC,
			      0644);
		if (fd < 0)
			return pw_cli_fail(&d->cli, 2, "--access-log: '%s': %s",
					   P.access_log, strerror(errno));
		close(fd);
	}
	if (P.access_log && (err = pw_access_log_sighup_init()))
		return pw_cli_fail(&d->cli, 2, "SIGHUP: %s", strerror(-err));
	return 0;
}

/* ---- --udp ------------------------------------------------------------- */

/* Flags of TCP mode only, and of --udp only. */
static const char *const px_tcp_only[] = {
	"--check-interval",
	"--check-timeout",
	"--rise",
	"--fall",
	"--max-fails",
	"--fail-timeout",
	"--resolve-interval",
	"--high-water",
	"--idle-timeout",
	"--send-timeout",
	"--connect-timeout",
	"--max-conns",
	"--takeover",
	"--send-proxy",
	"--send-proxy-v2",
	"--accept-proxy",
	"--accept-proxy-timeout",
	"--access-log",
	"--access-log-buffer",
};
static const char *const px_udp_only[] = { "--udp-idle", "--udp-max-flows",
					   "--udp-responses" };

/* Whether @name (with its dashes) was on the command line, as --name or
 * --name=VALUE (the values of the command's own flags skipped). */
static bool px_given(const char *name)
{
	size_t n = strlen(name);

	for (int i = 1; i < P.argc; i++) {
		const char *a = P.argv[i];

		if (!strncmp(a, name, n) && (a[n] == '\0' || a[n] == '='))
			return true;
		for (size_t k = 0; k < sizeof(px_opts) / sizeof(px_opts[0]);
		     k++)
			if (!strcmp(a, px_opts[k].name) &&
			    px_opts[k].type != PW_CLI_BOOL)
				i++;
	}
	return false;
}

/* A flag of the other mode is refused, naming it. */
static int px_udp_flags(struct pw_drv *d)
{
	const char *const *l = P.udp ? px_tcp_only : px_udp_only;
	size_t n = P.udp ? sizeof(px_tcp_only) / sizeof(px_tcp_only[0]) :
			   sizeof(px_udp_only) / sizeof(px_udp_only[0]);

	for (size_t i = 0; i < n; i++)
		if (px_given(l[i]))
			return pw_cli_fail(&d->cli, 2,
					   P.udp ? "%s is for TCP, not --udp" :
						   "%s needs --udp",
					   l[i]);
	return 0;
}

/* --udp's own checks: IP addresses only; the drain and stats. */
static int px_udp_setup(struct pw_drv *d)
{
	sa_family_t f = P.cfg.listen.u.sa.sa_family;

	if (f != AF_INET && f != AF_INET6)
		return pw_cli_fail(&d->cli, 2,
				   "--listen: --udp needs an IPv4 or IPv6 "
				   "address");
	for (unsigned i = 0; i < P.cfg.nupstreams; i++) {
		f = P.cfg.upstream[i].u.sa.sa_family;
		if (f != AF_INET && f != AF_INET6)
			return pw_cli_fail(&d->cli, 2,
					   "--upstream: --udp needs IPv4 or "
					   "IPv6 servers");
	}
	d->drain_ns = P.drain;
	d->tick_ns = P.stats ? PW_NSEC_PER_SEC : 0;
	return 0;
}

static int px_setup(struct pw_drv *d)
{
	if (px_udp_flags(d))
		return 2;
	if (pw_cli_addr(&d->cli, "--listen", P.listen, PW_CLI_ADDR_LISTEN,
			&P.cfg.listen))
		return 2;
	if (px_upstreams(d))
		return 2;
	if (!P.balance || !strcmp(P.balance, "roundrobin"))
		P.cfg.balance = PW_PROXY_ROUNDROBIN;
	else if (!strcmp(P.balance, "leastconn"))
		P.cfg.balance = PW_PROXY_LEASTCONN;
	else
		return pw_cli_fail(&d->cli, 2,
				   "--balance: '%s' is not roundrobin or "
				   "leastconn",
				   P.balance);
	P.cfg.check_interval_ns = P.chk_int;
	P.cfg.check_timeout_ns = P.chk_tmo;
	P.cfg.rise = (unsigned)P.rise;
	P.cfg.fall = (unsigned)P.fall;
	P.cfg.max_fails = (unsigned)P.max_fails;
	P.cfg.fail_timeout_ns = P.fail_tmo;
	P.cfg.resolve_interval_ns = P.res_int;
	if (P.nbufs & (P.nbufs - 1))
		return pw_cli_fail(&d->cli, 2,
				   "--buffers: %llu is not a power of two",
				   (unsigned long long)P.nbufs);
	P.cfg.high_water = P.hw;
	P.cfg.idle_timeout_ns = P.idle;
	P.cfg.send_timeout_ns = P.sto;
	P.cfg.connect_timeout_ns = P.cto;
	P.cfg.max_conns = P.maxc;
	P.cfg.sndbuf = P.sndbuf;
	P.cfg.listen_flags = P.reuse_port ? PW_NET_LISTEN_SHARE_PORT : 0;
	P.cfg.net.buf_count = (uint32_t)P.nbufs;
	P.cfg.net.buf_size = (uint32_t)P.bufsz;
	if (P.udp)
		return px_udp_setup(d);
	if (px_setup_pp(d))
		return 2;
	d->drain_ns = P.drain;
	d->tick_ns = P.stats ? PW_NSEC_PER_SEC : 0;
	d->takeover = P.takeover;
	d->listen = &P.cfg.listen;
	return 0;
}

/* The UDP forwarder, with the runtime it creates. */
static int px_udp_start(struct pw_drv *d)
{
	struct pw_proxy_udp_opts o = {
		.idle_ns = P.udp_idle,
		.max_flows = P.udp_max_flows,
		.responses = P.udp_responses,
	};
	int err = pw_proxy_udp_start(&P.u, &P.cfg, &o);

	if (err) {
		P.u = NULL;
		return pw_cli_fail(&d->cli, 1, "cannot start: %s",
				   err == -EADDRINUSE || err == -EACCES ||
						   err == -EADDRNOTAVAIL ?
					   strerror(-err) :
					   pw_strerror_setup(err));
	}
	d->rt = pw_proxy_udp_runtime(P.u);
	pw_proxy_udp_addr(P.u, &d->addr);
	return 0;
}

/* The proxy, with the runtime it creates. */
static int px_start(struct pw_drv *d)
{
	int err;

	P.cfg.rt = d->cfg;
	if (P.udp)
		return px_udp_start(d);
	P.cfg.adopt = d->adopt;
	P.cfg.nadopt = d->nadopt;
	err = pw_proxy_start(&P.p, &P.cfg);
	if (err) {
		P.p = NULL;
		return pw_cli_fail(&d->cli, 1, "cannot start: %s",
				   err == -EADDRINUSE || err == -EACCES ||
						   err == -EADDRNOTAVAIL ?
					   strerror(-err) :
					   pw_strerror_setup(err));
	}
	d->rt = pw_proxy_runtime(P.p);
	pw_proxy_addr(P.p, &d->addr);
	d->listener = pw_proxy_listener(P.p);
	return 0;
}

static void px_banner(struct pw_drv *d, FILE *f)
{
	int n = pw_runtime_shards(d->rt);

	fprintf(f, "%s, %u upstream%s (%s), %d shard%s", P.udp ? " (udp)" : "",
		P.cfg.nupstreams, P.cfg.nupstreams == 1 ? "" : "s",
		P.cfg.balance == PW_PROXY_LEASTCONN ? "leastconn" :
						      "roundrobin",
		n, n == 1 ? "" : "s");
}

/* The PROXY header and access log counters of @s, after the stats
 * line, when any is not zero. */
static void px_line_pp(const struct pw_proxy_stats *s, char *buf, size_t size)
{
	size_t n = strlen(buf);

	if (!s->proxy_header_bad && !s->proxy_header_timeout &&
	    !s->access_log_records && !s->access_log_dropped &&
	    !s->access_log_errors)
		return;
	snprintf(buf + n, size - n,
		 " proxy_header=(bad=%llu timeout=%llu) "
		 "log=(records=%llu dropped=%llu errors=%llu)",
		 (unsigned long long)s->proxy_header_bad,
		 (unsigned long long)s->proxy_header_timeout,
		 (unsigned long long)s->access_log_records,
		 (unsigned long long)s->access_log_dropped,
		 (unsigned long long)s->access_log_errors);
}

/* The counters as one line, "pinwheel proxy: open=...". */
static void px_line(void)
{
	struct pw_proxy_udp_stats us;
	struct pw_proxy_stats st;
	char line[512];

	if (P.udp) {
		pw_proxy_udp_stats(P.u, &us);
		pw_proxy_udp_stats_line(&us, line, sizeof(line));
		printf("pinwheel proxy: %s\n", line);
		fflush(stdout);
		return;
	}
	pw_proxy_stats(P.p, &st);
	pw_proxy_stats_line(&st, line, sizeof(line));
	px_line_pp(&st, line, sizeof(line));
	printf("pinwheel proxy: %s\n", line);
	fflush(stdout);
}

static void px_tick(struct pw_drv *d)
{
	(void)d;
	px_line();
}

/* On SIGUSR1 the counters line (unless --metrics reports them), then
 * (and at exit) the report. */
static void px_report(struct pw_drv *d, bool final)
{
	if (!final && !d->cli.metrics)
		px_line();
	pw_drv_metrics(d, stdout);
}

/* One sample of a counter or gauge without labels. */
static void px_one(struct pw_expo *e, const char *name, const char *help,
		   enum pw_expo_type type, uint64_t v)
{
	pw_expo_metric(e, name, help, type);
	pw_expo_sample(e, NULL, v);
}

/* One per-upstream metric: a field of struct pw_proxy_upstream_stats,
 * or two under one label (@label = @lv[i] for the field at @off[i]).
 * Offset 0 stands for the weight (an unsigned, not a counter): the
 * record starts with its address, so no counter is at offset 0. */
struct px_up_metric {
	const char *name, *help;
	enum pw_expo_type type;
	const char *label;
	const char *lv[2];
	size_t off[2];
};

#define UPF(f) offsetof(struct pw_proxy_upstream_stats, f)
static const struct px_up_metric px_up_metrics[] = {
	{ "upstream_weight",
	  "The server's weight (--upstream HOST:PORT@W).",
	  PW_EXPO_GAUGE,
	  NULL,
	  { NULL },
	  { 0 } },
	{ "upstream_active_connections",
	  "Client connections open to the server now.",
	  PW_EXPO_GAUGE,
	  NULL,
	  { NULL },
	  { UPF(active) } },
	{ "upstream_connects",
	  "Client connections connected to the server.",
	  PW_EXPO_COUNTER,
	  NULL,
	  { NULL },
	  { UPF(connects) } },
	{ "upstream_connect_failures",
	  "Connects of clients to the server that failed (timeouts "
	  "included).",
	  PW_EXPO_COUNTER,
	  NULL,
	  { NULL },
	  { UPF(connect_failures) } },
	{ "upstream_checks",
	  "Health checks of the server, by result.",
	  PW_EXPO_COUNTER,
	  "result",
	  { "ok", "failed" },
	  { UPF(checks_ok), UPF(checks_failed) } },
	{ "upstream_transitions",
	  "Changes of the server's state, up to down and down to up.",
	  PW_EXPO_COUNTER,
	  NULL,
	  { NULL },
	  { UPF(transitions) } },
	{ "upstream_bytes",
	  "Bytes forwarded to the server (up) and from it (down).",
	  PW_EXPO_COUNTER,
	  "direction",
	  { "up", "down" },
	  { UPF(bytes_up), UPF(bytes_down) } },
};
#undef UPF

static uint64_t px_up_field(const struct pw_proxy_upstream_stats *u,
			    const struct px_up_metric *m, int i)
{
	uint64_t v;

	if (!m->off[i])
		return u->weight;
	memcpy(&v, (const char *)u + m->off[i], sizeof(v));
	return v;
}

/* One sample of @m for server @u (labels upstream, name and @m's). */
static void px_up_sample(struct pw_expo *e,
			 const struct pw_proxy_upstream_stats *u,
			 const struct px_up_metric *m)
{
	for (int i = 0; i < (m->label ? 2 : 1); i++)
		pw_expo_sample(e,
			       (const char *[]){ "upstream", u->addr, "name",
						 u->name, m->label, m->lv[i],
						 NULL },
			       px_up_field(u, m, i));
}

/* The per-upstream state and counters (pw_proxy_upstreams(): any thread,
 * shard 0's scrape included), one metric at a time over every server. */
static void px_upstream_counters(struct pw_expo *e)
{
	struct pw_proxy_upstream_stats *u;
	int n;

	u = calloc(PW_PROXY_MAX_UPSTREAMS, sizeof(*u));
	if (!u)
		return;
	n = pw_proxy_upstreams(P.p, u, PW_PROXY_MAX_UPSTREAMS);
	if (n > PW_PROXY_MAX_UPSTREAMS)
		n = PW_PROXY_MAX_UPSTREAMS;
	pw_expo_metric(e, "upstream_up",
		       "1 while the server is in rotation, else 0 (down or "
		       "draining).",
		       PW_EXPO_GAUGE);
	for (int i = 0; i < n; i++)
		pw_expo_sample(e,
			       (const char *[]){ "upstream", u[i].addr, "name",
						 u[i].name, NULL },
			       u[i].state == PW_PROXY_UPSTREAM_UP);
	pw_expo_metric(e, "upstream_draining",
		       "1 while the server drains (its name no longer gives "
		       "it), else 0.",
		       PW_EXPO_GAUGE);
	for (int i = 0; i < n; i++)
		pw_expo_sample(e,
			       (const char *[]){ "upstream", u[i].addr, "name",
						 u[i].name, NULL },
			       u[i].state == PW_PROXY_UPSTREAM_DRAINING);
	for (size_t m = 0; m < sizeof(px_up_metrics) / sizeof(px_up_metrics[0]);
	     m++) {
		pw_expo_metric(e, px_up_metrics[m].name, px_up_metrics[m].help,
			       px_up_metrics[m].type);
		for (int i = 0; i < n; i++)
			px_up_sample(e, &u[i], &px_up_metrics[m]);
	}
	free(u);
}

/* The proxy's counters (pw_proxy_stats(), any thread) for every report. */
static void px_counters(struct pw_drv *d, struct pw_expo *e)
{
	struct pw_proxy_stats st;
	const struct {
		const char *cause;
		const uint64_t *v;
	} closes[] = {
		{ "idle_timeout", &st.idle_closed },
		{ "send_timeout", &st.send_timeouts },
		{ "reset", &st.resets },
		{ "drain", &st.drain_closed },
		{ "upstream_failed", &st.upstream_failed },
	};

	(void)d;
	if (P.udp) {
		pw_proxy_udp_counters(P.u, e);
		return;
	}
	if (!P.p || pw_proxy_stats(P.p, &st))
		return;
	px_one(e, "connections_accepted", "Client connections accepted.",
	       PW_EXPO_COUNTER, st.conns_total);
	px_one(e, "connections_active", "Client connections open now.",
	       PW_EXPO_GAUGE, st.conns_open);
	px_one(e, "accept_paused",
	       "Accepts paused at --max-conns (the excess waits in the "
	       "backlog).",
	       PW_EXPO_COUNTER, st.accept_pauses);
	px_one(e, "accept_errors",
	       "Accept errors (EMFILE, ...) and connections whose task could "
	       "not start.",
	       PW_EXPO_COUNTER, st.accept_errors);
	pw_expo_metric(e, "connections_closed",
		       "Connections closed early, by cause (a clean end is "
		       "not counted here).",
		       PW_EXPO_COUNTER);
	for (size_t i = 0; i < sizeof(closes) / sizeof(closes[0]); i++)
		pw_expo_sample(
			e, (const char *[]){ "cause", closes[i].cause, NULL },
			*closes[i].v);
	px_one(e, "aborts",
	       "Connections cut with bytes undelivered (reset): a timeout or "
	       "the drain deadline.",
	       PW_EXPO_COUNTER, st.aborts);
	pw_expo_metric(e, "bytes",
		       "Bytes forwarded: up, client to upstream; "
		       "down, upstream to client.",
		       PW_EXPO_COUNTER);
	pw_expo_sample(e, (const char *[]){ "direction", "up", NULL },
		       st.bytes_up);
	pw_expo_sample(e, (const char *[]){ "direction", "down", NULL },
		       st.bytes_down);
	px_one(e, "connect_errors",
	       "Upstream connect attempts that failed, timeouts included.",
	       PW_EXPO_COUNTER, st.connect_errors);
	px_one(e, "connect_timeouts", "Upstream connect attempts timed out.",
	       PW_EXPO_COUNTER, st.connect_timeouts);
	px_one(e, "half_closes", "Ends of stream passed on (SHUT_WR).",
	       PW_EXPO_COUNTER, st.half_closes);
	px_one(e, "buffered_peak_bytes",
	       "The most bytes one direction's buffer held.", PW_EXPO_GAUGE,
	       st.buffered_peak);
	px_one(e, "buffers_borrowed",
	       "Receive ring buffers out of the ring (sampled every 50 ms).",
	       PW_EXPO_GAUGE, st.bufs_borrowed);
	px_one(e, "proxy_header_bad",
	       "Clients closed for a bad PROXY protocol header "
	       "(--accept-proxy).",
	       PW_EXPO_COUNTER, st.proxy_header_bad);
	px_one(e, "proxy_header_timeouts",
	       "Clients closed with no whole PROXY protocol header before "
	       "--accept-proxy-timeout.",
	       PW_EXPO_COUNTER, st.proxy_header_timeout);
	px_one(e, "access_log_records", "Access log lines written.",
	       PW_EXPO_COUNTER, st.access_log_records);
	px_one(e, "access_log_dropped",
	       "Access log lines dropped: the writer fell behind.",
	       PW_EXPO_COUNTER, st.access_log_dropped);
	px_one(e, "access_log_errors", "Access log writes that failed.",
	       PW_EXPO_COUNTER, st.access_log_errors);
	px_upstream_counters(e);
}

static void px_drain(struct pw_drv *d)
{
	(void)d;
	if (P.udp)
		pw_proxy_udp_drain(P.u);
	else
		pw_proxy_drain(P.p, 0);
}

static int px_open(struct pw_drv *d)
{
	struct pw_proxy_udp_stats us;
	struct pw_proxy_stats st;

	(void)d;
	if (P.udp) {
		pw_proxy_udp_stats(P.u, &us);
		return (int)us.flows_active;
	}
	pw_proxy_stats(P.p, &st);
	return (int)st.conns_open;
}

/* Destroy the UDP forwarder and its runtime; the final counters. */
static int px_udp_stop(struct pw_drv *d, int status)
{
	struct pw_proxy_udp_stats us;
	char line[512];

	if (!P.u)
		return status;
	pw_proxy_udp_destroy(P.u, &us);
	pw_proxy_udp_stats_line(&us, line, sizeof(line));
	printf("pinwheel proxy: stopped (%d flow%s closed at the drain "
	       "deadline); %s\n",
	       d->left, d->left == 1 ? "" : "s", line);
	fflush(stdout);
	return status;
}

/* Destroy the proxy and its runtime; the final counters. */
static int px_stop(struct pw_drv *d, int status)
{
	struct pw_proxy_stats st;
	char line[512];

	if (P.udp)
		return px_udp_stop(d, status);
	if (!P.p)
		return status;
	pw_proxy_destroy(P.p, &st);
	pw_proxy_stats_line(&st, line, sizeof(line));
	px_line_pp(&st, line, sizeof(line));
	printf("pinwheel proxy: stopped (%d connection%s closed at the drain "
	       "deadline); %s\n",
	       d->left, d->left == 1 ? "" : "s", line);
	fflush(stdout);
	return status;
}

static const struct pw_drv_ops px_ops = {
	.setup = px_setup,
	.start = px_start,
	.banner = px_banner,
	.tick = px_tick,
	.report = px_report,
	.counters = px_counters,
	.drain = px_drain,
	.open = px_open,
	.stop = px_stop,
	.own_runtime = true,
};

int pw_app_proxy(int argc, char **argv)
{
	P = px_defaults;
	P.argc = argc;
	P.argv = argv;
	pw_proxy_config_init(&P.cfg);
	return pw_drv_main(&px_cmd, &px_ops, argc, argv);
}
