#!/usr/bin/env bash
# Runs a small hourglass-bench workload against a real server and checks
# through /api/query that every point arrived.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib.sh
work=$(mktemp -d)
trap 'kill $HG_PID 2>/dev/null || true; rm -rf "$work"' EXIT
cargo build -q -p hourglass-bench --bin hourglass-bench
start_server "$work"
# 10 hosts x 5 metrics x 360 points (1 h at 10 s) = 18,000 points.
target/debug/hourglass-bench ingest --addr "$HG_ADDR" --hosts 10 --metrics 5 --interval 10s --duration 1h --start 1700000000 --connections 2
python3 - "$HG_ADDR" <<'PY'
import json, sys, urllib.request
addr = sys.argv[1]
metrics = json.load(urllib.request.urlopen(f"http://{addr}/api/suggest?type=metrics&q=bench.&max=100"))
assert len(metrics) == 5, metrics
total = 0
for m in metrics:
    q = f"http://{addr}/api/query?start=1700000000&end=1700003600&m=none:{m}"
    res = json.load(urllib.request.urlopen(q))
    assert len(res) == 10, (m, len(res))
    total += sum(len(r["dps"]) for r in res)
assert total == 18000, total
print(f"bench smoke: all {total} points queried back")
PY
