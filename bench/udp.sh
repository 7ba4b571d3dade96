#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/udp.sh - pinwheel udp-echo against the floor, a plain
# recvmmsg/sendmmsg echo server (bench/udp_floor.c), under the same
# `pinwheel load --proto udp`, on one core each.
#
# Method
#   - The server under test runs on CPU $SERVER_CPU (0): `pinwheel
#     udp-echo --shards 1 --cpus 0` (one shard: one socket, one task that
#     takes every datagram queued and sends them back in one batch), or
#     `taskset -c 0 build/udp-floor` (one thread: recvmmsg of up to 64,
#     sendmmsg back).
#   - The load runs on CPU $CLIENT_CPU (1): `pinwheel load --proto udp
#     --shards 1 --cpus 1 --conns $CONNS --size $SIZE`: $CONNS connected
#     sockets, one datagram in flight on each, closed loop.
#   - Runs alternate A B A B (odd rounds udp-echo first, even rounds the
#     floor first), $ROUNDS rounds, so drift in the machine's state hits
#     both alike. Each run starts a fresh server, warms it with a load of
#     $WARMUP, then measures a load of $DURATION.
#   - Reported per run: round trips per second (the load's throughput),
#     the datagrams lost, and the server's CPU time per datagram echoed:
#     utime + stime of the server process (all threads) from
#     /proc/PID/stat just before and just after the measured load, in
#     clock ticks turned into nanoseconds, over the round trips answered.
#     Per round: udp-echo's CPU per datagram over the floor's. Then the
#     medians, and the median of the per-round ratios (goal: at most
#     1.1x).
#   - A table goes to stdout, JSON to $OUT (build/bench-udp.json).
#
# Caveat: the numbers mean something only on an otherwise idle machine
# with at least two CPUs; on a shared machine, read the ratio only.
#
# Usage: bench/udp.sh [OUT.json]
#   environment: DURATION=5s ROUNDS=5 CONNS=32 SIZE=64 WARMUP=1s
#                SERVER_CPU=0 CLIENT_CPU=1 PORT=18590
#                PINWHEEL=build/pinwheel FLOOR=build/udp-floor
#                PINWHEEL_FLAGS= (more flags for `pinwheel udp-echo`,
#                e.g. "--batch-wait 50us")
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-5}
CONNS=${CONNS:-32}
SIZE=${SIZE:-64}
WARMUP=${WARMUP:-1s}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PORT=${PORT:-18590}
PINWHEEL=${PINWHEEL:-$here/build/pinwheel}
FLOOR=${FLOOR:-$here/build/udp-floor}
PINWHEEL_FLAGS=${PINWHEEL_FLAGS:-}
OUT=${1:-$here/build/bench-udp.json}

# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"

check_rounds
command -v taskset >/dev/null || die "needs taskset (util-linux)"
[ -x "$PINWHEEL" ] || die "$PINWHEEL is not built (run make)"
[ -x "$FLOOR" ] || die "$FLOOR is not built (run make udp-floor)"

bench_tmp udp

wait_banner() { # log: wait up to 5 s for "listening on"
	for _ in $(seq 1 100); do
		grep -q 'listening on' "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	cat "$1" >&2
	die "the server did not start"
}

load() { # duration json
	taskset -c "$CLIENT_CPU" "$PINWHEEL" load --proto udp \
		"127.0.0.1:$PORT" --shards 1 --cpus "$CLIENT_CPU" \
		--conns "$CONNS" --size "$SIZE" --duration "$1" --warmup 0 \
		--quiet --json "$2" >"$tmp/load.out" 2>&1 ||
		{ cat "$tmp/load.out" >&2; die "the load failed"; }
}

json_num() { # file key: the first number after "key":
	grep -o "\"$2\": [0-9.]*" "$1" | head -n 1 | awk '{ print $2 }'
}

