/* SPDX-License-Identifier: MIT */
/*
 * bench.c - `pinwheel bench`: the same workloads under the shard and the
 * stealing scheduler, side by side (method: docs/benchmarking.md).
 *
 * Per scenario and scheduler, a measurement starts the server as a child
 * process (this executable, a subcommand) pinned to its CPUs, waits until
 * it accepts connections, loads it from an in-process runtime pinned to
 * the other CPUs (pw_load_run), reads the server's utime + stime from
 * /proc/PID/stat when the warm-up ends and when the run is over, and
 * stops the server. Rounds alternate the schedulers; the report gives the
 * median of each figure over the rounds, and the plot draws every round's
 * latency samples merged.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pinwheel.h"
#include "apps/apps.h"
#include "apps/bench.h"
#include "apps/cli.h"
#include "apps/load.h"

/* ---- the scenarios ---------------------------------------------------- */

const struct pw_bench_scenario pw_bench_scenarios[] = {
	{
		.name = "http",
		.what = "keep-alive GETs, one shard per server core (1 of "
			"2), the load on its own cores so only the scheduler "
			"differs: its cost per request",
		.server = "http",
		.place = PW_BENCH_SPLIT,
		.conns = 64,
		.peer = "http",
	},
	{
		.name = "proxy",
		.what = "pinwheel proxy in front of pinwheel http (backend on "
			"the load cores, shard mode): the proxy's forwarding "
			"cost under each scheduler",
		.server = "proxy",
		.backend = "http",
		.place = PW_BENCH_SPLIT,
		.conns = 64,
	},
	{
		.name = "skewed",
		.what = "every connection on shard 0, 2000 iterations of CPU "
			"work per request in a child task: stealing can use "
			"the idle core (server on all cores; load shares them)",
		.server = "http --accept-shards 1 --work 2000",
		.place = PW_BENCH_ALL,
		.conns = 64,
		.peer = "http --work 2000",
	},
	{
		.name = "fanout",
		.what = "each request calls every shard and gathers the "
			"answers: sharding keeps calls on their cores (server "
			"on all cores; load shares them)",
		.server = "http --fanout",
		.place = PW_BENCH_ALL,
		.conns = 64,
	},
	{
		.name = "timers",
		.what = "512 connections, each resetting a 5 s timeout per "
			"request: timer churn on the server's cores",
		.server = "http --timeout 5s",
		.place = PW_BENCH_SPLIT,
		.conns = 512,
	},
};
const unsigned pw_bench_nscenarios =
	sizeof(pw_bench_scenarios) / sizeof(pw_bench_scenarios[0]);

static void set_err(char *err, size_t len, const char *fmt, const char *s)
{
	if (err && len)
		snprintf(err, len, fmt, s);
}

int pw_bench_select(const char *list, bool *sel, char *err, size_t errlen)
{
	int n = 0;

	if (!list || !sel) {
		set_err(err, errlen, "%s", "no list");
		return -EINVAL;
	}
	memset(sel, 0, pw_bench_nscenarios * sizeof(*sel));
	if (!strcmp(list, "all")) {
		for (unsigned i = 0; i < pw_bench_nscenarios; i++)
			sel[i] = true;
		return (int)pw_bench_nscenarios;
	}
	if (!*list) {
		set_err(err, errlen, "%s", "empty list");
		return -EINVAL;
	}
	for (const char *p = list;;) {
		size_t len = strcspn(p, ",");
		unsigned i;

		if (!len) {
			set_err(err, errlen, "%s", "empty name in the list");
			return -EINVAL;
		}
		for (i = 0; i < pw_bench_nscenarios; i++)
			if (strlen(pw_bench_scenarios[i].name) == len &&
			    !strncmp(pw_bench_scenarios[i].name, p, len))
				break;
		if (i == pw_bench_nscenarios) {
			char name[64];
			snprintf(name, sizeof(name), "%.*s",
				 (int)(len < 48 ? len : 48), p);
			set_err(err, errlen, "unknown scenario '%s'", name);
			return -EINVAL;
		}
		if (!sel[i])
			n++;
		sel[i] = true;
		if (!p[len])
			break;
		p += len + 1;
	}
	return n;
}

int pw_bench_split(const char *s, char *buf, size_t buflen, char **argv,
		   int max)
{
	size_t used = 0;
	int n = 0;

	if (!s || !buf || !argv || max < 1)
		return -EINVAL;
	while (*s) {
		size_t len;

		s += strspn(s, " \t");
		if (!*s)
			break;
		len = strcspn(s, " \t");
		if (n + 1 >= max || used + len + 1 > buflen)
			return -E2BIG;
		memcpy(buf + used, s, len);
		buf[used + len] = '\0';
		argv[n++] = buf + used;
		used += len + 1;
		s += len;
	}
	argv[n] = NULL;
	return n;
}

