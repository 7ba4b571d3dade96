/* SPDX-License-Identifier: MIT */
/*
 * bench.c - `pinwheel bench`: the same workloads under the shard and the
 * stealing scheduler, side by side (method: docs/benchmarking.md). This
 * file is the command: its flags, setting a bench up, and the one
 * cleanup every exit goes through.
 *
 * Setting up makes the scratch folder first (in $TMPDIR, else /tmp),
 * then everything that can fail: the rows' result arrays and latency
 * histograms, the signals. Whatever fails, bench_free() undoes what was
 * done, the scratch folder's files and the folder included. The
 * scenarios are in bench_scenarios.c, the measurements in bench_run.c,
 * the table, JSON and plot in bench_report.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "pinwheel.h"
#include "pinwheel/topo.h"
#include "apps/apps.h"
#include "apps/bench.h"
#include "apps/bench_int.h"
#include "apps/cli.h"
#include "apps/load.h"
#include "apps/machine.h"

/* The flags of `pinwheel bench`. */
static struct bench_flags {
	const char *scen, *json, *plot, *peer_bin, *hgrm, *hdr_log;
	const char *cores, *scaling_plot, *srv_cpus, *load_cpus;
	uint64_t duration, warmup, conns, rate, rounds;
	uint64_t srv_node, load_node; /* NODE_UNSET: not given */
	bool peers;
} F;

/* --server-node and --load-node when not given. */
#define NODE_UNSET UINT64_MAX

static const struct bench_flags bench_defaults = {
	.scen = "all",
	.cores = "1,all",
	.scaling_plot = "build/bench/scaling.png",
	.srv_node = NODE_UNSET,
	.load_node = NODE_UNSET,
	.json = "build/bench/results.json",
	.plot = "build/bench/latency.png",
	.duration = 11 * PW_NSEC_PER_SEC / 10,
	.warmup = 2 * PW_NSEC_PER_SEC / 5,
	.rounds = 7,
};

static const struct pw_cli_opt bench_opts[] = {
	{ "--scenarios", PW_CLI_STRING, &F.scen, 0, 0, "LIST",
	  "comma-separated scenarios, or all (the default)" },
	{ "--server-cores", PW_CLI_STRING, &F.cores, 0, 0, "LIST",
	  "server core counts, each scenario at each (1,2,all; default "
	  "1,all); auto: each scenario's own (make run)" },
	{ "--server-cpus", PW_CLI_STRING, &F.srv_cpus, 0, 0, "LIST",
	  "the server's CPUs (0-3,8), the first K at K cores" },
	{ "--load-cpus", PW_CLI_STRING, &F.load_cpus, 0, 0, "LIST",
	  "the load generator's CPUs (may overlap, with a warning)" },
	{ "--server-node", PW_CLI_UINT, &F.srv_node, 0, 4095, "N",
	  "the server on NUMA node N's CPUs" },
	{ "--load-node", PW_CLI_UINT, &F.load_node, 0, 4095, "N",
	  "the load generator on NUMA node N's CPUs" },
	{ "--duration", PW_CLI_DURATION, &F.duration, 10 * PW_NSEC_PER_MSEC,
	  3600 * PW_NSEC_PER_SEC, "D", "measured time per run (default 1.1s)" },
	{ "--warmup", PW_CLI_DURATION, &F.warmup, 0, 3600 * PW_NSEC_PER_SEC,
	  "D", "warm-up before each measured run (default 0.4s)" },
	{ "--conns", PW_CLI_UINT, &F.conns, 1, 65536, "N",
	  "connections in every scenario (default: the scenario's)" },
	{ "--rate", PW_CLI_UINT, &F.rate, 0, 1000000000ull, "R",
	  "open loop at R requests/s; 0: closed loop (default)" },
	{ "--rounds", PW_CLI_UINT, &F.rounds, 1, ROUNDS_MAX, "R",
	  "alternated runs per scheduler; medians, intervals (default 7)" },
	{ "--json", PW_CLI_STRING, &F.json, 0, 0, "FILE",
	  "results (default build/bench/results.json)" },
	{ "--plot", PW_CLI_STRING, &F.plot, 0, 0, "FILE",
	  "latency curves, PNG (default build/bench/latency.png)" },
	{ "--scaling-plot", PW_CLI_STRING, &F.scaling_plot, 0, 0, "FILE",
	  "throughput and p99 against server cores, PNG (default "
	  "build/bench/scaling.png)" },
	{ "--hgrm", PW_CLI_STRING, &F.hgrm, 0, 0, "DIR",
	  "each cell's latency as DIR/SCENARIO-SCHED.hgrm (HdrHistogram; "
	  "SCENARIO-cK-SCHED with several core counts)" },
	{ "--hdr-log", PW_CLI_STRING, &F.hdr_log, 0, 0, "DIR",
	  "interval logs, one second each: DIR/SCENARIO-SCHED.hlog" },
	{ "--peers", PW_CLI_BOOL, &F.peers, 0, 0, NULL,
	  "add a tokio column (bench/peers/tokio, make bench-peers)" },
	{ "--peer-bin", PW_CLI_STRING, &F.peer_bin, 0, 0, "FILE",
	  "the Tokio peer (default: bench/peers/tokio/target/release/"
	  "pinwheel-tokio-peer)" },
};

