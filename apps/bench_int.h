/* SPDX-License-Identifier: MIT */
/*
 * bench_int.h - what the files of `pinwheel bench` share (private to
 * them): the state of a bench, one row per scenario and one cell per
 * scheduler column, and the calls between the files.
 *
 *   bench.c            the entry point: flags, setting up, one cleanup
 *   bench_scenarios.c  the scenario table, its selection, CPU placement
 *                      and the servers' command lines
 *   bench_run.c        child processes, one measurement, rounds
 *   bench_report.c     medians, verdicts, warnings, the table, JSON and
 *                      the plot
 *   bench_stats.c      median, spread, bootstrap interval, verdict text
 *   bench_hdr.c        the HdrHistogram files (--hgrm, --hdr-log)
 *   machine.c          load average, steal time, governor, SMT siblings
 *
 * Everything here runs on the main thread of the pinwheel command.
 */
#ifndef PW_APPS_BENCH_INT_H
#define PW_APPS_BENCH_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "pinwheel.h"
#include "pinwheel/hist.h"
#include "pinwheel/hist_hdr.h"
#include "apps/bench.h"
#include "apps/load.h"
#include "apps/machine.h"

/* The columns of a row: the two schedulers and the Tokio peer. */
enum { COL_SHARD, COL_STEAL, COL_TOKIO, NCOLS };

/* The columns' names: "shard", "steal", "tokio". */
extern const char *const pw_bench_col_name[NCOLS];

#define SCENARIOS_MAX 32  /* rows in the scenario table at most */
#define ROUNDS_MAX    99  /* --rounds at most */
#define ARGV_MAX      48  /* words of a server's command line */
#define NOTE_LEN      256 /* a note on why something was skipped or failed */

/* One measurement. Times in microseconds. */
struct meas {
	double rps, p50, p99, p999, cpu_us; /* cpu_us < 0: unknown */
	double cpu_s, elapsed_s;
	uint64_t requests, errors;
	struct pw_load_errors err; /* errors by cause */
	unsigned round;		   /* 0-based */
	unsigned slot;		   /* its place in the round's order, 0-based */
	char server_log[NOTE_LEN]; /* with errors: the server's last line */
	double steal_pct;	   /* the VM's steal time over the run, % of
				      all CPU time; < 0: unknown */
};

/* The figures of a measurement the report summarises, in table order. */
enum { FIG_RPS, FIG_P50, FIG_P99, FIG_P999, FIG_CPU, NFIGS };

/* A scenario under one scheduler (or the Tokio peer). */
struct cell {
	bool used;	      /* this column applies */
	unsigned n;	      /* measurements done */
	struct meas *m;	      /* one per round */
	struct pw_hist hist;  /* latency of every round, merged */
	bool have_hist;	      /* hist set up */
	bool skipped, failed; /* note says why */
	char note[NOTE_LEN];
	/* --hdr-log: the cell's interval log (apps/bench_hdr.c). */
	struct pw_hdr_log log;
	bool log_open;
	int log_err;	   /* the first error opening or writing it */
	double log_base_s; /* its start, wall-clock seconds */
};

#define COUNTS_MAX 64 /* --server-cores counts at most */
#define NODES_MAX  16 /* NUMA nodes a row's placement records at most */

/* A scenario at one server core count, and its results. */
struct row {
	const struct pw_bench_scenario *sc;
	bool selected, skipped;
	char note[NOTE_LEN]; /* why it was skipped */
	unsigned conns;
	unsigned cores; /* the --server-cores count asked (0: auto) */
	int srv[PW_MAX_SHARDS], load[PW_MAX_SHARDS];
	unsigned nsrv, nload;
	/* The NUMA nodes of the server's and the load's CPUs, ascending
	 * (none when the topology is unknown), and the largest distance
	 * between one of each (-1: unknown). */
	int srv_nodes[NODES_MAX], load_nodes[NODES_MAX];
	unsigned nsrv_nodes, nload_nodes;
	int distance;
	bool smt;	  /* a server CPU and a load CPU share a core */
	int smt_a, smt_b; /* that pair */
	struct cell cell[NCOLS];
};

/* A bench: its settings, the machine, and a row per scenario and server
 * core count. */
