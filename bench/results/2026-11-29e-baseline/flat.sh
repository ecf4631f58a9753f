#!/usr/bin/env bash
# flat.sh BIN PROTO OUT: a flat profile (no stacks, 4999 Hz) of one cpu-workload
# ingest over PROTO; read with perf report -i OUT --no-children --sort sym.
set -u
cd "$(dirname "$0")/../../.."
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$1"
perf record -F 4999 -p "$HG_PID" -o "$3" 2>/dev/null &
pp=$!
sleep 0.3
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol "$2" --hosts 100 --duration 1d --start 1700006400 --server-pid "$HG_PID" --no-progress 2>&1 | grep -E "CPU" | tr -s ' '
kill -INT $pp; wait $pp
