#!/bin/sh
# run.sh - the main job behind `make run`: today, the runtime demonstration.
set -eu
exec "$1" demo
