#!/usr/bin/env bash
# What access control costs on the write paths (issue 19): the cpu workload
# (100 hosts x 10 metrics x 1 day at 10 s = 8.64 M points) ingested over each
# protocol into a fresh server of one build, without auth and with
# `[auth] enabled = true` (a write token: `auth <token>` on telnet, a bearer
# token on HTTP), the two alternating which goes first from run to run:
#
#   bench/auth.sh [RUNS] [OUT_DIR]          (default 3 runs)
#
# Reports are kept as JSON in OUT_DIR, named open-* and auth-*;
# bench/peers/summary.py prints the medians.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
out=${2:-$(mktemp -d /tmp/auth.XXXXXX)}
mkdir -p "$out"
B=target/release/hourglass-bench
bin=target/release/hourglass
for b in "$B" "$bin"; do
    [ -x "$b" ] || { echo "auth: not built: $b (cargo build --release -p hourglass -p hourglass-bench)" >&2; exit 1; }
done
work=(--hosts 100 --duration 1d --start 1700006400)
# shellcheck source=bench/lib.sh
. bench/lib.sh
trap cleanup EXIT
cfg=$(mktemp /tmp/hourglass-auth.XXXXXX.toml)
printf '[auth]\nenabled = true\n' >"$cfg"

for r in $(seq "$runs"); do
    echo "run $r of $runs"
    if [ $((r % 2)) -eq 1 ]; then order=(open auth); else order=(auth open); fi
    for p in ${PROTOCOLS:-telnet http-put influx-http prom-write}; do
        for mode in "${order[@]}"; do
            if [ "$mode" = auth ]; then
                HG_DIR=$(mktemp -d /tmp/hourglass-sbs.XXXXXX)
                started+=("$HG_DIR")
                token=$("$bin" token create --data-dir "$HG_DIR/data" --name bench --scope write 2>/dev/null)
                HG_CONFIG=$cfg launch_hourglass "$bin"
                ingest "auth-$p" "$HG_PID" --addr "$HG_ADDR" --protocol "$p" --token "$token"
            else
                start_hourglass "$bin"
                ingest "open-$p" "$HG_PID" --addr "$HG_ADDR" --protocol "$p"
            fi
            cleanup
        done
    done
done
rm -f "$cfg"
python3 bench/peers/summary.py "$out"
