#!/bin/bash
# rss-idle.sh - resident memory per idle keep-alive connection of
# `pinwheel http` and `pinwheel proxy`.
#
#   scripts/rss-idle.sh [http|proxy|all]     (default all)
#
# http: `pinwheel http --shards 1` on SERVER_CPU (0). A warm-up of WARM
# (16) connections that each send one request and close, then VmRSS is
# read; then N (2000) connections each send one GET, read the answer and
# stay open and idle (scripts/attack.py --idle, on CLIENT_CPU); after
# SETTLE (1 s) VmRSS is read again. Printed: both readings and
# (after - before) / N in KiB. Goal: at most 4 KiB.
#
# proxy: the same through `pinwheel proxy --shards 1` (SERVER_CPU) in
# front of `pinwheel http --shards 1` (CLIENT_CPU): each idle client is
# one idle connection on each side of the proxy. Both processes' growth
# per connection is printed.
#
# Environment: N, WARM, SETTLE, SERVER_CPU, CLIENT_CPU, PINWHEEL
# (build/pinwheel), HTTP_FLAGS, PROXY_FLAGS, PORT_BASE (two ports from
# it), LOGDIR (build/attack). Every process it starts is stopped on exit.
set -u

what=${1:-all}
case $what in
http | proxy | all) ;;
*) echo "usage: $0 [http|proxy|all]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.." || exit 2

N=${N:-2000}
WARM=${WARM:-16}
SETTLE=${SETTLE:-1}
. scripts/procs.sh
PORT_BASE=${PORT_BASE:-$((23000 + ($$ % 1000) * 2))}

front=127.0.0.1:$PORT_BASE
upstream=127.0.0.1:$((PORT_BASE + 1))

# rss PID: its VmRSS in KiB.
rss() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# idle_rss NAME PID [NAME PID]: warm up, read each VmRSS, hold N idle
# clients, read again and print the growth per connection.
idle_rss() {
	local -a names=() ids=() before=()
	local i att log=$LOGDIR/rss-$1-idle.log
	while [ $# -ge 2 ]; do
		names+=("$1")
		ids+=("$2")
		shift 2
	done
	"${ATTACK[@]}" --target "$front" --idle "$WARM" --duration 1 \
		>"$LOGDIR/rss-${names[0]}-warm.log" 2>&1
	sleep 0.5
	for i in "${!ids[@]}"; do
		before[i]=$(rss "${ids[i]}")
	done
	start "$log" "$CLIENT_CPU" "${ATTACK[@]}" --target "$front" --idle "$N" \
		--duration 600
	att=$last
	wait_for "$log" "attack: ready" 60 || return 1
	sleep "$SETTLE"
	for i in "${!ids[@]}"; do
		awk -v n="${names[i]}" -v b="${before[i]}" \
			-v a="$(rss "${ids[i]}")" -v c="$N" 'BEGIN {
			printf "  %-14s VmRSS %d KiB -> %d KiB with %d idle " \
			       "connections: %.2f KiB per connection\n",
			       n, b, a, c, (a - b) / c }'
	done
	kill -TERM "$att"
	wait "$att"
	pids=$(echo "$pids" | tr ' ' '\n' | grep -vx "$att" | tr '\n' ' ')
}

echo "idle keep-alive connections: $N (after a warm-up of $WARM)"
if [ "$what" != proxy ]; then
	# shellcheck disable=SC2086
	start "$LOGDIR/rss-http.log" "$SERVER_CPU" "$PINWHEEL" http \
		--listen "$front" --shards 1 --cpus "$SERVER_CPU" --drain 1s \
		$HTTP_FLAGS
	srv=$last
	wait_for "$LOGDIR/rss-http.log" listening 10 && idle_rss http "$srv"
	cleanup
fi
if [ "$what" != http ]; then
	# shellcheck disable=SC2086
	start "$LOGDIR/rss-upstream.log" "$CLIENT_CPU" "$PINWHEEL" http \
		--listen "$upstream" --shards 1 --cpus "$CLIENT_CPU" --drain 1s \
		$HTTP_FLAGS
	up=$last
	# shellcheck disable=SC2086
	start "$LOGDIR/rss-proxy.log" "$SERVER_CPU" "$PINWHEEL" proxy \
		--listen "$front" --upstream "$upstream" --shards 1 \
		--cpus "$SERVER_CPU" --drain 1s $PROXY_FLAGS
	px=$last
	wait_for "$LOGDIR/rss-upstream.log" listening 10 &&
		wait_for "$LOGDIR/rss-proxy.log" listening 10 &&
		idle_rss proxy "$px" upstream-http "$up"
	cleanup
fi
