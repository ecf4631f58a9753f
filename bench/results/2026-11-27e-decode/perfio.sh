#!/usr/bin/env bash
# perfio.sh BIN PROTO OUT (from the repository root): the 10-minute churn table's ingest (one
# protocol) with perf on the whole server; then e.g.
#   perf script -i OUT/perf.data --comm hourglass-io | python3 under.py decode_series
set -u
bin=$1; proto=$2; out=$3; mkdir -p "$out"
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$bin"
perf record -q -T --call-graph dwarf,16384 -F "${FREQ:-49}" -p "$HG_PID" -o "$out/perf.data" >/dev/null 2>&1 &
pp=$!
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol "$proto" --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --start 1700006400 --server-pid "$HG_PID" --no-progress > "$out/bench.out" 2>&1
kill -INT $pp; wait $pp
