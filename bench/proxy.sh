#!/usr/bin/env bash
# bench/proxy.sh - pinwheel proxy versus HAProxy in front of one nginx.
#
# nginx (1 worker, a fixed 13-byte body, no access log) and wrk share
# CPU 1; the proxy under test runs alone on CPU 0. Runs alternate
# A B A B ... (A: pinwheel proxy --shards 1 --cpus 0, B: HAProxy with
# nbthread 1 in mode tcp), ROUNDS rounds. For each run: requests/s, p99
# latency, and the proxy's CPU time per request: utime + stime from
# /proc/PID/stat before and after the wrk run, in clock ticks turned into
# microseconds, over the requests wrk completed. Prints a table with the
# medians and writes JSON.
#
# VERSUS=ops compares pinwheel proxy with itself instead: A is the proxy
# with no operations features (--check-interval 0, no access log, no
# scrape endpoint), B ("ops") the proxy with an access log to a file,
# health checks at their defaults and --metrics-listen, scraped once a
# second by a client on CPU 1 for the whole run. Each round also prints
# B's CPU per request over A's, and the table the median of those
# per-round ratios.
#
# Environment: DURATION (10s), ROUNDS (3), CONNS (64), VERSUS (haproxy or
# ops), PINWHEEL (build/pinwheel), PINWHEEL_FLAGS (more flags for
# `pinwheel proxy`, e.g. "--batch-wait 50us"), OUT
# (build/bench-proxy.json), PORT_BASE (18080).
# Needs nginx, haproxy and wrk (Debian packages of those names; haproxy
# not with VERSUS=ops).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"

DURATION=${DURATION:-10s}
VERSUS=${VERSUS:-haproxy}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-64}
PINWHEEL=${PINWHEEL:-build/pinwheel}
PINWHEEL_FLAGS=${PINWHEEL_FLAGS:-}
OUT=${OUT:-build/bench-proxy.json}
PORT_BASE=${PORT_BASE:-18080}
NGX_PORT=$PORT_BASE
PX_PORT=$((PORT_BASE + 1))
HA_PORT=$((PORT_BASE + 2))
MX_PORT=$((PORT_BASE + 3))
case $VERSUS in
haproxy) B_PORT=$HA_PORT TOOLS="nginx haproxy wrk taskset" ;;
ops) B_PORT=$PX_PORT TOOLS="nginx wrk taskset" ;;
*)
	echo "bench/proxy.sh: VERSUS is haproxy or ops, not '$VERSUS'" >&2
	exit 2
	;;
esac

for tool in $TOOLS; do
	if ! command -v "$tool" >/dev/null 2>&1 &&
		! [ -x "/usr/sbin/$tool" ]; then
		echo "bench/proxy.sh: $tool is missing (apt-get install nginx" \
			"haproxy wrk)" >&2
		exit 1
	fi
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy || true)
[ -x "$PINWHEEL" ] || die "build $PINWHEEL first (make)"

TMP=$(mktemp -d /tmp/pinwheel-bench-proxy.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]:-}"; do
		[ -n "$p" ] && kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

mkdir -p "$TMP/nginx/logs" "$TMP/nginx/tmp"
cat >"$TMP/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $TMP/nginx/tmp/body;
	proxy_temp_path $TMP/nginx/tmp/proxy;
	fastcgi_temp_path $TMP/nginx/tmp/fastcgi;
	uwsgi_temp_path $TMP/nginx/tmp/uwsgi;
	scgi_temp_path $TMP/nginx/tmp/scgi;
	keepalive_requests 1000000;
	server {
		listen 127.0.0.1:$NGX_PORT;
		location / {
			default_type text/plain;
			return 200 "hello, world\n";
		}
	}
}
EOF
cat >"$TMP/haproxy.cfg" <<EOF
global
	nbthread 1
	maxconn 4096
defaults
	mode tcp
	timeout connect 5s
	timeout client 60s
	timeout server 60s
frontend fe
	bind 127.0.0.1:$HA_PORT
	default_backend be
backend be
	server nginx 127.0.0.1:$NGX_PORT
EOF

taskset -c 1 "$NGINX" -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" \
	>"$TMP/nginx/logs/stdout" 2>&1 &
PIDS+=($!)
wait_port "$NGX_PORT"

RESULTS="$TMP/results"
: >"$RESULTS"
scrape_loop() { # every second: GET /metrics from the ops proxy
	while :; do
		if exec 3<>"/dev/tcp/127.0.0.1/$MX_PORT"; then
			printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&3
			cat <&3 >/dev/null
			exec 3<&-
		fi
		sleep 1
	done
}

