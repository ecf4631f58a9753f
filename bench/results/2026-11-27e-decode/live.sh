#!/usr/bin/env bash
# live.sh BIN HOSTS OUT (from the repository root): BENCHMARKS "Head memory at 1 M series"
# (churn 0, telnet, 1 minute of open hours), then the RSS 5 s later and the head's gauges.
set -u
bin=$1; hosts=$2; out=$3
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$bin"
target/release/hourglass-bench ingest --workload high-cardinality --churn 0 --hosts "$hosts" --addr "$HG_ADDR" --duration 1m --start now-2m --server-pid "$HG_PID" --no-progress > "$out" 2>&1
sleep 5
echo "== after 5 s: $(grep -E 'VmRSS|VmHWM' /proc/$HG_PID/status | tr -s ' \t' ' ' | tr '\n' ' ')" >> "$out"
curl -s "$HG_ADDR/metrics" | grep -E '^hourglass_(head|series|uid|registry|cache|memtable)[a-z_]*' >> "$out"
