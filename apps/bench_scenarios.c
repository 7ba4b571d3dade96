/* SPDX-License-Identifier: MIT */
/*
 * bench_scenarios.c - what `pinwheel bench` runs: the scenario table, the
 * --scenarios list, where each scenario's server and load go on the
 * allowed CPUs, and the command lines of the servers (a pinwheel
 * subcommand, or the Tokio peer) with the flags every run adds.
 *
 * A scenario is data: adding one for a new server flag is adding a row
 * to the table below (see bench.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pinwheel/topo.h"
#include "apps/bench.h"
#include "apps/bench_int.h"

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
		.what = "every connection on shard 0, 50000 iterations of CPU "
			"work per request in a child task: stealing can use "
			"the idle core (server on all cores; load shares them)",
		.server = "http --accept-shards 1 --work 50000",
		.place = PW_BENCH_ALL,
		.conns = 64,
		.peer = "http --work 50000",
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
_Static_assert(sizeof(pw_bench_scenarios) / sizeof(pw_bench_scenarios[0]) <=
		       SCENARIOS_MAX,
	       "a bench keeps its selection in SCENARIOS_MAX flags");

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

/* Whether @cpu is among the @n CPUs @set. */
static bool cpu_in(int cpu, const int *set, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (set[i] == cpu)
			return true;
	return false;
}

int pw_bench_place_cores(enum pw_bench_place place,
			 const struct pw_bench_pools *p, unsigned k, int *srv,
			 unsigned *nsrv, int *load, unsigned *nload)
{
	const int *pool;
	unsigned np;

	if (!p || !p->cpus || !p->n || !srv || !nsrv || !load || !nload)
		return -EINVAL;
	pool = p->srv ? p->srv : p->cpus;
	np = p->srv ? p->nsrv : p->n;
	if (k == PW_BENCH_CORES_AUTO)
		k = place == PW_BENCH_ALL || p->srv ? np :
		    p->n / 2			    ? p->n / 2 :
						      1;
	if (!np || k > np)
		return -ERANGE;
	memcpy(srv, pool, k * sizeof(*srv));
	*nsrv = k;
	*nload = 0;
	if (p->load) {
		memcpy(load, p->load, p->nload * sizeof(*load));
		*nload = p->nload;
		return 0;
	}
	for (unsigned i = 0; i < p->n; i++)
		if (place == PW_BENCH_ALL || !cpu_in(p->cpus[i], srv, k))
			load[(*nload)++] = p->cpus[i];
	if (!*nload) {
		memcpy(load, p->cpus, p->n * sizeof(*load));
		*nload = p->n;
	}
	return 0;
}

/* Parse one --server-cores item of @len bytes at @s: a count, or "all"
 * (@max). Return: the count; 0 when malformed. */
static unsigned cores_item(const char *s, size_t len, unsigned max)
{
	unsigned long v = 0;

	if (len == 3 && !strncmp(s, "all", 3))
		return max;
	if (!len || len > 6)
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	return (unsigned)v;
}

/* Insert @v into the ascending @out[0..*n) unless there. Return: 0, or
 * -E2BIG when @cap is reached. */
static int insert_sorted(unsigned *out, unsigned *n, unsigned cap, unsigned v)
{
	unsigned i = 0;

	while (i < *n && out[i] < v)
		i++;
	if (i < *n && out[i] == v)
		return 0;
	if (*n == cap)
		return -E2BIG;
	memmove(out + i + 1, out + i, (*n - i) * sizeof(*out));
	out[i] = v;
	(*n)++;
	return 0;
}

int pw_bench_parse_cores(const char *list, unsigned max, unsigned *out,
			 unsigned cap, char *err, size_t errlen)
{
	unsigned n = 0;

	if (!list || !out || !cap || !*list) {
		set_err(err, errlen, "%s", "empty list");
		return -EINVAL;
	}
	if (!strcmp(list, "auto")) {
		out[0] = PW_BENCH_CORES_AUTO;
		return 1;
	}
	for (const char *p = list;;) {
		size_t len = strcspn(p, ",");
		unsigned v = cores_item(p, len, max);
		char item[16];

		snprintf(item, sizeof(item), "%.*s", (int)(len < 12 ? len : 12),
			 p);
		if (!v) {
			set_err(err, errlen,
				"'%s' is not a core count above 0, all or auto "
				"(alone)",
				item);
			return -EINVAL;
		}
		if (v > max) {
			if (err && errlen)
				snprintf(err, errlen,
					 "%u server cores asked, but the "
					 "server may use only %u CPU%s",
					 v, max, max == 1 ? "" : "s");
			return -ERANGE;
		}
		if (insert_sorted(out, &n, cap, v)) {
			set_err(err, errlen, "%s", "too many core counts");
			return -E2BIG;
		}
		if (!p[len])
			break;
		p += len + 1;
	}
	return (int)n;
}

