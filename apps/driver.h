/* SPDX-License-Identifier: MIT */
/*
 * driver.h - the one life of a pinwheel command that runs a runtime
 * (echo, http, proxy, load, demo): parse the flags, set up the signals,
 * create the runtime, start the service and print its banner, serve until
 * SIGINT or SIGTERM (with a stats tick and a report on SIGUSR1), drain
 * with a deadline, print the final metrics in the chosen
 * --metrics-format, stop, and return the exit status.
 *
 * A second SIGINT or SIGTERM ends the drain at once: the connections
 * still open are closed as at the deadline, the final metrics and the
 * summary are printed and flushed, and the command exits with 130
 * (SIGINT) or 143 (SIGTERM), as a shell reports a process killed by that
 * signal, whatever the hooks returned. One that comes after the drain,
 * or during a run hook's own stop (load), sets the same status; it is
 * taken when the signals are let go, so it never kills the process.
 *
 * A command fills a struct pw_drv_ops with its hooks; every hook is
 * optional. Its entry point is then one call:
 *
 *	return pw_drv_main(&cmd, &ops, argc, argv);
 *
 * Reports: SIGUSR1, the exit with --metrics and every scrape write the
 * same thing, pw_drv_report(): the runtime's metrics (pinwheel/metrics.h)
 * and then the command's own counters, which its counters hook writes
 * through apps/expo.h as pinwheel_<cmd>_..., in the --metrics-format
 * chosen (a scrape: the format its path asks for). In JSON both are one
 * object: the runtime's keys, then one key per counter.
 *
 * The order, each step after the one before succeeded:
 *   pw_cli_parse() and pw_cli_config()   (exit 2 on a bad flag)
 *   setup         own flags checked, the runtime config finished
 *   signals       SIGINT, SIGTERM, SIGUSR1 blocked (pw_cli_signals_init),
 *                 SIGPIPE ignored; unless ops->no_signals
 *   the runtime   checked by pw_config_check() (exit 1 with the message
 *                 naming the wrong field) and created (exit 1), the
 *                 creation left to start with ops->own_runtime
 *   start         the service; then, with --metrics-listen, the scrape
 *                 server (apps/scrape.h) on shard 0; then the banner
 *                 "NAME: listening on ADDR" + ops->banner, when start
 *                 set d->addr, and "NAME: metrics on ADDR (...)" 
 *   run           the command's work; without it, serve: wait for a
 *                 signal, calling tick every d->tick_ns and report on
 *                 SIGUSR1; then drain: ops->drain, and wait up to
 *                 d->drain_ns (or until a second signal) while
 *                 ops->open() is above 0
 *   report        with --metrics, the final report (default: metrics)
 *   scrape        the scrape server stopped
 *   the runtime   destroyed, unless ops->own_runtime
 *   stop          summary and cleanup; called whenever setup succeeded
 *   signals       stdout flushed, the signals let go (pending ones taken)
 */
#ifndef PW_APPS_DRIVER_H
#define PW_APPS_DRIVER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "pinwheel.h"
#include "pinwheel/net.h"
#include "apps/cli.h"
#include "apps/expo.h"

struct pw_scrape;

/* One run of a command: what the driver and the hooks share. */
struct pw_drv {
	const struct pw_cli_cmd *cmd;
	const struct pw_drv_ops *ops;
	struct pw_cli cli;	 /* the parsed common flags */
	struct pw_config cfg;	 /* the runtime's config, from cli */
	struct pw_runtime *rt;	 /* set before start (or by it) */
	struct pw_net_addr addr; /* set by start: the banner's address */
	uint64_t tick_ns;	 /* set by setup: tick period; 0: none */
	uint64_t drain_ns;	 /* set by setup: the drain deadline */
	int left;		 /* connections open at the drain deadline */
	bool served;		 /* start succeeded */
	struct pw_net_addr metrics_addr; /* --metrics-listen, parsed */
	struct pw_scrape *scrape;	 /* its server while it runs */
};

