#!/usr/bin/env bash
# One build of hourglass against another on this machine, in one run: the
# cpu workload (100 hosts x 10 metrics x 1 day at 10 s = 8.64 M points)
# ingested over every write protocol into a fresh server of each build, then
# the reference queries against both (every answer checked):
#
#   bench/ab.sh OLD_SERVER NEW_SERVER [RUNS] [OUT_DIR]     (default 3 runs)
#
# OLD_SERVER and NEW_SERVER are `hourglass` binaries (e.g. a worktree of the
# previous commit's target/release/hourglass and this tree's). The load comes
# from this tree's target/release/hourglass-bench for both, so only the
# server differs. The builds alternate which goes first from run to run, so
# drift in the machine's load falls on both. Reports are kept as JSON in
# OUT_DIR, named old-* and new-*; bench/peers/summary.py prints the medians.
# PROTOCOLS="influx-http prom-write" narrows the write paths besides telnet
# (telnet always runs: its data serves the queries); PROTOCOLS=none keeps
# telnet only. AB_PROMQL=1 also sends the queries as PromQL (the
# `hourglass-promql` target), reported as old-promql and new-promql.
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench/ab.sh OLD_SERVER NEW_SERVER [RUNS] [OUT_DIR]}
new=${2:?usage: bench/ab.sh OLD_SERVER NEW_SERVER [RUNS] [OUT_DIR]}
runs=${3:-3}
out=${4:-$(mktemp -d /tmp/ab.XXXXXX)}
mkdir -p "$out"
B=target/release/hourglass-bench
for bin in "$B" "$old" "$new"; do
    [ -x "$bin" ] || { echo "ab: not an executable: $bin (cargo build --release -p hourglass -p hourglass-bench)" >&2; exit 1; }
done
work=(--hosts 100 --duration 1d --start 1700006400)
# shellcheck source=bench/lib.sh
. bench/lib.sh
trap cleanup EXIT

for r in $(seq "$runs"); do
    echo "run $r of $runs"
    if [ $((r % 2)) -eq 1 ]; then order=(old new); else order=(new old); fi
    for p in ${PROTOCOLS:-influx-tcp influx-http influx-v2 prom-write http-put}; do
        [ "$p" = none ] && continue
        for build in "${order[@]}"; do
            if [ "$build" = old ]; then bin=$old; else bin=$new; fi
            start_hourglass "$bin"
            ingest "$build-$p" "$HG_PID" --addr "$HG_ADDR" --protocol "$p"
            cleanup
        done
    done
    # telnet last: both servers keep their data for the queries.
    declare -A addr=()
    for build in "${order[@]}"; do
        if [ "$build" = old ]; then bin=$old; else bin=$new; fi
        start_hourglass "$bin"
        ingest "$build-telnet" "$HG_PID" --addr "$HG_ADDR" --protocol telnet
        addr[$build]=$HG_ADDR
        wait_idle "$HG_PID"
    done
    for build in "${order[@]}"; do
        echo "  query $build"
        "$B" query "${work[@]}" --no-progress --json --target "hourglass=${addr[$build]}" \
            >"$out/run$r-query-$build.json" || echo "  (some answers were wrong or failed: see $out/run$r-query-$build.json)"
        if [ -n "${AB_PROMQL:-}" ]; then
            "$B" query "${work[@]}" --no-progress --json --target "hourglass-promql=${addr[$build]}" \
                >"$out/run$r-query-$build-promql.json" || echo "  (some answers were wrong or failed: see $out/run$r-query-$build-promql.json)"
        fi
    done
    cleanup
done
python3 bench/peers/summary.py "$out"
echo "reports: $out"
