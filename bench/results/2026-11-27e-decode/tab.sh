#!/usr/bin/env bash
# tab.sh BIN PROTO OUT (from the repository root): one run of the 10-minute churn table's
# ingest on a fresh server (no perf).
set -u
bin=$1; proto=$2; out=$3
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$bin"
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol "$proto" --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --start 1700006400 --server-pid "$HG_PID" --no-progress > "$out" 2>&1