struct bench {
	uint64_t duration, warmup, conns, rate, rounds;
	const char *json, *plot, *peer_bin;
	const char *scaling_plot;    /* --scaling-plot */
	unsigned counts[COUNTS_MAX]; /* --server-cores, ascending */
	unsigned ncounts;
	/* --server-cpus/--server-node and --load-cpus/--load-node */
	int srv_pool[PW_MAX_SHARDS], load_pool[PW_MAX_SHARDS];
	unsigned nsrv_pool, nload_pool; /* 0: not given */
	const char *hgrm, *hdr_log;	/* folders, or NULL */
	bool peers;
	int cpus[PW_MAX_SHARDS];
	unsigned ncpus;
	char self[PATH_MAX];	  /* this executable */
	char peer_path[PATH_MAX]; /* the default --peer-bin */
	char tmp[PATH_MAX];	  /* the scratch folder; "" until made */
	bool signals;		  /* pw_cli_signals_init() done */
	bool peer_ok;		  /* --peers and the peer has an http mode */
	char peer_note[NOTE_LEN];
	char *peer_sched[2]; /* the peer's scheduler scenarios' JSON lines */
	bool stop;
	bool failed;
	struct pw_machine machine; /* read before and after the rows */
	unsigned nrows;
	struct row *rows; /* scenario by scenario, counts ascending */
};

/* A child's command line: SELF SUBCOMMAND FLAGS --listen ... */
struct args {
	char words[512];
	char *argv[ARGV_MAX];
	int argc;
	char listen[32], upstream[32], shards[16], cpus[256];
};

/* ---- bench_scenarios.c ---- */

/**
 * pw_bench_args_pinwheel - the command line of a pinwheel server:
 * @self, the words of @server, --listen 127.0.0.1:@port, --upstream
 * 127.0.0.1:@upstream when @upstream > 0, --shards @ncpus unless @server
 * gives it, --cpus @cpus, --sched for column @col.
 * Return: 0; -EINVAL when @server has no word or too many.
 * Context: the main thread.
 */
int pw_bench_args_pinwheel(struct args *a, const char *self, const char *server,
			   int port, int upstream, const int *cpus,
			   unsigned ncpus, int col);

/**
 * pw_bench_args_peer - the command line of the Tokio peer @bin: the words
 * of @peer, --listen 127.0.0.1:@port, --workers @workers.
 * Return: 0; -EINVAL when @peer has no word or too many.
 * Context: the main thread.
 */
int pw_bench_args_peer(struct args *a, const char *bin, const char *peer,
		       int port, unsigned workers);

/*
 * pw_bench_args_text - @a's words after argv[0], blank-separated, into
 * @buf (cut to @len).
 * Context: the main thread.
 */
void pw_bench_args_text(const struct args *a, char *buf, size_t len);

/*
 * pw_bench_cpus_text - @cpus as "0,2,3" into @buf (cut to @len).
 * Context: the main thread.
 */
void pw_bench_cpus_text(const int *cpus, unsigned n, char *buf, size_t len);

/*
 * pw_bench_row_label - row @r's name in the table and messages: the
 * scenario's, with " cK" (K server cores) when more than one count runs.
 * Context: the main thread.
 */
void pw_bench_row_label(const struct bench *b, const struct row *r, char *buf,
			size_t len);

/* ---- bench_run.c ---- */

/**
 * pw_bench_spawn - start @argv as a child pinned to @cpus (none: as this
 * process), its output to the file @log (NULL: /dev/null), with the
 * default signal mask and dispositions. The child is killed if the
 * calling thread ends first.
 * Return: the child's pid; -1 when fork failed (errno set).
 * Context: the main thread.
 */
pid_t pw_bench_spawn(char *const argv[], const int *cpus, unsigned ncpus,
		     const char *log);

/*
 * pw_bench_wait_exit - wait for child @pid; its exit status, or -1 when
 * it was killed.
 * Context: the main thread.
 */
int pw_bench_wait_exit(pid_t pid);

/*
 * pw_bench_first_line - the first line of the file @path (empty when it
 * cannot be read), for a message.
 * Context: the main thread.
 */
void pw_bench_first_line(const char *path, char *buf, size_t len);

/*
 * pw_bench_has_command - whether `BIN SUBCOMMAND --help` exits 0, the
 * subcommand being @spec's first word.
 * Context: the main thread.
 */
