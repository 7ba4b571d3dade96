#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/http.sh - pinwheel http against nginx, under wrk, on one core each.
#
# Method
#   - Both servers answer every request with 200 and the same 13-byte body
#     ("Hello, world!"), keeping connections alive. nginx runs from a
#     generated configuration in a temporary folder: one worker process,
#     `return 200 "Hello, world!"`, access_log off, keepalive_requests
#     effectively unlimited. pinwheel runs `pinwheel http --shards 1
#     --cpus 0`: one process, one shard thread.
#   - The server is pinned to CPU $SERVER_CPU (0), wrk to CPU $CLIENT_CPU
#     (1): `taskset -c 1 wrk -t1 -c64 -d10s --latency URL`.
#   - Runs alternate A B A B (nginx, pinwheel) for $ROUNDS rounds, so
#     drift in the machine's state hits both alike. Each run starts a fresh
#     server, warms it for $WARMUP, then measures for $DURATION.
#   - Reported per run and as the median over runs: requests/s and p99
#     latency as wrk prints them (--latency), and the server's CPU time per
#     request: utime + stime of every process of the server (nginx: master
#     and worker; pinwheel: its one process, all threads), read from
#     /proc/PID/stat just before and just after the measured run, in clock
#     ticks converted to microseconds, divided by the requests wrk
#     completed.
#   - A table goes to stdout, JSON to $OUT (bench/results/http.json).
#
# Caveat: numbers mean something only on an otherwise idle machine with at
# least two CPUs; on a shared machine, treat them as a smoke test.
#
# Usage: bench/http.sh [OUT.json]
#   environment: DURATION=10s ROUNDS=3 CONNS=64 WARMUP=1s SERVER_CPU=0
#                CLIENT_CPU=1 PORT=18480 PINWHEEL=build/pinwheel
#                PINWHEEL_FLAGS= (more flags for `pinwheel http`, e.g.
#                "--batch-wait 50us")
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-64}
WARMUP=${WARMUP:-1s}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PORT=${PORT:-18480}
PINWHEEL=${PINWHEEL:-$here/build/pinwheel}
PINWHEEL_FLAGS=${PINWHEEL_FLAGS:-}
OUT=${1:-$here/bench/results/http.json}
BODY="Hello, world!"

# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"

check_rounds
need_wrk_nginx
[ -x "$PINWHEEL" ] || die "$PINWHEEL is not built (run make)"

bench_tmp http
nginx_conf "" '		location / {
			default_type text/plain;
			return 200 "'"$BODY"'";
		}'

runs=()
run_one() {
	local name=$1 reqs rps p99 errs non2xx cpu_us
	start_server "$name" --body "$BODY"
	wrk_measure "$name" "http://127.0.0.1:$PORT/" \
		"$tmp/wrk-$name-${#runs[@]}.txt"
	stop_server
	runs+=("$name $rps $p99 $cpu_us $reqs $errs $non2xx")
	printf '%-9s %12s %10s %12s %10s %7s %7s\n' "$name" "$rps" "$p99" \
		"$cpu_us" "$reqs" "$errs" "$non2xx"
}

echo "pinwheel http vs nginx: wrk -t1 -c$CONNS -d$DURATION --latency," \
	"server on CPU $SERVER_CPU, wrk on CPU $CLIENT_CPU, $ROUNDS round(s)"
printf '%-9s %12s %10s %12s %10s %7s %7s\n' server req/s p99_us \
	cpu_us/req requests errors non2xx
for ((r = 0; r < ROUNDS; r++)); do
	run_one nginx
	run_one pinwheel
done

echo
printf '%-9s %12s %10s %12s\n' median req/s p99_us cpu_us/req
json_runs=""
json_med=""
for name in nginx pinwheel; do
	sel=$(printf '%s\n' "${runs[@]}" | awk -v n="$name" '$1 == n')
	m_rps=$(echo "$sel" | awk '{ print $2 }' | median 3)
	m_p99=$(echo "$sel" | awk '{ print $3 }' | median 3)
	m_cpu=$(echo "$sel" | awk '{ print $4 }' | median 3)
	printf '%-9s %12s %10s %12s\n' "$name" "$m_rps" "$m_p99" "$m_cpu"
	json_med+="${json_med:+,}
    \"$name\": {\"requests_per_sec\": $m_rps, \"p99_us\": $m_p99, \"cpu_us_per_request\": $m_cpu}"
done
for run in "${runs[@]}"; do
	# shellcheck disable=SC2086 # the run's fields: words on purpose
	set -- $run
	json_runs+="${json_runs:+,}
    {\"server\": \"$1\", \"requests_per_sec\": $2, \"p99_us\": $3, \"cpu_us_per_request\": $4, \"requests\": $5, \"socket_errors\": $6, \"non_2xx\": $7}"
done

mkdir -p "$(dirname "$OUT")"
cat >"$OUT" <<EOF
{
  "benchmark": "http",
$(wrk_json_meta)
  "body_bytes": ${#BODY},
  "runs": [$json_runs
  ],
  "median": {$json_med
  }
}
EOF
echo
echo "wrote $OUT"
