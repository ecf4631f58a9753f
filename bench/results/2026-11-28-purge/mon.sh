#!/usr/bin/env bash
# mon.sh BIN PROTO OUT (from the repository root): the churn table's ingest over one protocol, with
# RSS (MiB) and the head's gauges and flush counters sampled every 0.25 s (OUT.mem).
set -u
bin=$1; proto=$2; out=$3
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$bin"
( while kill -0 $HG_PID 2>/dev/null; do
   echo "$(date +%s.%N | cut -c7-14) rss=$(awk '/VmRSS/{print int($2/1024)}' /proc/$HG_PID/status) $(curl -s --max-time 1 $HG_ADDR/metrics | grep -E '^hourglass_(series|series_created_total|series_stopped_total|flushes_total|flushed_rows_total|head_points|series_registry_bytes) ' | awk '{printf "%s=%s ", substr($1,11), $2}')"
   sleep 0.25; done ) > "$out.mem" &
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol "$proto" --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --start 1700006400 --server-pid "$HG_PID" --no-progress > "$out" 2>&1
sleep 1
