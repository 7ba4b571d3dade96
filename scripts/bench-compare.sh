#!/bin/sh
# bench-compare.sh - A/B the micro benchmarks of two builds: a git ref
# (the base) against the current tree's build/pinwheel-bench (the
# contender), with Google Benchmark's own compare tool doing the U test.
#
# Usage: scripts/bench-compare.sh BASE     (make bench-compare BASE=REF)
#        scripts/bench-compare.sh --self-test
#
# The base is exported with git archive into build/compare/base-SHA and
# built there by its own Makefile (kept and reused for that commit). Both
# binaries then run alternated, COMPARE_ROUNDS rounds (the base first in
# odd rounds, the contender first in even ones), pinned to the same CPUs,
# COMPARE_REPS repetitions per run. Each side's rounds are merged into one
# JSON whose repetitions are every run of every round, plus a median row;
# only the benchmarks both sides ran are kept (the others are named), and
# /usr/share/benchmark/compare.py (Debian's libbenchmark-tools) prints the
# change per benchmark with the Mann-Whitney U test's p-value. The merged
# JSON and the comparison stay in build/compare/last.
#
# Environment (make passes its command-line variables through):
#   COMPARE_ROUNDS    alternated rounds (5)
#   COMPARE_REPS      repetitions of each benchmark per run (2)
#   COMPARE_FILTER    --benchmark_filter regex (every benchmark)
#   COMPARE_MIN_TIME  --benchmark_min_time in seconds (0.2)
#   COMPARE_CPUS      taskset CPU list for both sides (the CPUs this shell
#                     may use); with one CPU, PW_BENCH_CPU names it too
#   COMPARE_ALPHA     significance level of the U test (0.05)
#   COMPARE_CONTENDER the contender binary (build/pinwheel-bench)
#   COMPARE_PYTHON    Debian's python3, which has scipy (/usr/bin/python3)
#
# --self-test merges the round files in tests/fixtures/bench-compare and
# checks the result against the expected files there (no benchmark runs).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
PY=${COMPARE_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=python3
COMPARE_PY=/usr/share/benchmark/compare.py
tmp=
partial=
child=

usage() {
	cat >&2 <<'EOF'
usage: make bench-compare BASE=<git ref> [COMPARE_ROUNDS=5] [COMPARE_REPS=2]
           [COMPARE_FILTER=REGEX] [COMPARE_MIN_TIME=0.2] [COMPARE_CPUS=LIST]
       scripts/bench-compare.sh BASE | --self-test

Builds BASE in build/compare/base-SHA, runs its build/pinwheel-bench and
the current tree's in alternated rounds on the same CPUs, and prints the
change per benchmark with the U test's p-value (Google Benchmark's
compare.py). Example:
  make bench-compare BASE=main COMPARE_FILTER='bm_spawn_join/'
EOF
}

die() {
	echo "bench-compare: $*" >&2
	exit 1
}

cleanup() {
	[ -z "$child" ] || kill "$child" 2>/dev/null || true
	[ -z "$tmp" ] || rm -rf "$tmp"
	[ -z "$partial" ] || rm -rf "$partial"
}

interrupted() {
	trap - EXIT
	cleanup
	echo "bench-compare: interrupted; nothing compared${base_dir:+ (the base build in ${base_dir#"$top"/} is kept)}" >&2
	exit 130
}

# run_bg LOG CMD... - run CMD in the background with its output in LOG and
# wait for it, so that a signal reaches the trap at once (which stops it).
run_bg() {
	log=$1
	shift
	"$@" >"$log" 2>&1 &
	child=$!
	rc=0
	wait "$child" || rc=$?
	child=
	return "$rc"
}

