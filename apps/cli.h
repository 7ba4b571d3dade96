/* SPDX-License-Identifier: MIT */
/*
 * cli.h - what every `pinwheel` subcommand shares: flags, usage text,
 * the runtime configuration they select, signals, the metrics dump and
 * JSON strings. (The servers' accept loop is the library's:
 * pw_accept_loop_poll() in pinwheel/serve.h.)
 *
 * A subcommand describes its own flags in a table of struct pw_cli_opt
 * and picks the common ones it takes (--shards, --idle-poll,
 * --batch-wait, --sched, --cpus, --metrics, --metrics-format,
 * --metrics-listen; --help always). pw_cli_parse() checks every value
 * (numbers, durations such as 10s or 500ms, sizes such as 64k or 1M,
 * ranges) and on a bad flag prints one line naming it, so the command
 * exits with status 2.
 * pw_cli_addr() is the one address parser, with the one message for a
 * bad address. pw_cli_config() turns the common flags into a struct
 * pw_config.
 *
 * The scheduler: the library's pw_config_init() reads no environment, so
 * the pinwheel command chooses it here: --sched, else the environment
 * variable PW_SCHED (shard or steal), else shard. The test suite's
 * second pass relies on it to run the commands under stealing.
 *
 * Signals: pw_cli_signals_init(), called by the main thread before any
 * other thread starts, blocks SIGINT, SIGTERM and SIGUSR1 (every thread
 * started later inherits the mask) and reads them from a signalfd in
 * pw_cli_wait_stop(): SIGINT and SIGTERM ask for a graceful stop, SIGUSR1
 * for a metrics dump. A second SIGINT or SIGTERM, read by
 * pw_cli_wait_force() during the stop (or by pw_cli_signals_close() at
 * the end), asks to end at once: the command then exits with
 * pw_cli_force_status(), 130 or 143, what a shell reports for a process
 * killed by SIGINT or SIGTERM, but only after it has closed its sockets
 * and printed its summary.
 */
#ifndef PW_APPS_CLI_H
#define PW_APPS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "pinwheel/net.h"
#include "pinwheel/runtime.h"

/* The scheduler --sched selects. */
enum pw_cli_sched {
	PW_CLI_SCHED_SHARD, /* shard per core (the default) */
	PW_CLI_SCHED_STEAL, /* work stealing */
};

/* Common flags, for struct pw_cli_cmd.common. */
#define PW_CLI_SHARDS  0x1u /* --shards, --idle-poll, --batch-wait */
#define PW_CLI_SCHED   0x2u /* --sched shard|steal */
#define PW_CLI_CPUS    0x4u /* --cpus LIST */
#define PW_CLI_METRICS 0x8u /* --metrics, --metrics-{format,listen} */
#define PW_CLI_RUNTIME 0xfu /* all four: a command that runs a runtime */

/* What a flag's value is. */
enum pw_cli_type {
	PW_CLI_BOOL,	 /* no value; dst: bool *, set to true */
	PW_CLI_UINT,	 /* decimal; dst: uint64_t * */
	PW_CLI_DURATION, /* e.g. 10s, 500ms, 2m, 1.5s; dst: uint64_t * ns */
	PW_CLI_SIZE,	 /* e.g. 512, 64k, 1M; dst: uint64_t * bytes */
	PW_CLI_STRING,	 /* as is (addresses, lists); dst: const char ** */
	PW_CLI_FRACTION, /* e.g. 0.05 or 5%, 0..1; dst: uint64_t * in
			    millionths (PW_CLI_PPM is 1) */
};

/* A PW_CLI_FRACTION of 1 (100%), in millionths. */
#define PW_CLI_PPM 1000000u

/* One subcommand flag. */
struct pw_cli_opt {
	const char *name; /* with its dashes: "--tasks" */
	enum pw_cli_type type;
	void *dst;	   /* where the value goes */
	uint64_t min, max; /* accepted range of a number, duration (ns),
			      size (bytes) or fraction (millionths); max
			      0: no upper bound (both 0: any) */
	const char *arg;   /* the value's name in the usage, e.g. "N" */
	const char *help;  /* one line */
};

