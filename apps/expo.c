/* SPDX-License-Identifier: MIT */
/*
 * expo.c - the exposition writer of a command's counters (see expo.h):
 * one set of calls, Prometheus text or JSON out.
 *
 * A metric's head (HELP and TYPE, or its JSON key) is held back until its
 * first sample, so both formats leave out a metric without samples alike.
 * Duplicates are found by 64-bit FNV-1a hashes of the metric names and of
 * each metric's label sets, kept in two small arrays: past their size the
 * check stops (nothing is refused for it), which no command comes near.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "apps/cli.h"
#include "apps/expo.h"

#define FNV_INIT  1469598103934665603ull
#define FNV_PRIME 1099511628211ull

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * FNV_PRIME;
	/* A separator, so "ab","c" and "a","bc" differ. */
	return (h ^ 0xff) * FNV_PRIME;
}

/* Whether @s is a name part: [a-zA-Z_][a-zA-Z0-9_]* (@first: the start of
 * a name, where a digit is not allowed). */
static bool valid_name(const char *s, bool first)
{
	if (!s || !*s)
		return false;
	for (const char *p = s; *p; p++) {
		char c = *p;
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     c == '_';

		if (!alpha && !(c >= '0' && c <= '9' && (p > s || !first)))
			return false;
	}
	return true;
}

static int refuse(struct pw_expo *e)
{
	e->refused++;
	return -EINVAL;
}

static int begin(struct pw_expo *e, FILE *f, enum pw_expo_format fmt,
		 const char *cmd, bool inner)
{
	if (!e)
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	e->fmt = fmt;
	e->inner = inner;
	if (!f || (fmt != PW_EXPO_PROMETHEUS && fmt != PW_EXPO_JSON) ||
	    !valid_name(cmd, false) || strlen(cmd) > sizeof(e->prefix) - 12) {
		e->refused = 1;
		return -EINVAL;
	}
	e->f = f;
	pw_expo_prefix(e, cmd);
	if (fmt == PW_EXPO_JSON && !inner)
		fputc('{', f);
	return 0;
}

int pw_expo_begin(struct pw_expo *e, FILE *f, enum pw_expo_format fmt,
		  const char *cmd)
{
	return begin(e, f, fmt, cmd, false);
}

int pw_expo_begin_members(struct pw_expo *e, FILE *f, enum pw_expo_format fmt,
			  const char *cmd)
{
	return begin(e, f, fmt, cmd, true);
}

int pw_expo_prefix(struct pw_expo *e, const char *cmd)
{
	if (!e)
		return -EINVAL;
	if (cmd &&
	    (!valid_name(cmd, false) || strlen(cmd) > sizeof(e->prefix) - 12))
		return refuse(e);
	snprintf(e->prefix, sizeof(e->prefix), "pinwheel_%s%s", cmd ? cmd : "",
		 cmd ? "_" : "");
	return 0;
}

/* Close the current metric's JSON array, if it opened one. */
static void close_metric(struct pw_expo *e)
{
	if (e->fmt == PW_EXPO_JSON && e->started && e->labelled)
		fputc(']', e->f);
	e->have_metric = e->started = e->labelled = false;
	e->nseries = 0;
}

int pw_expo_metric(struct pw_expo *e, const char *name, const char *help,
		   enum pw_expo_type type)
{
	uint64_t h;

	if (!e || !e->f)
		return e ? refuse(e) : -EINVAL;
	close_metric(e);
	if (!valid_name(name, false) ||
	    (type != PW_EXPO_COUNTER && type != PW_EXPO_GAUGE))
		return refuse(e);
	if ((size_t)snprintf(e->name, sizeof(e->name), "%s%s%s", e->prefix,
			     name, type == PW_EXPO_COUNTER ? "_total" : "") >=
	    sizeof(e->name))
		return refuse(e);
	h = fnv(FNV_INIT, e->name);
	for (unsigned i = 0; i < e->nmetrics; i++)
		if (e->metrics[i] == h)
			return refuse(e);
	if (e->nmetrics < PW_EXPO_MAX_METRICS)
		e->metrics[e->nmetrics++] = h;
	snprintf(e->help, sizeof(e->help), "%s", help ? help : "");
	e->type = type;
	e->have_metric = true;
	return 0;
}

/* A HELP line's text: backslash and newline escaped. */
static void prom_help(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* A label value: backslash, double quote and newline escaped. */
static void prom_label_value(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* Check @labels and hash them. Return: 0 with *@h set, or -EINVAL. */
static int check_labels(const char *const *labels, uint64_t *h)
{
	*h = FNV_INIT;
	for (const char *const *l = labels; l && *l; l += 2) {
		if (!valid_name(l[0], true) || !strcmp(l[0], "value") || !l[1])
			return -EINVAL;
		*h = fnv(fnv(*h, l[0]), l[1]);
	}
	return 0;
}

static void prom_sample(struct pw_expo *e, const char *const *labels,
			uint64_t v)
{
	FILE *f = e->f;

	if (!e->started) {
		fprintf(f, "# HELP %s ", e->name);
		prom_help(f, e->help);
		fprintf(f, "\n# TYPE %s %s\n", e->name,
			e->type == PW_EXPO_COUNTER ? "counter" : "gauge");
	}
	fputs(e->name, f);
	for (const char *const *l = labels; l && *l; l += 2) {
		fprintf(f, "%s%s=", l == labels ? "{" : ",", l[0]);
		prom_label_value(f, l[1]);
	}
	fprintf(f, "%s %" PRIu64 "\n", labels && *labels ? "}" : "", v);
}

static void json_sample(struct pw_expo *e, const char *const *labels,
			uint64_t v)
{
	FILE *f = e->f;

	if (!e->started) {
		if (e->members || e->inner)
			fputc(',', f);
		fprintf(f, "\"%s\":%s", e->name, e->labelled ? "[" : "");
		e->members = true;
	} else {
		fputc(',', f);
	}
	if (!e->labelled) {
		fprintf(f, "%" PRIu64, v);
		return;
	}
	fputc('{', f);
	for (const char *const *l = labels; *l; l += 2) {
		fprintf(f, "\"%s\":", l[0]);
		pw_cli_json_str(f, l[1]);
		fputc(',', f);
	}
	fprintf(f, "\"value\":%" PRIu64 "}", v);
}

int pw_expo_sample(struct pw_expo *e, const char *const *labels, uint64_t value)
{
	bool labelled = labels && *labels;
	uint64_t h;

	if (!e || !e->f || !e->have_metric)
		return e ? refuse(e) : -EINVAL;
	if (check_labels(labels, &h))
		return refuse(e);
	if (e->started && labelled != e->labelled)
		return refuse(e);
	for (unsigned i = 0; i < e->nseries; i++)
		if (e->series[i] == h)
			return refuse(e);
	if (e->nseries < PW_EXPO_MAX_SERIES)
		e->series[e->nseries++] = h;
	if (!e->started)
		e->labelled = labelled;
	if (e->fmt == PW_EXPO_PROMETHEUS)
		prom_sample(e, labels, value);
	else
		json_sample(e, labels, value);
	e->started = true;
	return 0;
}

int pw_expo_end(struct pw_expo *e)
{
	if (!e || !e->f)
		return -EINVAL;
	close_metric(e);
	if (e->fmt == PW_EXPO_JSON)
		fputs("}\n", e->f);
	if (fflush(e->f) || ferror(e->f))
		return -EIO;
	return e->refused ? -EINVAL : 0;
}