# merge_py MODE ARGS... - the JSON steps (Python's standard library only).
#   merge OUT ROUND...  one side's round files into OUT: aggregate rows
#       dropped; each benchmark's good rows from every round, in round
#       order, as its repetitions (repetitions, repetition_index
#       renumbered), then a "_median" aggregate row (real and CPU time);
#       a benchmark with no good row goes to "skipped" with its message.
#   common BASE NEW  keep in both files only the benchmarks both have;
#       print one line per benchmark left out, with the reason.
merge_py() {
	"$PY" - "$@" <<'EOF'
import json, statistics, sys

# A run whose filter matched nothing leaves an empty file: no benchmarks.
def load(path):
    with open(path) as f:
        text = f.read()
    return json.loads(text) if text.strip() else {}

# One benchmark row per line (Google Benchmark's own layout, folded).
def save(path, doc):
    rows = ",\n".join("    " + json.dumps(b) for b in doc["benchmarks"])
    with open(path, "w") as f:
        f.write('{\n  "context": %s,\n  "benchmarks": [\n%s\n  ],\n'
                '  "skipped": %s\n}\n' % (json.dumps(doc["context"]), rows,
                                          json.dumps(doc["skipped"])))

def merge(out, rounds):
    docs = [load(p) for p in rounds]
    order, rows, errors = [], {}, {}
    for doc in docs:
        for b in doc.get("benchmarks", []):
            if b.get("run_type") == "aggregate":
                continue
            name = b["run_name"]
            if name not in rows:
                order.append(name)
                rows[name] = []
            if b.get("error_occurred"):
                errors.setdefault(name, b.get("error_message", "error"))
            else:
                rows[name].append(b)
    benchmarks, skipped = [], {}
    for name in order:
        good = rows[name]
        if not good:
            skipped[name] = errors[name]
            continue
        for i, b in enumerate(good):
            b = dict(b)
            b["repetitions"] = len(good)
            b["repetition_index"] = i
            benchmarks.append(b)
        first = good[0]
        benchmarks.append({
            "name": name + "_median",
            "family_index": first.get("family_index", 0),
            "per_family_instance_index":
                first.get("per_family_instance_index", 0),
            "run_name": name,
            "run_type": "aggregate",
            "repetitions": len(good),
            "threads": first.get("threads", 1),
            "aggregate_name": "median",
            "aggregate_unit": "time",
            "iterations": len(good),
            "real_time": statistics.median(b["real_time"] for b in good),
            "cpu_time": statistics.median(b["cpu_time"] for b in good),
            "time_unit": first["time_unit"],
        })
    context = next((d["context"] for d in docs if "context" in d), {})
    save(out, {"context": context, "benchmarks": benchmarks,
               "skipped": skipped})

def common(base_path, new_path):
    sides = [("base", base_path, load(base_path)),
             ("contender", new_path, load(new_path))]
    ran = [[b["run_name"] for b in d["benchmarks"]] for _, _, d in sides]
    keep = set(ran[0]) & set(ran[1])
    seen = []
    for _, _, d in sides:
        for name in [b["run_name"] for b in d["benchmarks"]] + \
                list(d.get("skipped", {})):
            if name not in keep and name not in seen:
                seen.append(name)
    for name in seen:
        why = []
        for (side, _, d), names in zip(sides, ran):
            if name in d.get("skipped", {}):
                why.append("%s skipped it (%s)" % (side, d["skipped"][name]))
            elif name not in names:
                why.append("%s has no such benchmark" % side)
        print("  %s: %s" % (name, "; ".join(why)))
    for _, path, d in sides:
        d["benchmarks"] = [b for b in d["benchmarks"]
                           if b["run_name"] in keep]
        save(path, d)

if sys.argv[1] == "merge":
    merge(sys.argv[2], sys.argv[3:])
elif sys.argv[1] == "common":
    common(sys.argv[2], sys.argv[3])
else:
    sys.exit("merge_py: unknown mode " + sys.argv[1])
EOF
}

