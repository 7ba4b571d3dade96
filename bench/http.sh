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

die() {
	echo "bench/http.sh: $*" >&2
	exit 1
}

case $ROUNDS in '' | *[!0-9]* | 0) die "ROUNDS must be a whole number >= 1" ;; esac
pkgs=wrk
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || pkgs="$pkgs nginx"
# shellcheck disable=SC2086
sh "$here/scripts/deps.sh" $pkgs ||
	die "needs wrk and nginx (apt-get install wrk nginx)"
command -v taskset >/dev/null || die "needs taskset (util-linux)"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || die "nginx not found"
[ -x "$PINWHEEL" ] || die "$PINWHEEL is not built (run make)"
TCK=$(getconf CLK_TCK)

tmp=$(mktemp -d /tmp/pinwheel-bench-http.XXXXXX)
server_pid=""
cleanup() {
	if [ -n "$server_pid" ]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

cat >"$tmp/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	keepalive_requests 100000000;
	keepalive_timeout 300s;
	client_body_temp_path $tmp/body;
	proxy_temp_path $tmp/proxy;
	fastcgi_temp_path $tmp/fastcgi;
	uwsgi_temp_path $tmp/uwsgi;
	scgi_temp_path $tmp/scgi;
	server {
		listen 127.0.0.1:$PORT;
		location / {
			default_type text/plain;
			return 200 "$BODY";
		}
	}
}
EOF

# Every process of the server: the one started and its children.
server_pids() {
	echo "$server_pid"
	pgrep -P "$server_pid" 2>/dev/null || true
}

# utime + stime, in clock ticks, summed over the server's processes.
cpu_ticks() {
	local t=0 p f
	for p in $(server_pids); do
		# Fields after the command name, which may hold spaces.
		f=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null) || continue
		set -- $f
		t=$((t + ${12} + ${13}))
	done
	echo "$t"
}

wait_port() {
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	die "server did not listen on port $PORT (see $tmp)"
}

start_server() {
	case $1 in
	nginx)
		taskset -c "$SERVER_CPU" "$NGINX" -p "$tmp" -e "$tmp/error.log" \
			-c "$tmp/nginx.conf" >"$tmp/server.log" 2>&1 &
		;;
	pinwheel)
		# shellcheck disable=SC2086 # PINWHEEL_FLAGS: words on purpose
		"$PINWHEEL" http --listen "127.0.0.1:$PORT" --shards 1 \
			--cpus "$SERVER_CPU" --body "$BODY" $PINWHEEL_FLAGS \
			>"$tmp/server.log" 2>&1 &
		;;
	esac
	server_pid=$!
	wait_port
	# nginx's worker starts after the master listens.
	[ "$1" = nginx ] && sleep 0.2
	return 0
}

stop_server() {
	kill -TERM "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}

# A wrk latency value ("812.00us", "1.20ms", "2.00s") in microseconds.
to_us() {
	awk -v v="$1" 'BEGIN {
		n = v + 0
		if (v ~ /us$/) m = 1; else if (v ~ /ms$/) m = 1000;
		else if (v ~ /m$/) m = 60000000; else if (v ~ /s$/) m = 1000000;
		else m = 1
		printf "%.2f", n * m }'
}

runs=()
run_one() {
	local name=$1 url="http://127.0.0.1:$PORT/" out c0 c1 reqs rps p99 errs non2xx
	start_server "$name"
	taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"$WARMUP" "$url" >/dev/null
	c0=$(cpu_ticks)
	out=$(taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"$DURATION" --latency "$url")
	c1=$(cpu_ticks)
	stop_server
	echo "$out" >"$tmp/wrk-$name-${#runs[@]}.txt"
	reqs=$(echo "$out" | awk '/requests in/ { print $1 }')
	rps=$(echo "$out" | awk '/^Requests\/sec:/ { print $2 }')
	p99=$(to_us "$(echo "$out" | awk '$1 == "99%" { print $2 }')")
	errs=$(echo "$out" | awk '/Socket errors/ { s = 0; for (i = 4; i <= NF; i += 2) s += $i; print s }')
	non2xx=$(echo "$out" | awk '/Non-2xx/ { print $NF }')
	[ -n "$reqs" ] && [ "$reqs" -gt 0 ] || die "$name: wrk completed no request: $out"
	local cpu_us
	cpu_us=$(awk -v d=$((c1 - c0)) -v t="$TCK" -v r="$reqs" \
		'BEGIN { printf "%.3f", d * 1e6 / t / r }')
	runs+=("$name $rps $p99 $cpu_us $reqs ${errs:-0} ${non2xx:-0}")
	printf '%-9s %12s %10s %12s %10s %7s %7s\n' "$name" "$rps" "$p99" \
		"$cpu_us" "$reqs" "${errs:-0}" "${non2xx:-0}"
}

echo "pinwheel http vs nginx: wrk -t1 -c$CONNS -d$DURATION --latency," \
	"server on CPU $SERVER_CPU, wrk on CPU $CLIENT_CPU, $ROUNDS round(s)"
printf '%-9s %12s %10s %12s %10s %7s %7s\n' server req/s p99_us \
	cpu_us/req requests errors non2xx
for ((r = 0; r < ROUNDS; r++)); do
	run_one nginx
	run_one pinwheel
done

median() { # values on stdin
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR % 2) print v[(NR + 1) / 2];
		else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo
printf '%-9s %12s %10s %12s\n' median req/s p99_us cpu_us/req
json_runs=""
json_med=""
for name in nginx pinwheel; do
	sel=$(printf '%s\n' "${runs[@]}" | awk -v n="$name" '$1 == n')
	m_rps=$(echo "$sel" | awk '{ print $2 }' | median)
	m_p99=$(echo "$sel" | awk '{ print $3 }' | median)
	m_cpu=$(echo "$sel" | awk '{ print $4 }' | median)
	printf '%-9s %12s %10s %12s\n' "$name" "$m_rps" "$m_p99" "$m_cpu"
	json_med+="${json_med:+,}
    \"$name\": {\"requests_per_sec\": $m_rps, \"p99_us\": $m_p99, \"cpu_us_per_request\": $m_cpu}"
done
for run in "${runs[@]}"; do
	set -- $run
	json_runs+="${json_runs:+,}
    {\"server\": \"$1\", \"requests_per_sec\": $2, \"p99_us\": $3, \"cpu_us_per_request\": $4, \"requests\": $5, \"socket_errors\": $6, \"non_2xx\": $7}"
done

mkdir -p "$(dirname "$OUT")"
cat >"$OUT" <<EOF
{
  "benchmark": "http",
  "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "kernel": "$(uname -r)",
  "cpus": $(nproc),
  "wrk": "wrk -t1 -c$CONNS -d$DURATION --latency",
  "server_cpu": $SERVER_CPU,
  "client_cpu": $CLIENT_CPU,
  "rounds": $ROUNDS,
  "body_bytes": ${#BODY},
  "runs": [$json_runs
  ],
  "median": {$json_med
  }
}
EOF
echo
echo "wrote $OUT"
