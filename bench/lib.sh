# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# bench/lib.sh - the shell functions the benchmark scripts share: error
# exit, tool checks, the temporary folder and its clean-up, starting and
# stopping the server under test, its CPU time from /proc, wrk runs and
# their parsing, medians.
#
# Sourced by bench/http.sh, bench/static.sh, bench/udp.sh and
# bench/proxy.sh (bash). The functions read the scripts' settings as
# globals when called, so a script may source this file before setting
# them: PORT, SERVER_CPU, CLIENT_CPU, CONNS, WARMUP, DURATION, PINWHEEL,
# PINWHEEL_FLAGS, and here (the repository's root). They keep their own
# state in globals too: tmp (the temporary folder), server_pid (the
# server started, or empty), NGINX (nginx's path), TCK (clock ticks per
# second). bench/load-vs-wrk.sh is POSIX sh and does not source it.

# shellcheck disable=SC2153 # PORT and the other settings: the script's
TCK=$(getconf CLK_TCK)

# die MESSAGE...: print "bench/SCRIPT: MESSAGE" on stderr and exit 1.
die() {
	echo "bench/${0##*/}: $*" >&2
	exit 1
}

# check_rounds: die unless ROUNDS is a whole number >= 1.
check_rounds() {
	case $ROUNDS in '' | *[!0-9]* | 0) die "ROUNDS must be a whole number >= 1" ;; esac
}

# need_wrk_nginx: install wrk and nginx when missing (scripts/deps.sh),
# check taskset; set NGINX to nginx's path. Dies when one is missing.
need_wrk_nginx() {
	local pkgs=wrk
	command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || pkgs="$pkgs nginx"
	# shellcheck disable=SC2086,SC2154 # pkgs: words; here: the script's
	sh "$here/scripts/deps.sh" $pkgs ||
		die "needs wrk and nginx (apt-get install wrk nginx)"
	command -v taskset >/dev/null || die "needs taskset (util-linux)"
	NGINX=$(command -v nginx || echo /usr/sbin/nginx)
	[ -x "$NGINX" ] || die "nginx not found"
}

# bench_tmp NAME: make tmp, /tmp/pinwheel-bench-NAME.XXXXXX, and trap
# EXIT to stop the server and remove it (kept when KEEP_TMP is not empty).
bench_tmp() {
	tmp=$(mktemp -d "/tmp/pinwheel-bench-$1.XXXXXX")
	server_pid=""
	trap cleanup EXIT
}

# cleanup: the EXIT trap of bench_tmp; stops the server, removes tmp.
cleanup() {
	if [ -n "$server_pid" ]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"
}

# server_pids: print every process of the server, the one started and its
# children.
server_pids() {
	echo "$server_pid"
	pgrep -P "$server_pid" 2>/dev/null || true
}

# cpu_ticks [PID...]: print utime + stime, in clock ticks, summed over the
# PIDs given, or else over server_pids; a process gone counts 0.
cpu_ticks() {
	local t=0 p f
	# shellcheck disable=SC2046 # one pid a word
	[ $# -gt 0 ] || set -- $(server_pids)
	for p in "$@"; do # the list is read once: set -- below may reuse $@
		# Fields after the command name, which may hold spaces.
		f=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null) || continue
		# shellcheck disable=SC2086 # the fields: words on purpose
		set -- $f
		t=$((t + ${12} + ${13}))
	done
	echo "$t"
}

# wait_port PORT: wait up to 5 s for a listener on 127.0.0.1:PORT; dies
# when none comes.
wait_port() {
	local port=$1
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	die "server did not listen on port $port (see ${tmp:-${TMP:-}})"
}

# nginx_conf HTTP SERVER: write $tmp/nginx.conf, one nginx worker in the
# foreground listening on 127.0.0.1:$PORT, no access log, keep-alive
# effectively unlimited; HTTP: more lines for http {}, SERVER: the lines
# of server {} after listen.
nginx_conf() {
	cat >"$tmp/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;$1
	keepalive_requests 100000000;
	keepalive_timeout 300s;
	client_body_temp_path $tmp/body;
	proxy_temp_path $tmp/proxy;
	fastcgi_temp_path $tmp/fastcgi;
	uwsgi_temp_path $tmp/uwsgi;
	scgi_temp_path $tmp/scgi;
	server {
		listen 127.0.0.1:$PORT;
$2
	}
}
EOF
}

