#!/usr/bin/env bash
# hour-avg (1 series x 1 h, 1-min avg) against two builds side by side: each
# server takes the cpu workload over telnet, then ROUNDS rounds of 500 timed
# queries alternate between them (p50 per round). With PERF=1 the second
# build's server is profiled (perf record -g) over one more long round.
#   hour-avg.sh OLD_SERVER NEW_SERVER [ROUNDS] [OUT]
set -euo pipefail
cd "$(dirname "$0")/../../.."
old=$1 new=$2 rounds=${3:-6} out=${4:-/tmp/hour-avg}
mkdir -p "$out"
B=target/release/hourglass-bench
work=(--hosts 100 --duration 1d --start 1700006400)
r=0
. bench/lib.sh
trap cleanup EXIT
declare -A addr=() pid=()
for build in old new; do
    if [ $build = old ]; then bin=$old; else bin=$new; fi
    start_hourglass "$bin"
    ingest "$build-telnet" "$HG_PID" --addr "$HG_ADDR" --protocol telnet
    addr[$build]=$HG_ADDR; pid[$build]=$HG_PID
    wait_idle "$HG_PID"
done
for round in $(seq "$rounds"); do
    for build in old new; do
        "$B" query "${work[@]}" --no-progress --json --queries hour-avg --repeat 500 --warmup 50 \
            --target "hourglass=${addr[$build]}" >"$out/round$round-$build.json"
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["results"][0]; print(sys.argv[2], sys.argv[3], "p50 ms", round(r["p50_ms"],4))' \
            "$out/round$round-$build.json" "$round" "$build"
    done
done
if [ -n "${PERF:-}" ]; then
    perf record -F 2000 -g -p "${pid[new]}" -o "$out/perf-new.data" -- sleep 20 >/dev/null 2>&1 &
    perf_pid=$!
    "$B" query "${work[@]}" --no-progress --json --queries hour-avg --repeat 20000 --warmup 10 \
        --target "hourglass=${addr[new]}" >"$out/perf-round-new.json" || true
    wait $perf_pid || true
fi
