#!/bin/sh
# run.sh - the main job behind `make run`: `pinwheel bench` with its
# defaults (every scenario, shard against steal, 7 alternated rounds of
# 0.4 s warm-up and 1.1 s measured) but --server-cores auto: each
# scenario at its own placement only, so the run stays near 2 minutes
# (the default, 1 and all server cores, runs every scenario twice on a
# 2-CPU machine). Then where the table, JSON and plot went. Extra
# arguments (make run RUN_ARGS=...) go to pinwheel bench after it, so
# RUN_ARGS='--server-cores 1,all' draws the scaling curves.
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
echo "make run: $pw bench --server-cores auto $*"
echo "make run: load average $l1 $l5 $l15 on $(nproc) CPUs before the run;" \
	"figures from a busy machine are a smoke test, not a result"
echo
exec "$pw" bench --server-cores auto "$@"
