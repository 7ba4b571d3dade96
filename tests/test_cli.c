/* SPDX-License-Identifier: MIT */
/*
 * test_cli.c - the subcommands' shared flag parser: numbers, durations,
 * sizes and fractions (no blank, sign or prefix taken by any); flag
 * tables, ranges and the common flags; the configuration they make;
 * signals, and a second SIGINT or SIGTERM in every command that runs a
 * runtime; addresses (port 0 only to listen); the scheduler from
 * PW_SCHED; and the pinwheel command's exit statuses and messages and its
 * metrics in Prometheus text.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/common.h"
#include "apps/cli.h"

Test(cli, numbers)
{
	uint64_t v = 7;

	cr_expect_eq(pw_cli_parse_uint("42", 0, 100, &v), 0);
	cr_expect_eq(v, 42);
	cr_expect_eq(pw_cli_parse_uint("18446744073709551615", 0, UINT64_MAX,
				       &v),
		     0);
	cr_expect_eq(v, UINT64_MAX);
	v = 7;
	cr_expect_eq(pw_cli_parse_uint("18446744073709551616", 0, UINT64_MAX,
				       &v),
		     -ERANGE);
	cr_expect_eq(pw_cli_parse_uint("3x", 0, 100, &v), -EINVAL);
	cr_expect_eq(pw_cli_parse_uint("", 0, 100, &v), -EINVAL);
	cr_expect_eq(pw_cli_parse_uint("-1", 0, 100, &v), -EINVAL);
	cr_expect_eq(pw_cli_parse_uint("+1", 0, 100, &v), -EINVAL);
	cr_expect_eq(pw_cli_parse_uint(" 1", 0, 100, &v), -EINVAL);
	cr_expect_eq(pw_cli_parse_uint("0x10", 0, 100, &v), -EINVAL);
	cr_expect_eq(pw_cli_parse_uint("101", 0, 100, &v), -ERANGE);
	cr_expect_eq(pw_cli_parse_uint("0", 1, 100, &v), -ERANGE);
	cr_expect_eq(v, 7, "untouched on error");
	cr_expect_eq(pw_cli_parse_uint(NULL, 0, 1, &v), -EINVAL);
}

Test(cli, durations)
{
	static const struct {
		const char *s;
		uint64_t ns;
	} ok[] = {
		{ "10s", 10000000000ull },
		{ "500ms", 500000000 },
		{ "2m", 120000000000ull },
		{ "1h", 3600000000000ull },
		{ "250us", 250000 },
		{ "7ns", 7 },
		{ "3", 3000000000ull },
		{ "1.5s", 1500000000 },
		{ "0.25ms", 250000 },
		{ "0s", 0 },
		{ "1.000000001s", 1000000001 },
	};
	static const char *bad[] = {
		"",    "s",   "10x",   "10 s", "-1s",
		"1.s", ".5s", "1..2s", "10S",  "1.0000000001s"
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_expect_eq(pw_cli_parse_duration(ok[i].s, &v), 0, "%s",
			     ok[i].s);
		cr_expect_eq(v, ok[i].ns, "%s: %llu", ok[i].s,
			     (unsigned long long)v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(pw_cli_parse_duration(bad[i], &v), -EINVAL, "'%s'",
			     bad[i]);
	cr_expect_eq(pw_cli_parse_duration("9999999999999h", &v), -ERANGE);
	cr_expect_eq(pw_cli_parse_duration("99999999999999999999ns", &v),
		     -ERANGE);
}

Test(cli, sizes)
{
	static const struct {
		const char *s;
		uint64_t b;
	} ok[] = {
		{ "512", 512 },	      { "64k", 65536 },
		{ "64K", 65536 },     { "1M", 1048576 },
		{ "1m", 1048576 },    { "2G", 2147483648ull },
		{ "1T", 1ull << 40 }, { "4KiB", 4096 },
		{ "4kB", 4096 },      { "100B", 100 },
		{ "0", 0 },
	};
	static const char *bad[] = { "",   "k",	   "64x",   "1.5M",
				     "-1", "64 k", "1MiBs", "1Mi" };
	uint64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_expect_eq(pw_cli_parse_size(ok[i].s, &v), 0, "%s", ok[i].s);
		cr_expect_eq(v, ok[i].b, "%s", ok[i].s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(pw_cli_parse_size(bad[i], &v), -EINVAL, "'%s'",
			     bad[i]);
	cr_expect_eq(pw_cli_parse_size("16777216T", &v), -ERANGE);
}

/* A command with one flag of each kind and every common flag. */
static uint64_t conns, dur, buf;
static const char *addr;
static bool verbose;
static const struct pw_cli_opt opts[] = {
	{ "--connections", PW_CLI_UINT, &conns, 1, 10000, "N", "connections" },
	{ "--duration", PW_CLI_DURATION, &dur, 1000000, 3600000000000ull, "D",
	  "how long" },
	{ "--buffer", PW_CLI_SIZE, &buf, 1024, 1 << 20, "SIZE", "buffer" },
	{ "--addr", PW_CLI_STRING, &addr, 0, 0, "HOST:PORT", "address" },
	{ "--verbose", PW_CLI_BOOL, &verbose, 0, 0, NULL, "say more" },
};
static const struct pw_cli_cmd cmd = {
	.name = "pinwheel t",
	.about = "a test command",
	.opts = opts,
	.nopts = sizeof(opts) / sizeof(opts[0]),
	.common = PW_CLI_RUNTIME,
};
static struct pw_cli cli;

