#!/usr/bin/env bash
# The side-by-side run behind BENCHMARKS.md's peer table: hourglass,
# VictoriaMetrics, InfluxDB and Prometheus on this machine, the same cpu
# workload (100 hosts x 10 metrics x 1 day at 10 s = 8.64 M points), the
# same hourglass-bench, in one run:
#
#   bench/peers/side-by-side.sh [RUNS] [OUT_DIR]     (default 3 runs)
#
# Each run starts every server fresh and ingests the workload once per
# write protocol each one speaks (a fresh instance per protocol), then
# queries the four servers that hold the data written over their main
# protocol (hourglass: telnet, VictoriaMetrics: its OpenTSDB telnet
# listener, InfluxDB: /write, Prometheus: remote write) with
# `hourglass-bench query`, which checks every answer; hourglass twice, over
# /api/query and over its own PromQL (the queries VictoriaMetrics and
# Prometheus get). Every report is kept as JSON in OUT_DIR; summary.py
# prints the medians (min-max) over runs.
#
# SBS_QUERY_ONLY=1 skips the other write paths and InfluxDB (the query
# latency of hourglass, its PromQL, VictoriaMetrics and Prometheus only).
# Needs the release build and bench/peers/install.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
out=${2:-$(mktemp -d /tmp/side-by-side.XXXXXX)}
mkdir -p "$out"
B=target/release/hourglass-bench
S=target/release/hourglass
for bin in "$B" "$S"; do
    [ -x "$bin" ] || { echo "side-by-side: build first: cargo build --release -p hourglass -p hourglass-bench" >&2; exit 1; }
done
work=(--hosts 100 --duration 1d --start 1700006400)
# shellcheck source=bench/lib.sh
. bench/lib.sh
trap cleanup EXIT

# Starts a peer; sets ADDR, PID, DIR (and OPENTSDB_* where it has them).
start_peer() {
    eval "$(bench/peers/start.sh "$1")"
    started+=("$DIR")
}

for r in $(seq "$runs"); do
    echo "run $r of $runs"
    if [ -z "${SBS_QUERY_ONLY:-}" ]; then
        # Write paths on instances used only for that protocol.
        for p in influx-http prom-write http-put; do
            start_hourglass
            ingest "hourglass-$p" "$HG_PID" --addr "$HG_ADDR" --protocol "$p"
            cleanup
        done
        start_peer victoriametrics
        ingest vm-influx-http "$PID" --addr "$ADDR" --protocol influx-http
        cleanup
        start_peer victoriametrics
        ingest vm-prom-write "$PID" --addr "$ADDR" --protocol prom-write
        cleanup
        start_peer victoriametrics
        ingest vm-http-put "$PID" --addr "$OPENTSDB_HTTP" --protocol http-put
        cleanup
        start_peer influxdb
        ingest influxdb-telnet "$PID" --addr "$OPENTSDB_TELNET" --protocol telnet --tcp-ack close
        cleanup
        start_peer influxdb
        # Its OpenTSDB HTTP path does not create the database it writes to.
        curl -sf -XPOST "http://$ADDR/query" --data-urlencode "q=CREATE DATABASE bench" >/dev/null
        ingest influxdb-http-put "$PID" --addr "$OPENTSDB_HTTP" --protocol http-put
        cleanup
    fi

    # The four servers queried side by side.
    start_hourglass
    ingest hourglass-telnet "$HG_PID" --addr "$HG_ADDR" --protocol telnet
    hg=$HG_ADDR
    start_peer victoriametrics
    ingest vm-telnet "$PID" --addr "$OPENTSDB_TELNET" --protocol telnet --tcp-ack close
    vm=$ADDR
    influx=
    if [ -z "${SBS_QUERY_ONLY:-}" ]; then
        start_peer influxdb
            ingest influxdb-influx-http "$PID" --addr "$ADDR" --protocol influx-http --create-db
            influx=$ADDR
    fi
    start_peer prometheus
    ingest prometheus-prom-write "$PID" --addr "$ADDR" --protocol prom-write
    prom=$ADDR
    # VictoriaMetrics buffers the last second of rows in memory.
    curl -sf "http://$vm/internal/force_flush" >/dev/null || true
    sleep 2
    echo "  query"
    "$B" query "${work[@]}" --no-progress --json \
        --target "hourglass=$hg" --target "hourglass-promql=$hg" --target "vm=$vm" \
        ${influx:+--target "influxdb=$influx"} --target "prometheus=$prom" \
        >"$out/run$r-query.json" || echo "  (some answers were wrong or failed: see $out/run$r-query.json)"
    cleanup
done
python3 bench/peers/summary.py "$out"
echo "reports: $out"
