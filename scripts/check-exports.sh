#!/bin/sh
# check-exports.sh - the shared library exports its API and nothing else.
#
#   sh scripts/check-exports.sh build/libpinwheel.so include/pinwheel/*.h
#
# Fails when the library exports an internal pw__ symbol, or any symbol
# that is not a function (or extern data) declared in the headers, or
# when one declared in a header is missing from it. The declarations are read from
# the headers themselves: every function prototype at file scope (the
# static inline functions, typedefs and struct members are not; see
# include/pinwheel/export.h for how the library marks what it exports).
set -eu
LC_ALL=C
export LC_ALL
[ $# -ge 2 ] || {
	echo "usage: $0 LIB.so HEADER..." >&2
	exit 2
}
so=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "check-exports: FAIL: $*" >&2
	exit 1
}

# Comments, strings and preprocessor lines are dropped; what is left is
# cut into statements at the semicolons outside braces. A statement with
# a parenthesis and no brace that is not a typedef, a static function or
# a pointer to a function declares the function named before its first
# parenthesis; an extern statement without one declares data, named last.
# shellcheck disable=SC2016
prog='
function proto(s, p, name, data) {
	gsub(/__attribute__[ \t]*\(\([^)]*\)\)/, "", s)
	if (s ~ /[{}]/ || s ~ /^[ \t]*(typedef|static)[ \t]/)
		return
	data = sub(/^[ \t]*extern[ \t]+/, "", s)
	p = index(s, "(")
	if (p && substr(s, p + 1) ~ /^[ \t]*\*/)
		return
	if (!p && !data)
		return
	if (!p)
		sub(/[ \t]*(\[[^]]*\][ \t]*)*$/, "", s)
	name = p ? substr(s, 1, p - 1) : s
	if (match(name, /[A-Za-z_][A-Za-z0-9_]*[ \t]*$/)) {
		name = substr(name, RSTART, RLENGTH)
		gsub(/[ \t]/, "", name)
		print name
	}
}
function scan(s, k, ch) {
	for (k = 1; k <= length(s); k++) {
		ch = substr(s, k, 1)
		if (ch == "{") {
			if (depth == 0 && stmt ~ /^[ \t]*extern[ \t]*""[ \t]*$/) {
				stmt = ""
				continue
			}
			depth++
			if (depth == 1)
				stmt = stmt ch
			continue
		}
		if (ch == "}") {
			if (depth == 0) {
				stmt = ""
				continue
			}
			depth--
			if (depth == 0 && stmt ~ /^[ \t]*static[ \t]/)
				stmt = ""
			else if (depth == 0)
				stmt = stmt ch
			continue
		}
		if (ch == ";" && depth == 0) {
			proto(stmt)
			stmt = ""
			continue
		}
		if (depth == 0)
			stmt = stmt ch
	}
}
FNR == 1 { depth = 0; stmt = ""; incom = 0; inpp = 0 }
{
	line = $0
	if (inpp || (!incom && line ~ /^[ \t]*#/)) {
		inpp = line ~ /\\$/
		next
	}
	out = ""
	i = 1
	n = length(line)
	while (i <= n) {
		if (incom) {
			j = index(substr(line, i), "*" "/")
			if (!j)
				break
			i += j + 1
			incom = 0
			continue
		}
		two = substr(line, i, 2)
		if (two == "/" "*") {
			incom = 1
			i += 2
			continue
		}
		if (two == "//")
			break
		ch = substr(line, i, 1)
		if (ch == "\"") {
			j = index(substr(line, i + 1), "\"")
			out = out "\"\""
			i += j + 1
			continue
		}
		out = out ch
		i++
	}
	scan(out " ")
}'
awk "$prog" "$@" | sort -u >"$tmp/declared"
[ -s "$tmp/declared" ] || fail "no function declared in $*"
nm -D --defined-only "$so" | awk '{ print $NF }' | sort -u >"$tmp/exported"

# Each list on one line.
internal=$(grep '^pw__' "$tmp/exported" | tr '\n' ' ' || true)
[ -z "$internal" ] || fail "$so exports internal symbols: $internal"
missing=$(comm -23 "$tmp/declared" "$tmp/exported" | tr '\n' ' ')
[ -z "$missing" ] || fail "declared but not exported by $so: $missing"
# The linker's own symbols aside, nothing else leaves the library.
extra=$(comm -13 "$tmp/declared" "$tmp/exported" |
	grep -v -x -e _init -e _fini -e _edata -e _end -e __bss_start |
	tr '\n' ' ' || true)
[ -z "$extra" ] || fail "$so exports what no header declares: $extra"
n=$(wc -l <"$tmp/declared")
echo "check-exports: $n symbols exported, those the headers declare, no other"