static const struct pw_cli_cmd bench_cmd = {
	.name = "pinwheel bench",
	.about = "Runs each scenario's server (this program, as a child) "
		 "under the shard and the\nstealing scheduler in turn, loads "
		 "it from an in-process generator on other\nCPUs, and prints "
		 "throughput, p50, p99, p99.9 and the server's CPU time "
		 "per\nrequest side by side: medians over alternated rounds "
		 "with their spread, and\nfor each steal/shard ratio a 95% "
		 "bootstrap interval and a verdict (5 rounds\nor more); "
		 "warns when the machine is too noisy to decide. The "
		 "defaults, 7\nrounds of 0.4s warm-up + 1.1s, keep every "
		 "scenario under both schedulers near\n2 minutes per core "
		 "count;\nfor "
		 "figures to quote use more rounds or a longer --duration."
		 "\nEach scenario runs at each --server-cores count (default 1 "
		 "and all CPUs, so\ntwice the time; make run passes auto, one "
		 "count per scenario) and, with two\ncounts or more, a second "
		 "PNG plots throughput and p99 against server cores.\nThe JSON "
		 "records each row's placement: CPUs, NUMA nodes and their "
		 "distance."
		 "\nWrites JSON and a PNG of the latency curves (gnuplot). "
		 "The scenarios are listed\nbelow the flags.",
	.opts = bench_opts,
	.nopts = sizeof(bench_opts) / sizeof(bench_opts[0]),
};

/* What a bench may leave in its scratch folder. */
static const char *const tmp_files[] = { "server.log",	"backend.log",
					 "gnuplot.log", "latency.gp",
					 "scaling.gp",	"peer.out" };

/* Undo bench_new(), whatever part of it was done: free @b, empty and
 * remove the scratch folder, close the signals. NULL is a no-op. */
static void bench_free(struct bench *b)
{
	char path[PATH_MAX + 16];

	if (!b)
		return;
	pw_bench_hdr_abandon(b);
	for (unsigned i = 0; i < b->nrows; i++)
		for (int c = 0; c < NCOLS; c++) {
			free(b->rows[i].cell[c].m);
			if (b->rows[i].cell[c].have_hist)
				pw_hist_destroy(&b->rows[i].cell[c].hist);
		}
	free(b->rows);
	for (int i = 0; i < 2; i++)
		free(b->peer_sched[i]);
	if (b->tmp[0]) {
		for (size_t i = 0; i < sizeof(tmp_files) / sizeof(tmp_files[0]);
		     i++) {
			snprintf(path, sizeof(path), "%s/%s", b->tmp,
				 tmp_files[i]);
			unlink(path);
		}
		rmdir(b->tmp);
	}
	if (b->signals)
		pw_cli_signals_close();
	free(b);
}

/* Make the scratch folder, in $TMPDIR or /tmp. */
static int make_tmp(struct bench *b)
{
	const char *dir = getenv("TMPDIR");
	char tmp[PATH_MAX];

	if (!dir || !*dir)
		dir = "/tmp";
	if (snprintf(tmp, sizeof(tmp), "%s/pinwheel-bench.XXXXXX", dir) >=
	    (int)sizeof(tmp))
		return -ENAMETOOLONG;
	if (!mkdtemp(tmp))
		return -errno;
	memcpy(b->tmp, tmp, sizeof(tmp));
	return 0;
}

