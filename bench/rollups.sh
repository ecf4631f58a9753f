#!/usr/bin/env bash
# Rollup tiers (issue 17), hourglass and VictoriaMetrics in one run, the
# default configuration:
#
#   bench/rollups.sh [RUNS] [OUT_DIR]          (default 20 timed runs per query)
#
# 1. The month: 100 hosts x cpu.usage_user x 30 days at 10 s (25.9 M
#    points) over telnet into a fresh hourglass, the server stopped
#    (SIGTERM) and started again (every point in table files), then the
#    issue's four queries with curl, a new connection per request (2
#    untimed, then RUNS timed; p50 and min-max, ms), each also with
#    `rollup_raw` (no tier: stored hours and points) — whose answer must be
#    byte-identical. The same points into VictoriaMetrics over its OpenTSDB
#    telnet listener and the same four questions in MetricsQL
#    (`max by (hostname) (max_over_time(...[1d]))` at step 1d, ...), timed
#    the same way.
# 2. The year: 100 hosts x cpu.usage_user x 365 days at 60 s (52.6 M
#    points), the same restart, then `max:1d-max{hostname=*}` over the year
#    (hourglass, and VictoriaMetrics' equivalent).
#
# Also prints each server's ingest rate, peak RSS and data directory size,
# and hourglass's tier count. YEAR=0 skips part 2; MONTH=0 part 1.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
out=${2:-$(mktemp -d /tmp/rollups.XXXXXX)}
mkdir -p "$out"
B=target/release/hourglass-bench
S=target/release/hourglass
for bin in "$B" "$S"; do
    [ -x "$bin" ] || { echo "rollups: build first: cargo build --release -p hourglass -p hourglass-bench" >&2; exit 1; }
done
command -v victoria-metrics >/dev/null || { echo "rollups: run bench/peers/install.sh first" >&2; exit 1; }
r=1
# shellcheck source=bench/lib.sh
. bench/lib.sh
trap cleanup EXIT
start=1700006400
echo "out: $out"

start_peer() {
    eval "$(bench/peers/start.sh "$1")"
    started+=("$DIR")
}

# timed NAME URL: the status and answer once, 1 more untimed, RUNS timed.
timed() {
    local name=$1 url=$2
    curl -s -o "$out/$name.json" -w '%{http_code}\n' "$url" >"$out/$name.status"
    curl -s -o /dev/null "$url"
    for _ in $(seq "$runs"); do
        curl -s -o /dev/null -w '%{time_total}\n' "$url"
    done >"$out/$name.times"
}

