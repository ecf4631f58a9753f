#!/usr/bin/env bash
# heaplive.sh BIN HOSTS OUT (from the repository root): live.sh's workload with the server
# under heaptrack (BIN built with glibc's allocator: `#[global_allocator]` in src/main.rs
# commented out, or heaptrack sees nothing of mimalloc's). Then
#   heaptrack_print -f OUT/heap.zst -F OUT/stacks.txt --flamegraph-cost-type peak
#   python3 heap_by_site.py OUT/stacks.txt
# CHURN_TABLE=1 runs the 10-minute churn table's remote-write ingest instead (HOSTS unused):
# 2026-11-27f-cache/heaptrack-churn-prom.txt.
set -u
bin=$1; hosts=$2; out=$3; mkdir -p "$out"
. bench/lib.sh
d=$(mktemp -d /tmp/hgh.XXXXXX); port=$(free_port)
heaptrack -o "$out/heap" "$bin" serve --data-dir "$d/data" --bind 127.0.0.1 --port "$port" > "$out/heaptrack.log" 2>&1 &
for _ in $(seq 300); do curl -s -o /dev/null "127.0.0.1:$port/api/version" && break; sleep 0.2; done
# The server itself, not heaptrack's wrapper script.
pid=$(pgrep -f "^$bin serve --data-dir $d/data" | head -1)
if [ -n "${CHURN_TABLE:-}" ]; then
    work=(--protocol prom-write --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --start 1700006400)
else
    work=(--workload high-cardinality --churn 0 --hosts "$hosts" --duration 1m --start now-2m)
fi
target/release/hourglass-bench ingest "${work[@]}" --addr "127.0.0.1:$port" --server-pid "$pid" --no-progress > "$out/bench.out" 2>&1
sleep 5
curl -s "127.0.0.1:$port/metrics" | grep -E '^hourglass_(head|series)[a-z_]*' >> "$out/bench.out"
kill "$pid"
# heaptrack writes its file out after the server exits.
wait
rm -rf "$d"
