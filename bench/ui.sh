#!/usr/bin/env bash
# The web UI on the cpu workload (issue 20): first paint and time to a drawn
# chart in headless Chromium, cold (a new browser profile per run).
#
#   bench/ui.sh [RUNS] [OUT_DIR]          (default 5 runs per page)
#
# 100 hosts x 10 cpu.* metrics x the last 24 h at 10 s (8.64 M points) over
# telnet into a fresh hourglass (release build, default configuration),
# the server stopped and started again (every closed hour in table files),
# then bench/ui/paint.py opens each page RUNS times and reads the browser's
# own timings: first paint, first contentful paint, the `/api/query`
# requests, and `hourglass:chart-drawn` (chart.js marks it once uPlot has
# drawn). Needs chromium, chromium-driver and a venv with selenium
# (.ci/ui-browser.sh installs them; HG_UI_VENV names the venv).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
out=${2:-$(mktemp -d /tmp/ui-bench.XXXXXX)}
mkdir -p "$out"
B=target/release/hourglass-bench
S=target/release/hourglass
for bin in "$B" "$S"; do
    [ -x "$bin" ] || { echo "ui: build first: cargo build --release -p hourglass -p hourglass-bench" >&2; exit 1; }
done
venv=${HG_UI_VENV:-/tmp/ui-venv}
[ -x "$venv/bin/python" ] || { echo "ui: make a venv with selenium first (HG_UI_VENV)" >&2; exit 1; }
r=1
# shellcheck source=bench/lib.sh
. bench/lib.sh
trap cleanup EXIT
echo "out: $out"
start_hourglass "$S"
$B ingest --workload cpu --hosts 100 --duration 1d --start now-1d --addr "$HG_ADDR" --protocol telnet >"$out/ingest.txt"
tail -3 "$out/ingest.txt"
restart_hourglass "$S"
"$venv/bin/python" bench/ui/paint.py --addr "$HG_ADDR" --runs "$runs" | tee "$out/paint.txt"
{ lscpu | grep 'Model name'; chromium --version 2>/dev/null; date -u; git rev-parse --short HEAD; } >"$out/machine.txt"