int pw_bench_place_cpus(enum pw_bench_place place, const int *cpus, unsigned n,
			int *srv, unsigned *nsrv, int *load, unsigned *nload)
{
	if (!cpus || !n || !srv || !nsrv || !load || !nload)
		return -EINVAL;
	if (place == PW_BENCH_ALL || n == 1) {
		memcpy(srv, cpus, n * sizeof(*cpus));
		memcpy(load, cpus, n * sizeof(*cpus));
		*nsrv = *nload = n;
		return 0;
	}
	*nsrv = n / 2;
	*nload = n - *nsrv;
	memcpy(srv, cpus, *nsrv * sizeof(*cpus));
	memcpy(load, cpus + *nsrv, *nload * sizeof(*cpus));
	return 0;
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

/* ---- the driver ------------------------------------------------------- */

enum { COL_SHARD, COL_STEAL, COL_TOKIO, NCOLS };
static const char *const col_name[NCOLS] = { "shard", "steal", "tokio" };

#define ROUNDS_MAX 99
#define ARGV_MAX   48
#define NOTE_LEN   256

/* One measurement. Times in microseconds. */
struct meas {
	double rps, p50, p99, p999, cpu_us; /* cpu_us < 0: unknown */
	double cpu_s, elapsed_s;
	uint64_t requests, errors;
};

/* A scenario under one scheduler (or the Tokio peer). */
struct cell {
	bool used;	      /* this column applies */
	unsigned n;	      /* measurements done */
	struct meas *m;	      /* one per round */
	struct pw_hist hist;  /* latency of every round, merged */
	bool have_hist;	      /* hist set up */
	bool skipped, failed; /* note says why */
	char note[NOTE_LEN];
};

struct row {
	const struct pw_bench_scenario *sc;
	bool selected, skipped;
	char note[NOTE_LEN]; /* why it was skipped */
	unsigned conns;
	int srv[PW_MAX_SHARDS], load[PW_MAX_SHARDS];
	unsigned nsrv, nload;
	struct cell cell[NCOLS];
};

struct bench {
	uint64_t duration, warmup, conns, rate, rounds;
	const char *json, *plot, *peer_bin;
	bool peers;
	int cpus[PW_MAX_SHARDS];
	unsigned ncpus;
	char self[PATH_MAX];
	char tmp[64];
	bool peer_ok; /* --peers and the peer has an http mode */
	char peer_note[NOTE_LEN];
	char *peer_sched[2]; /* the peer's scheduler scenarios' JSON lines */
	bool stop;
	bool failed;
	struct row rows[];
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * PW_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void nap_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000),
			       (long)(ms % 1000) * 1000000l };
	nanosleep(&ts, NULL);
}

static void cpus_text(const int *cpus, unsigned n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%d",
					 i ? "," : "", cpus[i]);
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

/* Starts @argv as a child pinned to @cpus, output to @log (NULL: none),
 * with the default signal mask and dispositions. The child is killed if
 * this thread (the main one) ends first, so a bench that is killed
 * leaves no server or backend behind. */
static pid_t spawn(char *const argv[], const int *cpus, unsigned ncpus,
		   const char *log)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid)
		return pid;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(127);
	sigset_t none;
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
	int in = open("/dev/null", O_RDONLY);
	int out = log ? open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600) :
			open("/dev/null", O_WRONLY);
	if (in >= 0)
		dup2(in, 0);
	if (out >= 0) {
		dup2(out, 1);
		dup2(out, 2);
	}
	execv(argv[0], argv);
	_exit(127);
}

/* The exit status of a child that ran to its end; -1 when killed. */
static int wait_exit(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs @argv to its end, quietly; its exit status. */
static int run_quiet(char *const argv[])
{
	pid_t pid = spawn(argv, NULL, 0, NULL);
	return pid < 0 ? -1 : wait_exit(pid);
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
	wait_exit(pid);
}

/* The first line of @path, for a message. */
static void first_line(const char *path, char *buf, size_t len)
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

/* argv for a pinwheel server: SELF SUBCOMMAND FLAGS --listen ... */
struct args {
	char words[512];
	char *argv[ARGV_MAX];
	int argc;
	char listen[32], upstream[32], shards[16], cpus[256];
};

static int args_pinwheel(struct args *a, const char *self, const char *server,
			 int port, int upstream, const int *cpus,
			 unsigned ncpus, int col)
{
	bool have_shards = false;
	int n;

	a->argv[0] = (char *)self;
	n = pw_bench_split(server, a->words, sizeof(a->words), a->argv + 1,
			   ARGV_MAX - 12);
	if (n < 1)
		return -EINVAL;
	a->argc = n + 1;
	for (int i = 1; i < a->argc; i++)
		if (!strcmp(a->argv[i], "--shards") ||
		    !strncmp(a->argv[i], "--shards=", 9))
			have_shards = true;
	snprintf(a->listen, sizeof(a->listen), "127.0.0.1:%d", port);
	snprintf(a->shards, sizeof(a->shards), "%u", ncpus);
	cpus_text(cpus, ncpus, a->cpus, sizeof(a->cpus));
	a->argv[a->argc++] = "--listen";
	a->argv[a->argc++] = a->listen;
	if (upstream > 0) {
		snprintf(a->upstream, sizeof(a->upstream), "127.0.0.1:%d",
			 upstream);
		a->argv[a->argc++] = "--upstream";
		a->argv[a->argc++] = a->upstream;
	}
	if (!have_shards) {
		a->argv[a->argc++] = "--shards";
		a->argv[a->argc++] = a->shards;
	}
	a->argv[a->argc++] = "--cpus";
	a->argv[a->argc++] = a->cpus;
	a->argv[a->argc++] = "--sched";
	a->argv[a->argc++] = (char *)col_name[col == COL_STEAL];
	a->argv[a->argc] = NULL;
	return 0;
}

static int args_peer(struct args *a, const char *bin, const char *peer,
		     int port, unsigned workers)
{
	int n;

	a->argv[0] = (char *)bin;
	n = pw_bench_split(peer, a->words, sizeof(a->words), a->argv + 1,
			   ARGV_MAX - 8);
	if (n < 1)
		return -EINVAL;
	a->argc = n + 1;
	snprintf(a->listen, sizeof(a->listen), "127.0.0.1:%d", port);
	snprintf(a->shards, sizeof(a->shards), "%u", workers);
	a->argv[a->argc++] = "--listen";
	a->argv[a->argc++] = a->listen;
	a->argv[a->argc++] = "--workers";
	a->argv[a->argc++] = a->shards;
	a->argv[a->argc] = NULL;
	return 0;
}

static void args_text(const struct args *a, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 1; i < a->argc && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 i > 1 ? " " : "", a->argv[i]);
}

/* The load's wait hook: notes the server's CPU time when the warm-up
 * ends, and stops the run on SIGINT/SIGTERM. */
