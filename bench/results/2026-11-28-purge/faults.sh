#!/usr/bin/env bash
# faults.sh BIN PROTO OUT (from the repository root): the churn table's ingest over one protocol, with
# `perf record -e page-faults -c 2000 --call-graph dwarf` on the server; then
#   perf script -i OUT/perf.data | python3 sites.py 2 30
set -u
bin=$1; proto=$2; out=$3; mkdir -p "$out"
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$bin"
perf record -q -T --call-graph dwarf,16384 -e page-faults -c 2000 -p "$HG_PID" -o "$out/perf.data" >/dev/null 2>&1 &
pp=$!
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol "$proto" --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --start 1700006400 --server-pid "$HG_PID" --no-progress > "$out/bench.out" 2>&1
kill -INT $pp; wait $pp
