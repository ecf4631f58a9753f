#!/usr/bin/env bash
# hour-avg-fresh.sh: four times, a fresh server of each build (issue-base, final) takes the cpu
# workload over telnet, then 300 timed hour-avg queries each (p50), as bench/ab.sh runs them.
set -u
cd "$(dirname "$0")/../../.."
B=target/release/hourglass-bench
work=(--hosts 100 --duration 1d --start 1700006400)
out=/tmp/hour-avg-fresh; mkdir -p $out; r=0
. bench/lib.sh
trap cleanup EXIT
for it in 1 2 3 4; do
  declare -A addr=() dir=()
  for build in issue-base final; do
    start_hourglass /work/bins/$build
    ingest "$build-telnet" "$HG_PID" --addr "$HG_ADDR" --protocol telnet >/dev/null
    addr[$build]=$HG_ADDR; dir[$build]=$HG_DIR
    wait_idle "$HG_PID"
  done
  for build in issue-base final; do
    "$B" query "${work[@]}" --no-progress --json --queries hour-avg --repeat 300 --warmup 20 --target "hourglass=${addr[$build]}" > $out/q.json
    p50=$(python3 -c 'import json; print(round(json.load(open("/tmp/hour-avg-fresh/q.json"))["results"][0]["p50_ms"],3))')
    nf=$(ls ${dir[$build]}/data/store 2>/dev/null | grep -c sst); 
    echo "$it $build p50=$p50 files=$nf $(ls ${dir[$build]}/data | tr '\n' ' ')"
  done
  cleanup
done
