#!/bin/bash
# attack-measure.sh - a good client's latency on the same shard while
# hostile clients (scripts/attack.py) attack `pinwheel http` or
# `pinwheel proxy`, against the same client with no attack.
#
#   scripts/attack-measure.sh [http|proxy|all]     (default all)
#
# The server runs with one shard on SERVER_CPU (0); `pinwheel load` (one
# shard, open loop at RATE (2000) requests/s over CONNS (8) keep-alive
# connections, for DURATION (10s) after WARMUP (1s), --json) and
# attack.py share CLIENT_CPU (1). (One connection at 2000/s leaves 500 us
# per request; on a busy 2-core machine the answers then fall behind the
# schedule and the latency measures that queue instead.)
# Rounds alternate no attack / attack, ROUNDS (3) of each; every round
# starts a fresh server. Per round it prints p50, p99, max and errors;
# at the end the medians and the median of the per-round ratios
# p99(attack) / p99(none). Goal: at most 2 and no failed
# request under attack (no error, and at least 99% of the requests due
# in the measured time answered: a request that never returns also keeps
# the later ones of its connection from being sent).
#
# http: NONREADERS (1000) clients pipelining GETs into a 4 KiB receive
# buffer and never reading, plus SLOWLORIS (3000) clients sending a head
# one byte every 3 s (+-50%).
#
# proxy: the proxy's upstreams are, in this order, the good
# `pinwheel http` (one shard, on CLIENT_CPU), attack.py's sink (accepts,
# never reads) and its source (writes endlessly). UPLOADERS (100) clients
# send bulk bytes that end at the sink and never read; DOWNLOADERS (100)
# clients are sent bulk bytes by the source and never read. The proxy
# chooses upstreams round robin, so the clients tag themselves and
# reconnect until each has landed where it should. Then the stalled
# clients start sending, the sink and the source stop listening (their
# connections stay), and the good client connects: the proxy's connects
# to the sink and the source are refused and it fails over to the good
# upstream. In a no-attack round nothing listens there either.
#
# Environment: ROUNDS, RATE, CONNS, DURATION, WARMUP, LOAD_TIMEOUT (2s),
# NONREADERS, SLOWLORIS, UPLOADERS, DOWNLOADERS, SERVER_CPU, CLIENT_CPU,
# PINWHEEL (build/pinwheel), HTTP_FLAGS and PROXY_FLAGS (added to the
# server under test), UPSTREAM_FLAGS (the proxy's good upstream),
# PORT_BASE (four ports from it), LOGDIR (build/attack: every log and
# JSON). Every process it starts is stopped on exit, whatever the exit.
set -u

what=${1:-all}
case $what in
http | proxy | all) ;;
*) echo "usage: $0 [http|proxy|all]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.." || exit 2

ROUNDS=${ROUNDS:-3}
RATE=${RATE:-2000}
CONNS=${CONNS:-8}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-1s}
LOAD_TIMEOUT=${LOAD_TIMEOUT:-2s}
NONREADERS=${NONREADERS:-1000}
SLOWLORIS=${SLOWLORIS:-3000}
UPLOADERS=${UPLOADERS:-100}
DOWNLOADERS=${DOWNLOADERS:-100}
. scripts/procs.sh
UPSTREAM_FLAGS=${UPSTREAM_FLAGS:-}
PORT_BASE=${PORT_BASE:-$((19000 + ($$ % 1000) * 4))}

front=127.0.0.1:$PORT_BASE
upstream=127.0.0.1:$((PORT_BASE + 1))
sink=127.0.0.1:$((PORT_BASE + 2))
source=127.0.0.1:$((PORT_BASE + 3))

# run_load NAME: the good client against $front; JSON in $LOGDIR/NAME.json.
run_load() {
	taskset -c "$CLIENT_CPU" "$PINWHEEL" load --target "$front" \
		--shards 1 --cpus "$CLIENT_CPU" --rate "$RATE" --conns "$CONNS" \
		--duration "$DURATION" --warmup "$WARMUP" \
		--timeout "$LOAD_TIMEOUT" --quiet --json "$LOGDIR/$1.json" \
		>"$LOGDIR/$1.load.log" 2>&1
	python3 - "$LOGDIR/$1.json" "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
lat = r["latency"]
due = round(r["rate"] * r["elapsed_s"])
line = "  %-14s " % sys.argv[2]
if lat["count"]:
    p = lat["percentiles"]
    line += "p50 %9.1f us  p99 %9.1f us  max %9.1f us  " % (
        p["50"] / 1e3, p["99"] / 1e3, lat["max"] / 1e3)
else:
    line += "no request answered%36s" % ""
line += "errors %d, answered %d of %d due" % (
    r["errors"], r["requests"] - r["errors"], due)
if r["connects"] > r["conns"]:
    line += ", %d reconnects" % (r["connects"] - r["conns"])
print(line)
EOF
}

