/* SPDX-License-Identifier: MIT */
/*
 * bench_run.c - running `pinwheel bench`'s measurements: child
 * processes, one measurement of a scenario under one column, and the
 * rounds of a row.
 *
 * A measurement starts the scenario's backend, if any, on the load CPUs,
 * then the server as a child process (this executable, a subcommand; or
 * the Tokio peer) pinned to its CPUs, and waits until it accepts
 * connections. It loads the server from an in-process runtime pinned to
 * the load CPUs (pw_load_run), reads the server's utime + stime from
 * /proc/PID/stat when the warm-up ends and when the run is over, and
 * stops the children (SIGTERM, then SIGKILL after 10 s). A server that
 * exits with status 2 at start (a flag it does not know) skips the
 * scenario. Rounds alternate the columns, and their order: shard, steal,
 * tokio in even rounds (counting from 0), tokio, steal, shard in odd ones.
 *
 * Every child is killed by the kernel if this thread ends first
 * (PR_SET_PDEATHSIG), so a bench that is killed leaves no server behind.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pinwheel.h"
#include "apps/bench.h"
#include "apps/bench_int.h"
#include "apps/cli.h"
#include "apps/load.h"

/* How a measurement ended. */
enum { M_OK, M_SKIP, M_FAIL, M_STOP };

/* ---- child processes ------------------------------------------------- */

static void nap_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000),
			       (long)(ms % 1000) * 1000000l };
	nanosleep(&ts, NULL);
}

/* A free loopback TCP port (the kernel's pick; a race with another
 * program binding it meanwhile shows as a server that fails to start). */
static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int port = -1;

	if (fd < 0)
		return -1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &len))
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static bool port_accepts(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	return ok;
}

/* In the child: pin to @cpus, stdin from /dev/null, stdout and stderr
 * to @log (NULL: /dev/null). */
static void child_setup(const int *cpus, unsigned ncpus, const char *log)
{
	sigset_t none;
	int in, out;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (cpus && ncpus) {
		cpu_set_t set;

		CPU_ZERO(&set);
		for (unsigned i = 0; i < ncpus; i++)
			CPU_SET(cpus[i], &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	in = open("/dev/null", O_RDONLY);
	out = log ? open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600) :
		    open("/dev/null", O_WRONLY);
	if (in >= 0)
		dup2(in, 0);
	if (out >= 0) {
		dup2(out, 1);
		dup2(out, 2);
	}
}

pid_t pw_bench_spawn(char *const argv[], const int *cpus, unsigned ncpus,
		     const char *log)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid)
		return pid;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(127);
	child_setup(cpus, ncpus, log);
	execv(argv[0], argv);
	_exit(127);
}

int pw_bench_wait_exit(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Asks a server to stop (SIGTERM), then kills it after 10 s. */
static void stop_child(pid_t pid)
{
	int st;

	kill(pid, SIGTERM);
	for (int i = 0; i < 1000; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return;
		nap_ms(10);
	}
	kill(pid, SIGKILL);
	pw_bench_wait_exit(pid);
}

void pw_bench_first_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

/* The last line of the file @path that is not empty, into @buf (empty
 * when it cannot be read). */
static void last_line(const char *path, char *buf, size_t len)
{
	char line[NOTE_LEN];
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0])
			snprintf(buf, len, "%s", line);
	}
	fclose(f);
}

/*
 * Waits until the server on @port accepts, or exits. Return 0 ready;
 * 1 exited with *@status (-1: killed); -ETIMEDOUT after 10 s; -EINTR
 * when a stop was asked for.
 */
static int wait_ready(pid_t pid, int port, int *status)
{
	for (int i = 0; i < 1000; i++) {
		int st;

		if (waitpid(pid, &st, WNOHANG) == pid) {
			*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
			return 1;
		}
		if (port_accepts(port)) {
			/* Let every shard's listener come up. */
			nap_ms(100);
			return 0;
		}
		if (pw_cli_wait_stop(10 * (int64_t)PW_NSEC_PER_MSEC) ==
		    PW_CLI_STOP)
			return -EINTR;
	}
	return -ETIMEDOUT;
}

bool pw_bench_has_command(const char *bin, const char *spec)
{
	char word[64], *argv[4];
	size_t len;
	pid_t pid;

	spec += strspn(spec, " \t");
	len = strcspn(spec, " \t");
	if (!len || len >= sizeof(word))
		return false;
	memcpy(word, spec, len);
	word[len] = '\0';
	argv[0] = (char *)bin;
	argv[1] = word;
	argv[2] = "--help";
	argv[3] = NULL;
	pid = pw_bench_spawn(argv, NULL, 0, NULL);
	return pid >= 0 && pw_bench_wait_exit(pid) == 0;
}