/* A subcommand. */
struct pw_cli_cmd {
	const char *name;  /* "pinwheel demo": messages start with it */
	const char *about; /* what it does, printed under the usage line */
	const struct pw_cli_opt *opts;
	unsigned nopts;
	uint32_t common; /* PW_CLI_* common flags it takes */
};

/* How --metrics prints (--metrics-format). */
enum pw_cli_metrics_format {
	PW_CLI_METRICS_JSON,	   /* one JSON object (the default) */
	PW_CLI_METRICS_PROMETHEUS, /* Prometheus text exposition */
};

/* The common flags as parsed. */
struct pw_cli {
	const struct pw_cli_cmd *cmd;
	unsigned shards;	 /* --shards, or 0 */
	uint64_t idle_poll_ns;	 /* --idle-poll, or 0 */
	uint64_t batch_wait_ns;	 /* --batch-wait, or 0 */
	enum pw_cli_sched sched; /* --sched, else PW_SCHED, else shard */
	const char *cpus_arg;	 /* --cpus as given, or NULL */
	unsigned ncpus;		 /* CPUs in --cpus */
	bool metrics;		 /* --metrics */
	enum pw_cli_metrics_format metrics_format; /* --metrics-format */
	const char *metrics_listen;   /* --metrics-listen ADDR, or NULL */
	int cpus[PW_MAX_SHARDS];      /* --cpus, ascending */
	int shard_cpu[PW_MAX_SHARDS]; /* per shard, by pw_cli_config() */
	char error[256];	      /* the last message printed */
};

/* pw_cli_parse() results besides 0 and -EINVAL. */
#define PW_CLI_HELP 1

/**
 * pw_cli_parse - parse a subcommand's argv (argv[0] is its name).
 * Flags are "--name value" or "--name=value"; "-h" is "--help". For a
 * command that takes --sched, the scheduler defaults to the environment
 * variable PW_SCHED (shard or steal; unset or empty: shard); another
 * value is refused like a bad flag.
 * Return: 0 to go on; PW_CLI_HELP when the usage was printed on stdout
 * (exit 0); -EINVAL when a one-line message naming the bad flag was
 * printed on stderr and kept in @c->error (exit 2).
 * Context: any thread; typically main.
 */
int pw_cli_parse(struct pw_cli *c, const struct pw_cli_cmd *cmd, int argc,
		 char **argv);

/**
 * pw_cli_status - the exit status for a pw_cli_parse() or
 * pw_cli_config() result that is not 0: 0 for PW_CLI_HELP, else 2.
 * Context: any thread.
 */
int pw_cli_status(int rc);

/**
 * pw_cli_usage - print @cmd's usage, its common and own flags, to @f.
 * Context: any thread.
 */
void pw_cli_usage(const struct pw_cli_cmd *cmd, FILE *f);

/**
 * pw_cli_config - apply the common flags to @cfg (set up by the caller
 * with pw_config_init()): --shards, --cpus (shard i on the i-th CPU of
 * the list; with --cpus alone, one shard per CPU), --idle-poll,
 * --batch-wait, --sched.
 * @c must stay alive while @cfg is used (cfg->cpus points into it).
 * Return: 0; -EINVAL when --shards asks for more shards than --cpus
 * lists; then a one-line message was printed (exit 2).
 * Context: any thread.
 */
int pw_cli_config(struct pw_cli *c, struct pw_config *cfg);

/**
 * pw_cli_fail - print "NAME: message" (NAME from @c->cmd, message from
 * @fmt) as one line on stderr and keep it in @c->error: how every usage
 * error of a command is told.
 * Return: @err, for `return pw_cli_fail(c, -EINVAL, ...)`.
 * Context: any thread; typically main.
 */
