/* SPDX-License-Identifier: MIT */
/*
 * bench.h - the C face of pinwheel's Google Benchmark shim.
 *
 * Benchmarks are plain C functions. Each registers itself at load time
 * with PW_BENCH() or PW_BENCH_ARGS(); shim.cc hands them to Google
 * Benchmark, which times them, repeats them and writes the table and JSON.
 *
 * A benchmark body runs its measured loop in batches, so that crossing
 * the C/C++ boundary costs nothing per iteration:
 *
 *	static void bm_thing(struct pw_bench *b)
 *	{
 *		while (pw_bench_run(b, 1024))
 *			for (int i = 0; i < 1024; i++)
 *				do_thing();
 *	}
 *	PW_BENCH(bm_thing);
 *
 * Each iteration counted by pw_bench_run() is one "operation": Google
 * Benchmark reports time per iteration, i.e. per operation.
 */
#ifndef PW_BENCH_H
#define PW_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "pinwheel/task.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pw_bench; /* wraps benchmark::State */

typedef void (*pw_bench_fn)(struct pw_bench *b);

/**
 * pw_bench_register - register @fn under @name with @nargs argument sets.
 * @args: @nargs values; the benchmark runs once per value, reading it with
 *        pw_bench_arg(). NULL and 0 for a benchmark without arguments.
 * @threads: run the body on this many threads at once (0 or 1: one).
 * Called from constructors (PW_BENCH*), before main().
 */
void pw_bench_register(const char *name, pw_bench_fn fn, const int64_t *args,
		       int nargs, int threads);

/**
 * pw_bench_run - start or continue the timed loop.
 * Return: true while another batch of @n iterations is wanted; the caller
 * then performs exactly @n iterations. false when timing is done.
 */
bool pw_bench_run(struct pw_bench *b, uint64_t n);

/** pw_bench_arg - the argument of this run; only for PW_BENCH_ARGS ones. */
int64_t pw_bench_arg(struct pw_bench *b);

/** pw_bench_thread - index of the calling benchmark thread (0-based). */
int pw_bench_thread(struct pw_bench *b);

/** pw_bench_pause / pw_bench_resume - exclude set-up work from timing. */
void pw_bench_pause(struct pw_bench *b);
void pw_bench_resume(struct pw_bench *b);

/**
 * pw_bench_counter - report a named figure beside the time.
 * @rate: true to report it per second of measured time (e.g. messages/s),
 *        false to report the value as given.
 */
void pw_bench_counter(struct pw_bench *b, const char *name, double value,
		      bool rate);

/** pw_bench_items - items processed, so Google Benchmark prints items/s. */
void pw_bench_items(struct pw_bench *b, int64_t items);

/** pw_bench_skip - abandon this run with a message (e.g. no io_uring). */
void pw_bench_skip(struct pw_bench *b, const char *why);

struct pw_runtime;

/**
 * pw_bench_runtime - the runtime of the task benchmarks: the defaults,
 * on the one CPU PW_BENCH_CPU names when it is set; NULL after
 * pw_bench_skip() when it cannot start. (bench_task.c)
 */
struct pw_runtime *pw_bench_runtime(struct pw_bench *b);

/**
 * pw_bench_run_in_task - run @fn(@state) as an ordinary task spawned by
 * pw_block_on()'s task on @rt's shard (so it may spawn, yield and join
 * like any task) and await it.
 * Return: its result; -EIO when pw_block_on() failed. (bench_task.c)
 */
int64_t pw_bench_run_in_task(struct pw_runtime *rt, pw_poll_fn fn, void *state);

/**
 * pw_bench_call_roundtrips - time pw_call round trips from shard 0 to
 * shard 1 of @rt for benchmark @b, one call in flight; with @busy, shard
 * 1 runs a task that yields without pause meanwhile. (bench_mesh.c)
 */
void pw_bench_call_roundtrips(struct pw_bench *b, struct pw_runtime *rt,
			      bool busy);

#define PW__BENCH_REG(fn, args, n, thr)                                   \
	__attribute__((constructor)) static void pw__bench_reg_##fn(void) \
	{                                                                 \
		pw_bench_register(#fn, fn, args, n, thr);                 \
	}

/* Register @fn with no arguments. */
#define PW_BENCH(fn) PW__BENCH_REG(fn, 0, 0, 1)

/* Register @fn once per value in the static array @arr. */
#define PW_BENCH_ARGS(fn, arr) \
	PW__BENCH_REG(fn, arr, (int)(sizeof(arr) / sizeof((arr)[0])), 1)

/* Register @fn to run on @thr threads at once (pw_bench_thread()). */
#define PW_BENCH_THREADS(fn, thr) PW__BENCH_REG(fn, 0, 0, thr)

#ifdef __cplusplus
}
#endif

#endif /* PW_BENCH_H */