# attack_summary LOG: one line from attack.py's summary.
attack_summary() {
	grep -E '^  [a-z-]+ +[0-9]+ clients' "$1" |
		sed -E 's/^  /                 attack: /; s/ clients:/:/'
}

# start_server KIND NAME: a fresh server under test on $front; pid in
# $server.
start_server() {
	local log=$LOGDIR/$2.server.log
	if [ "$1" = http ]; then
		# shellcheck disable=SC2086
		start "$log" "$SERVER_CPU" "$PINWHEEL" http --listen "$front" \
			--shards 1 --cpus "$SERVER_CPU" --drain 1s $HTTP_FLAGS
	else
		# shellcheck disable=SC2086
		start "$log" "$SERVER_CPU" "$PINWHEEL" proxy --listen "$front" \
			--upstream "$upstream,$sink,$source" --shards 1 \
			--cpus "$SERVER_CPU" --drain 1s $PROXY_FLAGS
	fi
	server=$last
	wait_for "$log" "listening" 10
}

# start_attack KIND NAME: attack.py against $front; waits until in place.
start_attack() {
	local log=$LOGDIR/$2.attack.log
	# A cap, should this script die without its trap.
	local cap=600
	if [ "$1" = http ]; then
		start "$log" "$CLIENT_CPU" "${ATTACK[@]}" --target "$front" \
			--nonreaders "$NONREADERS" --slowloris "$SLOWLORIS" \
			--duration "$cap"
	else
		start "$log" "$CLIENT_CPU" "${ATTACK[@]}" --target "$front" \
			--stalled-uploaders "$UPLOADERS" \
			--stalled-downloaders "$DOWNLOADERS" \
			--sink-listen "$sink" --source-listen "$source" \
			--close-listeners --duration "$cap"
	fi
	attacker=$last
	wait_for "$log" "attack: ready" 60
	# The stalled clients fill every buffer on the way.
	sleep 1
}

# measure KIND: ROUNDS alternated rounds; the figures in $LOGDIR/KIND.tsv.
measure() {
	local kind=$1 r name
	echo "pinwheel $kind under attack: $ROUNDS rounds, load $RATE/s on" \
		"$CONNS connections for $DURATION after $WARMUP," \
		"server on CPU $SERVER_CPU," \
		"clients on CPU $CLIENT_CPU; load average $(cut -d' ' -f1-3 \
		/proc/loadavg)"
	if [ "$kind" = proxy ]; then
		# shellcheck disable=SC2086
		start "$LOGDIR/proxy-upstream.log" "$CLIENT_CPU" "$PINWHEEL" \
			http --listen "$upstream" --shards 1 --cpus "$CLIENT_CPU" \
			--drain 1s $UPSTREAM_FLAGS
		up=$last
		wait_for "$LOGDIR/proxy-upstream.log" "listening" 10
	fi
	for r in $(seq "$ROUNDS"); do
		name=$kind-none-$r
		start_server "$kind" "$name"
		run_load "$name"
		stop "$server"
		name=$kind-attack-$r
		start_server "$kind" "$name"
		start_attack "$kind" "$name"
		run_load "$name"
		stop "$attacker"
		attack_summary "$LOGDIR/$name.attack.log"
		stop "$server"
	done
	[ "$kind" = proxy ] && stop "$up"
	python3 - "$LOGDIR" "$kind" "$ROUNDS" <<'EOF'
import json, statistics, sys
d, kind, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(name):
    r = json.load(open("%s/%s.json" % (d, name)))
    lat = r["latency"]
    p99 = lat["percentiles"]["99"] / 1e3 if lat["count"] else float("inf")
    return p99, r["errors"], r["requests"] - r["errors"], \
        round(r["rate"] * r["elapsed_s"])
none = [load("%s-none-%d" % (kind, i)) for i in range(1, rounds + 1)]
att = [load("%s-attack-%d" % (kind, i)) for i in range(1, rounds + 1)]
ratios = [a[0] / n[0] if n[0] else float("inf") for n, a in zip(none, att)]
ratio = statistics.median(ratios)
errors = sum(a[1] for a in att)
answered = sum(a[2] for a in att)
due = sum(a[3] for a in att)
print("  median p99: none %.1f us, attack %.1f us; median ratio %.2f "
      "(rounds: %s); under attack %d errors, %d answered of %d due" % (
          statistics.median(n[0] for n in none),
          statistics.median(a[0] for a in att), ratio,
          " ".join("%.2f" % x for x in ratios), errors, answered, due))
ok = ratio <= 2 and errors == 0 and answered >= 0.99 * due
print("  goal (ratio <= 2, no error, 99%% of due requests answered): %s" %
      ("met" if ok else "not met"))
EOF
}

case $what in
http) measure http ;;
proxy) measure proxy ;;
all) measure http && measure proxy ;;
esac