/* This executable, and the default Tokio peer beside its source tree
 * (SRC/BUILD/pinwheel -> SRC/bench/peers/tokio/...). */
static int find_self(struct bench *b)
{
	char dir[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", b->self, sizeof(b->self) - 1);

	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	b->self[n] = '\0';
	snprintf(dir, sizeof(dir), "%s", b->self);
	for (int up = 0; up < 2; up++) {
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
	}
	snprintf(b->peer_path, sizeof(b->peer_path),
		 "%.*s/bench/peers/tokio/target/release/pinwheel-tokio-peer",
		 PATH_MAX - 64, dir);
	b->peer_bin = F.peer_bin ? F.peer_bin : b->peer_path;
	return 0;
}

/* The CPUs this process may run on, ascending. */
static int find_cpus(struct bench *b)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	for (int c = 0; c < CPU_SETSIZE && b->ncpus < PW_MAX_SHARDS; c++)
		if (CPU_ISSET(c, &set))
			b->cpus[b->ncpus++] = c;
	return 0;
}

/* Add @node to the ascending @nodes[0..*n) unless there. */
static void add_node(int *nodes, unsigned *n, int node)
{
	unsigned i = 0;

	while (i < *n && nodes[i] < node)
		i++;
	if ((i < *n && nodes[i] == node) || *n == NODES_MAX)
		return;
	memmove(nodes + i + 1, nodes + i, (*n - i) * sizeof(*nodes));
	nodes[i] = node;
	(*n)++;
}

/* Row @r's NUMA nodes from the topology @t (NULL: unknown) and the
 * largest distance between a server node and a load node. */
static void row_nodes(struct row *r, const struct pw_topo *t)
{
	const struct pw_topo_pu *u;

	r->distance = -1;
	if (!t)
		return;
	for (unsigned i = 0; i < r->nsrv; i++)
		if ((u = pw_topo_find(t, r->srv[i])))
			add_node(r->srv_nodes, &r->nsrv_nodes, u->node);
	for (unsigned i = 0; i < r->nload; i++)
		if ((u = pw_topo_find(t, r->load[i])))
			add_node(r->load_nodes, &r->nload_nodes, u->node);
	for (unsigned i = 0; i < r->nsrv_nodes; i++)
		for (unsigned j = 0; j < r->nload_nodes; j++) {
			int d = pw_bench_node_distance(NULL, r->srv_nodes[i],
						       r->load_nodes[j]);
			if (d > r->distance)
				r->distance = d;
		}
}

/* Row @r: scenario @sc at @cores server cores, placed on the CPUs, a
 * result array and a latency histogram for every column that applies. */
static int make_row(struct bench *b, struct row *r,
		    const struct pw_bench_scenario *sc, unsigned cores,
		    const struct pw_topo *t)
{
	struct pw_bench_pools p = { .cpus = b->cpus, .n = b->ncpus };

	if (b->nsrv_pool) {
		p.srv = b->srv_pool;
		p.nsrv = b->nsrv_pool;
	}
	if (b->nload_pool) {
		p.load = b->load_pool;
		p.nload = b->nload_pool;
	}
	r->sc = sc;
	r->selected = true;
	r->cores = cores;
	r->conns = b->conns ? (unsigned)b->conns : r->sc->conns;
	if (pw_bench_place_cores(sc->place, &p, cores, r->srv, &r->nsrv,
				 r->load, &r->nload))
		return -ERANGE;
	row_nodes(r, t);
	r->smt = pw_machine_smt_shared(PW_MACHINE_SYSCPU, r->srv, r->nsrv,
				       r->load, r->nload, &r->smt_a,
				       &r->smt_b) == 1;
	for (int c = 0; c < NCOLS; c++) {
		struct cell *cl = &r->cell[c];

		cl->used = c != COL_TOKIO || (b->peers && r->sc->peer);
		if (!cl->used)
			continue;
		cl->m = calloc(b->rounds, sizeof(struct meas));
		if (!cl->m || pw_hist_init(&cl->hist, 0, PW_LOAD_HIST_DIGITS))
			return -ENOMEM;
		cl->have_hist = true;
	}
	if (r->cell[COL_TOKIO].used && !b->peer_ok)
		snprintf(r->cell[COL_TOKIO].note, NOTE_LEN, "%s", b->peer_note);
	return 0;
}