int pw_bench_parse_cpus(const char *list, const int *cpus, unsigned n, int *out,
			unsigned cap, char *err, size_t errlen)
{
	int got;

	if (!list || !cpus || !out) {
		set_err(err, errlen, "%s", "no list");
		return -EINVAL;
	}
	got = pw_cpulist_parse(list, out, cap);
	if (got == -E2BIG) {
		set_err(err, errlen, "'%s' has too many CPUs", list);
		return -E2BIG;
	}
	if (got <= 0) {
		set_err(err, errlen, "'%s' is not a CPU list such as 0-3,8",
			list);
		return got < 0 && got != -ERANGE ? got : -EINVAL;
	}
	for (int i = 0; i < got; i++)
		if (!cpu_in(out[i], cpus, n)) {
			if (err && errlen)
				snprintf(err, errlen,
					 "CPU %d is not among the CPUs this "
					 "process may use",
					 out[i]);
			return -ERANGE;
		}
	return got;
}

int pw_bench_node_cpus(const struct pw_topo *t, int node, const int *cpus,
		       unsigned n, int *out, unsigned cap)
{
	unsigned got = 0;

	if (!t || !cpus || !out)
		return -EINVAL;
	for (unsigned i = 0; i < n && got < cap; i++) {
		const struct pw_topo_pu *u = pw_topo_find(t, cpus[i]);

		if (u && u->node == node)
			out[got++] = cpus[i];
	}
	return got ? (int)got : -ENODEV;
}

int pw_bench_node_distance(const char *sysfs, int a, int b)
{
	char path[PATH_MAX], line[1024], *p = line;
	int ids[256], pos = -1, n, d = -1;
	FILE *f;

	if (!sysfs)
		sysfs = "/sys";
	snprintf(path, sizeof(path), "%s/devices/system/node/online", sysfs);
	f = fopen(path, "r");
	n = f && fgets(line, sizeof(line), f) ?
		    pw_cpulist_parse(line, ids, 256) :
		    -ENOENT;
	if (f)
		fclose(f);
	for (int i = 0; i < n; i++)
		if (ids[i] == b)
			pos = i;
	snprintf(path, sizeof(path), "%s/devices/system/node/node%d/distance",
		 sysfs, a);
	f = pos >= 0 ? fopen(path, "r") : NULL;
	if (f && fgets(line, sizeof(line), f))
		for (int i = 0; i <= pos && *p; i++)
			d = (int)strtol(p, &p, 10);
	if (f)
		fclose(f);
	if (d > 0)
		return d;
	return a == b ? 10 : -ENOENT;
}

/* ---- command lines ------------------------------------------------------ */

const char *const pw_bench_col_name[NCOLS] = { "shard", "steal", "tokio" };

void pw_bench_cpus_text(const int *cpus, unsigned n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%d",
					 i ? "," : "", cpus[i]);
}

int pw_bench_args_pinwheel(struct args *a, const char *self, const char *server,
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
	pw_bench_cpus_text(cpus, ncpus, a->cpus, sizeof(a->cpus));
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
	a->argv[a->argc++] = (char *)pw_bench_col_name[col == COL_STEAL];
	a->argv[a->argc] = NULL;
	return 0;
}

int pw_bench_args_peer(struct args *a, const char *bin, const char *peer,
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

void pw_bench_args_text(const struct args *a, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 1; i < a->argc && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 i > 1 ? " " : "", a->argv[i]);
}

void pw_bench_row_label(const struct bench *b, const struct row *r, char *buf,
			size_t len)
{
	if (b->ncounts > 1)
		snprintf(buf, len, "%s c%u", r->sc->name, r->nsrv);
	else
		snprintf(buf, len, "%s", r->sc->name);
}