# start_server nginx | pinwheel ARGS...: start nginx from $tmp/nginx.conf
# on CPU $SERVER_CPU, or `pinwheel http` with one shard on that CPU, ARGS
# then $PINWHEEL_FLAGS; set server_pid; return once it listens on $PORT.
start_server() {
	local name=$1
	shift
	case $name in
	nginx)
		taskset -c "$SERVER_CPU" "$NGINX" -p "$tmp" -e "$tmp/error.log" \
			-c "$tmp/nginx.conf" >"$tmp/server.log" 2>&1 &
		;;
	pinwheel)
		# shellcheck disable=SC2086 # PINWHEEL_FLAGS: words on purpose
		"$PINWHEEL" http --listen "127.0.0.1:$PORT" --shards 1 \
			--cpus "$SERVER_CPU" "$@" $PINWHEEL_FLAGS \
			>"$tmp/server.log" 2>&1 &
		;;
	esac
	server_pid=$!
	wait_port "$PORT"
	# nginx's worker starts after the master listens.
	[ "$name" = nginx ] && sleep 0.2
	return 0
}

# stop_server: SIGTERM the server, wait for it, clear server_pid.
stop_server() {
	kill -TERM "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}

# to_us VALUE [FORMAT]: print a wrk latency value ("812.00us", "1.20ms",
# "2.00s") in microseconds, with the awk printf FORMAT (default %.2f).
to_us() {
	awk -v v="$1" -v f="${2:-%.2f}" 'BEGIN {
		n = v + 0
		if (v ~ /us$/) m = 1; else if (v ~ /ms$/) m = 1000;
		else if (v ~ /m$/) m = 60000000; else if (v ~ /s$/) m = 1000000;
		else m = 1
		printf f, n * m }'
}

# wrk_measure NAME URL FILE: warm the server NAME (started) with wrk for
# $WARMUP, then measure it for $DURATION (wrk -t1 -c$CONNS --latency on
# CPU $CLIENT_CPU) and save wrk's output to FILE. Sets reqs, rps, p99 (us),
# errs (socket errors), non2xx and cpu_us (the server's CPU time per
# request); dies when wrk completed no request.
# shellcheck disable=SC2034 # the results are the caller's
wrk_measure() {
	local name=$1 url=$2 out c0 c1
	taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"$WARMUP" "$url" >/dev/null
	c0=$(cpu_ticks)
	out=$(taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"$DURATION" --latency "$url")
	c1=$(cpu_ticks)
	echo "$out" >"$3"
	reqs=$(echo "$out" | awk '/requests in/ { print $1 }')
	rps=$(echo "$out" | awk '/^Requests\/sec:/ { print $2 }')
	p99=$(to_us "$(echo "$out" | awk '$1 == "99%" { print $2 }')")
	errs=$(echo "$out" | awk '/Socket errors/ { s = 0; for (i = 4; i <= NF; i += 2) s += $i; print s }')
	non2xx=$(echo "$out" | awk '/Non-2xx/ { print $NF }')
	errs=${errs:-0}
	non2xx=${non2xx:-0}
	[ -n "$reqs" ] && [ "$reqs" -gt 0 ] || die "$name: wrk completed no request: $out"
	cpu_us=$(awk -v d=$((c1 - c0)) -v t="$TCK" -v r="$reqs" \
		'BEGIN { printf "%.3f", d * 1e6 / t / r }')
}

# wrk_json_meta: print the JSON members every wrk benchmark records (date,
# kernel, CPUs, wrk's command line, the CPUs used, rounds), one a line,
# each ending with a comma.
wrk_json_meta() {
	cat <<EOF
  "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "kernel": "$(uname -r)",
  "cpus": $(nproc),
  "wrk": "wrk -t1 -c$CONNS -d$DURATION --latency",
  "server_cpu": $SERVER_CPU,
  "client_cpu": $CLIENT_CPU,
  "rounds": $ROUNDS,
EOF
}

# median DECIMALS: print the median of the numbers on stdin; of an even
# count, the mean of the middle two with DECIMALS decimals.
median() {
	sort -g | awk -v d="$1" '{ v[NR] = $1 } END {
		if (NR % 2) print v[(NR + 1) / 2];
		else printf "%." d "f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
