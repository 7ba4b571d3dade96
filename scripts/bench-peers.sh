#!/bin/sh
# bench-peers.sh - build the Tokio peers offline from Debian's crates.
#
# Tokio 1.24.2 comes from librust-tokio-dev (/usr/share/cargo/registry);
# nothing is fetched from the network. When cargo or the crates are
# missing this says so and exits 0, so the rest of the benchmarks run.
set -eu
cd "$(dirname "$0")/../bench/peers/tokio"

if ! command -v cargo >/dev/null 2>&1; then
	echo "bench-peers: cargo is not installed; skipping the Tokio peers" \
		"(apt-get install cargo librust-tokio-dev)"
	exit 0
fi
if [ ! -d /usr/share/cargo/registry ] ||
	! ls -d /usr/share/cargo/registry/tokio-1.* >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "bench-peers: installing librust-tokio-dev"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			librust-tokio-dev >/dev/null
	else
		echo "bench-peers: Debian's Tokio crates are missing; skipping" \
			"(as root: apt-get install librust-tokio-dev)"
		exit 0
	fi
fi
cargo build --release --offline -q
echo "bench-peers: built $(pwd)/target/release/pinwheel-tokio-peer"
