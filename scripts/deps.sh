#!/bin/sh
# deps.sh - make sure the Debian packages pinwheel builds with are present.
#
# Usage: scripts/deps.sh PACKAGE...
# Installs the missing ones with apt-get when run as root; otherwise names
# them and fails. Exit 0 when everything is present.
set -u
missing=""
for p in "$@"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "pinwheel: missing Debian packages:$missing" >&2
	echo "pinwheel: install them with: sudo apt-get install$missing" >&2
	exit 1
fi
echo "pinwheel: installing missing packages:$missing"
export DEBIAN_FRONTEND=noninteractive
# An outdated or empty package list fails the install: refresh it once.
if ! apt-get install -y -q --no-install-recommends $missing; then
	apt-get update -q && apt-get install -y -q --no-install-recommends $missing || {
		echo "pinwheel: apt-get could not install:$missing" >&2
		exit 1
	}
fi
