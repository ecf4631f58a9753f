#!/usr/bin/env bash
# q.sh BIN OUT [VAR=VALUE...] (from the repository root): the cpu workload over telnet into a fresh server
# (environment VAR=VALUE set for it), then the reference queries (hourglass-bench query; OUT). With
# STAT=1, `perf stat -e page-faults,task-clock` on the server during the queries only (OUT.stat); with
# STAT=record, `perf record` of its page faults instead (OUT.perf; then perf script | python3 sites.py 3 8).
set -u
bin=$1; out=$2; shift 2
B=target/release/hourglass-bench
. bench/lib.sh
trap cleanup EXIT
[ $# -gt 0 ] && export "$@"
start_hourglass "$bin"
$B ingest --hosts 100 --duration 1d --start 1700006400 --server-pid $HG_PID --no-progress --addr $HG_ADDR --protocol telnet > $out.ingest 2>&1
wait_idle $HG_PID
case "${STAT:-0}" in
    1) perf stat -e page-faults,task-clock -p "$HG_PID" -o "$out.stat" & pp=$! ;;
    record) perf record -q -e page-faults -c 200 --call-graph dwarf,16384 -p "$HG_PID" -o "$out.perf" >/dev/null 2>&1 & pp=$! ;;
esac
$B query --hosts 100 --duration 1d --start 1700006400 --no-progress --target "hourglass=$HG_ADDR" > $out 2>&1
if [ "${STAT:-0}" != 0 ]; then kill -INT $pp; wait $pp; fi
