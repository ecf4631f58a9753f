#!/usr/bin/env bash
# one telnet ingest with the dbg build, keeping the server's DBG lines
set -u
out=$1
. bench/lib.sh
trap cleanup EXIT
start_hourglass /work/bins/dbg
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol telnet --start 1700006400 --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --server-pid "$HG_PID" --no-progress > "$out" 2>&1
sleep 1
grep DBG "$HG_DIR/log" > "$out.dbg"
