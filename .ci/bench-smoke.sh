#!/usr/bin/env bash
# Quick correctness smoke of hourglass-bench against a real server: a small
# cpu-workload ingest over telnet and over /api/put, every point queried back
# through /api/query, then the bench's own query mode, which checks every
# answer against the generated data.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib.sh
work=$(mktemp -d)
# The server writes its data directory as it shuts down: wait for it before
# removing the directory, and never let the cleanup fail the stage.
trap 'kill ${HG_PID:-} 2>/dev/null || true; wait ${HG_PID:-} 2>/dev/null || true; rm -rf "$work" || true' EXIT
cargo build -q -p hourglass-bench --bin hourglass-bench
start_server "$work"
bench=target/debug/hourglass-bench
# 10 hosts x 5 metrics x 360 points (1 h at 10 s) = 18,000 points each.
shape=(--hosts 10 --metrics 5 --interval 10s --duration 1h --start 1700006400)
$bench ingest --addr "$HG_ADDR" "${shape[@]}" --connections 2 --no-progress
$bench ingest --addr "$HG_ADDR" "${shape[@]}" --protocol http-put --gzip --batch 700 --prefix put. --no-progress
python3 - "$HG_ADDR" <<'PY'
import json, sys, urllib.request
addr = sys.argv[1]
for prefix in ("cpu.", "put.cpu."):
    metrics = json.load(urllib.request.urlopen(f"http://{addr}/api/suggest?type=metrics&q={prefix}&max=100"))
    metrics = [m for m in metrics if m.startswith(prefix)]
    assert len(metrics) == 5, metrics
    total = 0
    for m in metrics:
        q = f"http://{addr}/api/query?start=1700006400&end=1700010000&m=none:{m}"
        res = json.load(urllib.request.urlopen(q))
        assert len(res) == 10, (m, len(res))
        total += sum(len(r["dps"]) for r in res)
    assert total == 18000, (prefix, total)
    print(f"bench smoke: all {total} {prefix}* points queried back")
PY
# The reference queries, answers checked (`last` once /api/query/last is served).
$bench query --target "hourglass=$HG_ADDR" "${shape[@]}" --repeat 3 --warmup 1 \
    --queries hour-avg,day-avg,max-per-host,sum-all --no-progress
# Churned series (pods), every point read back by the bench itself
# (`--verify`: exit 4 when a point is missing or wrong).
$bench ingest --addr "$HG_ADDR" --workload high-cardinality --hosts 200 --churn 10 \
    --duration 30m --start 1700006400 --protocol prom-write --verify --no-progress
# And the check fails when points are not there: a server whose retention
# is a day takes 2023's points but does not return them.
kill "$HG_PID"; wait "$HG_PID" 2>/dev/null || true
printf '[retention]\nttl = "1d"\n' > "$work/ttl.toml"
HG_CONFIG="$work/ttl.toml" start_server "$work/ttl"
rc=0
$bench ingest --addr "$HG_ADDR" --workload high-cardinality --hosts 20 --churn 10 \
    --duration 10m --start 1700006400 --protocol prom-write --verify --no-progress || rc=$?
[ "$rc" = 4 ] || { echo "bench smoke: --verify should have failed with exit 4, got $rc"; exit 1; }
echo "bench smoke: --verify found the missing points"
