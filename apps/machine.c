/* SPDX-License-Identifier: MIT */
/*
 * machine.c - reading the state of the machine around a benchmark from
 * /proc and /sys, and the warnings it calls for (see machine.h). Every
 * reader is a small parser over the file's text, so that tests can feed
 * it fixtures; nothing here changes the machine.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apps/machine.h"

/* Read the file @path into @buf (cut to @len - 1 bytes, terminated).
 * Return: 0, or -errno. */
static int slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t got;

	if (!f)
		return -errno;
	got = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[got] = '\0';
	return 0;
}

int pw_machine_parse_loadavg(const char *s, double *l1, double *l5, double *l15)
{
	if (!s || !l1 || !l5 || !l15)
		return -EINVAL;
	return sscanf(s, "%lf %lf %lf", l1, l5, l15) == 3 ? 0 : -EINVAL;
}

int pw_machine_read_loadavg(const char *path, double *l1, double *l5,
			    double *l15)
{
	char buf[256];
	int rc = path ? slurp(path, buf, sizeof(buf)) : -EINVAL;

	return rc ? rc : pw_machine_parse_loadavg(buf, l1, l5, l15);
}

int pw_machine_parse_stat(const char *s, struct pw_machine_ticks *t)
{
	const char *p;
	char *end;

	if (!s || !t)
		return -EINVAL;
	for (p = s; strncmp(p, "cpu ", 4); p++) {
		p = strchr(p, '\n');
		if (!p)
			return -EINVAL;
	}
	t->total = t->steal = 0;
	p += 4;
	for (int col = 1;; col++) {
		unsigned long long v = strtoull(p, &end, 10);

		if (end == p || *p == '\n')
			break;
		t->total += v;
		if (col == 8)
			t->steal = v;
		p = end;
		while (*p == ' ')
			p++;
		if (*p == '\n' || !*p)
			break;
	}
	return 0;
}

int pw_machine_read_stat(const char *path, struct pw_machine_ticks *t)
{
	char buf[4096];
	int rc = path ? slurp(path, buf, sizeof(buf)) : -EINVAL;

	return rc ? rc : pw_machine_parse_stat(buf, t);
}

double pw_machine_steal_pct(const struct pw_machine_ticks *a,
			    const struct pw_machine_ticks *b)
{
	if (!a || !b || b->total <= a->total || b->steal < a->steal)
		return -1;
	return 100.0 * (double)(b->steal - a->steal) /
	       (double)(b->total - a->total);
}

void pw_machine_governor(const char *sysdir, const int *cpus, unsigned n,
			 char *buf, size_t len)
{
	char path[512], name[64];
	bool seen = false;

	snprintf(buf, len, "unknown");
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path),
			 "%s/cpu%d/cpufreq/scaling_governor", sysdir, cpus[i]);
		if (slurp(path, name, sizeof(name)))
			continue;
		name[strcspn(name, "\n")] = '\0';
		if (!seen)
			snprintf(buf, len, "%s", name);
		else if (strcmp(buf, name))
			snprintf(buf, len, "mixed");
		seen = true;
	}
}

int pw_machine_parse_cpulist(const char *s, bool *set, unsigned max)
{
	int n = 0;

	if (!s || !set)
		return -EINVAL;
	memset(set, 0, max * sizeof(*set));
	while (*s && *s != '\n') {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a;

		if (end == s)
			return -EINVAL;
		s = end;
		if (*s == '-') {
			b = strtoul(s + 1, &end, 10);
			if (end == s + 1 || b < a)
				return -EINVAL;
			s = end;
		}
		if (b >= max)
			return -EINVAL;
		for (unsigned long c = a; c <= b; c++)
			n += !set[c], set[c] = true;
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -EINVAL;
	}
	return n;
}

static bool in_list(const int *v, unsigned n, int x)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

int pw_machine_smt_shared(const char *sysdir, const int *srv, unsigned nsrv,
			  const int *load, unsigned nload, int *a, int *b)
{
	enum { MAXCPU = 4096 };
	static bool sib[MAXCPU];
	char path[512], text[1024];

	for (unsigned i = 0; i < nsrv; i++) {
		if (in_list(load, nload, srv[i]))
			continue;
		snprintf(path, sizeof(path),
			 "%s/cpu%d/topology/thread_siblings_list", sysdir,
			 srv[i]);
		if (slurp(path, text, sizeof(text)) ||
		    pw_machine_parse_cpulist(text, sib, MAXCPU) < 0)
			continue;
		for (unsigned j = 0; j < nload; j++) {
			int l = load[j];

			if (l < 0 || l >= MAXCPU || l == srv[i] || !sib[l] ||
			    in_list(srv, nsrv, l))
				continue;
			*a = srv[i];
			*b = l;
			return 1;
		}
	}
	return 0;
}

void pw_machine_before(struct pw_machine *m, const int *cpus, unsigned n)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	memset(m, 0, sizeof(*m));
	if (pw_machine_read_loadavg(PW_MACHINE_LOADAVG, &m->load1, &m->load5,
				    &m->load15))
		m->load1 = m->load5 = m->load15 = -1;
	m->online = online > 0 ? (unsigned)online : 0;
	m->have_ticks = !pw_machine_read_stat(PW_MACHINE_STAT, &m->t0);
	m->steal_pct = -1;
	pw_machine_governor(PW_MACHINE_SYSCPU, cpus, n, m->governor,
			    sizeof(m->governor));
}

void pw_machine_after(struct pw_machine *m)
{
	if (!m->have_ticks || pw_machine_read_stat(PW_MACHINE_STAT, &m->t1)) {
		m->have_ticks = false;
		return;
	}
	m->steal_pct = pw_machine_steal_pct(&m->t0, &m->t1);
}

unsigned pw_machine_warnings(const struct pw_machine *m, unsigned ncpus,
			     char (*out)[PW_MACHINE_WARN_LEN], unsigned max)
{
	unsigned n = 0;

	if (n < max && m->load1 > (double)ncpus)
		snprintf(out[n++], PW_MACHINE_WARN_LEN,
			 "load average %.2f before the run, above the %u "
			 "CPUs: other programs share them",
			 m->load1, ncpus);
	if (n < max && m->steal_pct > PW_MACHINE_STEAL_WARN)
		snprintf(out[n++], PW_MACHINE_WARN_LEN,
			 "the hypervisor stole %.1f%% of the CPU time during "
			 "the run (/proc/stat): the VM's neighbours are busy",
			 m->steal_pct);
	if (n < max && strcmp(m->governor, "unknown") &&
	    strcmp(m->governor, "performance"))
		snprintf(out[n++], PW_MACHINE_WARN_LEN,
			 "CPU frequency governor \"%s\", not \"performance\": "
			 "clock speed changes with load",
			 m->governor);
	return n;
}