int pw_bench_proc_cpu_ns(pid_t pid, uint64_t *ns)
{
	char path[64], line[1024];
	unsigned long long ut, st;
	long tck = sysconf(_SC_CLK_TCK);
	FILE *f;

	if (!ns)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -ENOENT;
	size_t got = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[got] = '\0';
	/* The command name may hold blanks and parentheses: skip to the
	 * last ')'; then come state (field 3) ... utime (14), stime (15). */
	char *p = strrchr(line, ')');
	if (!p || tck <= 0 ||
	    sscanf(p + 1,
		   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
		   &ut, &st) != 2)
		return -EIO;
	*ns = (uint64_t)(ut + st) * (1000000000ull / (uint64_t)tck);
	return 0;
}

/* ---- one measurement --------------------------------------------------- */

/*
 * Start @a as a child on @cpus, its output to @log, and wait until it
 * listens on @port. @who names it in a note.
 * Return: M_OK with *@pid running; M_STOP; M_SKIP (it exited with status
 * 2: a flag it does not know) or M_FAIL, with @note set and the child
 * gone.
 */
static int start_child(const struct args *a, const char *who, const int *cpus,
		       unsigned n, int port, const char *log, pid_t *pid,
		       char *note)
{
	char line[200], text[400];
	int st = 0, rc;

	pw_bench_args_text(a, text, sizeof(text));
	*pid = pw_bench_spawn(a->argv, cpus, n, log);
	if (*pid < 0) {
		snprintf(note, NOTE_LEN, "fork: %s", strerror(errno));
		return M_FAIL;
	}
	rc = wait_ready(*pid, port, &st);
	if (!rc)
		return M_OK;
	if (rc <= 0)
		stop_child(*pid);
	if (rc == -EINTR)
		return M_STOP;
	pw_bench_first_line(log, line, sizeof(line));
	if (rc > 0 && st == 2) {
		snprintf(note, NOTE_LEN,
			 "%s: a flag is not in this build (exit 2: %s)", who,
			 line);
		return M_SKIP;
	}
	snprintf(note, NOTE_LEN, "`%.120s` %s: %.100s", text,
		 rc > 0 ? "exited at start" : "did not listen", line);
	return M_FAIL;
}

/* The backend of row @r, if it has one and column @col is pinwheel's:
 * *@bpid and *@bport, else -1. Return: as start_child(). */
static int start_backend(const struct bench *b, const struct row *r, int col,
			 pid_t *bpid, int *bport, char *note)
{
	char log[PATH_MAX + 16], why[NOTE_LEN];
	struct args ba;
	int rc;

	*bpid = -1;
	*bport = -1;
	if (!r->sc->backend || col == COL_TOKIO)
		return M_OK;
	*bport = free_port();
	if (*bport < 0 ||
	    pw_bench_args_pinwheel(&ba, b->self, r->sc->backend, *bport, -1,
				   r->load, r->nload, COL_SHARD)) {
		snprintf(note, NOTE_LEN, "bad backend '%s' or no free port",
			 r->sc->backend);
		return M_FAIL;
	}
	snprintf(log, sizeof(log), "%s/backend.log", b->tmp);
	rc = start_child(&ba, "the backend", r->load, r->nload, *bport, log,
			 bpid, note);
	if (rc == M_OK || rc == M_STOP)
		return rc;
	snprintf(why, sizeof(why), "%s", note);
	snprintf(note, NOTE_LEN, "the backend did not start: %.200s", why);
	return M_FAIL;
}

/* The server of row @r under column @col on @port, in front of @bport
 * (-1: none). Return: as start_child(). */
