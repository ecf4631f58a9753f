#!/usr/bin/env bash
# pstat.sh BIN PROTO OUT (from the repository root): the churn table's ingest over one protocol
# into a fresh server, with `perf stat -e page-faults,task-clock` on it (OUT/stat.txt, OUT/bench.out).
set -u
bin=$1; proto=$2; out=$3; mkdir -p "$out"
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$bin"
perf stat -e page-faults,task-clock -p "$HG_PID" -o "$out/stat.txt" &
pp=$!
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol "$proto" --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --start 1700006400 --server-pid "$HG_PID" --no-progress > "$out/bench.out" 2>&1
kill -INT $pp; wait $pp
