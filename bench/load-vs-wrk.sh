#!/bin/sh
# SPDX-License-Identifier: MIT
#
# load-vs-wrk.sh - does `pinwheel load` measure the throughput wrk does?
#
# Starts nginx (one worker, pinned to SERVER_CPU) with a generated config
# that answers every GET with a short fixed body, then runs wrk and
# `pinwheel load` against it in turns, ROUNDS times each, with the same
# connection count, duration and pinning (one thread / one shard on
# CLIENT_CPU), and prints each run, the means and their ratio. Closed
# loop on both sides: wrk has no warm-up, so pinwheel runs without one.
#
#   sh bench/load-vs-wrk.sh                      # defaults below
#   CONNS=64 DURATION=10 ROUNDS=5 sh bench/load-vs-wrk.sh
#
# The two should agree within 10% on a quiet machine; on a busy one
# (other builds, other benchmarks) only the ratio of runs taken close
# together means anything. Needs wrk and nginx (installed with apt-get
# when missing and run as root) and a built build/pinwheel.
set -eu

CONNS=${CONNS:-32}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18080}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PINWHEEL=${PINWHEEL:-build/pinwheel}

need() {
	command -v "$1" >/dev/null 2>&1 && return 0
	if [ "$(id -u)" = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" \
			>/dev/null
	fi
	command -v "$1" >/dev/null 2>&1 || {
		echo "load-vs-wrk: $1 is missing (apt-get install $2)" >&2
		exit 1
	}
}
need wrk wrk
need nginx nginx-light
[ -x "$PINWHEEL" ] || {
	echo "load-vs-wrk: $PINWHEEL is missing (run make)" >&2
	exit 1
}

if ss -Htln "sport = :$PORT" 2>/dev/null | grep -q .; then
	echo "load-vs-wrk: port $PORT is taken; set PORT" >&2
	exit 1
fi
dir=$(mktemp -d /tmp/pw-load-vs-wrk.XXXXXX)
ngx_pid=
cleanup() {
	[ -n "$ngx_pid" ] && kill "$ngx_pid" 2>/dev/null && wait "$ngx_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM

cat >"$dir/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
error_log $dir/error.log warn;
pid $dir/nginx.pid;
events { worker_connections 4096; }
http {
	access_log off;
	keepalive_requests 100000000;
	keepalive_timeout 120s;
	client_body_temp_path $dir;
	proxy_temp_path $dir;
	fastcgi_temp_path $dir;
	uwsgi_temp_path $dir;
	scgi_temp_path $dir;
	server {
		listen 127.0.0.1:$PORT reuseport;
		location / {
			default_type text/plain;
			return 200 "hello, world\n";
		}
	}
}
EOF
taskset -c "$SERVER_CPU" nginx -p "$dir" -c "$dir/nginx.conf" &
ngx_pid=$!
i=0
until "$PINWHEEL" load --target "127.0.0.1:$PORT" --requests 1 \
		--warmup 0 --shards 1 --quiet 2>/dev/null |
	grep -q 'requests 1, errors 0'; do
	i=$((i + 1))
	[ $i -lt 50 ] || {
		echo "load-vs-wrk: nginx did not start" >&2
		cat "$dir/error.log" >&2
		exit 1
	}
	sleep 0.1
done

echo "nginx on cpu $SERVER_CPU, clients on cpu $CLIENT_CPU;" \
	"$CONNS connections, ${DURATION}s per run, $ROUNDS rounds"
runs=
r=1
while [ $r -le "$ROUNDS" ]; do
	w=$(taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" \
		"http://127.0.0.1:$PORT/" | awk '/^Requests\/sec:/ { print $2 }')
	taskset -c "$CLIENT_CPU" "$PINWHEEL" load \
		--target "127.0.0.1:$PORT" --conns "$CONNS" \
		--duration "${DURATION}s" --warmup 0 --shards 1 \
		--cpus "$CLIENT_CPU" --quiet --json "$dir/load.json" >/dev/null
	p=$(sed -n 's/.*"throughput_rps": \([0-9.]*\).*/\1/p' "$dir/load.json")
	e=$(sed -n 's/.*"errors": \([0-9]*\),.*/\1/p' "$dir/load.json")
	printf 'round %d: wrk %10.1f req/s   pinwheel load %10.1f req/s' \
		"$r" "$w" "$p"
	echo "   (pinwheel errors $e)"
	runs="$runs $w $p"
	r=$((r + 1))
done
echo "$runs" | awk '{
	for (i = 1; i < NF; i += 2) { w += $i; p += $(i + 1); n++ }
	printf "mean:    wrk %10.1f req/s   pinwheel load %10.1f req/s\n", w / n, p / n
	printf "ratio pinwheel/wrk: %.3f\n", p / w
}'