static int start_server(const struct bench *b, const struct row *r, int col,
			int port, int bport, pid_t *pid, char *note)
{
	char log[PATH_MAX + 16], who[128];
	struct args sa;
	int rc;

	if (col == COL_TOKIO)
		rc = pw_bench_args_peer(&sa, b->peer_bin, r->sc->peer, port,
					r->nsrv);
	else
		rc = pw_bench_args_pinwheel(&sa, b->self, r->sc->server, port,
					    bport, r->srv, r->nsrv, col);
	if (rc) {
		snprintf(note, NOTE_LEN, "bad server '%s'",
			 col == COL_TOKIO ? r->sc->peer : r->sc->server);
		return M_FAIL;
	}
	snprintf(log, sizeof(log), "%s/server.log", b->tmp);
	snprintf(who, sizeof(who), "%s %s",
		 col == COL_TOKIO ? "the Tokio peer" : "pinwheel",
		 col == COL_TOKIO ? r->sc->peer : r->sc->server);
	return start_child(&sa, who, r->srv, r->nsrv, port, log, pid, note);
}

/* The load's wait hook: notes the server's CPU time when the warm-up
 * ends, and stops the run on SIGINT/SIGTERM. */
struct hook {
	const struct bench *b;
	struct row *r;
	int col;
	pid_t pid;
	uint64_t mark; /* when the warm-up ends */
	bool marked;
	uint64_t cpu0, t0;
	bool cpu_ok;
	bool stop;
};

static void hook_mark(struct hook *h)
{
	h->marked = true;
	h->t0 = pw_cli_mono_ns();
	h->cpu_ok = !pw_bench_proc_cpu_ns(h->pid, &h->cpu0);
}

static bool hook_wait(void *arg, uint64_t ns)
{
	struct hook *h = arg;
	uint64_t now = pw_cli_mono_ns();
	int rc;

	if (!h->marked && h->mark > now && h->mark - now < ns)
		ns = h->mark - now;
	rc = pw_cli_wait_stop((int64_t)ns);
	if (!h->marked && pw_cli_mono_ns() >= h->mark)
		hook_mark(h);
	if (rc == PW_CLI_STOP) {
		h->stop = true;
		return true;
	}
	return false;
}

/* @m from a run's results @res, the server's CPU time since the mark
 * (@cpu1 at @t1; unknown unless @cpu_ok); its latency into @c's curve. */
static void record(struct meas *m, const struct pw_load_result *res,
		   const struct hook *h, bool cpu_ok, uint64_t cpu1,
		   uint64_t t1, struct cell *c)
{
	m->rps = res->throughput;
	m->requests = res->requests;
	m->errors = res->errors;
	m->err = res->err;
	m->p50 = (double)pw_hist_percentile(&res->latency, 50) / 1e3;
	m->p99 = (double)pw_hist_percentile(&res->latency, 99) / 1e3;
	m->p999 = (double)pw_hist_percentile(&res->latency, 99.9) / 1e3;
	m->elapsed_s = (double)(t1 - h->t0) / 1e9;
	m->cpu_s = cpu_ok ? (double)(cpu1 - h->cpu0) / 1e9 : -1;
	m->cpu_us = cpu_ok ? (double)(cpu1 - h->cpu0) / 1e3 /
				     (double)res->requests :
			     -1;
	if (c->have_hist)
		pw_hist_merge(&c->hist, &res->latency);
}

/* The load settings of a run of row @r against @port. */
/* The load's interval hook: a measured second for the cell's log. */
static void hook_interval(void *arg, const struct pw_load_interval *iv)
{
	struct hook *h = arg;

	pw_bench_hdr_interval(h->b, h->r, h->col, iv);
}

static void load_config(const struct bench *b, const struct row *r, int port,
			struct hook *h, struct pw_load_config *lc)
{
	char at[32];

	pw_load_config_init(lc);
	snprintf(at, sizeof(at), "127.0.0.1:%d", port);
	pw_net_addr_parse(&lc->target, at);
	lc->conns = r->conns;
	lc->rate = b->rate;
	lc->duration_ns = b->duration;
	lc->warmup_ns = b->warmup;
	lc->wait = hook_wait;
	if (b->hdr_log)
		lc->interval = hook_interval;
	lc->arg = h;
}

/* Load the server @pid on @port from a runtime on the load CPUs of @r.
 * Return: M_OK with @m set, M_STOP, or M_FAIL with @note set. */
