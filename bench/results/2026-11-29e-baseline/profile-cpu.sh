#!/usr/bin/env bash
# profile-cpu.sh BIN PROTO OUTDIR (from the repository root): the cpu workload
# (100 hosts x 1 day) over PROTO into a fresh server under `perf record`
# (999 Hz, frame-pointer-free DWARF stacks). Read with
#   perf report -i OUTDIR/perf.data --no-children --sort sym -g none
set -u
bin=$1; proto=$2; out=$3; mkdir -p "$out"
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$bin"
perf record -F 999 -g --call-graph dwarf,16384 -p "$HG_PID" -o "$out/perf.data" 2>/dev/null &
pp=$!
sleep 0.5
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol "$proto" --hosts 100 --duration 1d --start 1700006400 --server-pid "$HG_PID" --no-progress > "$out/bench.out" 2>&1
kill -INT $pp; wait $pp