# verdict_py DIFF ALPHA - one line per benchmark from compare.py's JSON
# dump: the change of the median real time and the U test's p-value on
# real time, named faster, slower or no significant change.
verdict_py() {
	"$PY" - "$@" <<'EOF'
import json, sys

diff = json.load(open(sys.argv[1]))
alpha = float(sys.argv[2])
median = {d["name"][:-len("_median")]: d["measurements"][0]["time"]
          for d in diff if d.get("aggregate_name") == "median"}
width = max([len(n) for n in median] + [9])
print("%-*s  %8s  %8s  %s" % (width, "benchmark", "median", "p", "verdict"))
for d in diff:
    name = d["name"]
    if name not in median:
        continue
    u = d.get("utest") or {}
    p = u.get("time_pvalue")
    change = median[name]
    if p is None:
        verdict, ptxt = "too few runs for the U test", "-"
    else:
        ptxt = "%.4f" % p
        if p >= alpha:
            verdict = "no significant change"
        else:
            verdict = "faster" if change < 0 else "slower"
    print("%-*s  %+7.1f%%  %8s  %s" % (width, name, change * 100, ptxt,
                                      verdict))
EOF
}

self_test() {
	fx=$top/tests/fixtures/bench-compare
	tmp=$(mktemp -d)
	merge_py merge "$tmp/base.json" "$fx/base-1.json" "$fx/base-2.json"
	merge_py merge "$tmp/contender.json" "$fx/contender-1.json" \
		"$fx/contender-2.json"
	merge_py common "$tmp/base.json" "$tmp/contender.json" \
		>"$tmp/skipped.txt"
	for f in base.json contender.json skipped.txt; do
		diff -u "$fx/expect-$f" "$tmp/$f" >&2 ||
			die "self-test: $f differs from tests/fixtures/bench-compare/expect-$f"
	done
	echo "  TEST   bench-compare merge (tests/fixtures/bench-compare)"
}

whole() {
	case $2 in
	'' | *[!0-9]*) die "$1 must be a whole number, not '$2'" ;;
	esac
	[ "$2" -ge "$3" ] || die "$1 must be at least $3, not $2"
}

# build_base REF - export and build REF once; sets base_dir and base_sha.
build_base() {
	base_sha=$(git -C "$top" rev-parse --verify --quiet "$1^{commit}") ||
		die "unknown git ref '$1' (git rev-parse cannot find a commit by that name)"
	short=$(git -C "$top" rev-parse --short=10 "$base_sha")
	base_dir=$top/build/compare/base-$short
	if [ ! -f "$base_dir/Makefile" ]; then
		echo "bench-compare: exporting $1 ($short) to build/compare/base-$short"
		mkdir -p "$top/build/compare"
		partial=$base_dir.part
		rm -rf "$partial" "$base_dir"
		mkdir "$partial"
		git -C "$top" archive "$base_sha" | tar -x -C "$partial"
		mv "$partial" "$base_dir"
		partial=
	fi
	echo "bench-compare: building the base in build/compare/base-$short"
	run_bg "$base_dir/build.log" env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make -C "$base_dir" -j"${COMPARE_JOBS:-2}" build/pinwheel-bench || {
		tail -n 20 "$base_dir/build.log" >&2
		die "the base $1 ($short) does not build (whole log: build/compare/base-$short/build.log)"
	}
}

# run_side SIDE ROUND - one run of one side's binary, JSON to the temp dir.
run_side() {
	side=$1 round=$2
	if [ "$side" = base ]; then
		bin=$base_dir/build/pinwheel-bench dir=$base_dir
	else
		bin=$contender dir=$top
	fi
	out=$tmp/$1-$2
	set -- taskset -c "$cpus" "$bin" --benchmark_out="$out.json" \
		--benchmark_out_format=json --benchmark_repetitions="$reps" \
		--benchmark_min_time="$min_time" ${filter:+"--benchmark_filter=$filter"}
	[ -z "$one_cpu" ] || set -- env PW_BENCH_CPU="$one_cpu" "$@"
	cd "$dir"
	run_bg "$out.log" "$@" || {
		tail -n 20 "$out.log" >&2
		die "the $side run of round $round failed ($bin)"
	}
	cd "$top"
}

run_rounds() {
	start=$(date +%s)
	round=1
	while [ "$round" -le "$rounds" ]; do
		if [ $((round % 2)) -eq 1 ]; then order="base contender"; else order="contender base"; fi
		for side in $order; do
			printf 'bench-compare: round %d/%d: %s\n' "$round" "$rounds" "$side"
			run_side "$side" "$round"
		done
		if [ "$round" -eq 1 ] && [ "$rounds" -gt 1 ]; then
			took=$(($(date +%s) - start))
			echo "bench-compare: round 1 took ${took} s; about $((took * (rounds - 1))) s to go"
		fi
		round=$((round + 1))
	done
}

