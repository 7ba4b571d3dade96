#!/bin/sh
# toolchain.sh - whether a C compiler builds libFuzzer targets with
# AddressSanitizer and UBSan, and the Debian packages that make it so.
#
# Usage: tests/fuzz/toolchain.sh [--install] [CC]    (CC: clang)
#
# Compiles and links a probe target with -fsanitize=fuzzer,address,undefined
# and exits 0 when that works. Otherwise, without --install, exits 1
# silently (.ci/run then skips the fuzz run). With --install it hands the
# packages to scripts/deps.sh, which installs them as root and otherwise
# names them and fails: the compiler's own package (clang, or clang-N for
# CC=clang-N), then libclang-rt-N-dev for clang N, which holds libFuzzer
# (Debian 12: clang is clang 14, and it only recommends libclang-rt-14-dev,
# so an install without recommends lacks it). Then it probes again.
set -u
install=0
if [ "${1:-}" = --install ]; then
	install=1
	shift
fi
cc=${1:-clang}
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT

probe() {
	cat >"$dir/probe.c" <<'PROBE'
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return data && size > 1 && data[0] == 'x';
}
PROBE
	"$cc" -fsanitize=fuzzer,address,undefined -o "$dir/probe" \
		"$dir/probe.c" >"$dir/log" 2>&1
}

probe && exit 0
[ "$install" -eq 1 ] || exit 1
case $(basename "$cc") in
clang | clang-[0-9]*) ;;
*)
	echo "fuzz: $cc has no libFuzzer; make fuzz needs clang" \
		"(FUZZ_CC=clang, Debian package clang)" >&2
	exit 1
	;;
esac
if ! command -v "$cc" >/dev/null 2>&1; then
	sh "$root/scripts/deps.sh" "$(basename "$cc")" || exit 1
fi
major=$("$cc" -dumpversion 2>/dev/null | cut -d. -f1)
case $major in
'' | *[!0-9]*)
	echo "fuzz: cannot tell the version of $cc" >&2
	exit 1
	;;
esac
sh "$root/scripts/deps.sh" "libclang-rt-$major-dev" || exit 1
probe && exit 0
echo "fuzz: $cc cannot link -fsanitize=fuzzer,address,undefined:" >&2
cat "$dir/log" >&2
exit 1
