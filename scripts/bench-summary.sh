#!/bin/sh
# bench-summary.sh - one table from Google Benchmark's JSON output.
#
# Usage: scripts/bench-summary.sh build/bench.json
#
# Prints, per benchmark: its name (without the "/real_time" every
# pinwheel benchmark carries), the real time per operation, items per
# second when the benchmark counts items, and its own counters (e.g.
# w0_share). With --benchmark_repetitions, only the median rows are
# shown (the aggregates Google Benchmark adds). Benchmarks that were
# skipped show their message. Plain POSIX sh and awk: no python, no jq.
set -eu
[ $# -eq 1 ] || {
	echo "usage: $0 BENCH.json" >&2
	exit 2
}
[ -r "$1" ] || {
	echo "bench-summary: cannot read $1" >&2
	exit 1
}
awk '
function unquote(s) {
	sub(/^[ \t]*"/, "", s)
	sub(/",?[ \t]*$/, "", s)
	return s
}
function num(s) {
	sub(/,[ \t]*$/, "", s)
	return s + 0
}
# A time in unit u, as ns.
function to_ns(v, u) {
	if (u == "us") return v * 1e3
	if (u == "ms") return v * 1e6
	if (u == "s") return v * 1e9
	return v
}
function fmt_time(ns) {
	if (ns < 1e3) return sprintf("%.1f ns", ns)
	if (ns < 1e6) return sprintf("%.2f us", ns / 1e3)
	if (ns < 1e9) return sprintf("%.2f ms", ns / 1e6)
	return sprintf("%.3f s", ns / 1e9)
}
function fmt_rate(v) {
	if (v >= 1e9) return sprintf("%.2f G/s", v / 1e9)
	if (v >= 1e6) return sprintf("%.2f M/s", v / 1e6)
	if (v >= 1e3) return sprintf("%.2f k/s", v / 1e3)
	return sprintf("%.2f /s", v)
}
function fmt_counter(v) {
	if (v != 0 && (v < 0.001 || v >= 1e6)) return sprintf("%.3g", v)
	return sprintf("%.4g", v)
}
BEGIN {
	n = 0
	std = " name family_index per_family_instance_index run_name run_type " \
	    "repetitions repetition_index threads iterations real_time " \
	    "cpu_time time_unit aggregate_name aggregate_unit " \
	    "items_per_second bytes_per_second error_occurred error_message " \
	    "label "
}
/^  "benchmarks": \[/ { inb = 1; next }
inb && /^  \]/ { inb = 0; next }
inb && /^    \{/ { n++; obj = 1; next }
inb && /^    \}/ { obj = 0; next }
inb && obj {
	line = $0
	if (!match(line, /^[ \t]*"[^"]+":/))
		next
	key = substr(line, RSTART, RLENGTH)
	gsub(/[ \t":]/, "", key)
	val = substr(line, RSTART + RLENGTH)
	sub(/^[ \t]*/, "", val)
	if (key == "name") name[n] = unquote(val)
	else if (key == "run_name") run[n] = unquote(val)
	else if (key == "run_type") type[n] = unquote(val)
	else if (key == "aggregate_name") agg[n] = unquote(val)
	else if (key == "real_time") rt[n] = num(val)
	else if (key == "time_unit") unit[n] = unquote(val)
	else if (key == "items_per_second") items[n] = num(val)
	else if (key == "bytes_per_second") bytes[n] = num(val)
	else if (key == "error_occurred") err[n] = (val ~ /true/)
	else if (key == "error_message") msg[n] = unquote(val)
	else if (index(std, " " key " ") == 0 && val ~ /^-?[0-9]/)
		extra[n] = extra[n] (extra[n] == "" ? "" : ", ") key "=" \
		    fmt_counter(num(val))
}
END {
	if (n == 0) {
		print "bench-summary: no benchmark results in " FILENAME
		exit 1
	}
	for (i = 1; i <= n; i++)
		if (type[i] == "aggregate" && agg[i] == "median")
			{ has_median[run[i]] = 1; nmed++ }
	w = 4
	for (i = 1; i <= n; i++) {
		show[i] = (type[i] == "aggregate") ? (agg[i] == "median") \
		    : !(run[i] in has_median)
		label[i] = name[i]
		sub(/\/real_time/, "", label[i])
		if (type[i] == "aggregate") sub(/_median$/, "", label[i])
		if (show[i] && length(label[i]) > w) w = length(label[i])
	}
	printf "\nsummary (%s; real time per operation%s)\n", FILENAME, \
	    (nmed ? ", medians of the repetitions" : "")
	printf "%-" w "s  %12s  %12s  %s\n", "benchmark", "time/op", \
	    "items/s", "counters"
	for (i = 1; i <= n; i++) {
		if (!show[i]) continue
		if (err[i]) {
			printf "%-" w "s  skipped: %s\n", label[i], msg[i]
			continue
		}
		it = (i in items) ? fmt_rate(items[i]) : "-"
		ex = extra[i]
		if (i in bytes)
			ex = (ex == "" ? "" : ex ", ") "bytes/s=" fmt_counter(bytes[i])
		printf "%-" w "s  %12s  %12s  %s\n", label[i], \
		    fmt_time(to_ns(rt[i], unit[i])), it, ex
	}
}' "$1"