int pw_cli_fail(struct pw_cli *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* What an address given to pw_cli_addr() is for. */
enum pw_cli_addr_use {
	PW_CLI_ADDR_LISTEN,  /* to listen on: port 0 is any free port */
	PW_CLI_ADDR_CONNECT, /* to connect to: port 0 is refused, as no
				server listens there */
};

/**
 * pw_cli_addr - parse the address @s given to flag @flag (e.g. "--listen")
 * into @out, with pw_net_addr_parse(): A.B.C.D:PORT, [IPv6]:PORT,
 * unix:PATH or unix:@NAME. With @use PW_CLI_ADDR_LISTEN port 0 is taken
 * as given (the listener then gets a port of the kernel's choosing); with
 * PW_CLI_ADDR_CONNECT it is refused.
 * Return: 0; -EINVAL when @s is NULL ("FLAG ADDR is required"), not an
 * address ("FLAG: 'S' is not an address (...)") or an IP address with
 * port 0 to connect to ("FLAG: 'S' has port 0, ..."): the one message for
 * each, printed through pw_cli_fail() (exit 2).
 * Context: any thread; typically main.
 */
int pw_cli_addr(struct pw_cli *c, const char *flag, const char *s,
		enum pw_cli_addr_use use, struct pw_net_addr *out);

/**
 * pw_cli_sched_apply - select scheduler @s in @cfg.
 * Return: 0 with cfg->sched set; -EINVAL for an unknown @s or NULL @cfg.
 * Context: any thread.
 */
int pw_cli_sched_apply(struct pw_config *cfg, enum pw_cli_sched s);

/**
 * pw_cli_parse_uint - parse @s as a decimal number in @min..@max: digits
 * only, no sign, blank or suffix.
 * Return: 0 with *@out set; -EINVAL for anything but digits (empty, "3x",
 * "-1", " 1"); -ERANGE for a number out of range or beyond 64 bits.
 * Context: any thread.
 */
int pw_cli_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/**
 * pw_cli_parse_duration - parse @s as a duration: a decimal number, with
 * up to 9 decimals after a point, and a unit: ns, us, ms, s, m or h (none:
 * seconds). Fractions of a nanosecond are dropped.
 * Return: 0 with *@ns set; -EINVAL for malformed text; -ERANGE beyond
 * 2^64 - 1 ns.
 * Context: any thread.
 */
int pw_cli_parse_duration(const char *s, uint64_t *ns);

/**
 * pw_cli_parse_size - parse @s as a byte count: a decimal number with an
 * optional binary unit k, m, g or t (either case, 1024-based), which may
 * be followed by "B" or "iB"; "B" alone means bytes.
 * Return: 0 with *@bytes set; -EINVAL for malformed text; -ERANGE beyond
 * 2^64 - 1.
 * Context: any thread.
 */
int pw_cli_parse_size(const char *s, uint64_t *bytes);

/**
 * pw_cli_parse_fraction - parse @s as a fraction of 0 to 1: a decimal
 * number with up to 6 decimals (0, 0.05, 1), or a percentage with up to
 * 4 decimals and a '%' (5%, 0.5%, 100%).
 * Return: 0 with *@ppm set in millionths (PW_CLI_PPM for 1); -EINVAL
 * for malformed text (a blank, sign, more decimals); -ERANGE above 1.
 * Context: any thread.
 */
int pw_cli_parse_fraction(const char *s, uint64_t *ppm);

/* pw_cli_wait_stop() and pw_cli_wait_force() results. */
#define PW_CLI_STOP  1 /* SIGINT or SIGTERM arrived */
#define PW_CLI_DUMP  2 /* SIGUSR1 arrived: dump the metrics */
#define PW_CLI_FORCE 3 /* a second SIGINT or SIGTERM: end at once */

/**
 * pw_cli_signals_init - block SIGINT, SIGTERM and SIGUSR1 in the calling
 * thread and open the signalfd that pw_cli_wait_stop() reads. Call it
 * from the main thread before any other thread starts, so that every
 * thread inherits the mask. Calling it again is a no-op.
 * Return: 0; or the -errno of sigprocmask or signalfd.
 * Context: the main thread.
 */
int pw_cli_signals_init(void);

/**
 * pw_cli_signals_close - take the signals still pending (a SIGINT or
 * SIGTERM counts as for pw_cli_wait_force(), SIGUSR1 is dropped), close
 * the signalfd and unblock the signals. A signal that comes while it
 * unblocks them is discarded, never kills the process: call it after the
 * last output, before returning the exit status.
 * Context: the thread that called pw_cli_signals_init(), once no other
 * thread of the process relies on the signal actions.
 */
void pw_cli_signals_close(void);

/**
 * pw_cli_wait_stop - wait up to @timeout_ns (< 0: without limit) for a
 * signal. SIGUSR1 also sets the flag pw_cli_dump_requested() reads.
 * Return: PW_CLI_STOP once a stop was asked for (and on every later
 * call); PW_CLI_DUMP on SIGUSR1; 0 when the time ran out; -EBADF before
 * pw_cli_signals_init(); or the -errno of poll or read.
 * Context: the thread that called pw_cli_signals_init().
 */
int pw_cli_wait_stop(int64_t timeout_ns);

/**
 * pw_cli_wait_force - once stopping, wait up to @timeout_ns (< 0: without
 * limit) for a second SIGINT or SIGTERM.
 * Return: PW_CLI_FORCE once one has come (and on every later call);
 * PW_CLI_STOP when the signal that came was the first stop; PW_CLI_DUMP
 * on SIGUSR1; 0 when the time ran out; -EBADF before
 * pw_cli_signals_init(); or the -errno of poll or read.
 * Context: the thread that called pw_cli_signals_init().
 */
int pw_cli_wait_force(int64_t timeout_ns);

/**
 * pw_cli_force_status - the exit status a second SIGINT or SIGTERM asks
 * for: 128 plus its number, 130 for SIGINT and 143 for SIGTERM; 0 when
 * no second one came.
 * Context: the thread that called pw_cli_signals_init().
 */
int pw_cli_force_status(void);

/**
 * pw_cli_stop_requested - whether SIGINT or SIGTERM has been seen by
 * pw_cli_wait_stop() or pw_cli_wait_force(). Context: any thread.
 */
bool pw_cli_stop_requested(void);

/**
 * pw_cli_dump_requested - whether SIGUSR1 came since the last call;
 * clears the flag. Context: any thread.
 */
bool pw_cli_dump_requested(void);

/**
 * pw_cli_metrics_write - print a snapshot of @rt's metrics
 * (pinwheel/metrics.h) to @f in format @fmt, then flush @f.
 * Return: 0; -EINVAL for NULL arguments or an unknown @fmt; or the error
 * of pw_metrics_read() or the writer (-EIO).
 * Context: any thread.
 */
int pw_cli_metrics_write(FILE *f, struct pw_runtime *rt,
			 enum pw_cli_metrics_format fmt);

/**
 * pw_cli_metrics_dump - print a snapshot of @rt's metrics to @f as JSON
 * (pw_cli_metrics_write() with PW_CLI_METRICS_JSON).
 * Return: as pw_cli_metrics_write().
 * Context: any thread.
 */
int pw_cli_metrics_dump(FILE *f, struct pw_runtime *rt);

/**
 * pw_cli_mono_ns - CLOCK_MONOTONIC in nanoseconds: the one clock the
 * commands use for deadlines, ticks and elapsed times.
 * Context: any thread.
 */
uint64_t pw_cli_mono_ns(void);

/**
 * pw_cli_json_str - print @s to @f as a JSON string: in double quotes,
 * '"' and '\\' behind a backslash, other bytes below 0x20 as \u00XX.
 * Context: any thread.
 */
void pw_cli_json_str(FILE *f, const char *s);

#endif /* PW_APPS_CLI_H */