static int load_server(const struct bench *b, struct row *r, int col, int port,
		       pid_t pid, struct meas *m, char *note)
{
	struct pw_config cfg;
	struct pw_runtime *rt;
	struct pw_load_config lc;
	struct pw_load_result res;
	struct hook h = { .b = b, .r = r, .col = col, .pid = pid };
	uint64_t cpu1 = 0, t1;
	bool cpu_ok;
	int rc, st, ret = M_OK;

	pw_config_init(&cfg);
	cfg.shards = r->nload;
	cfg.cpus = r->load;
	cfg.tick_ns = 10 * PW_NSEC_PER_USEC;
	pw_cli_sched_apply(&cfg, PW_CLI_SCHED_SHARD);
	rc = pw_runtime_create(&rt, &cfg);
	if (rc) {
		snprintf(note, NOTE_LEN, "load runtime: %s",
			 pw_strerror_setup(rc));
		return M_FAIL;
	}
	load_config(b, r, port, &h, &lc);
	h.mark = pw_cli_mono_ns() + b->warmup;
	if (!b->warmup)
		hook_mark(&h);
	rc = pw_load_run(rt, &lc, &res);
	t1 = pw_cli_mono_ns();
	cpu_ok = h.cpu_ok && !pw_bench_proc_cpu_ns(pid, &cpu1);
	pw_runtime_destroy(rt);
	if (rc) {
		snprintf(note, NOTE_LEN, "load: %s", strerror(-rc));
		return M_FAIL;
	}
	if (h.stop) {
		ret = M_STOP;
	} else if (!res.requests) {
		snprintf(note, NOTE_LEN,
			 "no answer in the measured time (%" PRIu64
			 " errors)%s",
			 res.errors,
			 waitpid(pid, &st, WNOHANG) == pid ?
				 "; the server exited" :
				 "");
		ret = M_FAIL;
	} else {
		record(m, &res, &h, cpu_ok, cpu1, t1, &r->cell[col]);
	}
	pw_load_result_destroy(&res);
	return ret;
}

/* One measurement of row @r under column @col: M_OK with @m set, or
 * M_SKIP, M_FAIL (@note says why) or M_STOP. */
static int measure(const struct bench *b, struct row *r, int col,
		   struct meas *m, char *note)
{
	int port = free_port(), bport, ret;
	pid_t pid, bpid;

	if (port < 0) {
		snprintf(note, NOTE_LEN, "no free port: %s", strerror(errno));
		return M_FAIL;
	}
	ret = start_backend(b, r, col, &bpid, &bport, note);
	if (ret != M_OK)
		return ret;
	ret = start_server(b, r, col, port, bport, &pid, note);
	if (ret == M_OK) {
		struct pw_machine_ticks t0, t1;
		bool ticks = !pw_machine_read_stat(PW_MACHINE_STAT, &t0);

		ret = load_server(b, r, col, port, pid, m, note);
		m->steal_pct =
			ticks && !pw_machine_read_stat(PW_MACHINE_STAT, &t1) ?
				pw_machine_steal_pct(&t0, &t1) :
				-1;
		stop_child(pid);
		/* A round with errors keeps the server's own account. */
		if (ret == M_OK && m->errors) {
			char log[PATH_MAX + 16];

			snprintf(log, sizeof(log), "%s/server.log", b->tmp);
			last_line(log, m->server_log, sizeof(m->server_log));
		}
	}
	if (bpid > 0)
		stop_child(bpid);
	return ret;
}

/* ---- rounds ------------------------------------------------------------ */

static void print_meas(int col, unsigned round, uint64_t rounds,
		       const struct meas *m)
{
	printf("  round %u/%" PRIu64 " %-5s: %.1f req/s, p50 %.1f us, "
	       "p99 %.1f us, p99.9 %.1f us, ",
	       round + 1, rounds, pw_bench_col_name[col], m->rps, m->p50,
	       m->p99, m->p999);
	if (m->cpu_us >= 0)
		printf("%.2f us CPU/request, ", m->cpu_us);
	else
		printf("CPU time unknown, ");
	printf("%" PRIu64 " errors", m->errors);
	if (m->errors) {
		char why[128];

		pw_bench_causes_text(&m->err, why, sizeof(why));
		printf(" (%s)", why);
	}
	if (m->steal_pct > 1)
		printf(", VM steal %.1f%%", m->steal_pct);
	putchar('\n');
	if (m->server_log[0])
		printf("    server: %s\n", m->server_log);
	fflush(stdout);
}

/* Whether row @r's server and backend subcommands are built; if not the
 * row is skipped with a note. */
static bool row_runnable(const struct bench *b, struct row *r)
{
	char sub[64];

	if (pw_bench_has_command(b->self, r->sc->server) &&
	    (!r->sc->backend || pw_bench_has_command(b->self, r->sc->backend)))
		return true;
	snprintf(sub, sizeof(sub), "%.*s", (int)strcspn(r->sc->server, " \t"),
		 r->sc->server);
	r->skipped = true;
	snprintf(r->note, NOTE_LEN, "pinwheel %s is not built", sub);
	printf("  skipped: %s\n", r->note);
	return false;
}

