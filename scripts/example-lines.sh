#!/bin/sh
# example-lines.sh - lines of code of each example beside its Tokio one.
#
# For every examples/NAME_STYLE.c (STYLE: poll, async or fiber) prints
# the example, its style, its lines, the lines of its Tokio counterpart
# bench/peers/tokio/examples/NAME.rs and the ratio of the two. A line
# counts when it holds code: blank lines and lines with nothing but
# comments (C's and Rust's // and slash-star forms, Rust's doc comments
# included) do not. Strings are skipped while looking for comments.
#
# Usage: sh scripts/example-lines.sh [--markdown]   (from anywhere)
set -eu
cd "$(dirname "$0")/.."

# count FILE: its non-blank, non-comment lines.
count() {
	awk -v q="'" '
	{
		code = 0
		n = length($0)
		for (i = 1; i <= n; i++) {
			c = substr($0, i, 1)
			two = substr($0, i, 2)
			if (inblock) {
				if (two == "*/") { inblock = 0; i++ }
				continue
			}
			if (instr) {
				if (c == "\\") i++
				else if (c == "\"") instr = 0
				continue
			}
			if (two == "//") break
			if (two == "/*") { inblock = 1; i++; continue }
			if (c == "\"") { instr = 1; code = 1; continue }
			# A character literal (q is the single quote), a double
			# quote in one among them; a Rust lifetime has no
			# closing quote two places on.
			if (c == q && substr($0, i + 2, 1) == q) {
				i += 2; code = 1; continue
			}
			if (c == q && substr($0, i + 1, 1) == "\\") {
				i += 3; code = 1; continue
			}
			if (c !~ /[ \t\r]/) code = 1
		}
		if (code) lines++
	}
	END { print lines + 0 }' "$1"
}

# row EXAMPLE STYLE LINES TOKIO RATIO: one line of the table.
row() {
	if [ $md = 1 ]; then
		echo "| $1 | $2 | $3 | $4 | $5 |"
	else
		printf '%-12s %-6s %6s %12s %6s\n' "$1" "$2" "$3" "$4" "$5"
	fi
}

md=0
[ "${1:-}" = --markdown ] && md=1
if [ $md = 1 ]; then
	echo "| example | style | lines | Tokio lines | ratio |"
	echo "|---|---|---:|---:|---:|"
else
	row example style lines "Tokio lines" ratio
fi
for f in examples/*.c; do
	[ -e "$f" ] || continue
	base=$(basename "$f" .c)
	name=${base%_*}
	style=${base##*_}
	lines=$(count "$f")
	rs=bench/peers/tokio/examples/$name.rs
	if [ -f "$rs" ]; then
		tokio=$(count "$rs")
		ratio=$(awk -v a="$lines" -v b="$tokio" \
			'BEGIN { printf "%.2f", a / b }')
	else
		tokio=-
		ratio=-
	fi
	row "$name" "$style" "$lines" "$tokio" "$ratio"
done
# Tokio examples that have no pinwheel counterpart yet.
for rs in bench/peers/tokio/examples/*.rs; do
	[ -e "$rs" ] || continue
	name=$(basename "$rs" .rs)
	for f in examples/"$name"_*.c; do
		[ -e "$f" ] && continue 2
	done
	row "$name" - - "$(count "$rs")" -
done
