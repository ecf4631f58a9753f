#!/usr/bin/env bash
# The stopped-series bound (issue 18, `head.idle_flush_secs`) where it can
# act: the high-cardinality workload paced so that data time runs 20x wall
# time (2,000 hosts x 10 metrics, a new pod every 10 points, 20 minutes of
# data at --rate 40000: 20 k live series, 258 k created), over remote write
# into a fresh server with `flush_interval_secs = 1` (it looks as often, in
# data time, as a default server looks at live data), once with each of
# IDLES (default "0 120"):
#
#   bench/churn-paced.sh [SERVER] [OUT_DIR]
#
# Prints each server's series gauges at the end; reports are kept as JSON in
# OUT_DIR (idle<N>-prom-write), summarised by bench/peers/summary.py.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/hourglass}
out=${2:-$(mktemp -d /tmp/churn-paced.XXXXXX)}
mkdir -p "$out"
B=target/release/hourglass-bench
for b in "$B" "$bin"; do
    [ -x "$b" ] || { echo "churn-paced: not built: $b (cargo build --release -p hourglass -p hourglass-bench)" >&2; exit 1; }
done
work=(--workload high-cardinality --hosts 2000 --churn 10 --duration 20m --start 1700006400 --rate 40000)
r=1
# shellcheck source=bench/lib.sh
. bench/lib.sh
cfg=$(mktemp /tmp/churn-paced.XXXXXX.toml)
trap 'cleanup; rm -f "$cfg"' EXIT
for idle in ${IDLES:-0 120}; do
    printf '[head]\nflush_interval_secs = 1\nidle_flush_secs = %s\n' "$idle" >"$cfg"
    HG_CONFIG=$cfg start_hourglass "$bin"
    ingest "idle$idle-prom-write" "$HG_PID" --addr "$HG_ADDR" --protocol prom-write
    curl -s "http://$HG_ADDR/metrics" \
        | grep -E '^hourglass_series(_stopped_total|_created_total)? ' | sed "s/^/  idle_flush_secs=$idle /"
    cleanup
done
python3 bench/peers/summary.py "$out"
