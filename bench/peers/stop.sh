#!/usr/bin/env bash
# Stops a peer started by start.sh and removes its data directory:
#
#   bench/peers/stop.sh "$DIR"
set -euo pipefail
dir=${1:?usage: stop.sh DIR (as printed by start.sh)}
case "$dir" in
    /tmp/hourglass-peer-*) ;;
    *) echo "stop.sh: $dir is not a directory start.sh made" >&2; exit 2 ;;
esac
if [ -f "$dir/pid" ]; then
    pid=$(cat "$dir/pid")
    if kill "$pid" 2>/dev/null; then
        for _ in $(seq 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
fi
rm -rf "$dir"
