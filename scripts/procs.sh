# shellcheck shell=bash disable=SC2034
# procs.sh - the background processes of a measuring script: each is
# started pinned and logged, and every one still running is stopped when
# the script exits, whatever the exit. Sourced from the repository's root,
# after the script's own settings: it adds the common ones (the CPUs, the
# binary, the servers' extra flags, the log folder), raises the
# descriptor limit to the hard one (thousands of sockets on each side)
# and checks the binary.

SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PINWHEEL=${PINWHEEL:-build/pinwheel}
HTTP_FLAGS=${HTTP_FLAGS:-}
PROXY_FLAGS=${PROXY_FLAGS:-}
LOGDIR=${LOGDIR:-build/attack}
ATTACK=(python3 scripts/attack.py)

ulimit -n "$(ulimit -Hn)" || exit 2
[ -x "$PINWHEEL" ] || { echo "$0: no $PINWHEEL (make -j2)" >&2; exit 2; }
mkdir -p "$LOGDIR" || exit 2

pids=""
cleanup() {
	for p in $pids; do
		kill -TERM "$p" 2>/dev/null
	done
	sleep 0.5
	for p in $pids; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	pids=""
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start LOG CPU CMD...: run CMD pinned in the background, logging to LOG;
# its pid in $last.
start() {
	local log=$1 cpu=$2
	shift 2
	taskset -c "$cpu" "$@" >"$log" 2>&1 &
	last=$!
	pids="$pids $last"
}

# stop PID: SIGTERM, then SIGKILL after 10 s; forget it.
stop() {
	local p=$1 _
	kill -TERM "$p" 2>/dev/null
	for _ in $(seq 100); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	pids=$(echo "$pids" | tr ' ' '\n' | grep -vx "$p" | tr '\n' ' ')
}

# wait_for LOG TEXT SECONDS: until TEXT appears in LOG; 1 on timeout.
wait_for() {
	local _
	for _ in $(seq $(($3 * 10))); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "$0: no \"$2\" in $1 after $3 s" >&2
	return 1
}
