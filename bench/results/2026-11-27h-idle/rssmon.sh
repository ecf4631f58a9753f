#!/usr/bin/env bash
set -u
bin=$1; proto=$2; out=$3
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$bin"
( while kill -0 $HG_PID 2>/dev/null; do
   echo "$(grep -E 'VmRSS|RssAnon|RssFile|RssShmem' /proc/$HG_PID/status | awk '{printf "%s=%s ", $1, $2}') $(curl -s --max-time 1 $HG_ADDR/metrics | grep -E '^hourglass_(series|head_bytes) ' | awk '{printf "%s=%s ", substr($1,11), $2}')"
   sleep 0.5; done ) > "$out.mem" &
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol "$proto" --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --start 1700006400 --server-pid "$HG_PID" --no-progress > "$out" 2>&1
sleep 1
