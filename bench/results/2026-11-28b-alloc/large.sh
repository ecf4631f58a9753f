#!/usr/bin/env bash
# large.sh BIN PROTO OUTDIR (from the repository root): the churn table's ingest into a fresh
# server with every allocation of 64 KiB or more recorded with its call stack (perf uprobes on
# mimalloc's entry points; the uprobes slow the server some 40-fold, so only the volumes by
# site mean anything). Set the probes up once per binary first:
#   perf probe -x BIN 'mi_malloc_aligned size=%di:u64'
#   perf probe -x BIN 'mi_zalloc_aligned size=%di:u64'
#   perf probe -x BIN 'mi_realloc_aligned size=%si:u64'
# then: perf script -i OUTDIR/perf.data -F comm,tid,event,trace,ip,sym,srcline > all.src
#       python3 sites.py all.src 40
set -u
bin=$1; proto=$2; out=$3; mkdir -p "$out"
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$bin"
ev=probe_$(basename "$bin" | tr -c 'a-zA-Z0-9_\n' _)
perf record -e "$ev:mi_malloc_aligned" --filter 'size >= 65536' -e "$ev:mi_zalloc_aligned" --filter 'size >= 65536' \
    -e "$ev:mi_realloc_aligned" --filter 'size >= 65536' --call-graph dwarf,32768 -p "$HG_PID" -o "$out/perf.data" 2>"$out/perf.err" &
pp=$!
sleep 1
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol "$proto" --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --start 1700006400 --server-pid "$HG_PID" --no-progress > "$out/bench.out" 2>&1
kill -INT $pp; wait $pp