struct hook {
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
	h->t0 = mono_ns();
	h->cpu_ok = !pw_bench_proc_cpu_ns(h->pid, &h->cpu0);
}

static bool hook_wait(void *arg, uint64_t ns)
{
	struct hook *h = arg;
	uint64_t now = mono_ns();

	if (!h->marked && h->mark > now && h->mark - now < ns)
		ns = h->mark - now;
	int rc = pw_cli_wait_stop((int64_t)ns);
	if (!h->marked && mono_ns() >= h->mark)
		hook_mark(h);
	if (rc == PW_CLI_STOP) {
		h->stop = true;
		return true;
	}
	return false;
}

enum { M_OK, M_SKIP, M_FAIL, M_STOP };

/* One measurement of row @r under column @col. */
static int measure(struct bench *b, struct row *r, int col, struct meas *m,
		   char *note)
{
	const struct pw_bench_scenario *sc = r->sc;
	struct args sa, ba;
	char log[96], blog[96], line[200], text[400];
	pid_t pid, bpid = -1;
	int port = free_port(), bport = -1, st = 0, rc, ret = M_FAIL;

	snprintf(log, sizeof(log), "%s/server.log", b->tmp);
	snprintf(blog, sizeof(blog), "%s/backend.log", b->tmp);
	if (port < 0) {
		snprintf(note, NOTE_LEN, "no free port: %s", strerror(errno));
		return M_FAIL;
	}
	if (sc->backend && col != COL_TOKIO) {
		bport = free_port();
		if (args_pinwheel(&ba, b->self, sc->backend, bport, -1, r->load,
				  r->nload, COL_SHARD)) {
			snprintf(note, NOTE_LEN, "bad backend '%s'",
				 sc->backend);
			return M_FAIL;
		}
		bpid = spawn(ba.argv, r->load, r->nload, blog);
		if (bpid < 0) {
			snprintf(note, NOTE_LEN, "fork: %s", strerror(errno));
			return M_FAIL;
		}
		rc = wait_ready(bpid, bport, &st);
		if (rc) {
			first_line(blog, line, sizeof(line));
			if (rc == -EINTR)
				ret = M_STOP;
			else
				snprintf(note, NOTE_LEN,
					 "the backend did not start (%s): %s",
					 rc > 0 ? "exited" : "timed out", line);
			if (rc <= 0)
				stop_child(bpid);
			return ret;
		}
	}
	if (col == COL_TOKIO)
		rc = args_peer(&sa, b->peer_bin, sc->peer, port, r->nsrv);
	else
		rc = args_pinwheel(&sa, b->self, sc->server, port, bport,
				   r->srv, r->nsrv, col);
	if (rc) {
		snprintf(note, NOTE_LEN, "bad server '%s'", sc->server);
		goto out_backend;
	}
	args_text(&sa, text, sizeof(text));
	pid = spawn(sa.argv, r->srv, r->nsrv, log);
	if (pid < 0) {
		snprintf(note, NOTE_LEN, "fork: %s", strerror(errno));
		goto out_backend;
	}
	rc = wait_ready(pid, port, &st);
	if (rc) {
		first_line(log, line, sizeof(line));
		if (rc == -EINTR) {
			ret = M_STOP;
		} else if (rc > 0 && st == 2) {
			/* A flag this build does not know. */
			snprintf(note, NOTE_LEN,
				 "%s %s: a flag is not in this build (exit 2: "
				 "%s)",
				 col == COL_TOKIO ? "the Tokio peer" :
						    "pinwheel",
				 col == COL_TOKIO ? sc->peer : sc->server,
				 line);
			ret = M_SKIP;
		} else {
			snprintf(note, NOTE_LEN, "`%s` %s: %s", text,
				 rc > 0 ? "exited at start" : "did not listen",
				 line);
		}
		if (rc <= 0)
			stop_child(pid);
		goto out_backend;
	}

	/* The load, from its own runtime on the load CPUs. */
	struct pw_config cfg;
	struct pw_runtime *rt;
	struct pw_load_config lc;
	struct pw_load_result res;
	struct hook h = { .pid = pid };

	pw_config_init(&cfg);
	cfg.shards = r->nload;
	cfg.cpus = r->load;
	cfg.tick_ns = 10 * PW_NSEC_PER_USEC;
	pw_cli_sched_apply(&cfg, PW_CLI_SCHED_SHARD);
	rc = pw_runtime_create(&rt, &cfg);
	if (rc) {
		snprintf(note, NOTE_LEN, "load runtime: %s",
			 pw_strerror_setup(rc));
		goto out_server;
	}
	pw_load_config_init(&lc);
	snprintf(line, sizeof(line), "127.0.0.1:%d", port);
	pw_net_addr_parse(&lc.target, line);
	lc.conns = r->conns;
	lc.rate = b->rate;
	lc.duration_ns = b->duration;
	lc.warmup_ns = b->warmup;
	lc.wait = hook_wait;
	lc.arg = &h;
	h.mark = mono_ns() + b->warmup;
	if (!b->warmup)
		hook_mark(&h);
	rc = pw_load_run(rt, &lc, &res);
	uint64_t cpu1 = 0, t1 = mono_ns();
	bool cpu_ok = h.cpu_ok && !pw_bench_proc_cpu_ns(pid, &cpu1);
	pw_runtime_destroy(rt);
	if (rc) {
		snprintf(note, NOTE_LEN, "load: %s", strerror(-rc));
		goto out_server;
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
	} else {
		m->rps = res.throughput;
		m->requests = res.requests;
		m->errors = res.errors;
		m->p50 = (double)pw_hist_percentile(&res.latency, 50) / 1e3;
		m->p99 = (double)pw_hist_percentile(&res.latency, 99) / 1e3;
		m->p999 = (double)pw_hist_percentile(&res.latency, 99.9) / 1e3;
		m->elapsed_s = (double)(t1 - h.t0) / 1e9;
		m->cpu_s = cpu_ok ? (double)(cpu1 - h.cpu0) / 1e9 : -1;
		m->cpu_us = cpu_ok ? (double)(cpu1 - h.cpu0) / 1e3 /
					     (double)res.requests :
				     -1;
		struct cell *c = &r->cell[col];
		if (!c->have_hist)
			c->have_hist =
				!pw_hist_init(&c->hist, 0, PW_LOAD_HIST_DIGITS);
		if (c->have_hist)
			pw_hist_merge(&c->hist, &res.latency);
		ret = M_OK;
	}
	pw_load_result_destroy(&res);
out_server:
	stop_child(pid);
out_backend:
	if (bpid > 0)
		stop_child(bpid);
	return ret;
}

