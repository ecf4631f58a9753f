#!/usr/bin/env bash
# profile.sh BIN PROTO OUTDIR (from the repository root): the churn table's ingest into a fresh
# server under `perf record` (499 Hz, DWARF call stacks) - the CPU split by thread and the
# flusher's breakdown in BENCHMARKS "Series churn, step 13". Read it with:
#   perf report -i OUTDIR/perf.data --no-children --sort comm -g none           (by thread)
#   perf report -i OUTDIR/perf.data --children --comm hourglass-flush --sort sym -g none
#     (flush_frozen, roll_up_frozen, write_frozen, record_newest: inclusive shares)
# WORKLOAD (the ingest's workload flags) and PERF_HZ change what is run and the rate.
set -u
read -r -a work <<<"${WORKLOAD:---workload high-cardinality --hosts 20000 --churn 10 --duration 10m --start 1700006400}"
bin=$1; proto=$2; out=$3; mkdir -p "$out"
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$bin"
perf record -F "${PERF_HZ:-499}" -g --call-graph dwarf,16384 -p "$HG_PID" -o "$out/perf.data" 2>/dev/null &
pp=$!
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol "$proto" "${work[@]}" --server-pid "$HG_PID" --no-progress > "$out/bench.out" 2>&1
kill -INT $pp; wait $pp
