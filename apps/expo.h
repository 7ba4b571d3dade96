/* SPDX-License-Identifier: MIT */
/*
 * expo.h - the exposition writer of a command's own counters: the same
 * calls write the Prometheus text format (version 0.0.4) or JSON, so a
 * metric is named once for both (internal to the pinwheel command).
 *
 *	struct pw_expo e;
 *
 *	pw_expo_begin(&e, f, PW_EXPO_PROMETHEUS, "http");
 *	pw_expo_metric(&e, "requests", "Requests answered.", PW_EXPO_COUNTER);
 *	pw_expo_sample(&e, NULL, 42);
 *	pw_expo_metric(&e, "responses", "Responses by status.",
 *		       PW_EXPO_COUNTER);
 *	pw_expo_sample(&e, (const char *[]){ "status", "200", NULL }, 40);
 *	pw_expo_sample(&e, (const char *[]){ "status", "404", NULL }, 2);
 *	return pw_expo_end(&e);
 *
 * Prometheus: every metric is named pinwheel_<cmd>_<name>, a counter's
 * name ending in _total; "# HELP" and "# TYPE" come once, before its
 * first sample (a metric without samples prints nothing); label values
 * are escaped (backslash, double quote, newline). JSON: one object, each
 * metric a member under its Prometheus name: a number when it has no
 * labels, else an array of objects holding its labels and "value".
 *
 * Mistakes are refused, never written: a metric or label name that is
 * not [a-zA-Z_][a-zA-Z0-9_]*, a metric named twice, a series (the same
 * labels) given twice, a sample with labels where the metric had none or
 * the other way round, a sample before any metric. Each is counted in
 * e->refused and makes pw_expo_end() return -EINVAL; what was valid is
 * written all the same.
 *
 * Threads: a struct pw_expo belongs to the thread writing it.
 */
#ifndef PW_APPS_EXPO_H
#define PW_APPS_EXPO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The output format. */
enum pw_expo_format {
	PW_EXPO_PROMETHEUS, /* text exposition format 0.0.4 */
	PW_EXPO_JSON,	    /* one JSON object */
};

/* A metric's type. */
enum pw_expo_type {
	PW_EXPO_COUNTER, /* only goes up; its name ends in _total */
	PW_EXPO_GAUGE,	 /* goes up and down */
};

/* Metric names and series remembered for the duplicate checks. */
#define PW_EXPO_MAX_METRICS 256
#define PW_EXPO_MAX_SERIES  512

/* One exposition being written; fields are the writer's. */
struct pw_expo {
	FILE *f;
	enum pw_expo_format fmt;
	char prefix[48]; /* "pinwheel_<cmd>_" */
	char name[160];	 /* the current metric's full name */
	char help[256];	 /* its help line */
	enum pw_expo_type type;
	bool have_metric; /* pw_expo_metric() named one */
	bool started;	  /* its first sample was written */
	bool labelled;	  /* its samples carry labels */
	bool members;	  /* JSON: a member was written */
	bool inner;	  /* JSON: members of an object the caller opened */
	unsigned nmetrics, nseries;
	unsigned refused;		       /* calls refused (see above) */
	uint64_t metrics[PW_EXPO_MAX_METRICS]; /* hashes of names */
	uint64_t series[PW_EXPO_MAX_SERIES];   /* hashes, this metric's */
};

/**
 * pw_expo_begin - start writing an exposition of command @cmd's counters
 * ("http": names pinwheel_http_...) to @f in format @fmt. JSON opens the
 * object.
 * Return: 0; -EINVAL for NULL arguments, an unknown @fmt or a @cmd that
 * is not a valid name part (then nothing is written and every later call
 * is refused).
 * Context: any thread.
 */
int pw_expo_begin(struct pw_expo *e, FILE *f, enum pw_expo_format fmt,
		  const char *cmd);

/**
 * pw_expo_begin_members - as pw_expo_begin(), but in JSON the members go
 * into an object the caller has opened and written members to (the
 * runtime's metrics): each is written with a leading comma, and
 * pw_expo_end() closes the object. Prometheus: as pw_expo_begin().
 * Return: as pw_expo_begin().
 * Context: any thread.
 */
int pw_expo_begin_members(struct pw_expo *e, FILE *f, enum pw_expo_format fmt,
			  const char *cmd);

/**
 * pw_expo_prefix - name the metrics from here on pinwheel_<cmd>_... (NULL
 * @cmd: pinwheel_...), for counters that are not the command's own (the
 * scrape endpoint's).
 * Return: 0; -EINVAL (refused, counted) for a bad @cmd.
 * Context: the thread writing @e.
 */
int pw_expo_prefix(struct pw_expo *e, const char *cmd);

/**
 * pw_expo_metric - the metric the next samples belong to: pinwheel_<cmd>_
 * @name (with _total for a counter), its one line of @help (newlines and
 * backslashes in it are escaped) and @type. Nothing is written until its
 * first sample.
 * Return: 0; -EINVAL (refused, counted) for a bad or repeated name.
 * Context: the thread writing @e.
 */
int pw_expo_metric(struct pw_expo *e, const char *name, const char *help,
		   enum pw_expo_type type);

/**
 * pw_expo_sample - one sample of the current metric: @labels is NULL (no
 * labels) or a NULL-terminated array of name, value, name, value...; the
 * values are any text (escaped as needed).
 * Return: 0; -EINVAL (refused, counted) for no current metric, a bad
 * label name, an odd array, a series already given, or labels where the
 * metric's first sample had none (or the reverse).
 * Context: the thread writing @e.
 */
int pw_expo_sample(struct pw_expo *e, const char *const *labels,
		   uint64_t value);

/**
 * pw_expo_end - finish: JSON closes the object (and a newline follows);
 * flush @f.
 * Return: 0; -EINVAL when a call was refused; -EIO when writing failed.
 * Context: the thread writing @e.
 */
int pw_expo_end(struct pw_expo *e);

#endif /* PW_APPS_EXPO_H */