/* Whether `pinwheel SUBCOMMAND --help` (or `PEER MODE --help`) works. */
static bool has_command(const char *bin, const char *spec)
{
	char word[64], *argv[4];
	size_t len;

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
	return run_quiet(argv) == 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of field @off (a double in struct meas) over @c's rounds;
 * negative values (unknown) are left out; -1 when none is known. */
static double median(const struct cell *c, size_t off)
{
	double v[ROUNDS_MAX];
	unsigned n = 0;

	for (unsigned i = 0; i < c->n; i++) {
		double x;
		memcpy(&x, (const char *)&c->m[i] + off, sizeof(x));
		if (x >= 0)
			v[n++] = x;
	}
	if (!n)
		return -1;
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MED(c, f) median((c), offsetof(struct meas, f))

static uint64_t total_errors(const struct cell *c)
{
	uint64_t e = 0;
	for (unsigned i = 0; i < c->n; i++)
		e += c->m[i].errors;
	return e;
}

/* ---- the report --------------------------------------------------------
 */

static void print_num(FILE *f, double v, int width, int prec)
{
	if (v < 0)
		fprintf(f, " %*s", width, "-");
	else
		fprintf(f, " %*.*f", width, prec, v);
}

static void print_ratio(FILE *f, double a, double b, int width)
{
	if (a < 0 || b <= 0)
		fprintf(f, " %*s", width, "-");
	else
		fprintf(f, " %*.2fx", width - 1, a / b);
}

static void print_table(const struct bench *b, FILE *f)
{
	fprintf(f, "\n%-9s %-12s %12s %10s %10s %10s %11s %8s\n", "scenario",
		"sched", "req/s", "p50 us", "p99 us", "p99.9 us", "cpu us/req",
		"errors");
	for (unsigned i = 0; i < pw_bench_nscenarios; i++) {
		const struct row *r = &b->rows[i];
		bool first = true;

		if (!r->selected)
			continue;
		if (r->skipped) {
			fprintf(f, "%-9s skipped: %s\n", r->sc->name, r->note);
			continue;
		}
		for (int c = 0; c < NCOLS; c++) {
			const struct cell *cl = &r->cell[c];

			if (!cl->used)
				continue;
			fprintf(f, "%-9s %-12s", first ? r->sc->name : "",
				col_name[c]);
			first = false;
			if (!cl->n) {
				fprintf(f, " %s: %s\n",
					cl->skipped ? "skipped" : "failed",
					cl->note[0] ? cl->note : "no result");
				continue;
			}
			print_num(f, MED(cl, rps), 12, 1);
			print_num(f, MED(cl, p50), 10, 1);
			print_num(f, MED(cl, p99), 10, 1);
			print_num(f, MED(cl, p999), 10, 1);
			print_num(f, MED(cl, cpu_us), 11, 2);
			fprintf(f, " %8" PRIu64 "\n", total_errors(cl));
		}
		const struct cell *a = &r->cell[COL_STEAL],
				  *s = &r->cell[COL_SHARD];
		if (a->n && s->n) {
			fprintf(f, "%-9s %-12s", "", "steal/shard");
			print_ratio(f, MED(a, rps), MED(s, rps), 12);
			print_ratio(f, MED(a, p50), MED(s, p50), 10);
			print_ratio(f, MED(a, p99), MED(s, p99), 10);
			print_ratio(f, MED(a, p999), MED(s, p999), 10);
			print_ratio(f, MED(a, cpu_us), MED(s, cpu_us), 11);
			fputc('\n', f);
		}
	}
}

static void json_num(FILE *f, const char *key, double v)
{
	fprintf(f, "\"%s\": ", key);
	if (v < 0)
		fprintf(f, "null");
	else
		fprintf(f, "%.3f", v);
}

static void json_cpus(FILE *f, const int *cpus, unsigned n)
{
	fputc('[', f);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "%s%d", i ? ", " : "", cpus[i]);
	fputc(']', f);
}

static void json_cell(FILE *f, const struct cell *c)
{
	fprintf(f, "{\"status\": \"%s\"",
		c->n	   ? "ok" :
		c->skipped ? "skipped" :
			     "failed");
	if (c->note[0]) {
		fprintf(f, ", \"reason\": ");
		pw_cli_json_str(f, c->note);
	}
	if (!c->n) {
		fputc('}', f);
		return;
	}
	fprintf(f, ", ");
	json_num(f, "throughput_rps", MED(c, rps));
	fprintf(f, ", ");
	json_num(f, "p50_us", MED(c, p50));
	fprintf(f, ", ");
	json_num(f, "p99_us", MED(c, p99));
	fprintf(f, ", ");
	json_num(f, "p99.9_us", MED(c, p999));
	fprintf(f, ", ");
	json_num(f, "cpu_us_per_request", MED(c, cpu_us));
	fprintf(f, ", \"errors\": %" PRIu64 ", \"rounds\": [", total_errors(c));
	for (unsigned i = 0; i < c->n; i++) {
		const struct meas *m = &c->m[i];
		fprintf(f, "%s\n          {", i ? "," : "");
		json_num(f, "throughput_rps", m->rps);
		fprintf(f,
			", \"requests\": %" PRIu64 ", \"errors\": %" PRIu64
			", ",
			m->requests, m->errors);
		json_num(f, "p50_us", m->p50);
		fprintf(f, ", ");
		json_num(f, "p99_us", m->p99);
		fprintf(f, ", ");
		json_num(f, "p99.9_us", m->p999);
		fprintf(f, ", ");
		json_num(f, "cpu_us_per_request", m->cpu_us);
		fprintf(f, ", ");
		json_num(f, "server_cpu_s", m->cpu_s);
		fprintf(f, ", ");
		json_num(f, "elapsed_s", m->elapsed_s);
		fputc('}', f);
	}
	fprintf(f, "],\n        \"latency\": ");
	if (c->have_hist)
		pw_hist_write_json(&c->hist, f);
	else
		fprintf(f, "null");
	fputc('}', f);
}

static int write_json(const struct bench *b, FILE *f)
{
	struct utsname u;
	char date[32] = "";
	time_t now = time(NULL);
	struct tm tm;
	bool first = true;

	if (uname(&u))
		strcpy(u.release, "unknown");
	if (gmtime_r(&now, &tm))
		strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(f, "{\n  \"pinwheel\": ");
	pw_cli_json_str(f, pw_version());
	fprintf(f, ",\n  \"date\": \"%s\",\n  \"kernel\": ", date);
	pw_cli_json_str(f, u.release);
	fprintf(f, ",\n  \"cpus\": ");
	json_cpus(f, b->cpus, b->ncpus);
	fprintf(f,
		",\n  \"duration_s\": %.3f,\n  \"warmup_s\": %.3f,\n"
		"  \"rounds\": %" PRIu64 ",\n  \"mode\": \"%s\",\n"
		"  \"rate\": %" PRIu64 ",\n  \"scenarios\": [",
		(double)b->duration / 1e9, (double)b->warmup / 1e9, b->rounds,
		b->rate ? "open" : "closed", b->rate);
	for (unsigned i = 0; i < pw_bench_nscenarios; i++) {
		const struct row *r = &b->rows[i];

		if (!r->selected)
			continue;
		fprintf(f, "%s\n    {\"name\": ", first ? "" : ",");
		first = false;
		pw_cli_json_str(f, r->sc->name);
		fprintf(f, ", \"what\": ");
		pw_cli_json_str(f, r->sc->what);
		fprintf(f, ",\n      \"server\": ");
		pw_cli_json_str(f, r->sc->server);
		fprintf(f, ", \"backend\": ");
		if (r->sc->backend)
			pw_cli_json_str(f, r->sc->backend);
		else
			fprintf(f, "null");
		fprintf(f, ", \"place\": \"%s\", \"server_cpus\": ",
			r->sc->place == PW_BENCH_ALL ? "all" : "split");
		json_cpus(f, r->srv, r->nsrv);
		fprintf(f, ", \"load_cpus\": ");
		json_cpus(f, r->load, r->nload);
		fprintf(f, ", \"conns\": %u,\n      \"status\": \"%s\"",
			r->conns, r->skipped ? "skipped" : "ran");
		if (r->skipped) {
			fprintf(f, ", \"reason\": ");
			pw_cli_json_str(f, r->note);
			fprintf(f, "}");
			continue;
		}
		fprintf(f, ",\n      \"results\": {");
		bool fc = true;
		for (int c = 0; c < NCOLS; c++) {
			if (!r->cell[c].used)
				continue;
			fprintf(f, "%s\n        \"%s\": ", fc ? "" : ",",
				col_name[c]);
			fc = false;
			json_cell(f, &r->cell[c]);
		}
		fprintf(f, "}}");
	}
	fprintf(f, "\n  ]");
	if (b->peers) {
		static const char *const names[2] = { "skewed_mt",
						      "spawn_mt_throughput" };
		fprintf(f, ",\n  \"tokio\": {\"http\": %s",
			b->peer_ok ? "true" : "false");
		if (b->peer_note[0]) {
			fprintf(f, ", \"note\": ");
			pw_cli_json_str(f, b->peer_note);
		}
		for (int i = 0; i < 2; i++) {
			fprintf(f, ", \"%s\": %s", names[i],
				b->peer_sched[i] ? b->peer_sched[i] : "null");
		}
		fputc('}', f);
	}
	fprintf(f, "\n}\n");
	return fflush(f) || ferror(f) ? -EIO : 0;
}

/* mkdir -p of the folder holding @path. */
static void make_parent(const char *path)
{
	char d[PATH_MAX];

	snprintf(d, sizeof(d), "%s", path);
	for (char *p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(d, 0755);
		*p = '/';
	}
}

static bool find_in_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		snprintf(out, len, "%.*s/%s", (int)n, path, name);
		if (n && !access(out, X_OK))
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

/*
 * @h's percentile curve as gnuplot data: x = 1 / (1 - p) (so 90% is 10,
 * 99% is 100), y the latency in us; ten points per decade, up to the
 * percentile the samples support, then the maximum.
 */
static void write_curve(FILE *f, const struct pw_hist *h)
{
	double n = (double)pw_hist_count(h), rest = 1.0;

	for (int i = 0; i <= 60 && 1.0 / rest <= n; i++) {
		fprintf(f, "%.6g %.3f\n", 1.0 / rest,
			(double)pw_hist_percentile(h, 100.0 * (1.0 - rest)) /
				1e3);
		rest *= 0.7943282347242815; /* 10^(-1/10) */
	}
	fprintf(f, "%.6g %.3f\n", n, (double)pw_hist_max(h) / 1e3);
}

/* Draws the latency curves, one panel per scenario that ran. Return 0
 * drawn; 1 nothing to draw; -1 with @why set. */
static int write_plot(const struct bench *b, char *why, size_t len)
{
	char gp[PATH_MAX], script[96], log[96], line[200];
	unsigned panels = 0;
	FILE *f;

	if (!find_in_path("gnuplot", gp, sizeof(gp))) {
		snprintf(why, len,
			 "gnuplot is not installed (apt-get install "
			 "gnuplot-nox)");
		return -1;
	}
	for (unsigned i = 0; i < pw_bench_nscenarios; i++)
		for (int c = 0; c < NCOLS; c++)
			if (b->rows[i].selected && b->rows[i].cell[c].n) {
				panels++;
				break;
			}
	if (!panels)
		return 1;
	snprintf(script, sizeof(script), "%s/latency.gp", b->tmp);
	snprintf(log, sizeof(log), "%s/gnuplot.log", b->tmp);
	f = fopen(script, "w");
	if (!f) {
		snprintf(why, len, "cannot write %s: %s", script,
			 strerror(errno));
		return -1;
	}
	for (unsigned i = 0; i < pw_bench_nscenarios; i++)
		for (int c = 0; c < NCOLS; c++) {
			const struct cell *cl = &b->rows[i].cell[c];
			if (!b->rows[i].selected || !cl->n || !cl->have_hist)
				continue;
			fprintf(f, "$s%uc%d << EOD\n", i, c);
			write_curve(f, &cl->hist);
			fprintf(f, "EOD\n");
		}
	fprintf(f, "set terminal pngcairo size 900,%u font ',9'\n",
		120 + 280 * panels);
	fprintf(f, "set output '");
	for (const char *p = b->plot; *p; p++)
		fprintf(f, *p == '\'' ? "''" : "%c", *p);
	fprintf(f, "'\n");
	fprintf(f,
		"set multiplot layout %u,1 title 'pinwheel bench: latency "
		"by percentile, %s loop, %" PRIu64 " round%s merged'\n",
		panels, b->rate ? "open" : "closed", b->rounds,
		b->rounds == 1 ? "" : "s");
	fprintf(f,
		"set logscale xy\nset grid\nset key top left\n"
		"set xtics ('0%%%%' 1, '50%%%%' 2, '90%%%%' 10, '99%%%%' 100, "
		"'99.9%%%%' 1000, '99.99%%%%' 10000, '99.999%%%%' 100000, "
		"'99.9999%%%%' 1000000)\n"
		"set xlabel 'percentile'\nset ylabel 'latency (us)'\n");
	for (unsigned i = 0; i < pw_bench_nscenarios; i++) {
		const struct row *r = &b->rows[i];
		bool any = false;

		for (int c = 0; c < NCOLS; c++)
			any |= r->selected && r->cell[c].n &&
			       r->cell[c].have_hist;
		if (!any)
			continue;
		fprintf(f, "set title '%s, %u connections'\nplot ", r->sc->name,
			r->conns);
		bool first = true;
		for (int c = 0; c < NCOLS; c++) {
			if (!r->cell[c].n || !r->cell[c].have_hist)
				continue;
			fprintf(f,
				"%s$s%uc%d with linespoints pt 7 ps 0.4 "
				"lw 2 title '%s'",
				first ? "" : ", ", i, c, col_name[c]);
			first = false;
		}
		fputc('\n', f);
	}
	fprintf(f, "unset multiplot\n");
	if (fclose(f)) {
		snprintf(why, len, "cannot write %s", script);
		return -1;
	}
	char *argv[] = { gp, script, NULL };
	pid_t pid = spawn(argv, NULL, 0, log);
	int st = pid < 0 ? -1 : wait_exit(pid);
	if (st) {
		first_line(log, line, sizeof(line));
		snprintf(why, len, "gnuplot failed (status %d): %s", st, line);
		return -1;
	}
	return 0;
}

/* Runs one of the Tokio peer's scheduler scenarios; its JSON line. */
static char *peer_sched(const struct bench *b, const char *name)
{
	char out[96], workers[16], *line = NULL;
	snprintf(out, sizeof(out), "%s/peer.out", b->tmp);
	snprintf(workers, sizeof(workers), "%u", b->ncpus);
	char *argv[] = { (char *)b->peer_bin, (char *)name, "--workers",
			 workers, NULL };
	pid_t pid = spawn(argv, b->cpus, b->ncpus, out);

	if (pid < 0 || wait_exit(pid))
		return NULL;
	FILE *f = fopen(out, "r");
	size_t cap = 0;
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

static void print_meas(const struct row *r, int col, unsigned round,
		       uint64_t rounds, const struct meas *m)
{
	printf("  round %u/%" PRIu64 " %-5s: %.1f req/s, p50 %.1f us, "
	       "p99 %.1f us, p99.9 %.1f us, ",
	       round + 1, rounds, col_name[col], m->rps, m->p50, m->p99,
	       m->p999);
	if (m->cpu_us >= 0)
		printf("%.2f us CPU/request, ", m->cpu_us);
	else
		printf("CPU time unknown, ");
	printf("%" PRIu64 " errors\n", m->errors);
	(void)r;
	fflush(stdout);
}

/* Runs every round of row @r. */
static void run_row(struct bench *b, struct row *r)
{
	printf("\n%s: %s\n", r->sc->name, r->sc->what);
	if (!has_command(b->self, r->sc->server) ||
	    (r->sc->backend && !has_command(b->self, r->sc->backend))) {
		char sub[64];
		snprintf(sub, sizeof(sub), "%.*s",
			 (int)strcspn(r->sc->server, " \t"), r->sc->server);
		r->skipped = true;
		snprintf(r->note, NOTE_LEN, "pinwheel %s is not built", sub);
		printf("  skipped: %s\n", r->note);
		return;
	}
	char cs[128], cl[128];
	cpus_text(r->srv, r->nsrv, cs, sizeof(cs));
	cpus_text(r->load, r->nload, cl, sizeof(cl));
	printf("  server on CPU %s, load (%u connections) on CPU %s%s\n", cs,
	       r->conns, cl,
	       r->sc->place == PW_BENCH_ALL || b->ncpus == 1 ?
		       ": they share cores, so the load generator's work "
		       "counts against the server's" :
		       "");
	if (r->cell[COL_TOKIO].used && !b->peer_ok)
		r->cell[COL_TOKIO].skipped = true;
	for (unsigned k = 0; k < b->rounds && !b->stop; k++) {
		for (int c = 0; c < NCOLS && !b->stop; c++) {
			struct cell *cl2 = &r->cell[c];
			struct meas m = { 0 };
			char note[NOTE_LEN] = "";

			if (!cl2->used || cl2->skipped)
				continue;
			int rc = measure(b, r, c, &m, note);
			if (rc == M_OK) {
				cl2->m[cl2->n++] = m;
				print_meas(r, c, k, b->rounds, &m);
				continue;
			}
			if (rc == M_STOP) {
				b->stop = true;
				break;
			}
			if (rc == M_SKIP && c != COL_TOKIO) {
				r->skipped = true;
				snprintf(r->note, NOTE_LEN, "%s", note);
				printf("  skipped: %s\n", note);
				return;
			}
			snprintf(cl2->note, NOTE_LEN, "%s", note);
			if (rc == M_SKIP) {
				cl2->skipped = true;
				printf("  %s skipped: %s\n", col_name[c], note);
			} else {
				cl2->failed = true;
				b->failed = true;
				printf("  round %u %s failed: %s\n", k + 1,
				       col_name[c], note);
			}
		}
	}
}

int pw_app_bench(int argc, char **argv)
{
	static struct pw_cli cli;
	const char *scen = "all", *json = "build/bench/results.json",
		   *plot = "build/bench/latency.png", *peer_bin = NULL;
	uint64_t duration = 10 * PW_NSEC_PER_SEC, warmup = PW_NSEC_PER_SEC,
		 conns = 0, rate = 0, rounds = 1;
	bool peers = false;
	const struct pw_cli_opt opts[] = {
		{ "--scenarios", PW_CLI_STRING, &scen, 0, 0, "LIST",
		  "comma-separated scenarios, or all (the default)" },
		{ "--duration", PW_CLI_DURATION, &duration,
		  10 * PW_NSEC_PER_MSEC, 3600 * PW_NSEC_PER_SEC, "D",
		  "measured time per run (default 10s)" },
		{ "--warmup", PW_CLI_DURATION, &warmup, 0,
		  3600 * PW_NSEC_PER_SEC, "D",
		  "warm-up before each measured run (default 1s)" },
		{ "--conns", PW_CLI_UINT, &conns, 1, 65536, "N",
		  "connections in every scenario (default: the scenario's)" },
		{ "--rate", PW_CLI_UINT, &rate, 0, 1000000000ull, "R",
		  "open loop at R requests/s; 0: closed loop (default)" },
		{ "--rounds", PW_CLI_UINT, &rounds, 1, ROUNDS_MAX, "R",
		  "runs per scheduler, alternating; medians (default 1)" },
		{ "--json", PW_CLI_STRING, &json, 0, 0, "FILE",
		  "results (default build/bench/results.json)" },
		{ "--plot", PW_CLI_STRING, &plot, 0, 0, "FILE",
		  "latency curves, PNG (default build/bench/latency.png)" },
		{ "--peers", PW_CLI_BOOL, &peers, 0, 0, NULL,
		  "add a tokio column (bench/peers/tokio, make bench-peers)" },
		{ "--peer-bin", PW_CLI_STRING, &peer_bin, 0, 0, "FILE",
		  "the Tokio peer (default: bench/peers/tokio/target/release/"
		  "pinwheel-tokio-peer)" },
	};
	const struct pw_cli_cmd cmd = {
		.name = "pinwheel bench",
		.about =
			"Runs each scenario's server (this program, as a "
			"child) under the shard and the\nstealing scheduler "
			"in turn, loads it from an in-process generator on "
			"other\nCPUs, and prints throughput, p50, p99, "
			"p99.9 and the server's CPU time per\nrequest side "
			"by side; writes JSON and a PNG of the latency "
			"curves (gnuplot).\nThe scenarios are listed below the flags.",
		.opts = opts,
		.nopts = sizeof(opts) / sizeof(opts[0]),
	};
	bool sel[sizeof(pw_bench_scenarios) / sizeof(pw_bench_scenarios[0])];
	char err[128];
	int rc;

	rc = pw_cli_parse(&cli, &cmd, argc, argv);
	if (rc == PW_CLI_HELP) {
		printf("\nscenarios:\n");
		for (unsigned i = 0; i < pw_bench_nscenarios; i++)
			printf("  %-8s %s\n", pw_bench_scenarios[i].name,
			       pw_bench_scenarios[i].what);
		return 0;
	}
	if (rc)
		return pw_cli_status(rc);
	if (pw_bench_select(scen, sel, err, sizeof(err)) < 0) {
		fprintf(stderr, "pinwheel bench: --scenarios: %s\n", err);
		return 2;
	}
	if (!*json || !*plot) {
		fprintf(stderr, "pinwheel bench: --json and --plot need a "
				"file name\n");
		return 2;
	}

	struct bench *b = calloc(1, sizeof(*b) + pw_bench_nscenarios *
							 sizeof(struct row));
	if (!b) {
		fprintf(stderr, "pinwheel bench: out of memory\n");
		return 1;
	}
	b->duration = duration;
	b->warmup = warmup;
	b->conns = conns;
	b->rate = rate;
	b->rounds = rounds;
	b->json = json;
	b->plot = plot;
	b->peers = peers;

	ssize_t sl = readlink("/proc/self/exe", b->self, sizeof(b->self) - 1);
	if (sl <= 0) {
		fprintf(stderr, "pinwheel bench: /proc/self/exe: %s\n",
			strerror(errno));
		free(b);
		return 1;
	}
	b->self[sl] = '\0';
	static char peer_default[PATH_MAX];
	if (!peer_bin) {
		/* SRC/BUILD/pinwheel -> SRC/bench/peers/tokio/... */
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", b->self);
		for (int up = 0; up < 2; up++) {
			char *slash = strrchr(dir, '/');
			if (slash)
				*slash = '\0';
		}
		snprintf(peer_default, sizeof(peer_default),
			 "%.*s/bench/peers/tokio/target/release/"
			 "pinwheel-tokio-peer",
			 PATH_MAX - 64, dir);
		peer_bin = peer_default;
	}
	b->peer_bin = peer_bin;

	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "pinwheel bench: sched_getaffinity: %s\n",
			strerror(errno));
		free(b);
		return 1;
	}
	for (int c = 0; c < CPU_SETSIZE && b->ncpus < PW_MAX_SHARDS; c++)
		if (CPU_ISSET(c, &set))
			b->cpus[b->ncpus++] = c;

	snprintf(b->tmp, sizeof(b->tmp), "/tmp/pinwheel-bench.XXXXXX");
	if (!mkdtemp(b->tmp)) {
		fprintf(stderr, "pinwheel bench: mkdtemp: %s\n",
			strerror(errno));
		free(b);
		return 1;
	}
	if ((rc = pw_cli_signals_init())) {
		fprintf(stderr, "pinwheel bench: signals: %s\n", strerror(-rc));
		rmdir(b->tmp);
		free(b);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	/* The load's shard threads inherit it: due sends within 1 us. */
	prctl(PR_SET_TIMERSLACK, 1000ul, 0ul, 0ul, 0ul);

	if (peers) {
		if (access(peer_bin, X_OK)) {
			snprintf(b->peer_note, NOTE_LEN,
				 "%s is not built (make bench-peers)",
				 peer_bin);
		} else {
			b->peer_ok = has_command(peer_bin, "http");
			if (!b->peer_ok)
				snprintf(b->peer_note, NOTE_LEN,
					 "the Tokio peer has no http mode");
		}
	}

	for (unsigned i = 0; i < pw_bench_nscenarios; i++) {
		struct row *r = &b->rows[i];

		r->sc = &pw_bench_scenarios[i];
		r->selected = sel[i];
		r->conns = conns ? (unsigned)conns : r->sc->conns;
		pw_bench_place_cpus(r->sc->place, b->cpus, b->ncpus, r->srv,
				    &r->nsrv, r->load, &r->nload);
		for (int c = 0; c < NCOLS; c++) {
			r->cell[c].used = c != COL_TOKIO ||
					  (peers && r->sc->peer);
			r->cell[c].m = calloc(rounds, sizeof(struct meas));
			if (!r->cell[c].m) {
				fprintf(stderr, "pinwheel bench: out of "
						"memory\n");
				return 1;
			}
		}
		if (r->cell[COL_TOKIO].used && !b->peer_ok)
			snprintf(r->cell[COL_TOKIO].note, NOTE_LEN, "%s",
				 b->peer_note);
	}

	printf("pinwheel bench: %u CPU%s, %s loop, %.3g s measured after "
	       "%.3g s warm-up, %" PRIu64 " round%s (medians)\n",
	       b->ncpus, b->ncpus == 1 ? "" : "s", rate ? "open" : "closed",
	       (double)duration / 1e9, (double)warmup / 1e9, rounds,
	       rounds == 1 ? "" : "s");
	if (rate)
		printf("  open loop: %" PRIu64 " requests/s per run\n", rate);
	if (peers && !b->peer_ok)
		printf("  tokio column skipped: %s\n", b->peer_note);
	for (unsigned i = 0; i < pw_bench_nscenarios && !b->stop; i++)
		if (b->rows[i].selected)
			run_row(b, &b->rows[i]);

	if (peers && !b->stop && !access(peer_bin, X_OK)) {
		static const char *const names[2] = { "skewed_mt",
						      "spawn_mt_throughput" };
		printf("\ntokio scheduler scenarios (%u workers on all CPUs; "
		       "compare with make bench's bm_spawn_run_*):\n",
		       b->ncpus);
		for (int i = 0; i < 2; i++) {
			b->peer_sched[i] = peer_sched(b, names[i]);
			printf("  %-20s %s\n", names[i],
			       b->peer_sched[i] ? b->peer_sched[i] : "failed");
		}
	}

	print_table(b, stdout);
	int status = b->failed ? 1 : 0;
	if (b->stop) {
		printf("\ninterrupted: the table holds the runs that "
		       "finished\n");
		status = 1;
	}

	make_parent(json);
	FILE *f = fopen(json, "w");
	if (!f || write_json(b, f) || fclose(f)) {
		fprintf(stderr, "pinwheel bench: cannot write %s\n", json);
		status = 1;
	} else {
		printf("\nwrote %s\n", json);
	}
	char why[NOTE_LEN];
	make_parent(plot);
	rc = write_plot(b, why, sizeof(why));
	if (rc == 0)
		printf("wrote %s\n", plot);
	else if (rc == 1)
		printf("plot skipped: no scenario ran\n");
	else
		printf("plot skipped: %s\n", why);
	fflush(stdout);

	for (unsigned i = 0; i < pw_bench_nscenarios; i++)
		for (int c = 0; c < NCOLS; c++) {
			free(b->rows[i].cell[c].m);
			if (b->rows[i].cell[c].have_hist)
				pw_hist_destroy(&b->rows[i].cell[c].hist);
		}
	for (int i = 0; i < 2; i++)
		free(b->peer_sched[i]);
	char path[128];
	static const char *const tmpfiles[] = { "server.log", "backend.log",
						"gnuplot.log", "latency.gp",
						"peer.out" };
	for (size_t i = 0; i < sizeof(tmpfiles) / sizeof(tmpfiles[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", b->tmp, tmpfiles[i]);
		unlink(path);
	}
	rmdir(b->tmp);
	free(b);
	pw_cli_signals_close();
	return status;
}
