/* SPDX-License-Identifier: MIT */
/*
 * main.c - the pinwheel command: subcommand dispatch, --help, --version.
 * The environment variable PW_SCHED is read where the commands build
 * their runtime's config, in pw_cli_parse() (cli.c).
 */
#include <stdio.h>
#include <string.h>

#include "pinwheel.h"
#include "apps/apps.h"
#include "apps/report.h"

static const struct pw_app_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *what;
} cmds[] = {
	{ "echo", pw_app_echo, "run an echo server (TCP or Unix socket)" },
	{ "udp-echo", pw_app_udp_echo, "run a UDP echo server (datagrams)" },
	{ "http", pw_app_http, "run a fixed-body HTTP/1.1 server (for wrk)" },
	{ "load", pw_app_load,
	  "generate HTTP, echo or UDP load; latency percentiles, throughput" },
	{ "proxy", pw_app_proxy, "run an L4 TCP proxy" },
	{ "report", pw_app_report,
	  "merge the latency of several load runs: table, JSON, plot" },
	{ "bench", pw_app_bench,
	  "shard against stealing on server scenarios: table, JSON, plot" },
	{ "demo", pw_app_demo, "run a short demonstration of the runtime" },
	{ "topo", pw_app_topo,
	  "show the machine topology and planned shard placement" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: pinwheel [--help | --version] COMMAND [ARGS]\n\n"
		   "commands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].what);
	fprintf(f, "\n'pinwheel COMMAND --help' describes a command.\n\n"
		   "environment:\n"
		   "  PW_SCHED=shard|steal  the default scheduler of the "
		   "commands that run a\n"
		   "                        runtime (--sched overrides it; "
		   "unset: shard)\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("pinwheel %s\n", pw_version());
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "pinwheel: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
