#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/../../.."
. bench/lib.sh
trap cleanup EXIT
out=$2; mkdir -p $out
start_hourglass "$1"
perf record -e sched:sched_switch --call-graph dwarf,16384 -p "$HG_PID" -o "$out/sw.data" 2>/dev/null &
pp=$!
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol telnet --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --start 1700006400 --server-pid "$HG_PID" --no-progress 2>&1 | grep -E "points/s|CPU"
kill -INT $pp; wait $pp