/* One measurement of column @c in round @k of row @r, @slot-th in the
 * round, recorded.
 * Return: false when the row must end (skipped, or a stop). */
static bool run_cell(struct bench *b, struct row *r, int c, unsigned k,
		     unsigned slot)
{
	struct cell *cl = &r->cell[c];
	struct meas m = { .round = k, .slot = slot };
	char note[NOTE_LEN] = "";
	int rc = measure(b, r, c, &m, note);

	if (rc == M_OK) {
		cl->m[cl->n++] = m;
		print_meas(c, k, b->rounds, &m);
		return true;
	}
	if (rc == M_STOP) {
		b->stop = true;
		return false;
	}
	if (rc == M_SKIP && c != COL_TOKIO) {
		r->skipped = true;
		snprintf(r->note, NOTE_LEN, "%s", note);
		printf("  skipped: %s\n", note);
		return false;
	}
	snprintf(cl->note, NOTE_LEN, "%s", note);
	if (rc == M_SKIP) {
		cl->skipped = true;
		printf("  %s skipped: %s\n", pw_bench_col_name[c], note);
	} else {
		cl->failed = true;
		b->failed = true;
		printf("  round %u %s failed: %s\n", k + 1,
		       pw_bench_col_name[c], note);
	}
	return true;
}

/* Whether row @r's server and load use a CPU in common. */
static bool shares_cpus(const struct row *r)
{
	for (unsigned i = 0; i < r->nsrv; i++)
		for (unsigned j = 0; j < r->nload; j++)
			if (r->srv[i] == r->load[j])
				return true;
	return false;
}

void pw_bench_run_row(struct bench *b, struct row *r)
{
	char cs[128], cl[128];

	char label[64];

	pw_bench_row_label(b, r, label, sizeof(label));
	printf("\n%s: %s\n", label, r->sc->what);
	if (!row_runnable(b, r))
		return;
	pw_bench_cpus_text(r->srv, r->nsrv, cs, sizeof(cs));
	pw_bench_cpus_text(r->load, r->nload, cl, sizeof(cl));
	printf("  server on CPU %s, load (%u connections) on CPU %s%s\n", cs,
	       r->conns, cl,
	       shares_cpus(r) ?
		       ": they share cores, so the load generator's work "
		       "counts against the server's" :
		       "");
	if (r->nsrv_nodes && r->nload_nodes && r->distance > 10)
		printf("  server on NUMA node %d, load on node %d: distance "
		       "%d\n",
		       r->srv_nodes[0], r->load_nodes[0], r->distance);
	if (r->smt)
		printf("  warning: server CPU %d and load CPU %d are SMT "
		       "siblings: they share one core\n",
		       r->smt_a, r->smt_b);
	if (r->cell[COL_TOKIO].used && !b->peer_ok)
		r->cell[COL_TOKIO].skipped = true;
	for (unsigned k = 0; k < b->rounds && !b->stop; k++) {
		unsigned slot = 0;

		/* Odd rounds go backwards, so no column is always first. */
		for (int i = 0; i < NCOLS && !b->stop; i++) {
			int c = k % 2 ? NCOLS - 1 - i : i;

			if (r->cell[c].used && !r->cell[c].skipped &&
			    !run_cell(b, r, c, k, slot++))
				return;
		}
	}
}

char *pw_bench_peer_sched(const struct bench *b, const char *name)
{
	char out[PATH_MAX + 16], workers[16], *line = NULL;
	char *argv[] = { (char *)b->peer_bin, (char *)name, "--workers",
			 workers, NULL };
	size_t cap = 0;
	pid_t pid;
	FILE *f;

	snprintf(out, sizeof(out), "%s/peer.out", b->tmp);
	snprintf(workers, sizeof(workers), "%u", b->ncpus);
	pid = pw_bench_spawn(argv, b->cpus, b->ncpus, out);
	if (pid < 0 || pw_bench_wait_exit(pid))
		return NULL;
	f = fopen(out, "r");
	if (f) {
		while (getline(&line, &cap, f) > 0 && line[0] != '{')
			;
		fclose(f);
	}
	if (line && line[0] == '{') {
		line[strcspn(line, "\n")] = '\0';
		return line;
	}
	free(line);
	return NULL;
}
