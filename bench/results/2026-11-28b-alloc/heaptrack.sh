#!/usr/bin/env bash
# heaptrack.sh BIN PROTO OUTDIR (from the repository root): the churn table's ingest into a
# fresh server run under heaptrack. BIN is built without the mimalloc global allocator
# (`#[global_allocator]` in src/main.rs commented out), so that glibc's malloc, which heaptrack
# and run.sh's MALLOC_STATS see, serves every allocation; `folded.py` sums its output. With
# KILL=1 the server is killed (SIGKILL) 5 s after the ingest, so that what heaptrack reports
# as leaked is what was live then.
set -u
bin=$1; proto=$2; out=$3; mkdir -p "$out"
. bench/lib.sh
trap cleanup EXIT
HG_DIR=$(mktemp -d /tmp/hourglass-sbs.XXXXXX); started+=("$HG_DIR")
port=$(free_port)
heaptrack -o "$out/ht" "$bin" serve --data-dir "$HG_DIR/data" --bind 127.0.0.1 --port "$port" >>"$HG_DIR/log" 2>&1 &
for _ in $(seq 300); do curl -s -o /dev/null "http://127.0.0.1:$port/api/version" && break; sleep 0.2; done
HG_PID=$(pgrep -f -x "$bin serve --data-dir $HG_DIR/data .*" | head -1); echo "$HG_PID" > "$HG_DIR/pid"
target/release/hourglass-bench ingest --addr "127.0.0.1:$port" --protocol "$proto" --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --start 1700006400 --server-pid "$HG_PID" --no-progress > "$out/bench.out" 2>&1
if [ -n "${KILL:-}" ]; then sleep 5; kill -9 "$HG_PID"; sleep 2; fi