#define ARGV(...) ((char *[]){ "t", __VA_ARGS__, NULL })
#define ARGC(...) \
	((int)(sizeof((char *[]){ "t", __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(...) \
	pw_cli_parse(&cli, &cmd, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

/* The message of a failed parse. */
static void expect_error(int rc, const char *has)
{
	cr_expect_eq(rc, -EINVAL);
	cr_expect_eq(pw_cli_status(rc), 2);
	cr_expect(strstr(cli.error, has), "message '%s' lacks '%s'", cli.error,
		  has);
	cr_expect(!strncmp(cli.error, "pinwheel t: ", 12), "%s", cli.error);
	cr_expect(!strchr(cli.error, '\n'), "one line");
}

Test(cli, flags)
{
	cr_assert(freopen("/dev/null", "w", stderr));
	cr_assert_eq(PARSE("--connections", "100", "--duration=10s", "--buffer",
			   "64k", "--addr", "127.0.0.1:8080", "--verbose",
			   "--shards", "2", "--sched", "steal", "--metrics"),
		     0);
	cr_expect_eq(conns, 100);
	cr_expect_eq(dur, 10000000000ull);
	cr_expect_eq(buf, 65536);
	cr_expect_str_eq(addr, "127.0.0.1:8080");
	cr_expect(verbose);
	cr_expect_eq(cli.shards, 2);
	cr_expect_eq(cli.sched, PW_CLI_SCHED_STEAL);
	cr_expect(cli.metrics);
	cr_expect_null(cli.cpus_arg);

	cr_assert_eq(PARSE("--sched=shard"), 0);
	cr_expect_eq(cli.sched, PW_CLI_SCHED_SHARD);
	cr_expect_eq(cli.shards, 0);
	cr_expect(!cli.metrics);

	expect_error(PARSE("--connections", "3x"), "--connections");
	expect_error(PARSE("--connections", "0"), "out of range 1..10000");
	expect_error(PARSE("--connections", "-5"), "'-5' is not");
	expect_error(PARSE("--connections", ""), "--connections");
	expect_error(PARSE("--connections", "99999999999999999999"),
		     "out of range");
	expect_error(PARSE("--connections"), "needs a value");
	expect_error(PARSE("--duration", "10us"), "out of range 1ms..1h");
	expect_error(PARSE("--duration", "2h"), "out of range 1ms..1h");
	expect_error(PARSE("--duration", "10q"), "is not a duration");
	expect_error(PARSE("--buffer", "2M"), "out of range 1k..1M");
	expect_error(PARSE("--buffer", "x"), "is not a size");
	expect_error(PARSE("--verbose=yes"), "takes no value");
	expect_error(PARSE("--nope"), "unknown flag '--nope'");
	expect_error(PARSE("--nope=1"), "unknown flag '--nope'");
	expect_error(PARSE("stray"), "unexpected argument 'stray'");
	expect_error(PARSE("--shards", "0"), "--shards");
	expect_error(PARSE("--shards", "1025"), "--shards");
	expect_error(PARSE("--sched", "fifo"), "--sched");
	expect_error(PARSE("--cpus", "1-0"), "--cpus");
	expect_error(PARSE("--cpus", "60000"), "not available");

	/* A command without the common flags refuses them. */
	struct pw_cli_cmd bare = cmd;
	bare.common = 0;
	int rc = pw_cli_parse(&cli, &bare, ARGC("--shards", "2"),
			      ARGV("--shards", "2"));
	expect_error(rc, "unknown flag '--shards'");
}

Test(cli, help)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	cr_assert_not_null(f);
	pw_cli_usage(&cmd, f);
	fclose(f);
	static const char *want[] = {
		"usage: pinwheel t [FLAGS]",
		"a test command",
		"--connections N",
		"--duration D",
		"--shards N",
		"--idle-poll DURATION",
		"--batch-wait DURATION",
		"--sched shard|steal",
		"--cpus LIST",
		"--metrics",
		"--metrics-format json|prometheus",
		"$PW_SCHED",
		"--help",
		"Durations take",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_expect(strstr(out, want[i]), "usage lacks '%s'", want[i]);
	free(out);
	cr_assert(freopen("/dev/null", "w", stdout));
	cr_expect_eq(PARSE("--connections", "5", "--help"), PW_CLI_HELP);
	cr_expect_eq(PARSE("-h"), PW_CLI_HELP);
	cr_expect_eq(pw_cli_status(PW_CLI_HELP), 0);
}

Test(cli, config)
{
	struct pw_config cfg;

	cr_assert(freopen("/dev/null", "w", stderr));
	cr_assert_eq(PARSE("--shards", "3"), 0);
	pw_config_init(&cfg);
	cr_assert_eq(pw_cli_config(&cli, &cfg), 0);
	cr_expect_eq(cfg.shards, 3);
	cr_expect_null(cfg.cpus);

	/* --cpus alone: one shard per CPU; with --shards: the first N. */
	cr_assert_eq(PARSE("--cpus", "0"), 0);
	pw_config_init(&cfg);
	cr_assert_eq(pw_cli_config(&cli, &cfg), 0);
	cr_expect_eq(cfg.shards, 1);
	cr_assert_not_null(cfg.cpus);
	cr_expect_eq(cfg.cpus[0], 0);

	cr_assert_eq(PARSE("--cpus", "0", "--shards", "2"), 0);
	pw_config_init(&cfg);
	expect_error(pw_cli_config(&cli, &cfg), "more than the 1 CPU");

	/* --idle-poll, up to the runtime's bound; 0 by default. */
	cr_assert_eq(PARSE("--idle-poll", "200us"), 0);
	pw_config_init(&cfg);
	cr_assert_eq(pw_cli_config(&cli, &cfg), 0);
	cr_expect_eq(cfg.idle_poll_ns, 200000);
	expect_error(PARSE("--idle-poll", "2s"), "out of range 0ns..1s");
	cr_assert_eq(PARSE("--batch-wait", "50us"), 0);
	pw_config_init(&cfg);
	cr_assert_eq(pw_cli_config(&cli, &cfg), 0);
	cr_expect_eq(cfg.batch_wait_ns, 50000);
	expect_error(PARSE("--batch-wait", "1h"), "out of range 0ns..1s");

	cr_assert_eq(PARSE("--sched", "steal"), 0);
	pw_config_init(&cfg);
	cr_expect_eq(pw_cli_config(&cli, &cfg), 0);
	cr_expect_eq(cfg.idle_poll_ns, 0);
	cr_expect_eq(cfg.batch_wait_ns, 0);
	cr_expect_eq(cfg.sched, PW_SCHED_STEAL);
	cr_expect_eq(pw_cli_sched_apply(&cfg, PW_CLI_SCHED_SHARD), 0);
	cr_expect_eq(cfg.sched, PW_SCHED_SHARD);
	cr_expect_eq(pw_cli_sched_apply(NULL, PW_CLI_SCHED_SHARD), -EINVAL);
}

/* The scheduler: --sched, else PW_SCHED, else shard. */
Test(cli, sched_from_environment)
{
	struct pw_config cfg;

	cr_assert(freopen("/dev/null", "w", stderr));
	cr_assert_eq(setenv("PW_SCHED", "steal", 1), 0);
	cr_assert_eq(PARSE("--verbose"), 0);
	cr_expect_eq(cli.sched, PW_CLI_SCHED_STEAL);
	pw_config_init(&cfg);
	cr_assert_eq(pw_cli_config(&cli, &cfg), 0);
	cr_expect_eq(cfg.sched, PW_SCHED_STEAL);
	cr_assert_eq(PARSE("--sched", "shard"), 0);
	cr_expect_eq(cli.sched, PW_CLI_SCHED_SHARD, "--sched overrides it");

	cr_assert_eq(setenv("PW_SCHED", "shard", 1), 0);
	cr_assert_eq(PARSE("--verbose"), 0);
	cr_expect_eq(cli.sched, PW_CLI_SCHED_SHARD);
	cr_assert_eq(PARSE("--sched=steal"), 0);
	cr_expect_eq(cli.sched, PW_CLI_SCHED_STEAL);
	cr_assert_eq(setenv("PW_SCHED", "", 1), 0);
	cr_assert_eq(PARSE("--verbose"), 0);
	cr_expect_eq(cli.sched, PW_CLI_SCHED_SHARD, "empty: the default");

	cr_assert_eq(setenv("PW_SCHED", "fifo", 1), 0);
	expect_error(PARSE("--verbose"),
		     "PW_SCHED: 'fifo' is not shard or steal");
	cr_assert_eq(PARSE("--sched", "steal"), 0, "a flag needs no PW_SCHED");
	struct pw_cli_cmd bare = cmd;
	bare.common = 0;
	cr_expect_eq(pw_cli_parse(&cli, &bare, ARGC("--verbose"),
				  ARGV("--verbose")),
		     0, "a command without --sched does not read it");

	cr_assert_eq(unsetenv("PW_SCHED"), 0);
	cr_assert_eq(PARSE("--verbose"), 0);
	cr_expect_eq(cli.sched, PW_CLI_SCHED_SHARD);
}

/* The pinwheel command picks its scheduler from PW_SCHED too. The suite
 * cli_run starts runtimes; the suite cli starts none. */
Test(cli_run, command_sched_from_environment)
{
	static const struct pw_test_cmd_case steal[] = {
		{ { "pinwheel", "demo", "--tasks", "3", "--metrics",
		    "--metrics-format", "prometheus" },
		  0,
		  "pinwheel_info{sched=\"steal\"} 1" },
		{ { "pinwheel", "demo", "--tasks", "3", "--sched", "shard",
		    "--metrics" },
		  0,
		  "\"sched\":\"shard\"" },
	};
	static const struct pw_test_cmd_case shard[] = {
		{ { "pinwheel", "demo", "--tasks", "3", "--metrics" },
		  0,
		  "\"sched\":\"shard\"" },
		{ { "pinwheel", "demo", "--tasks", "3", "--sched", "steal",
		    "--metrics" },
		  0,
		  "\"sched\":\"steal\"" },
	};
	static const struct pw_test_cmd_case bad[] = {
		{ { "pinwheel", "echo", "--listen", "127.0.0.1:0" },
		  2,
		  "pinwheel echo: PW_SCHED: 'fifo' is not shard or steal" },
	};

	cr_assert_eq(setenv("PW_SCHED", "steal", 1), 0);
	pw_test_cmd_cases(steal, sizeof(steal) / sizeof(steal[0]));
	cr_assert_eq(setenv("PW_SCHED", "shard", 1), 0);
	pw_test_cmd_cases(shard, sizeof(shard) / sizeof(shard[0]));
	cr_assert_eq(setenv("PW_SCHED", "fifo", 1), 0);
	pw_test_cmd_cases(bad, 1);
}

/* One address parser, one message. */
Test(cli, addresses)
{
	struct pw_net_addr a;

	cr_assert(freopen("/dev/null", "w", stderr));
	cr_assert_eq(PARSE("--verbose"), 0);
	cr_expect_eq(pw_cli_addr(&cli, "--listen", "127.0.0.1:0",
				 PW_CLI_ADDR_LISTEN, &a),
		     0, "port 0 is taken as given");
	cr_expect_eq(a.u.sa.sa_family, AF_INET);
	cr_expect_eq(pw_cli_addr(&cli, "--to", "[::1]:80", PW_CLI_ADDR_CONNECT,
				 &a),
		     0);
	cr_expect_eq(a.u.sa.sa_family, AF_INET6);
	cr_expect_eq(pw_cli_addr(&cli, "--to", "unix:/tmp/x",
				 PW_CLI_ADDR_CONNECT, &a),
		     0);
	cr_expect_eq(a.u.sa.sa_family, AF_UNIX);
	expect_error(pw_cli_addr(&cli, "--listen", "nowhere",
				 PW_CLI_ADDR_LISTEN, &a),
		     "pinwheel t: --listen: 'nowhere' is not an address "
		     "(A.B.C.D:PORT, [IPv6]:PORT or unix:PATH)");
	expect_error(pw_cli_addr(&cli, "--to", "1.2.3.4:99999",
				 PW_CLI_ADDR_CONNECT, &a),
		     "--to: '1.2.3.4:99999' is not an address");
	expect_error(pw_cli_addr(&cli, "--to", NULL, PW_CLI_ADDR_CONNECT, &a),
		     "pinwheel t: --to ADDR is required (see --help)");
	cr_expect_eq(pw_cli_fail(&cli, 7, "x %d", 1), 7);
	cr_expect_str_eq(cli.error, "pinwheel t: x 1");
}

Test(cli, signals)
{
	cr_expect_eq(pw_cli_wait_stop(0), -EBADF);
	cr_assert_eq(pw_cli_signals_init(), 0);
	cr_assert_eq(pw_cli_signals_init(), 0);
	cr_expect_eq(pw_cli_wait_stop(1000000), 0);
	cr_expect(!pw_cli_dump_requested());

	/* raise() targets this thread, which blocks the signals. */
	cr_assert_eq(raise(SIGUSR1), 0);
	cr_expect_eq(pw_cli_wait_stop(-1), PW_CLI_DUMP);
	cr_expect(pw_cli_dump_requested());
	cr_expect(!pw_cli_dump_requested(), "the flag clears");
	cr_expect(!pw_cli_stop_requested());

	cr_assert_eq(raise(SIGTERM), 0);
	cr_expect_eq(pw_cli_wait_stop(5000000000ll), PW_CLI_STOP);
	cr_expect(pw_cli_stop_requested());
	cr_expect_eq(pw_cli_wait_stop(0), PW_CLI_STOP, "stop stays");
	pw_cli_signals_close();
	cr_expect_eq(pw_cli_wait_stop(0), -EBADF);
}

Test(cli, command_exit_statuses)
{
	static const struct pw_test_cmd_case cases[] = {
		{ { "pinwheel", "demo", "--tasks", "3x" }, 2, "--tasks" },
		{ { "pinwheel", "demo", "--tasks", "0" }, 2, "1..4096" },
		{ { "pinwheel", "demo", "--bogus" }, 2, "'--bogus'" },
		{ { "pinwheel", "demo", "--shards", "-1" }, 2, "--shards" },
		{ { "pinwheel", "demo", "--help" }, 0, "--metrics" },
		{ { "pinwheel", "topo", "--shards", "x" }, 2, "--shards" },
		{ { "pinwheel", "topo", "--synthetic" }, 2, "needs a value" },
		{ { "pinwheel", "topo", "--help" }, 0, "--synthetic DESC" },
		{ { "pinwheel", "topo", "--synthetic",
		    "pack:2 numa:2 l3:1 core:8 pu:2", "--json" },
		  0,
		  "\"cores\": 32" },
		/* echo takes the common flags through the one parser. */
		{ { "pinwheel", "echo", "--help" }, 0, "--metrics-format" },
		{ { "pinwheel", "echo", "--bogus" },
		  2,
		  "pinwheel echo: unknown flag '--bogus' (see --help)" },
		{ { "pinwheel", "echo", "--listen", "127.0.0.1:0", "--sched",
		    "fifo" },
		  2,
		  "--sched: 'fifo' is not shard or steal" },
		{ { "pinwheel", "echo", "--listen", "127.0.0.1:0", "--cpus",
		    "1-0" },
		  2,
		  "--cpus" },
		{ { "pinwheel", "echo", "--listen", "127.0.0.1:0",
		    "--metrics-format", "xml" },
		  2,
		  "--metrics-format: 'xml' is not json or prometheus" },
		{ { "pinwheel", "echo" },
		  2,
		  "pinwheel echo: --listen ADDR is required" },
		/* One message for a bad address, in every command. */
		{ { "pinwheel", "echo", "--listen", "nowhere" },
		  2,
		  "pinwheel echo: --listen: 'nowhere' is not an address "
		  "(A.B.C.D:PORT, [IPv6]:PORT or unix:PATH)" },
		{ { "pinwheel", "http", "--listen", "nowhere" },
		  2,
		  "pinwheel http: --listen: 'nowhere' is not an address (" },
		{ { "pinwheel", "load", "--target", "nowhere" },
		  2,
		  "pinwheel load: --target: 'nowhere' is not an address (" },
		{ { "pinwheel", "proxy", "--listen", "nowhere", "--upstream",
		    "127.0.0.1:1" },
		  2,
		  "pinwheel proxy: --listen: 'nowhere' is not an address (" },
		{ { "pinwheel", "proxy", "--listen", "127.0.0.1:0",
		    "--upstream", "127.0.0.1:1,x" },
		  2,
		  "pinwheel proxy: --upstream: 'x' is not an address (" },
	};

	pw_test_cmd_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

/* ---- --metrics-format prometheus at exit, in every server ------------- */

/* A server command started on 127.0.0.1:0, and what it said so far. */
struct server {
	pid_t pid;
	int fd;
	struct pw_net_addr a;
	char addr[PW_NET_ADDR_STRLEN];
	size_t len;
	char out[65536];
};

static void server_start(struct server *s, char *const argv[])
{
	static const char key[] = "listening on ";
	const char *at;
	size_t n;

	s->len = 0;
	s->pid = pw_test_cmd_start(argv, &s->fd);
	at = pw_test_read_until(s->fd, s->out, sizeof(s->out), &s->len, key);
	/* The address ends at a blank or, in the proxy's banner, a comma. */
	at += sizeof(key) - 1;
	n = strcspn(at, " ,\n");
	cr_assert_lt(n, sizeof(s->addr), "%s", s->out);
	memcpy(s->addr, at, n);
	s->addr[n] = '\0';
	cr_assert_eq(pw_net_addr_parse(&s->a, s->addr), 0, "%s", s->out);
	cr_assert_neq(s->a.u.in4.sin_port, 0, "%s", s->out);
}

/* SIGTERM; it exits 0 with the metrics of this pass's scheduler in
 * Prometheus text after its other output. */
static void server_stop(struct server *s, const char *name)
{
	char want[64];

	cr_assert_eq(kill(s->pid, SIGTERM), 0);
	int st = pw_test_cmd_wait(s->pid, s->fd, s->out + s->len,
				  sizeof(s->out) - s->len);
	cr_expect_eq(st, 0, "%s: status %d: %s", name, st, s->out);
	snprintf(want, sizeof(want), "\npinwheel_info{sched=\"%s\"} 1\n",
		 pw_test_steal() ? "steal" : "shard");
	cr_expect(strstr(s->out, want), "%s: no %s in %s", name, want, s->out);
	cr_expect(strstr(s->out, "\n# TYPE pinwheel_num_workers gauge\n"),
		  "%s: %s", name, s->out);
	cr_expect(!strstr(s->out, "{\"sched\""), "%s: JSON: %s", name, s->out);
}

Test(cli_run, metrics_prometheus_at_exit)
{
	static struct server echo, proxy, http;
	static char out[65536];

	char *echo_argv[] = { "pinwheel",   "echo",
			      "--listen",   "127.0.0.1:0",
			      "--shards",   "1",
			      "--metrics",  "--metrics-format",
			      "prometheus", NULL };
	server_start(&echo, echo_argv);
	char *proxy_argv[] = { "pinwheel",	   "proxy",	 "--listen",
			       "127.0.0.1:0",	   "--shards",	 "1",
			       "--upstream",	   echo.addr,	 "--metrics",
			       "--metrics-format", "prometheus", NULL };
	server_start(&proxy, proxy_argv);
	char *http_argv[] = { "pinwheel",   "http",
			      "--listen",   "127.0.0.1:0",
			      "--shards",   "1",
			      "--metrics",  "--metrics-format",
			      "prometheus", NULL };
	server_start(&http, http_argv);

	/* Load through the proxy to the echo server. */
	char *load_argv[] = { "pinwheel",   "load",	 "--proto",
			      "echo",	    "--target",	 proxy.addr,
			      "--requests", "20",	 "--warmup",
			      "0",	    "--shards",	 "1",
			      "--quiet",    "--metrics", "--metrics-format",
			      "prometheus", NULL };
	int st = pw_test_run_cmd(out, sizeof(out), load_argv);
	cr_expect_eq(st, 0, "load: %s", out);
	cr_expect(strstr(out, "requests 20, errors 0"), "load: %s", out);
	cr_expect(strstr(out, "\n# TYPE pinwheel_num_workers gauge\n"),
		  "load: %s", out);
	cr_expect(strstr(out, pw_test_steal() ? "{sched=\"steal\"}" :
						"{sched=\"shard\"}"),
		  "load: %s", out);

	server_stop(&http, "http");
	server_stop(&proxy, "proxy");
	server_stop(&echo, "echo");
}

/* ---- one number parser, fractions, unbounded ranges, port 0 ----------- */

/* What no number parser takes: a blank before or after, a sign, a base
 * prefix, nothing. */
static const char *const not_numbers[] = { " 5", "+5", "5 ",  "0x5",
					   "",	 "-5", "\t5", "5\n" };
#define NNOT (sizeof(not_numbers) / sizeof(not_numbers[0]))

Test(cli, numbers_refuse_blanks_signs_prefixes)
{
	uint64_t v = 7;

	for (size_t i = 0; i < NNOT; i++) {
		const char *s = not_numbers[i];

		cr_expect_eq(pw_cli_parse_uint(s, 0, 100, &v), -EINVAL, "'%s'",
			     s);
		cr_expect_eq(pw_cli_parse_duration(s, &v), -EINVAL, "'%s'", s);
		cr_expect_eq(pw_cli_parse_size(s, &v), -EINVAL, "'%s'", s);
		cr_expect_eq(pw_cli_parse_fraction(s, &v), -EINVAL, "'%s'", s);
	}
	cr_expect_eq(v, 7, "untouched on error");
	cr_expect_eq(pw_cli_parse_duration("+5s", &v), -EINVAL);
	cr_expect_eq(pw_cli_parse_size("+5k", &v), -EINVAL);
	cr_expect_eq(pw_cli_parse_fraction("+5%", &v), -EINVAL);
	cr_expect_eq(pw_cli_parse_fraction(" 5%", &v), -EINVAL);
}

/* The same through the commands: echo (the common flags) and load (its
 * own). */
Test(cli, command_numbers_refuse_blanks_signs_prefixes)
{
	static char out[4096];

	for (size_t i = 0; i < NNOT; i++) {
		char *echo[] = { "pinwheel", "echo",
				 "--listen", "127.0.0.1:0",
				 "--shards", (char *)not_numbers[i],
				 NULL };
		char *load[] = { "pinwheel", "load",
				 "--target", "127.0.0.1:1",
				 "--conns",  (char *)not_numbers[i],
				 NULL };
		char want[64];

		snprintf(want, sizeof(want), "'%s' is not a whole number",
			 not_numbers[i]);
		int st = pw_test_run_cmd(out, sizeof(out), echo);
		cr_expect_eq(st, 2, "echo '%s': %s", not_numbers[i], out);
		cr_expect(strstr(out, "pinwheel echo: --shards: ") &&
				  strstr(out, want),
			  "echo '%s': %s", not_numbers[i], out);
		st = pw_test_run_cmd(out, sizeof(out), load);
		cr_expect_eq(st, 2, "load '%s': %s", not_numbers[i], out);
		cr_expect(strstr(out, "pinwheel load: --conns: ") &&
				  strstr(out, want),
			  "load '%s': %s", not_numbers[i], out);
	}
}

Test(cli, fractions)
{
	static const struct {
		const char *s;
		uint64_t ppm;
	} ok[] = {
		{ "0", 0 },
		{ "1", 1000000 },
		{ "0.05", 50000 },
		{ "0.000001", 1 },
		{ "1.000000", 1000000 },
		{ "5%", 50000 },
		{ "0.5%", 5000 },
		{ "100%", 1000000 },
		{ "0.0001%", 1 },
		{ "0%", 0 },
		{ "25%", 250000 },
		{ "99.9999%", 999999 },
	};
	static const char *bad[] = { "%",  "5%%",	"5 %",	    ".5",
				     "5.", "0.0000001", "0.00001%", "1e-2",
				     "5x", "0,5",	"5%x" };
	uint64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 7;
		cr_expect_eq(pw_cli_parse_fraction(ok[i].s, &v), 0, "%s",
			     ok[i].s);
		cr_expect_eq(v, ok[i].ppm, "%s: %llu", ok[i].s,
			     (unsigned long long)v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(pw_cli_parse_fraction(bad[i], &v), -EINVAL, "'%s'",
			     bad[i]);
	cr_expect_eq(pw_cli_parse_fraction("1.000001", &v), -ERANGE);
	cr_expect_eq(pw_cli_parse_fraction("2", &v), -ERANGE);
	cr_expect_eq(pw_cli_parse_fraction("100.0001%", &v), -ERANGE);
	cr_expect_eq(pw_cli_parse_fraction("99999999999999999999", &v),
		     -ERANGE);
	cr_expect_eq(pw_cli_parse_fraction(NULL, &v), -EINVAL);
	cr_expect_eq(pw_cli_parse_fraction("1", NULL), -EINVAL);
}

/* A minimum with max 0 has no upper bound (load --timeout was refused
 * whatever its value: "out of range 1ms..0ns"); a fraction flag. */
static uint64_t wait_ns, count, share;
static const struct pw_cli_opt open_opts[] = {
	{ "--wait", PW_CLI_DURATION, &wait_ns, 1000000, 0, "D", "how long" },
	{ "--count", PW_CLI_UINT, &count, 1, 0, "N", "how many" },
	{ "--share", PW_CLI_FRACTION, &share, 0, PW_CLI_PPM, "R", "part" },
};
static const struct pw_cli_cmd open_cmd = {
	.name = "pinwheel t",
	.opts = open_opts,
	.nopts = sizeof(open_opts) / sizeof(open_opts[0]),
};
#define OPEN_PARSE(...) \
	pw_cli_parse(&cli, &open_cmd, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

Test(cli, min_without_max_and_fractions)
{
	cr_assert(freopen("/dev/null", "w", stderr));
	cr_expect_eq(OPEN_PARSE("--wait", "1ms", "--count", "1"), 0);
	cr_expect_eq(wait_ns, 1000000);
	cr_expect_eq(count, 1);
	cr_expect_eq(OPEN_PARSE("--wait", "10000h", "--count",
				"18446744073709551615"),
		     0);
	cr_expect_eq(wait_ns, 10000 * 3600000000000ull);
	cr_expect_eq(count, UINT64_MAX);
	expect_error(OPEN_PARSE("--wait", "0"),
		     "--wait: '0' is out of range (at least 1ms)");
	expect_error(OPEN_PARSE("--wait", "999us"),
		     "--wait: '999us' is out of range (at least 1ms)");
	expect_error(OPEN_PARSE("--count", "0"),
		     "--count: '0' is out of range (at least 1)");
	expect_error(OPEN_PARSE("--count", "18446744073709551616"),
		     "--count: '18446744073709551616' is too large");
	expect_error(OPEN_PARSE("--wait", "9999999999999h"),
		     "--wait: '9999999999999h' is too large");

	cr_expect_eq(OPEN_PARSE("--share", "2.5%"), 0);
	cr_expect_eq(share, 25000);
	cr_expect_eq(OPEN_PARSE("--share=0.75"), 0);
	cr_expect_eq(share, 750000);
	expect_error(OPEN_PARSE("--share", "1.5"),
		     "--share: '1.5' is out of range 0%..100%");
	expect_error(OPEN_PARSE("--share", "half"),
		     "--share: 'half' is not a fraction such as 0.05 or 5%");
}

/* Port 0 means any port to a listener only; one message for it. */
Test(cli, addresses_port_zero)
{
	struct pw_net_addr a;

	cr_assert(freopen("/dev/null", "w", stderr));
	cr_assert_eq(PARSE("--verbose"), 0);
	cr_expect_eq(pw_cli_addr(&cli, "--listen", "[::1]:0",
				 PW_CLI_ADDR_LISTEN, &a),
		     0);
	cr_expect_eq(a.u.in6.sin6_port, 0);
	cr_expect_eq(pw_cli_addr(&cli, "--to", "127.0.0.1:1",
				 PW_CLI_ADDR_CONNECT, &a),
		     0);
	cr_expect_eq(pw_cli_addr(&cli, "--to", "unix:@pw-t",
				 PW_CLI_ADDR_CONNECT, &a),
		     0, "a unix address has no port");
	expect_error(pw_cli_addr(&cli, "--to", "127.0.0.1:0",
				 PW_CLI_ADDR_CONNECT, &a),
		     "pinwheel t: --to: '127.0.0.1:0' has port 0, which no "
		     "server listens on (0 means any port only to a "
		     "listener)");
	expect_error(pw_cli_addr(&cli, "--to", "[::1]:0", PW_CLI_ADDR_CONNECT,
				 &a),
		     "--to: '[::1]:0' has port 0");
	expect_error(pw_cli_addr(&cli, "--to", "127.0.0.1:00",
				 PW_CLI_ADDR_CONNECT, &a),
		     "--to: '127.0.0.1:00' has port 0");
}

Test(cli, command_port_zero)
{
	static const struct pw_test_cmd_case cases[] = {
		{ { "pinwheel", "load", "--target", "127.0.0.1:0" },
		  2,
		  "pinwheel load: --target: '127.0.0.1:0' has port 0" },
		{ { "pinwheel", "load", "--target", "[::1]:0" },
		  2,
		  "pinwheel load: --target: '[::1]:0' has port 0" },
		{ { "pinwheel", "proxy", "--listen", "127.0.0.1:0",
		    "--upstream", "127.0.0.1:0" },
		  2,
		  "pinwheel proxy: --upstream: '127.0.0.1:0' has port 0" },
		{ { "pinwheel", "proxy", "--listen", "127.0.0.1:0",
		    "--upstream", "127.0.0.1:1,[::1]:0" },
		  2,
		  "pinwheel proxy: --upstream: '[::1]:0' has port 0" },
		{ { "pinwheel", "proxy", "--listen", "127.0.0.1:0",
		    "--upstream", "127.0.0.1:1," },
		  2,
		  "pinwheel proxy: --upstream: '' is not an address (" },
	};

	pw_test_cmd_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

/* ---- a second SIGINT or SIGTERM ----------------------------------------- */

Test(cli, second_signal)
{
	struct sigaction sa;

	cr_expect_eq(pw_cli_wait_force(0), -EBADF);
	cr_assert_eq(pw_cli_signals_init(), 0);
	cr_expect_eq(pw_cli_wait_force(1000000), 0);
	cr_expect_eq(pw_cli_force_status(), 0);

	/* raise() targets this thread, which blocks the signals. */
	cr_assert_eq(raise(SIGINT), 0);
	cr_expect_eq(pw_cli_wait_force(-1), PW_CLI_STOP, "the first stop");
	cr_expect(pw_cli_stop_requested());
	cr_expect_eq(pw_cli_force_status(), 0);
	cr_expect_eq(pw_cli_wait_stop(0), PW_CLI_STOP, "stop stays");
	cr_assert_eq(raise(SIGUSR1), 0);
	cr_expect_eq(pw_cli_wait_force(-1), PW_CLI_DUMP);
	cr_expect(pw_cli_dump_requested());
	cr_expect_eq(pw_cli_force_status(), 0);

	cr_assert_eq(raise(SIGTERM), 0);
	cr_expect_eq(pw_cli_wait_force(5000000000ll), PW_CLI_FORCE);
	cr_expect_eq(pw_cli_force_status(), 128 + SIGTERM);
	cr_expect_eq(pw_cli_wait_stop(0), PW_CLI_STOP, "stop stays");
	/* Left pending: the status stays that of the second signal, and the
	 * close takes them without dying of them. */
	cr_assert_eq(raise(SIGINT), 0);
	cr_assert_eq(raise(SIGUSR1), 0);
	cr_expect_eq(pw_cli_wait_force(0), PW_CLI_FORCE, "force stays");
	cr_expect_eq(pw_cli_force_status(), 143);
	pw_cli_signals_close();
	cr_expect_eq(pw_cli_force_status(), 143);
	cr_expect_eq(pw_cli_wait_force(0), -EBADF);
	cr_assert_eq(sigaction(SIGINT, NULL, &sa), 0);
	cr_expect(sa.sa_handler == SIG_DFL, "the action is restored");
}

Test(cli, second_signal_taken_at_close)
{
	/* A second stop still pending when the signals are let go sets the
	 * status; it does not kill the process. */
	struct sigaction sa;

	cr_assert_eq(pw_cli_signals_init(), 0);
	cr_assert_eq(raise(SIGTERM), 0);
	cr_expect_eq(pw_cli_wait_stop(-1), PW_CLI_STOP);
	cr_assert_eq(raise(SIGINT), 0);
	cr_expect_eq(pw_cli_force_status(), 0);
	pw_cli_signals_close();
	cr_expect_eq(pw_cli_force_status(), 128 + SIGINT);
	cr_assert_eq(sigaction(SIGTERM, NULL, &sa), 0);
	cr_expect(sa.sa_handler == SIG_DFL, "the action is restored");
}

/*
 * Stop @s with SIGINT and SIGTERM together (held back by SIGSTOP until
 * both are pending): whichever is read second asks the command to end at
 * once, so it exits 130 or 143, never killed by the signal, with its
 * summary line on the pipe.
 */
static void server_two_signals(struct server *s, const char *summary)
{
	cr_assert_eq(kill(s->pid, SIGSTOP), 0);
	cr_assert_eq(kill(s->pid, SIGINT), 0);
	cr_assert_eq(kill(s->pid, SIGTERM), 0);
	cr_assert_eq(kill(s->pid, SIGCONT), 0);
	int st = pw_test_cmd_wait(s->pid, s->fd, s->out + s->len,
				  sizeof(s->out) - s->len);
	cr_expect(st == 130 || st == 143, "%s: status %d: %s", summary, st,
		  s->out);
	cr_expect(strstr(s->out, summary), "no '%s' in %s", summary, s->out);
}

Test(cli_run, second_signal_every_command)
{
	static struct server echo, proxy, http, load;

	char *echo_argv[] = { "pinwheel", "echo", "--listen", "127.0.0.1:0",
			      "--shards", "1",	  NULL };
	server_start(&echo, echo_argv);
	char *proxy_argv[] = { "pinwheel",    "proxy",	  "--listen",
			       "127.0.0.1:0", "--shards", "1",
			       "--upstream",  echo.addr,  NULL };
	server_start(&proxy, proxy_argv);
	char *http_argv[] = { "pinwheel", "http", "--listen", "127.0.0.1:0",
			      "--shards", "1",	  NULL };
	server_start(&http, http_argv);
	/* A load on http, stopped once its first progress line is out. */
	char *load_argv[] = { "pinwheel", "load", "--target",	http.addr,
			      "--shards", "1",	  "--duration", "1h",
			      "--warmup", "0",	  NULL };
	load.pid = pw_test_cmd_start(load_argv, &load.fd);
	pw_test_read_until(load.fd, load.out, sizeof(load.out), &load.len,
			   " rate ");

	server_two_signals(&load, "http load of ");
	server_two_signals(&http, "pinwheel http: stopped; ");
	server_two_signals(&proxy, "pinwheel proxy: stopped ");
	server_two_signals(&echo, "pinwheel echo: stopped; ");
}