/* The rows: each scenario of @sel at each core count. */
static int make_rows(struct bench *b, const bool *sel, const struct pw_topo *t)
{
	unsigned nsel = 0;
	int err;

	for (unsigned i = 0; i < pw_bench_nscenarios; i++)
		nsel += sel[i];
	b->rows = calloc((size_t)nsel * b->ncounts, sizeof(struct row));
	if (!b->rows)
		return -ENOMEM;
	for (unsigned i = 0; i < pw_bench_nscenarios; i++)
		for (unsigned k = 0; sel[i] && k < b->ncounts; k++) {
			/* Counted first: bench_free() frees what it holds. */
			struct row *r = &b->rows[b->nrows++];

			err = make_row(b, r, &pw_bench_scenarios[i],
				       b->counts[k], t);
			if (err)
				return err;
		}
	return 0;
}

/* A placement flag @flag could not be used: say why. Returns 2. */
static int place_failed(const char *flag, const char *why)
{
	fprintf(stderr, "pinwheel bench: %s: %s\n", flag, why);
	return 2;
}

/* The CPUs of node @node (flag @flag) into @out, from @t. Return: their
 * number, or 0 after a message. */
static unsigned node_pool(const struct bench *b, const struct pw_topo *t,
			  uint64_t node, const char *flag, int *out)
{
	char why[128];
	int n;

	if (!t) {
		place_failed(flag, "the machine's topology is unknown");
		return 0;
	}
	n = pw_bench_node_cpus(t, (int)node, b->cpus, b->ncpus, out,
			       PW_MAX_SHARDS);
	if (n > 0)
		return (unsigned)n;
	snprintf(why, sizeof(why),
		 "node %" PRIu64 " has none of the CPUs this process may use "
		 "(see pinwheel topo)",
		 node);
	place_failed(flag, why);
	return 0;
}

/* One pool from --X-cpus @list or --X-node @node into @out. Return: 0
 * with *@n set (0: neither given), or 2 after a message. */
static int one_pool(const struct bench *b, const struct pw_topo *t,
		    const char *list, uint64_t node, const char *what, int *out,
		    unsigned *n)
{
	char flag[32], why[160];
	int got;

	*n = 0;
	if (list && node != NODE_UNSET) {
		snprintf(flag, sizeof(flag), "--%s-cpus", what);
		return place_failed(flag, "give a CPU list or a node, not "
					  "both");
	}
	if (node != NODE_UNSET) {
		snprintf(flag, sizeof(flag), "--%s-node", what);
		*n = node_pool(b, t, node, flag, out);
		return *n ? 0 : 2;
	}
	if (!list)
		return 0;
	snprintf(flag, sizeof(flag), "--%s-cpus", what);
	got = pw_bench_parse_cpus(list, b->cpus, b->ncpus, out, PW_MAX_SHARDS,
				  why, sizeof(why));
	if (got < 0)
		return place_failed(flag, why);
	*n = (unsigned)got;
	return 0;
}

/* The placement flags and --server-cores, checked against the allowed
 * CPUs. Return: 0, or 2 after a message. */
static int place_flags(struct bench *b, const struct pw_topo *t)
{
	char why[160];
	unsigned shared = 0;
	int n;

	if (one_pool(b, t, F.srv_cpus, F.srv_node, "server", b->srv_pool,
		     &b->nsrv_pool) ||
	    one_pool(b, t, F.load_cpus, F.load_node, "load", b->load_pool,
		     &b->nload_pool))
		return 2;
	n = pw_bench_parse_cores(F.cores,
				 b->nsrv_pool ? b->nsrv_pool : b->ncpus,
				 b->counts, COUNTS_MAX, why, sizeof(why));
	if (n < 0)
		return place_failed("--server-cores", why);
	b->ncounts = (unsigned)n;
	for (unsigned i = 0; i < b->nsrv_pool; i++)
		for (unsigned j = 0; j < b->nload_pool; j++)
			shared += b->srv_pool[i] == b->load_pool[j];
	if (shared)
		printf("pinwheel bench: warning: the server's and the load's "
		       "CPUs overlap (%u shared): the load generator's work "
		       "counts against the server's\n",
		       shared);
	return 0;
}