# merge_side SIDE - SIDE's round files, in round order, into SIDE.json.
merge_side() {
	side=$1
	set --
	i=1
	while [ "$i" -le "$rounds" ]; do
		set -- "$@" "$tmp/$side-$i.json"
		i=$((i + 1))
	done
	merge_py merge "$tmp/$side.json" "$@"
}

main() {
	ref=$1
	rounds=${COMPARE_ROUNDS:-5}
	reps=${COMPARE_REPS:-2}
	filter=${COMPARE_FILTER:-}
	min_time=${COMPARE_MIN_TIME:-0.2}
	alpha=${COMPARE_ALPHA:-0.05}
	contender=${COMPARE_CONTENDER:-$top/build/pinwheel-bench}
	cpus=${COMPARE_CPUS:-$(taskset -pc $$ | sed 's/.*: *//')}
	whole COMPARE_ROUNDS "$rounds" 1
	whole COMPARE_REPS "$reps" 1
	case $cpus in
	*[!0-9]*) one_cpu= ;;
	*) one_cpu=$cpus ;;
	esac
	[ -f "$COMPARE_PY" ] ||
		die "$COMPARE_PY is missing: install libbenchmark-tools"
	"$PY" -c 'import scipy.stats, numpy' 2>/dev/null ||
		die "$PY cannot import scipy and numpy: install python3-scipy python3-numpy (or set COMPARE_PYTHON)"
	[ -x "$contender" ] ||
		die "no contender binary $contender: run make build/pinwheel-bench"
	if [ $((rounds * reps)) -lt 4 ]; then
		echo "bench-compare: warning: $rounds round(s) x $reps repetition(s) is too few runs: the U test cannot reach p < 0.05 with fewer than 4 per side" >&2
	fi

	build_base "$ref"
	head=$(git -C "$top" rev-parse --short=10 HEAD)
	dirty=$(git -C "$top" status --porcelain --untracked-files=no)
	echo "bench-compare: base $ref ($short) against the current tree ($head${dirty:+ with uncommitted changes}), $rounds rounds x $reps repetitions, CPUs $cpus${filter:+, filter '$filter'}"
	mkdir -p "$top/build/compare"
	tmp=$(mktemp -d "$top/build/compare/run.XXXXXX")
	run_rounds

	merge_side base
	merge_side contender
	merge_py common "$tmp/base.json" "$tmp/contender.json" >"$tmp/skipped.txt"
	if [ -s "$tmp/skipped.txt" ]; then
		echo "bench-compare: not compared (not run by both sides):"
		cat "$tmp/skipped.txt"
	fi
	grep -q '"run_type": "iteration"' "$tmp/base.json" ||
		die "no benchmark ran on both sides${filter:+ (COMPARE_FILTER '$filter')}"

	color=--no-color
	[ ! -t 1 ] || color=
	echo
	(cd "$tmp" && "$PY" "$COMPARE_PY" -a $color --alpha "$alpha" \
		-d diff.json benchmarks base.json contender.json) |
		tee "$tmp/compare.txt"
	echo
	echo "Verdicts (median real time, contender against base; U test at alpha $alpha):"
	verdict_py "$tmp/diff.json" "$alpha" | tee -a "$tmp/compare.txt"

	rm -rf "$top/build/compare/last"
	mkdir "$top/build/compare/last"
	mv "$tmp/base.json" "$tmp/contender.json" "$tmp/diff.json" \
		"$tmp/compare.txt" "$tmp/skipped.txt" "$top/build/compare/last/"
	echo "bench-compare: merged JSON and this table in build/compare/last"
}

trap cleanup EXIT
trap interrupted INT TERM HUP
base_dir=
case ${1:-} in
--self-test) self_test ;;
-h | --help)
	usage
	exit 0
	;;
'' | -*)
	usage
	exit 2
	;;
*) main "$1" ;;
esac
