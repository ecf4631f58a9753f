#!/usr/bin/env bash
# qs.sh BIN OUT [VAR=VALUE...] (from the repository root): the cpu workload over telnet into a fresh server
# (environment VAR=VALUE set for it), then the reference queries with `perf stat -e page-faults,task-clock`
# on the server during the queries only (OUT, OUT.stat)
set -u
bin=$1; out=$2; shift 2
B=target/release/hourglass-bench
. bench/lib.sh
trap cleanup EXIT
[ $# -gt 0 ] && export "$@"
start_hourglass "$bin"
$B ingest --hosts 100 --duration 1d --start 1700006400 --server-pid $HG_PID --no-progress --addr $HG_ADDR --protocol telnet > $out.ingest 2>&1
wait_idle $HG_PID
perf stat -e page-faults,task-clock -p "$HG_PID" -o "$out.stat" &
pp=$!
$B query --hosts 100 --duration 1d --start 1700006400 --no-progress --target "hourglass=$HG_ADDR" > $out 2>&1
kill -INT $pp; wait $pp
