#!/usr/bin/env bash
# one.sh BIN: one telnet churn ingest; prints bench + server CPU + bench CPU + vmstat idle
set -u
cd "$(dirname "$0")/../../.."
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$1"
vmstat 1 > /tmp/one.vmstat & vp=$!
/usr/bin/time -f "bench cpu %U+%S s wall %e" target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol telnet --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --start 1700006400 --server-pid "$HG_PID" --no-progress 2>&1 | grep -E "points/s|CPU|RSS|bench cpu"
kill $vp
awk 'NR>3 {print $13, $14, $15, $16}' /tmp/one.vmstat | tr '\n' '|'; echo
