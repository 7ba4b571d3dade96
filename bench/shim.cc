// SPDX-License-Identifier: MIT
//
// shim.cc - registers pinwheel's C benchmarks with Google Benchmark.
//
// The C side sees struct pw_bench, which is benchmark::State under another
// name; every call below is a thin forward. main() is Google Benchmark's.
#include <benchmark/benchmark.h>

#include "bench/bench.h"

static benchmark::State &S(struct pw_bench *b)
{
	return *reinterpret_cast<benchmark::State *>(b);
}

extern "C" void pw_bench_register(const char *name, pw_bench_fn fn,
				  const int64_t *args, int nargs, int threads)
{
	auto *bm = benchmark::RegisterBenchmark(
		name, [fn](benchmark::State &st) {
			fn(reinterpret_cast<struct pw_bench *>(&st));
		});
	for (int i = 0; i < nargs; i++)
		bm->Arg(args[i]);
	if (threads > 1)
		bm->Threads(threads);
	bm->UseRealTime();
}

extern "C" bool pw_bench_run(struct pw_bench *b, uint64_t n)
{
	return S(b).KeepRunningBatch(static_cast<benchmark::IterationCount>(n));
}

extern "C" int64_t pw_bench_arg(struct pw_bench *b)
{
	return S(b).range(0);
}

extern "C" int pw_bench_thread(struct pw_bench *b)
{
	return S(b).thread_index();
}

extern "C" void pw_bench_pause(struct pw_bench *b)
{
	S(b).PauseTiming();
}

extern "C" void pw_bench_resume(struct pw_bench *b)
{
	S(b).ResumeTiming();
}

extern "C" void pw_bench_counter(struct pw_bench *b, const char *name,
				 double value, bool rate)
{
	S(b).counters[name] = benchmark::Counter(
		value, rate ? benchmark::Counter::kIsRate
			    : benchmark::Counter::kDefaults);
}

extern "C" void pw_bench_items(struct pw_bench *b, int64_t items)
{
	S(b).SetItemsProcessed(items);
}

extern "C" void pw_bench_skip(struct pw_bench *b, const char *why)
{
	S(b).SkipWithError(why);
}

BENCHMARK_MAIN();