# part LABEL DURATION INTERVAL QUERIES...: one workload on both servers.
part() {
    local label=$1 duration=$2 interval=$3
    shift 3
    local secs end
    secs=$(python3 -c "import re; m=re.fullmatch(r'(\d+)([hd])','$duration'); print(int(m[1])*{'h':3600,'d':86400}[m[2]])")
    end=$((start + secs - 1))
    work=(--hosts 100 --metrics 1 --duration "$duration" --interval "$interval" --start "$start")
    start_hourglass
    ingest "$label-hourglass" "$HG_PID" --addr "$HG_ADDR" --protocol telnet
    wait_idle "$HG_PID"
    curl -s "http://$HG_ADDR/metrics" | grep -E '^hourglass_rollup_hours' >"$out/$label-hourglass-metrics" || true
    restart_hourglass
    wait_idle "$HG_PID"
    du -sb "$HG_DIR/data" | awk '{print $1}' >"$out/$label-hourglass-bytes"
    for q in "$@"; do
        local name=${q%%|*} rest=${q#*|}
        local m=${rest%%|*} promql=${rest#*|}
        timed "$label-$name-tiers" "http://$HG_ADDR/api/query?start=$start&end=$end&m=$m"
        timed "$label-$name-raw" "http://$HG_ADDR/api/query?start=$start&end=$end&m=${m/:/:rollup_raw:}"
    done
    curl -s "http://$HG_ADDR/metrics" | grep -E '^hourglass_rollup_values' >>"$out/$label-hourglass-metrics" || true
    cleanup
    start_peer victoriametrics
    ingest "$label-vm" "$PID" --addr "$OPENTSDB_TELNET" --protocol telnet --tcp-ack close
    # VictoriaMetrics makes fresh points searchable within seconds.
    sleep 5
    wait_idle "$PID"
    for q in "$@"; do
        local name=${q%%|*} rest=${q#*|}
        local promql=${rest#*|} step=${q##*step=}
        timed "$label-$name-vm" "http://$ADDR/api/v1/query_range?start=$start&end=$end&${promql}"
    done
    du -sb "$DIR/data" | awk '{print $1}' >"$out/$label-vm-bytes"
    cleanup
}

enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
metric='{__name__="cpu.usage_user"}'
host0='{__name__="cpu.usage_user",hostname="host_0"}'
month=(
    "max-all-1d-max|max:1d-max:cpu.usage_user%7Bhostname=*%7D|query=$(enc "max by (hostname) (max_over_time($metric[1d]))")&step=1d"
    "sum-1d-avg|sum:1d-avg:cpu.usage_user|query=$(enc "sum(avg_over_time($metric[1d]))")&step=1d"
    "host-1h-avg|avg:1h-avg:cpu.usage_user%7Bhostname=host_0%7D|query=$(enc "avg(avg_over_time($host0[1h]))")&step=1h"
    "host-1d-max|max:1d-max:cpu.usage_user%7Bhostname=host_0%7D|query=$(enc "max(max_over_time($host0[1d]))")&step=1d"
)
year=(
    "max-all-1d-max|max:1d-max:cpu.usage_user%7Bhostname=*%7D|query=$(enc "max by (hostname) (max_over_time($metric[1d]))")&step=1d"
)
labels=()
if [ "${MONTH:-1}" != 0 ]; then part month 30d 10s "${month[@]}"; labels+=(month); fi
if [ "${YEAR:-1}" != 0 ]; then part year 365d 60s "${year[@]}"; labels+=(year); fi

python3 - "$out" "$runs" "${labels[*]}" "${month[*]}" "${year[*]}" <<'PY'
import json, os, sys
out, runs, labels = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
queries = {"month": [q.split("|")[0] for q in sys.argv[4].split()], "year": [q.split("|")[0] for q in sys.argv[5].split()]}

def stat(name):
    status = open(os.path.join(out, f"{name}.status")).read().strip()
    t = sorted(float(x) * 1000 for x in open(os.path.join(out, f"{name}.times")))
    return status, t[len(t) // 2], t[0], t[-1]

def cell(s):
    status, p50, lo, hi = s
    txt = f"{p50:.1f} ({lo:.1f}-{hi:.1f})"
    return txt if status == "200" else f"**{status}** {txt}"

def series(name):
    j = json.load(open(os.path.join(out, f"{name}.json")))
    if isinstance(j, list):
        return sorted(j, key=lambda x: json.dumps(x.get("tags"), sort_keys=True))
    return j

for label in labels:
    print(f"\n{label}: p50 of {runs} (min-max), ms")
    print("| query | hourglass (tiers) | hourglass rollup_raw | raw/tiers | VictoriaMetrics | VM/tiers | tiers == rollup_raw |")
    print("|---|---|---|---|---|---|---|")
    for q in queries[label]:
        t, r, v = stat(f"{label}-{q}-tiers"), stat(f"{label}-{q}-raw"), stat(f"{label}-{q}-vm")
        same = "yes" if t[0] == r[0] == "200" and series(f"{label}-{q}-tiers") == series(f"{label}-{q}-raw") else "NO"
        print(f"| {q} | {cell(t)} | {cell(r)} | {r[1] / t[1]:.1f}x | {cell(v)} | {v[1] / t[1]:.1f}x | {same} |")
    for who in ("hourglass", "vm"):
        j = json.load(open(os.path.join(out, f"run1-ingest-{label}-{who}.json")))
        size = int(open(os.path.join(out, f"{label}-{who}-bytes")).read())
        print(f"{who}: ingest {j['points_per_sec'] / 1e6:.2f} M points/s, peak RSS {j['server']['peak_rss_bytes'] >> 20} MiB, "
              f"{j['server'].get('cpu_us_per_point', float('nan')):.2f} us CPU/pt; data directory {size / 1e6:.1f} MB")
    print(open(os.path.join(out, f"{label}-hourglass-metrics")).read().strip())
PY
