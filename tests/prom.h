/* SPDX-License-Identifier: MIT */
/*
 * prom.h - a strict checker of the Prometheus text exposition format
 * (version 0.0.4) for the tests, and lookups of sample values in it.
 *
 * pw_test_prom_check() holds the text to: every line ends in a newline;
 * "# HELP name text" then "# TYPE name counter|gauge", once per metric,
 * both before its first sample; a sample is name[{l="v",...}] value with
 * valid metric and label names, label values whose only escapes are \\,
 * \" and \n, a number for value; its name is the last TYPE line's (the
 * samples of a metric are together); a counter's name ends in _total;
 * no series (name and labels) twice.
 */
#ifndef PW_TESTS_PROM_H
#define PW_TESTS_PROM_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/json.h"

static inline bool pw__tp_name(const char *s, size_t n, bool colon)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  c == '_' || (colon && c == ':') ||
			  (i && c >= '0' && c <= '9');
		if (!ok)
			return false;
	}
	return true;
}

/* The end of the labels at @p ('{' ... '}'), or NULL when malformed. */
static inline const char *pw__tp_labels(const char *p)
{
	p++;
	if (*p == '}')
		return p + 1;
	for (;;) {
		size_t n = strcspn(p, "=");
		if (!pw__tp_name(p, n, false) || p[n] != '=' || p[n + 1] != '"')
			return NULL;
		for (p += n + 2; *p != '"'; p++) {
			if (!*p || *p == '\n')
				return NULL;
			if (*p == '\\' && !strchr("\\\"n", *++p))
				return NULL;
		}
		p++;
		if (*p == '}')
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

/* Fail with a reason: false, @why filled with it and the line. */
static inline bool pw__tp_fail(char *why, size_t n, const char *what,
			       const char *line, size_t len)
{
	snprintf(why, n, "%s: '%.*s'", what, (int)(len > 200 ? 200 : len),
		 line);
	return false;
}

/* The checker's state across lines. */
struct pw__tp {
	char cur[256], help[256]; /* the last TYPE's and HELP's names */
	char *names;		  /* " name " of every TYPE so far */
	size_t names_len;
	char **seen; /* every series so far */
	size_t nseen;
	char *why;
	size_t n;
};

/* A "# TYPE name kind" line of @len bytes. */
static inline bool pw__tp_type(struct pw__tp *t, const char *l, size_t len)
{
	char name[256], kind[32], key[260];

	if (sscanf(l, "# TYPE %255s %31s", name, kind) != 2 ||
	    strcmp(name, t->help) ||
	    (strcmp(kind, "counter") && strcmp(kind, "gauge")))
		return pw__tp_fail(t->why, t->n, "bad TYPE or no HELP", l, len);
	snprintf(key, sizeof(key), " %s ", name);
	if (strstr(t->names, key))
		return pw__tp_fail(t->why, t->n, "declared twice", l, len);
	t->names = realloc(t->names, t->names_len + strlen(key) + 1);
	strcpy(t->names + t->names_len, key);
	t->names_len += strlen(key);
	snprintf(t->cur, sizeof(t->cur), "%s", name);
	if (!strcmp(kind, "counter") &&
	    (strlen(name) < 6 || strcmp(name + strlen(name) - 6, "_total")))
		return pw__tp_fail(t->why, t->n, "counter without _total", l,
				   len);
	return true;
}

/* A sample line of @len bytes. */
static inline bool pw__tp_sample(struct pw__tp *t, const char *l, size_t len)
{
	size_t k = strcspn(l, "{ "), series;
	const char *p = l + k, *e;

	if (!pw__tp_name(l, k, true) || strlen(t->cur) != k ||
	    strncmp(l, t->cur, k))
		return pw__tp_fail(t->why, t->n,
				   "sample not of the TYPE before it", l, len);
	if (*p == '{' && !(p = pw__tp_labels(p)))
		return pw__tp_fail(t->why, t->n, "bad labels", l, len);
	if (*p++ != ' ')
		return pw__tp_fail(t->why, t->n, "no value", l, len);
	e = pw__tj_number(p);
	if (!e || e != l + len)
		return pw__tp_fail(t->why, t->n, "value not a number", l, len);
	series = (size_t)(p - 1 - l);
	for (size_t i = 0; i < t->nseen; i++)
		if (strlen(t->seen[i]) == series &&
		    !strncmp(t->seen[i], l, series))
			return pw__tp_fail(t->why, t->n, "series twice", l,
					   len);
	t->seen = realloc(t->seen, (t->nseen + 1) * sizeof(*t->seen));
	t->seen[t->nseen++] = strndup(l, series);
	return true;
}

/* Whether @text is a valid exposition (see above); why not in @why. */
static inline bool pw_test_prom_check(const char *text, char *why, size_t n)
{
	struct pw__tp t = { .names = calloc(1, 1), .why = why, .n = n };
	bool ok = true;

	for (const char *l = text; ok && *l;) {
		const char *nl = strchr(l, '\n');
		if (!nl) {
			ok = pw__tp_fail(why, n, "no newline", l, strlen(l));
			break;
		}
		size_t len = (size_t)(nl - l);
		if (!strncmp(l, "# HELP ", 7))
			snprintf(t.help, sizeof(t.help), "%.*s",
				 (int)strcspn(l + 7, " \n"), l + 7);
		else if (!strncmp(l, "# TYPE ", 7))
			ok = pw__tp_type(&t, l, len);
		else if (*l == '#')
			ok = pw__tp_fail(why, n, "unknown comment", l, len);
		else
			ok = pw__tp_sample(&t, l, len);
		l = nl + 1;
	}
	for (size_t i = 0; i < t.nseen; i++)
		free(t.seen[i]);
	free(t.seen);
	free(t.names);
	return ok;
}

/*
 * The sum of the samples of metric @name whose labels contain @with
 * (e.g. "status=\"200\""; NULL: all), and how many there were in *@count
 * (may be NULL).
 */
static inline double pw_test_prom_sum(const char *text, const char *name,
				      const char *with, unsigned *count)
{
	size_t n = strlen(name);
	double sum = 0;
	unsigned c = 0;

	for (const char *l = text; l && *l;
	     l = strchr(l, '\n'), l = l ? l + 1 : l) {
		const char *nl = strchr(l, '\n');
		if (*l == '#' || strncmp(l, name, n) ||
		    (l[n] != '{' && l[n] != ' '))
			continue;
		const char *sp = memchr(l, ' ', (size_t)(nl - l));
		if (with) {
			char *line = strndup(l, (size_t)(sp - l));
			bool has = strstr(line, with) != NULL;
			free(line);
			if (!has)
				continue;
		}
		sum += strtod(sp + 1, NULL);
		c++;
	}
	if (count)
		*count = c;
	return sum;
}

#endif /* PW_TESTS_PROM_H */
