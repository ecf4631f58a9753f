#!/usr/bin/env bash
# heaplive.sh BIN HOSTS OUT (from the repository root): live.sh's workload with the server
# under heaptrack (BIN built with glibc's allocator: `#[global_allocator]` in src/main.rs
# commented out, or heaptrack sees nothing of mimalloc's). Then
#   heaptrack_print -f OUT/heap.zst -F OUT/stacks.txt --flamegraph-cost-type peak
#   python3 heap_by_site.py OUT/stacks.txt
set -u
bin=$1; hosts=$2; out=$3; mkdir -p "$out"
. bench/lib.sh
d=$(mktemp -d /tmp/hgh.XXXXXX); port=$(free_port)
heaptrack -o "$out/heap" "$bin" serve --data-dir "$d/data" --bind 127.0.0.1 --port "$port" > "$out/heaptrack.log" 2>&1 &
for _ in $(seq 300); do curl -s -o /dev/null "127.0.0.1:$port/api/version" && break; sleep 0.2; done
# The server itself, not heaptrack's wrapper script.
pid=$(pgrep -f "^$bin serve --data-dir $d/data" | head -1)
target/release/hourglass-bench ingest --workload high-cardinality --churn 0 --hosts "$hosts" --addr "127.0.0.1:$port" --duration 1m --start now-2m --server-pid "$pid" --no-progress > "$out/bench.out" 2>&1
sleep 5
curl -s "127.0.0.1:$port/metrics" | grep -E '^hourglass_(head|series)[a-z_]*' >> "$out/bench.out"
kill "$pid"
# heaptrack writes its file out after the server exits.
wait
rm -rf "$d"
