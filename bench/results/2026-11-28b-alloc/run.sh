#!/usr/bin/env bash
# run.sh BIN PROTO OUT [BENCH ARGS…] (from the repository root): one ingest into a fresh
# server, the churn table's workload unless BENCH ARGS give another (`--hosts 100 --duration 1d`
# is the cpu workload), with RSS (MiB) and the head's gauges sampled every 0.25 s into OUT.mem.
#   TAIL=s           keep sampling s seconds after the ingest (default 1)
#   NICE_COMPACT=n   renice the compaction thread to n first
#   MALLOC_STATS=1   at the end, glibc's malloc_stats() into the server's log, copied to OUT
#                    (for a build without the mimalloc global allocator)
set -u
bin=$1; proto=$2; out=$3; shift 3
[ $# -gt 0 ] || set -- --workload high-cardinality --hosts 20000 --churn 10 --duration 10m
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$bin"
if [ -n "${NICE_COMPACT:-}" ]; then
    for t in /proc/$HG_PID/task/*; do
        [ "$(cat "$t/comm")" = hourglass-compa ] && renice -n "$NICE_COMPACT" -p "$(basename "$t")" >/dev/null
    done
fi
( while kill -0 "$HG_PID" 2>/dev/null; do
   echo "$(date +%s.%N | cut -c7-14) rss=$(awk '/VmRSS/{print int($2/1024)}' /proc/$HG_PID/status) $(curl -s --max-time 1 "$HG_ADDR/metrics" | grep -E '^hourglass_(series|series_created_total|series_stopped_total|flushes_total|flushed_rows_total|head_points|series_registry_bytes) ' | awk '{printf "%s=%s ", substr($1,11), $2}')"
   sleep 0.25; done ) > "$out.mem" &
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol "$proto" --start 1700006400 "$@" --server-pid "$HG_PID" --no-progress > "$out" 2>&1
sleep "${TAIL:-1}"
if [ -n "${MALLOC_STATS:-}" ]; then
    gdb -p "$HG_PID" -batch -ex 'call (void)malloc_stats()' >/dev/null 2>&1
    sleep 1
    tail -25 "$HG_DIR/log" >> "$out"
fi