bool pw_bench_has_command(const char *bin, const char *spec);

/*
 * pw_bench_run_row - every round of row @r: each used column in turn,
 * per round. Sets b->stop on SIGINT/SIGTERM, b->failed when a
 * measurement failed.
 * Context: the main thread.
 */
void pw_bench_run_row(struct bench *b, struct row *r);

/*
 * pw_bench_peer_sched - run the Tokio peer's scheduler scenario @name on
 * every CPU; its JSON line (malloc'd), or NULL when it failed.
 * Context: the main thread.
 */
char *pw_bench_peer_sched(const struct bench *b, const char *name);

/* ---- bench_hdr.c ---- */

/*
 * pw_bench_hdr_check - make the folder @dir given to @flag (--hgrm or
 * --hdr-log) and check it can be written in.
 * Return: 0, or 2 after a message.
 * Context: the main thread.
 */
int pw_bench_hdr_check(const char *dir, const char *flag);

/*
 * pw_bench_hdr_interval - one measured second of row @r under column
 * @col, from the load's interval hook: appended to the cell's interval
 * log (opened at its first interval) when --hdr-log is set. An error is
 * kept for pw_bench_hdr_finish() to report.
 * Context: the main thread (the thread in pw_load_run()).
 */
void pw_bench_hdr_interval(const struct bench *b, struct row *r, int col,
			   const struct pw_load_interval *iv);

/*
 * pw_bench_hdr_finish - write each cell's .hgrm (--hgrm) and close its
 * interval log (--hdr-log), naming each file written.
 * Return: 0, or 1 when a file could not be written (after a message).
 * Context: the main thread.
 */
int pw_bench_hdr_finish(struct bench *b);

/*
 * pw_bench_hdr_abandon - close the interval logs still open (a bench
 * that stops early keeps what was logged).
 * Context: the main thread.
 */
void pw_bench_hdr_abandon(struct bench *b);

/* ---- bench_report.c ---- */

/*
 * pw_bench_print_table - the medians of every selected row with their
 * spread, the steal/shard ratios with their verdicts, and the errors by
 * cause, as a table on @f.
 * Context: the main thread.
 */
void pw_bench_print_table(const struct bench *b, FILE *f);

/*
 * pw_bench_causes_text - the nonzero causes of @e as "timeout 64, reset
 * 2" into @buf (cut to @len); "" when there is none.
 * Context: the main thread.
 */
void pw_bench_causes_text(const struct pw_load_errors *e, char *buf,
			  size_t len);

/*
 * pw_bench_warnings - the warnings of a finished bench (the machine's,
 * SMT siblings per row, noisy cells), one line each into @out[0..@max).
 * Return: the number written.
 * Context: the main thread.
 */
unsigned pw_bench_warnings(const struct bench *b,
			   char (*out)[PW_MACHINE_WARN_LEN], unsigned max);

/*
 * pw_bench_print_warnings - @b's warnings on @f under a heading, or
 * nothing when there is none.
 * Context: the main thread.
 */
void pw_bench_print_warnings(const struct bench *b, FILE *f);

/**
 * pw_bench_write_json - the bench's settings and every selected row's
 * results (medians, rounds, merged latency) as one JSON object on @f.
 * Return: 0; -EIO when writing failed.
 * Context: the main thread.
 */
int pw_bench_write_json(const struct bench *b, FILE *f);

/**
 * pw_bench_write_plot - draw the latency curves, one panel per scenario
 * that ran, into b->plot with gnuplot.
 * Return: 0 drawn; 1 nothing to draw; -1 with @why set.
 * Context: the main thread.
 */
int pw_bench_write_plot(const struct bench *b, char *why, size_t len);

/**
 * pw_bench_write_scaling - draw throughput and p99 against server cores,
 * each scheduler's curve side by side per scenario with the steal/shard
 * ratio at each point, into b->scaling_plot with gnuplot.
 * Return: 0 drawn; 1 fewer than two core counts ran; -1 with @why set.
 * Context: the main thread.
 */
int pw_bench_write_scaling(const struct bench *b, char *why, size_t len);

/*
 * pw_bench_make_parent - mkdir -p of the folder holding @path.
 * Context: the main thread.
 */
void pw_bench_make_parent(const char *path);

#endif /* PW_APPS_BENCH_INT_H */
