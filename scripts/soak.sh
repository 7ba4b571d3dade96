#!/bin/sh
# soak.sh - run a test target again and again while the machine is kept
# busy, and count the runs that fail. The tests must hold on a loaded
# machine: this is how that is checked.
#
#   scripts/soak.sh [-n RUNS] [-t TARGET] [-l LOGDIR]
#
# RUNS (default 20) runs of `make TARGET` (default test; tsan and asan
# work too) one after another. During all of them `pinwheel http` (one
# shard, on CPU 0) serves `pinwheel load` (one shard, on the last CPU;
# closed loop, 2 connections) on loopback: a shard busy on each core of a
# two-core machine, plus the kernel's network work, so that the tests
# always compete for the CPU. (A heavier load, both commands on every
# core with 8 connections, slows `make test` more than tenfold on two
# cores, so that twenty runs take hours.) Each run's output goes to
# LOGDIR/run-N.log (default build/soak); the last line says how many of
# the runs failed, and the exit status is 1 if any did.
set -u

runs=20
target=test
logdir=build/soak
while getopts n:t:l: opt; do
	case $opt in
	n) runs=$OPTARG ;;
	t) target=$OPTARG ;;
	l) logdir=$OPTARG ;;
	*) echo "usage: $0 [-n RUNS] [-t TARGET] [-l LOGDIR]" >&2; exit 2 ;;
	esac
done
cd "$(dirname "$0")/.." || exit 2
make --no-print-directory all >/dev/null || exit 2
mkdir -p "$logdir" || exit 2

# A server on a port of its own choosing would be neater, but the load
# generator needs the number first; 127.0.0.1:18080 is held for the whole
# soak, so no test can be handed it.
addr=127.0.0.1:18080
last=$(($(nproc) - 1))
build/pinwheel http --listen "$addr" --shards 1 --cpus 0 \
	>"$logdir/server.log" 2>&1 &
server=$!
trap 'kill $load $server 2>/dev/null; wait 2>/dev/null' EXIT INT TERM
i=0
until build/pinwheel load --target "$addr" --requests 1 --warmup 0 \
	--quiet >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -ge 50 ] || ! kill -0 $server 2>/dev/null; then
		echo "soak: the load server did not start:" >&2
		cat "$logdir/server.log" >&2
		exit 2
	fi
	sleep 0.1 # waiting for the server to answer its first request
done
build/pinwheel load --target "$addr" --shards 1 --cpus "$last" --conns 2 \
	--duration 100000s --warmup 0 --quiet >"$logdir/load.log" 2>&1 &
load=$!
echo "soak: $runs runs of make $target; pinwheel load keeps the cores busy" \
	"($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"

failed=0
n=1
while [ $n -le "$runs" ]; do
	start=$(date +%s)
	if make --no-print-directory "$target" >"$logdir/run-$n.log" 2>&1; then
		verdict=passed
	else
		verdict=FAILED
		failed=$((failed + 1))
	fi
	sums=$(grep -h 'Synthesis' "$logdir/run-$n.log" |
		sed 's/.*Tested: \([0-9]*\).*Failing: \([0-9]*\).*Crashing: \([0-9]*\).*/\1 tests, \2 failing, \3 crashing/' |
		paste -sd';' -)
	echo "run $n: $verdict in $(($(date +%s) - start)) s ($sums;" \
		"load average $(cut -d' ' -f1 /proc/loadavg))"
	n=$((n + 1))
done
echo "soak: $((runs - failed)) passed, $failed failed"
[ $failed -eq 0 ]