/* A command's hooks; each may be NULL. Those returning int return 0 to
 * go on, or the command's exit status after printing why (pw_cli_fail). */
struct pw_drv_ops {
	/* Check the command's own flags; finish d->cfg; set d->tick_ns
	 * (with a tick hook) and d->drain_ns. */
	int (*setup)(struct pw_drv *d);
	/* Start serving on d->rt (with own_runtime: create it from d->cfg
	 * and set d->rt); set d->addr for the banner. */
	int (*start)(struct pw_drv *d);
	/* Print the rest of the banner line after "listening on ADDR". */
	void (*banner)(struct pw_drv *d, FILE *f);
	/* The command's work, instead of serving until a signal. */
	int (*run)(struct pw_drv *d);
	/* Every d->tick_ns while serving. */
	void (*tick)(struct pw_drv *d);
	/* On SIGUSR1 (@final false), and at exit with --metrics (@final
	 * true); without it, pw_drv_metrics() to stdout. */
	void (*report)(struct pw_drv *d, bool final);
	/* The command's own counters into @e (begun with the command's
	 * name: pinwheel_<cmd>_...): pw_expo_metric() and pw_expo_sample()
	 * calls only. Called by every report (SIGUSR1, exit, scrape), from
	 * the main thread or, for a scrape, from shard 0 while the command
	 * runs: it may read only what any thread may (relaxed counters). */
	void (*counters)(struct pw_drv *d, struct pw_expo *e);
	/* Stop accepting; the driver then waits while open() > 0. */
	void (*drain)(struct pw_drv *d);
	int (*open)(struct pw_drv *d);
	/* Print the summary and free; gets and returns the exit status.
	 * d->served tells whether start succeeded. */
	int (*stop)(struct pw_drv *d, int status);
	bool own_runtime; /* start creates d->rt, stop destroys it */
	bool no_signals;  /* leave the signals alone (demo) */
};

/**
 * pw_drv_main - run the command @cmd with hooks @ops on @argv (argv[0] is
 * its name), in the order given at the top of this file.
 * Return: the process exit status: 0, 1 (the runtime or the service
 * failed), 2 (bad usage), what a hook returned, or 130 or 143 after a
 * second SIGINT or SIGTERM.
 * Context: the main thread, before any other thread starts.
 */
int pw_drv_main(const struct pw_cli_cmd *cmd, const struct pw_drv_ops *ops,
		int argc, char **argv);

/**
 * pw_drv_wait - wait up to @ns for a signal; on SIGUSR1 call the report
 * hook (not final). For a run hook that waits by itself (load).
 * Return: true once SIGINT or SIGTERM asked for a stop; false otherwise
 * (the time ran out, SIGUSR1, or a failed wait).
 * Context: the main thread, inside a run hook.
 */
bool pw_drv_wait(struct pw_drv *d, uint64_t ns);

/**
 * pw_drv_report - write a report to @f in format @fmt: a snapshot of the
 * runtime's metrics, the command's counters (its counters hook) and,
 * with --metrics-listen, the scrape server's; then flush @f. The one
 * writer of SIGUSR1, exit and scrape reports.
 * Return: 0; -EINVAL without a runtime or for a refused metric (what
 * was valid is written); -ENOMEM; -EIO when writing failed.
 * Context: any thread (scrapes call it on shard 0).
 */
int pw_drv_report(struct pw_drv *d, FILE *f, enum pw_expo_format fmt);

/**
 * pw_drv_metrics - with --metrics, pw_drv_report() to @f in the
 * --metrics-format chosen; nothing without --metrics. The default
 * report, for report hooks to call.
 * Context: the main thread.
 */
void pw_drv_metrics(struct pw_drv *d, FILE *f);

/**
 * pw_drv_format - the expo format of --metrics-format.
 * Context: any thread.
 */
enum pw_expo_format pw_drv_format(const struct pw_drv *d);

#endif /* PW_APPS_DRIVER_H */
