#!/usr/bin/env bash
# run-dbg.sh BIN PROTO OUT (from the repository root): one churn-table ingest into a fresh server
# built with the DBG timing lines (see commands.sh), its gauges in OUT.mem and its DBG lines in OUT.dbg.
set -u
bin=$1; proto=$2; out=$3
. bench/lib.sh
start_hourglass "$bin"
( while kill -0 "$HG_PID" 2>/dev/null; do
   echo "$(date +%s.%N | cut -c7-14) rss=$(awk '/VmRSS/{print int($2/1024)}' /proc/$HG_PID/status) $(curl -s --max-time 1 "$HG_ADDR/metrics" | grep -E '^hourglass_(series|flushes_total) ' | awk '{printf "%s=%s ", substr($1,11), $2}')"
   sleep 0.25; done ) > "$out.mem" &
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol "$proto" --start 1700006400 --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --server-pid "$HG_PID" --no-progress > "$out" 2>&1
sleep 1
grep DBG "$HG_DIR/log" | sed "s/^/$(date +%s) /" > "$out.dbg"

cleanup
