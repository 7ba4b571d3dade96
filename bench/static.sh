#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/static.sh - pinwheel http --root against nginx serving the same
# files, under wrk, on one core each.
#
# Method
#   - A temporary root holds a 4 KiB and a 1 MiB file of random bytes.
#     nginx runs from a generated configuration in the same temporary
#     folder: one worker process, `root` that folder, sendfile on,
#     access_log off, keepalive_requests effectively unlimited, no
#     open_file_cache (each request opens its file, as pinwheel's does).
#     pinwheel runs `pinwheel http --root DIR --shards 1 --cpus 0
#     --sndbuf 0`: one shard thread, the socket send buffer left to the
#     kernel's autotuning as nginx leaves it (the command's 16 KiB
#     default guards against clients that do not read, and costs a large
#     body a wake-up per 16 KiB).
#   - The server is pinned to CPU $SERVER_CPU (0), wrk to CPU $CLIENT_CPU
#     (1): `taskset -c 1 wrk -t1 -c64 -d10s --latency URL`. The kernel
#     runs pinwheel's splices in its io_uring worker threads, which the
#     shard's pinning does not bind: their CPU time is the process's and
#     is counted, wherever they ran.
#   - For each file, runs alternate A B A B (nginx, pinwheel) for $ROUNDS
#     rounds, so drift in the machine's state hits both alike. Each run
#     starts a fresh server, warms it for $WARMUP, then measures for
#     $DURATION. A run with an answer other than 2xx stops the script.
#   - Reported per run and as the median over runs: requests/s and p99
#     latency as wrk prints them (--latency), and the server's CPU time per
#     request: utime + stime of every process of the server (nginx: master
#     and worker; pinwheel: its one process, all threads, io_uring
#     workers included), read from /proc/PID/stat just before and just
#     after the measured run, in clock ticks converted to microseconds,
#     divided by the requests wrk completed; then the ratios pinwheel /
#     nginx of the medians (cpu_us/req below 1: pinwheel spends less).
#   - A table goes to stdout, JSON to $OUT (bench/results/static.json).
#
# Caveat: numbers mean something only on an otherwise idle machine with at
# least two CPUs; on a shared machine, treat them as a smoke test.
#
# Usage: bench/static.sh [OUT.json]
#   environment: DURATION=10s ROUNDS=3 CONNS=64 WARMUP=1s SERVER_CPU=0
#                CLIENT_CPU=1 PORT=18490 PINWHEEL=build/pinwheel
#                SIZES="4096 1048576" PINWHEEL_FLAGS= (more flags for
#                `pinwheel http`, e.g. "--sndbuf 16k"), KEEP=1 keeps the
#                temporary folder (logs, wrk outputs)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-64}
WARMUP=${WARMUP:-1s}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PORT=${PORT:-18490}
PINWHEEL=${PINWHEEL:-$here/build/pinwheel}
PINWHEEL_FLAGS=${PINWHEEL_FLAGS:-}
OUT=${1:-$here/bench/results/static.json}
SIZES=${SIZES:-4096 1048576}

# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"

check_rounds
for size in $SIZES; do
	case $size in *[!0-9]*) die "SIZES: $size is not a size in bytes" ;; esac
done
need_wrk_nginx
[ -x "$PINWHEEL" ] || die "$PINWHEEL is not built (run make)"

KEEP_TMP=${KEEP:-}
bench_tmp static

# nginx's worker may run as another user (nobody, when started as root).
chmod 755 "$tmp"
mkdir -m 755 "$tmp/root"
for size in $SIZES; do
	head -c "$size" /dev/urandom >"$tmp/root/f$size.bin"
	chmod 644 "$tmp/root/f$size.bin"
done

nginx_conf "
	sendfile on;" "		root $tmp/root;"

runs=()
run_one() {
	local name=$1 size=$2 reqs rps p99 errs non2xx cpu_us
	start_server "$name" --root "$tmp/root" --sndbuf 0
	wrk_measure "$name" "http://127.0.0.1:$PORT/f$size.bin" \
		"$tmp/wrk-$name-$size-${#runs[@]}.txt"
	stop_server
	[ "$non2xx" = 0 ] || die "$name: $non2xx answers were not 2xx"
	runs+=("$name $size $rps $p99 $cpu_us $reqs $errs $non2xx")
	printf '%-9s %8s %12s %10s %12s %10s %7s %7s\n' "$name" "$size" \
		"$rps" "$p99" "$cpu_us" "$reqs" "$errs" "$non2xx"
}

echo "pinwheel http --root vs nginx: wrk -t1 -c$CONNS -d$DURATION --latency," \
	"server on CPU $SERVER_CPU, wrk on CPU $CLIENT_CPU, $ROUNDS round(s)"
printf '%-9s %8s %12s %10s %12s %10s %7s %7s\n' server bytes req/s p99_us \
	cpu_us/req requests errors non2xx
for size in $SIZES; do
	for ((r = 0; r < ROUNDS; r++)); do
		run_one nginx "$size"
		run_one pinwheel "$size"
	done
done

# $1 / $2, or null.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "null" }'
}

echo
printf '%-9s %8s %12s %10s %12s\n' median bytes req/s p99_us cpu_us/req
json_runs=""
json_med=""
for size in $SIZES; do
	json_size=""
	declare -A med=()
	for name in nginx pinwheel; do
		sel=$(printf '%s\n' "${runs[@]}" | awk -v n="$name" -v s="$size" '$1 == n && $2 == s')
		m_rps=$(echo "$sel" | awk '{ print $3 }' | median 3)
		m_p99=$(echo "$sel" | awk '{ print $4 }' | median 3)
		m_cpu=$(echo "$sel" | awk '{ print $5 }' | median 3)
		med[$name.rps]=$m_rps
		med[$name.p99]=$m_p99
		med[$name.cpu]=$m_cpu
		printf '%-9s %8s %12s %10s %12s\n' "$name" "$size" "$m_rps" "$m_p99" "$m_cpu"
		json_size+="${json_size:+, }\"$name\": {\"requests_per_sec\": $m_rps, \"p99_us\": $m_p99, \"cpu_us_per_request\": $m_cpu}"
	done
	r_rps=$(ratio "${med[pinwheel.rps]}" "${med[nginx.rps]}")
	r_p99=$(ratio "${med[pinwheel.p99]}" "${med[nginx.p99]}")
	r_cpu=$(ratio "${med[pinwheel.cpu]}" "${med[nginx.cpu]}")
	printf '%-9s %8s %12s %10s %12s\n' pw/nginx "$size" "$r_rps" "$r_p99" "$r_cpu"
	json_med+="${json_med:+,}
    \"$size\": {$json_size, \"pinwheel_over_nginx\": {\"requests_per_sec\": $r_rps, \"p99_us\": $r_p99, \"cpu_us_per_request\": $r_cpu}}"
	unset med
done
for run in "${runs[@]}"; do
	# shellcheck disable=SC2086 # the run's fields: words on purpose
	set -- $run
	json_runs+="${json_runs:+,}
    {\"server\": \"$1\", \"bytes\": $2, \"requests_per_sec\": $3, \"p99_us\": $4, \"cpu_us_per_request\": $5, \"requests\": $6, \"socket_errors\": $7, \"non_2xx\": $8}"
done

mkdir -p "$(dirname "$OUT")"
cat >"$OUT" <<EOF
{
  "benchmark": "static",
$(wrk_json_meta)
  "pinwheel_flags": "--shards 1 --sndbuf 0 $PINWHEEL_FLAGS",
  "runs": [$json_runs
  ],
  "median": {$json_med
  }
}
EOF
echo
echo "wrote $OUT"
