#!/bin/sh
# run.sh - the main job behind `make run`: `pinwheel bench` with its
# defaults (every scenario, shard against steal, 5 alternated rounds of
# 0.5 s warm-up and 1.5 s measured: about 2 minutes), then where the
# table, JSON and plot went. Extra arguments (make run RUN_ARGS=...) go to
# pinwheel bench.
#
# Usage: scripts/run.sh BUILD/pinwheel [pinwheel bench flags]
set -eu
pw=$1
shift
[ -x "$pw" ] || {
	echo "run.sh: $pw is not built (run make)" >&2
	exit 1
}
read -r l1 l5 l15 _ </proc/loadavg
echo "make run: $pw bench $*"
echo "make run: load average $l1 $l5 $l15 on $(nproc) CPUs before the run;" \
	"figures from a busy machine are a smoke test, not a result"
echo
exec "$pw" bench "$@"
