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

/* Whether @text is a valid exposition (see above); why not in @why. */
static inline bool pw_test_prom_check(const char *text, char *why, size_t n)
{
	char cur[256] = "", help[256] = "", type[32] = "";
	char **seen = NULL, *names = calloc(1, 1);
	size_t nseen = 0, names_len = 0;
	bool ok = true;

	for (const char *l = text; ok && *l;) {
		const char *nl = strchr(l, '\n');
		if (!nl)
			return pw__tp_fail(why, n, "no newline", l, strlen(l));
		size_t len = (size_t)(nl - l);
		char name[256], kind[32];
		if (!strncmp(l, "# HELP ", 7)) {
			size_t k = strcspn(l + 7, " \n");
			snprintf(help, sizeof(help), "%.*s", (int)k, l + 7);
		} else if (!strncmp(l, "# TYPE ", 7)) {
			if (sscanf(l, "# TYPE %255s %31s", name, kind) != 2 ||
			    strcmp(name, help) ||
			    (strcmp(kind, "counter") && strcmp(kind, "gauge")))
				ok = pw__tp_fail(why, n, "bad TYPE or no HELP",
						 l, len);
			/* A metric declared twice. */
			char key[260];
			snprintf(key, sizeof(key), " %s ", name);
			if (strstr(names, key))
				ok = pw__tp_fail(why, n, "declared twice", l,
						 len);
			names = realloc(names, names_len + strlen(key) + 1);
			strcpy(names + names_len, key);
			names_len += strlen(key);
			snprintf(cur, sizeof(cur), "%s", name);
			snprintf(type, sizeof(type), "%s", kind);
			if (!strcmp(kind, "counter") &&
			    (strlen(name) < 6 ||
			     strcmp(name + strlen(name) - 6, "_total")))
				ok = pw__tp_fail(why, n,
						 "counter without _total", l,
						 len);
		} else if (*l == '#') {
			ok = pw__tp_fail(why, n, "unknown comment", l, len);
		} else {
			size_t k = strcspn(l, "{ ");
			const char *p = l + k;
			if (!pw__tp_name(l, k, true) || strncmp(l, cur, k) ||
			    strlen(cur) != k)
				ok = pw__tp_fail(why, n,
						 "sample not of the TYPE "
						 "before it",
						 l, len);
			if (ok && *p == '{' && !(p = pw__tp_labels(p)))
				ok = pw__tp_fail(why, n, "bad labels", l, len);
			if (ok && *p++ != ' ')
				ok = pw__tp_fail(why, n, "no value", l, len);
			const char *e = ok ? pw__tj_number(p) : NULL;
			if (ok && (!e || e != nl))
				ok = pw__tp_fail(why, n, "value not a number",
						 l, len);
			size_t series = ok ? (size_t)(p - 1 - l) : 0;
			for (size_t i = 0; ok && i < nseen; i++)
				if (strlen(seen[i]) == series &&
				    !strncmp(seen[i], l, series))
					ok = pw__tp_fail(why, n, "series twice",
							 l, len);
			if (ok) {
				seen = realloc(seen,
					       (nseen + 1) * sizeof(*seen));
				seen[nseen++] = strndup(l, series);
			}
		}
		l = nl + 1;
	}
	for (size_t i = 0; i < nseen; i++)
		free(seen[i]);
	free(seen);
	free(names);
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