run_one() { # name port
	local name=$1 port=$2 pid scraper=
	if [ "$name" = pinwheel ] || [ "$name" = ops ]; then
		local ops=(--check-interval 0)
		[ "$VERSUS" = ops ] || ops=()
		[ "$name" = ops ] && ops=(--access-log "$TMP/access.log"
			--metrics-listen "127.0.0.1:$MX_PORT")
		# shellcheck disable=SC2086 # PINWHEEL_FLAGS: words on purpose
		setsid "$PINWHEEL" proxy --shards 1 --cpus 0 \
			--listen "127.0.0.1:$port" \
			--upstream "127.0.0.1:$NGX_PORT" "${ops[@]}" \
			$PINWHEEL_FLAGS >"$TMP/$name.log" 2>&1 &
	else
		# Its own session: HAProxy signals its process group.
		setsid taskset -c 0 "$HAPROXY" -db -f "$TMP/haproxy.cfg" \
			>"$TMP/$name.log" 2>&1 &
	fi
	pid=$!
	PIDS+=("$pid")
	wait_port "$port"
	if [ "$name" = ops ]; then
		wait_port "$MX_PORT"
		scrape_loop &
		scraper=$!
		taskset -p -c 1 "$scraper" >/dev/null
	fi
	local t0 t1
	t0=$(cpu_ticks "$pid")
	taskset -c 1 wrk -t1 -c"$CONNS" -d"$DURATION" --latency \
		"http://127.0.0.1:$port/" >"$TMP/wrk.out" 2>&1
	t1=$(cpu_ticks "$pid")
	[ -z "$scraper" ] || { kill "$scraper" 2>/dev/null; wait "$scraper" 2>/dev/null || true; }
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	local rps p99 reqs errs
	rps=$(awk '/^Requests\/sec:/ { print $2 }' "$TMP/wrk.out")
	p99=$(awk '$1 == "99%" { print $2 }' "$TMP/wrk.out")
	reqs=$(awk '/requests in/ { print $1 }' "$TMP/wrk.out")
	errs=$(awk '/Non-2xx|Socket errors/ { print }' "$TMP/wrk.out" | tr '\n' ' ')
	if [ -z "$rps" ] || [ -z "$reqs" ] || [ "$reqs" = 0 ]; then
		echo "bench/proxy.sh: wrk failed against $name:" >&2
		cat "$TMP/wrk.out" >&2
		exit 1
	fi
	local p99us cpu_us
	p99us=$(to_us "$p99" %s)
	cpu_us=$(awk -v a="$t0" -v b="$t1" -v hz="$TCK" -v n="$reqs" \
		'BEGIN { printf "%.3f", (b - a) * 1000000 / hz / n }')
	echo "$name $rps $p99us $cpu_us $reqs" >>"$RESULTS"
	printf '  %-9s round %d: %10s req/s  p99 %9s us  cpu %7s us/req%s\n' \
		"$name" "$round" "$rps" "$p99us" "$cpu_us" \
		"${errs:+  ($errs)}"
}

B=$VERSUS
echo "pinwheel proxy vs $B: nginx + wrk on CPU 1, proxy on CPU 0," \
	"wrk -t1 -c$CONNS -d$DURATION, $ROUNDS round(s)"
for round in $(seq 1 "$ROUNDS"); do
	# Odd rounds A then B, even rounds B then A.
	if [ $((round % 2)) = 1 ]; then
		run_one pinwheel "$PX_PORT"
		run_one "$B" "$B_PORT"
	else
		run_one "$B" "$B_PORT"
		run_one pinwheel "$PX_PORT"
	fi
	awk -v b="$B" -v r="$round" '$1 == "pinwheel" { a = $4 } $1 == b { c = $4 }
		END { printf "  round %d: %s/pinwheel cpu per request %.3fx\n", r, b, c / a
		      printf "%.4f\n", c / a > "/dev/stderr" }' \
		<(tail -n 2 "$RESULTS") 2>>"$TMP/ratios"
done

col() { # name column: the median
	awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$RESULTS" | median 3
}

echo
printf '%-9s %14s %14s %16s\n' proxy "req/s (med)" "p99 us (med)" "cpu us/req (med)"
for name in pinwheel "$B"; do
	printf '%-9s %14s %14s %16s\n' "$name" "$(col "$name" 2)" \
		"$(col "$name" 3)" "$(col "$name" 4)"
done
RATIO=$(median 4 <"$TMP/ratios")
echo "$B/pinwheel cpu per request, median of the per-round ratios: ${RATIO}x"


mkdir -p "$(dirname "$OUT")"
{
	printf '{\n  "versus": "%s", "duration": "%s", "rounds": %s, "connections": %s,\n' \
		"$B" "$DURATION" "$ROUNDS" "$CONNS"
	printf '  "runs": [\n'
	awk '{ printf "%s    {\"proxy\": \"%s\", \"rps\": %s, \"p99_us\": %s, \"cpu_us_per_req\": %s, \"requests\": %s}", (NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5 } END { print "" }' "$RESULTS"
	printf '  ],\n  "median": {\n'
	first=1
	for name in pinwheel "$B"; do
		[ $first = 1 ] || printf ',\n'
		first=0
		printf '    "%s": {"rps": %s, "p99_us": %s, "cpu_us_per_req": %s}' \
			"$name" "$(col "$name" 2)" "$(col "$name" 3)" \
			"$(col "$name" 4)"
	done
	printf '\n  },\n  "cpu_ratio_median": %s\n}\n' "$RATIO"
} >"$OUT"
echo "wrote $OUT"