/* Whether the Tokio peer is there and has an http mode. */
static void check_peer(struct bench *b)
{
	if (!b->peers)
		return;
	if (access(b->peer_bin, X_OK)) {
		snprintf(b->peer_note, NOTE_LEN,
			 "%s is not built (make bench-peers)", b->peer_bin);
		return;
	}
	b->peer_ok = pw_bench_has_command(b->peer_bin, "http");
	if (!b->peer_ok)
		snprintf(b->peer_note, NOTE_LEN,
			 "the Tokio peer has no http mode");
}

/* A set-up step failed: say which (and @err, when not 0). Returns 1. */
static int setup_failed(const char *what, int err)
{
	if (err)
		fprintf(stderr, "pinwheel bench: %s: %s\n", what,
			strerror(-err));
	else
		fprintf(stderr, "pinwheel bench: %s\n", what);
	return 1;
}

/* Set up a bench of the flags and scenarios @sel into *@bp (set even on
 * error, for bench_free()). Return: 0; 2 after a message on a bad
 * placement flag; 1 after a message on any other failure. */
static int bench_new(struct bench **bp, const bool *sel)
{
	struct bench *b = calloc(1, sizeof(struct bench));
	struct pw_topo *t = NULL;
	int err;

	*bp = b;
	if (!b)
		return setup_failed("out of memory", 0);
	b->duration = F.duration;
	b->warmup = F.warmup;
	b->conns = F.conns;
	b->rate = F.rate;
	b->rounds = F.rounds;
	b->json = F.json;
	b->plot = F.plot;
	b->scaling_plot = F.scaling_plot;
	b->hgrm = F.hgrm;
	b->hdr_log = F.hdr_log;
	b->peers = F.peers;
	if ((err = make_tmp(b)))
		return setup_failed("mkdtemp", err);
	if ((err = find_self(b)))
		return setup_failed("/proc/self/exe", err);
	if ((err = find_cpus(b)))
		return setup_failed("sched_getaffinity", err);
	if (pw_topo_load(&t))
		t = NULL;
	err = place_flags(b, t);
	if (err) {
		pw_topo_free(t);
		return err;
	}
	if ((err = pw_cli_signals_init()))
		return setup_failed("signals", err);
	b->signals = true;
	signal(SIGPIPE, SIG_IGN);
	/* The load's shard threads inherit it: due sends within 1 us. */
	prctl(PR_SET_TIMERSLACK, 1000ul, 0ul, 0ul, 0ul);
	check_peer(b);
	err = make_rows(b, sel, t);
	pw_topo_free(t);
	if (err)
		return setup_failed("out of memory", 0);
	return 0;
}

/* The Tokio peer's own scheduler scenarios, after the rows. */
static void run_peer_sched(struct bench *b)
{
	static const char *const names[2] = { "skewed_mt",
					      "spawn_mt_throughput" };

	printf("\ntokio scheduler scenarios (%u workers on all CPUs; "
	       "compare with make bench's bm_spawn_run_*):\n",
	       b->ncpus);
	for (int i = 0; i < 2; i++) {
		b->peer_sched[i] = pw_bench_peer_sched(b, names[i]);
		printf("  %-20s %s\n", names[i],
		       b->peer_sched[i] ? b->peer_sched[i] : "failed");
	}
}

/* Write the JSON file, the HdrHistogram files and the plot. Return: 0,
 * or 1 when the JSON file or an HdrHistogram file
 * could not be written. */
static int write_outputs(struct bench *b)
{
	char why[NOTE_LEN];
	int status = 0, rc;
	FILE *f;

	pw_bench_make_parent(b->json);
	f = fopen(b->json, "w");
	rc = f ? pw_bench_write_json(b, f) : -errno;
	if (f && fclose(f))
		rc = -EIO;
	if (rc) {
		fprintf(stderr, "pinwheel bench: cannot write %s\n", b->json);
		status = 1;
	} else {
		printf("\nwrote %s\n", b->json);
	}
	status |= pw_bench_hdr_finish(b);
	pw_bench_make_parent(b->plot);
	rc = pw_bench_write_plot(b, why, sizeof(why));
	if (rc == 0)
		printf("wrote %s\n", b->plot);
	else if (rc == 1)
		printf("plot skipped: no scenario ran\n");
	else
		printf("plot skipped: %s\n", why);
	pw_bench_make_parent(b->scaling_plot);
	rc = pw_bench_write_scaling(b, why, sizeof(why));
	if (rc == 0)
		printf("wrote %s\n", b->scaling_plot);
	else if (rc == 1)
		printf("scaling plot skipped: fewer than two server core "
		       "counts ran\n");
	else
		printf("scaling plot skipped: %s\n", why);
	fflush(stdout);
	return status;
}

