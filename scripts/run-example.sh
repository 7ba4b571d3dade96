#!/bin/sh
# run-example.sh - run built examples and check what they do.
#
# Usage: sh scripts/run-example.sh PROGRAM...   (from the repository root)
#
# For each PROGRAM (a built examples/NAME.c, e.g. build/examples/NAME):
#  - with examples/NAME.expected, or examples/STEM.expected where NAME is
#    STEM_STYLE (the styles of one program share it), the program runs
#    (at most 60 s) and its stdout must equal the file byte for byte and
#    its exit status be 0;
#  - a network server, named echo_*, line_* or http_hello_*, is started
#    with a free loopback port as its one argument (it listens on
#    127.0.0.1:PORT), sent a fixed request by a small python3 client that
#    checks the answer, then stopped with SIGINT: it must exit with
#    status 0 within 10 s;
#  - any other program is only reported as built.
# The Tokio counterparts (bench/peers/tokio/examples) follow the same
# conventions, so the driver checks them too.
# Exit status: 0 when every check passed, 1 otherwise.
set -u

failed=0
ran=0

fail() {
	echo "  EX     $1: FAILED: $2" >&2
	failed=$((failed + 1))
}

# expected NAME: the expected-output file of NAME, or nothing.
expected() {
	for e in "examples/$1.expected" "examples/${1%_*}.expected"; do
		if [ -f "$e" ]; then
			echo "$e"
			return
		fi
	done
}

run_expected() { # PROGRAM NAME FILE
	out=$(mktemp)
	timeout -k 5 60 "$1" >"$out"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "$2" "exit status $rc"
	elif ! diff -u "$3" "$out" >&2; then
		fail "$2" "its output differs from $3 (above)"
	else
		echo "  EX     $2: output matches $3"
	fi
	rm -f "$out"
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The client: KIND PORT. Connects (retrying while the server starts),
# sends the fixed request, checks the answer; exit status 0 when right.
client() {
	python3 - "$1" "$2" <<'EOF'
import socket, sys, time

kind, port = sys.argv[1], int(sys.argv[2])

def connect():
    end = time.monotonic() + 10
    while True:
        try:
            c = socket.create_connection(("127.0.0.1", port), timeout=10)
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return c
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)

def read_exactly(c, n):
    got = b""
    while len(got) < n:
        b = c.recv(n - len(got))
        if not b:
            break
        got += b
    return got

def check(what, got, want):
    if got != want:
        sys.exit("%s: got %r, want %r" % (what, got[:200], want[:200]))

if kind == "echo":
    a, b = connect(), connect()  # two at once: a task per connection
    for i, msg in enumerate([b"hello, pinwheel\n", bytes(range(256)) * 256]):
        for c in (a, b):
            c.sendall(msg)
        for c in (a, b):
            check("echo %d" % i, read_exactly(c, len(msg)), msg)
    a.close(); b.close()
elif kind == "line":
    a, b = connect(), connect()
    a.sendall(b"PING\n")
    b.sendall(b"hello, world\nPI")
    check("PING", read_exactly(a, 5), b"PONG\n")
    check("upper", read_exactly(b, 13), b"HELLO, WORLD\n")
    b.sendall(b"NG\n")
    check("split PING", read_exactly(b, 5), b"PONG\n")
    a.close(); b.close()
elif kind == "http_hello":
    c = connect()
    req = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"
    for i in range(3):  # keep-alive: three requests on one connection
        c.sendall(req)
        head = b""
        while b"\r\n\r\n" not in head:
            b = c.recv(1)
            if not b:
                sys.exit("request %d: connection closed" % i)
            head += b
        lines = head.decode().split("\r\n")
        if not lines[0].startswith("HTTP/1.1 200"):
            sys.exit("request %d: status line %r" % (i, lines[0]))
        length = [l.split(":", 1)[1] for l in lines
                  if l.lower().startswith("content-length:")]
        if not length:
            sys.exit("request %d: no Content-Length" % i)
        check("body %d" % i, read_exactly(c, int(length[0])),
              b"Hello, world!")
    c.close()
else:
    sys.exit("no client for " + kind)
EOF
}

run_server() { # PROGRAM NAME KIND
	port=$(free_port)
	log=$(mktemp)
	"$1" "$port" >"$log" 2>&1 &
	pid=$!
	if ! client "$3" "$port"; then
		fail "$2" "no answer or a wrong one on port $port (server output: $log)"
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return
	fi
	kill -INT "$pid"
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		fail "$2" "still running 10 s after SIGINT (output: $log)"
		return
	fi
	wait "$pid"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "$2" "exit status $rc after SIGINT (output: $log)"
		return
	fi
	echo "  EX     $2: answered on port $port, stopped by SIGINT"
	rm -f "$log"
}

for prog in "$@"; do
	name=$(basename "$prog")
	if [ ! -x "$prog" ]; then
		fail "$name" "$prog is not a built program"
		continue
	fi
	exp=$(expected "$name")
	ran=$((ran + 1))
	if [ -n "$exp" ]; then
		run_expected "$prog" "$name" "$exp"
		continue
	fi
	case $name in
	http_hello*) run_server "$prog" "$name" http_hello ;;
	echo*) run_server "$prog" "$name" echo ;;
	line*) run_server "$prog" "$name" line ;;
	*)
		ran=$((ran - 1))
		echo "  EX     $name: built (not run)"
		;;
	esac
done
echo "  EX     examples: $ran run, $failed failed"
[ $failed -eq 0 ]
