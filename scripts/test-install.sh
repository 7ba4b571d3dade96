#!/bin/sh
# test-install.sh - install pinwheel into a scratch prefix, then build and
# run docs/example.c against it using nothing but pkg-config; also check
# that README.md shows docs/example.c verbatim.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "install test: FAIL: $*" >&2
	exit 1
}

make -s -C "$top" install PREFIX="$tmp/prefix" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" >&2; fail "make install"; }
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs pinwheel) || fail "pkg-config pinwheel"
# shellcheck disable=SC2086
cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -o "$tmp/example" \
	"$top/docs/example.c" $flags || fail "example does not build"
out=$(LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/example") ||
	fail "example exited non-zero"
[ "$out" = 'sum of squares 14, read "hello"' ] || fail "example printed: $out"
# The shared library is the one that ran.
LD_LIBRARY_PATH="$tmp/prefix/lib" ldd "$tmp/example" |
	grep -q "$tmp/prefix/lib/libpinwheel.so" ||
	fail "not linked to the installed .so"
# Static linking works too.
# shellcheck disable=SC2086
cc -std=c11 -D_GNU_SOURCE -o "$tmp/example-static" "$top/docs/example.c" \
	-I"$tmp/prefix/include" "$tmp/prefix/lib/libpinwheel.a" \
	$(pkg-config --libs liburing) -lhwloc -lnuma -lpthread || fail "static link"
"$tmp/example-static" >/dev/null || fail "static example exited non-zero"
# The headers are usable from C++ too.
printf '#include <pinwheel.h>\nint main() { return pw_version() ? 0 : 1; }\n' \
	>"$tmp/cxx.cc"
# shellcheck disable=SC2086
c++ -std=c++17 -Wall -Wextra -Werror -o "$tmp/cxx" "$tmp/cxx.cc" $flags ||
	fail "pinwheel.h does not compile as C++"
# README shows the example exactly: the fenced block that opens with the
# example's first line.
first=$(head -n 1 "$top/docs/example.c")
awk -v first="$first" '
	$0 == first { on = 1 }
	on && /^```/ { exit }
	on { print }
' "$top/README.md" >"$tmp/readme-example.c"
cmp -s "$tmp/readme-example.c" "$top/docs/example.c" ||
	fail "README.md does not show docs/example.c verbatim"
echo "install test: installed, built with pkg-config, ran: ok"