/* Read the machine's state and print it, with the warnings it calls for
 * before the run. */
static void print_machine(struct bench *b)
{
	const struct pw_machine *m = &b->machine;
	char w[4][PW_MACHINE_WARN_LEN];
	unsigned n;

	pw_machine_before(&b->machine, b->cpus, b->ncpus);
	if (m->load1 >= 0)
		printf("  machine: load average %.2f %.2f %.2f, ", m->load1,
		       m->load5, m->load15);
	else
		printf("  machine: load average unknown, ");
	printf("%u CPUs online, governor %s\n", m->online, m->governor);
	n = pw_machine_warnings(m, b->ncpus, w, 4);
	for (unsigned i = 0; i < n; i++)
		printf("  warning: %s\n", w[i]);
}

/* Run every selected row and report. Return: the exit status. */
static int bench_go(struct bench *b)
{
	int status;

	printf("pinwheel bench: %u CPU%s, %s loop, %.3g s measured after "
	       "%.3g s warm-up, %" PRIu64 " alternated round%s (medians)\n",
	       b->ncpus, b->ncpus == 1 ? "" : "s", b->rate ? "open" : "closed",
	       (double)b->duration / 1e9, (double)b->warmup / 1e9, b->rounds,
	       b->rounds == 1 ? "" : "s");
	if (b->rate)
		printf("  open loop: %" PRIu64 " requests/s per run\n",
		       b->rate);
	if (b->counts[0] != PW_BENCH_CORES_AUTO) {
		printf("  server cores:");
		for (unsigned i = 0; i < b->ncounts; i++)
			printf("%s %u", i ? "," : "", b->counts[i]);
		printf(" (each scenario at each)\n");
	}
	if (b->peers && !b->peer_ok)
		printf("  tokio column skipped: %s\n", b->peer_note);
	print_machine(b);
	for (unsigned i = 0; i < b->nrows && !b->stop; i++)
		pw_bench_run_row(b, &b->rows[i]);
	pw_machine_after(&b->machine);
	if (b->peers && !b->stop && !access(b->peer_bin, X_OK))
		run_peer_sched(b);
	pw_bench_print_table(b, stdout);
	pw_bench_print_warnings(b, stdout);
	status = b->failed ? 1 : 0;
	if (b->stop) {
		printf("\ninterrupted: the table holds the runs that "
		       "finished\n");
		status = 1;
	}
	return write_outputs(b) ? 1 : status;
}

/* The flags the parser cannot check alone; @sel gets the scenarios.
 * Return: 0, or 2 after a message. */
static int check_flags(bool *sel)
{
	char err[128];

	if (pw_bench_select(F.scen, sel, err, sizeof(err)) < 0) {
		fprintf(stderr, "pinwheel bench: --scenarios: %s\n", err);
		return 2;
	}
	if (!*F.json || !*F.plot || !*F.scaling_plot) {
		fprintf(stderr, "pinwheel bench: --json, --plot and "
				"--scaling-plot need a file name\n");
		return 2;
	}
	if (F.hgrm && pw_bench_hdr_check(F.hgrm, "--hgrm"))
		return 2;
	if (F.hdr_log && pw_bench_hdr_check(F.hdr_log, "--hdr-log"))
		return 2;
	return 0;
}

int pw_app_bench(int argc, char **argv)
{
	static struct pw_cli cli;
	bool sel[SCENARIOS_MAX];
	struct bench *b;
	int rc;

	F = bench_defaults;
	rc = pw_cli_parse(&cli, &bench_cmd, argc, argv);
	if (rc == PW_CLI_HELP) {
		printf("\nscenarios:\n");
		for (unsigned i = 0; i < pw_bench_nscenarios; i++)
			printf("  %-8s %s\n", pw_bench_scenarios[i].name,
			       pw_bench_scenarios[i].what);
		return 0;
	}
	if (rc)
		return pw_cli_status(rc);
	if ((rc = check_flags(sel)))
		return rc;
	rc = bench_new(&b, sel);
	if (!rc)
		rc = bench_go(b);
	bench_free(b);
	return rc;
}