RESULTS=$tmp/results
: >"$RESULTS"
run_one() { # name
	local name=$1
	if [ "$name" = udp-echo ]; then
		# shellcheck disable=SC2086 # PINWHEEL_FLAGS: words on purpose
		"$PINWHEEL" udp-echo --listen "127.0.0.1:$PORT" --shards 1 \
			--cpus "$SERVER_CPU" $PINWHEEL_FLAGS >"$tmp/srv.log" 2>&1 &
	else
		taskset -c "$SERVER_CPU" "$FLOOR" "127.0.0.1:$PORT" \
			>"$tmp/srv.log" 2>&1 &
	fi
	server_pid=$!
	wait_banner "$tmp/srv.log"
	load "$WARMUP" "$tmp/warm.json"
	local t0 t1
	t0=$(cpu_ticks)
	load "$DURATION" "$tmp/run.json"
	t1=$(cpu_ticks)
	stop_server
	local rps got lost cpu_ns
	rps=$(json_num "$tmp/run.json" throughput_rps)
	got=$(json_num "$tmp/run.json" received)
	lost=$(json_num "$tmp/run.json" lost)
	[ -n "$got" ] && [ "$got" != 0 ] || die "no round trip against $name"
	cpu_ns=$(awk -v a="$t0" -v b="$t1" -v hz="$TCK" -v n="$got" \
		'BEGIN { printf "%.1f", (b - a) * 1e9 / hz / n }')
	echo "$name $rps $cpu_ns $got $lost" >>"$RESULTS"
	printf '  %-8s round %d: %12.1f round trips/s  cpu %9s ns/datagram  (%s lost)\n' \
		"$name" "$round" "$rps" "$cpu_ns" "$lost"
}

echo "pinwheel udp-echo vs the floor (recvmmsg/sendmmsg): server on CPU" \
	"$SERVER_CPU, load on CPU $CLIENT_CPU, $CONNS sockets of $SIZE-byte" \
	"datagrams, $DURATION, $ROUNDS round(s)"
: >"$tmp/ratios"
for round in $(seq 1 "$ROUNDS"); do
	if [ $((round % 2)) = 1 ]; then
		run_one udp-echo
		run_one floor
	else
		run_one floor
		run_one udp-echo
	fi
	tail -n 2 "$RESULTS" | awk -v r="$round" '
		$1 == "udp-echo" { a = $3 } $1 == "floor" { b = $3 }
		END { printf "  round %d: udp-echo/floor cpu per datagram %.3fx\n", r, a / b
		      printf "%.4f\n", a / b > "/dev/stderr" }' 2>>"$tmp/ratios"
done

col() { # name column
	awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$RESULTS" | median 4
}
RATIO=$(median 4 <"$tmp/ratios")
echo
printf '%-9s %22s %24s\n' server "round trips/s (med)" "cpu ns/datagram (med)"
for name in udp-echo floor; do
	printf '%-9s %22s %24s\n' "$name" "$(col "$name" 2)" "$(col "$name" 3)"
done
echo "udp-echo/floor cpu per datagram, median of the per-round ratios:" \
	"${RATIO}x (goal: at most 1.1x)"

mkdir -p "$(dirname "$OUT")"
{
	printf '{\n  "duration": "%s", "rounds": %s, "conns": %s, "size": %s,\n' \
		"$DURATION" "$ROUNDS" "$CONNS" "$SIZE"
	printf '  "runs": [\n'
	awk '{ printf "%s    {\"server\": \"%s\", \"rps\": %s, \"cpu_ns_per_dgram\": %s, \"round_trips\": %s, \"lost\": %s}", (NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5 } END { print "" }' "$RESULTS"
	printf '  ],\n  "median": {\n'
	printf '    "udp-echo": {"rps": %s, "cpu_ns_per_dgram": %s},\n' \
		"$(col udp-echo 2)" "$(col udp-echo 3)"
	printf '    "floor": {"rps": %s, "cpu_ns_per_dgram": %s}\n' \
		"$(col floor 2)" "$(col floor 3)"
	printf '  },\n  "cpu_ratio_median": %s\n}\n' "$RATIO"
} >"$OUT"
echo "wrote $OUT"
