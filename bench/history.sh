#!/usr/bin/env bash
# History queries, one build of hourglass against another, in one run: the
# workload of issue 17's table (100 hosts x cpu.usage_user x 30 days at 10 s
# = 25.9 M points) written over telnet into a fresh server of each build,
# the server stopped and started again (every point then in table files),
# and the table's four queries timed with curl, a new connection per
# request (2 untimed, then RUNS timed; p50 and min-max in ms), with the
# default configuration. Each build's answers are compared with the
# other's (equal within 1e-9 relative; 413 and other errors are reported).
#
#   bench/history.sh OLD_SERVER NEW_SERVER [RUNS] [OUT_DIR]     (default 20 runs)
#
# DURATION=7d shortens the workload; HG_CONFIG=FILE runs both builds with
# that configuration (e.g. a raised query.max_points).
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench/history.sh OLD_SERVER NEW_SERVER [RUNS] [OUT_DIR]}
new=${2:?usage: bench/history.sh OLD_SERVER NEW_SERVER [RUNS] [OUT_DIR]}
runs=${3:-20}
out=${4:-$(mktemp -d /tmp/history.XXXXXX)}
mkdir -p "$out"
B=target/release/hourglass-bench
for bin in "$B" "$old" "$new"; do
    [ -x "$bin" ] || { echo "history: not an executable: $bin" >&2; exit 1; }
done
duration=${DURATION:-30d}
start=1700006400
work=(--hosts 100 --metrics 1 --duration "$duration" --start "$start")
r=1
# shellcheck source=bench/lib.sh
. bench/lib.sh
trap cleanup EXIT

end=$((start + $(python3 -c "
import re,sys
m=re.fullmatch(r'(\d+)([smhd])','$duration'); n,u=int(m[1]),m[2]
print(n*{'s':1,'m':60,'h':3600,'d':86400}[u])")))
queries=(
    "max-all-1d-max|m=max:1d-max:cpu.usage_user%7Bhostname=*%7D"
    "sum-1d-avg|m=sum:1d-avg:cpu.usage_user"
    "host-1h-avg|m=avg:1h-avg:cpu.usage_user%7Bhostname=host_0%7D"
    "host-1d-max|m=max:1d-max:cpu.usage_user%7Bhostname=host_0%7D"
)

for build in old new; do
    if [ "$build" = old ]; then bin=$old; else bin=$new; fi
    start_hourglass "$bin"
    ingest "$build-telnet" "$HG_PID" --addr "$HG_ADDR" --protocol telnet
    wait_idle "$HG_PID"
    # Stop cleanly and start again on the same data: every point in table files.
    restart_hourglass "$bin"
    du -sb "$HG_DIR/data" | awk '{print $1}' >"$out/$build-data-bytes"
    wait_idle "$HG_PID"
    for q in "${queries[@]}"; do
        name=${q%%|*}
        url="http://$HG_ADDR/api/query?start=$start&end=$end&${q#*|}"
        curl -s -o "$out/$build-$name.json" -w '%{http_code}\n' "$url" >"$out/$build-$name.status"
        curl -s -o /dev/null "$url"
        for _ in $(seq "$runs"); do
            curl -s -o /dev/null -w '%{time_total}\n' "$url"
        done >"$out/$build-$name.times"
    done
    cleanup
done

python3 - "$out" "$runs" "${queries[@]}" <<'EOF'
import json, math, os, sys
out, runs, queries = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def close(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or math.isclose(a, b, rel_tol=1e-9)
    return a == b

def series_order(answer):
    # Servers list series in UID order, which depends on how the ingest's
    # connections interleaved: compare the series by their tags.
    if isinstance(answer, list):
        return sorted(answer, key=lambda x: json.dumps(x.get("tags"), sort_keys=True) if isinstance(x, dict) else "")
    return answer

def ingest(build):
    with open(os.path.join(out, f"run1-ingest-{build}-telnet.json")) as f:
        j = json.load(f)
    return j

print(f"| query (p50 of {runs}, ms; min-max) | old | new | old/new | answers |")
print("|---|---|---|---|---|")
for q in queries:
    name = q.split("|")[0]
    row, answers = [], {}
    for build in ("old", "new"):
        status = open(os.path.join(out, f"{build}-{name}.status")).read().strip()
        times = sorted(float(t) * 1000 for t in open(os.path.join(out, f"{build}-{name}.times")))
        p50 = times[len(times) // 2]
        answers[build] = (status, json.load(open(os.path.join(out, f"{build}-{name}.json"))))
        row.append((status, p50, times[0], times[-1]))
    cells = [f"**{s}** {p:.1f} ({lo:.1f}-{hi:.1f})" if s != "200" else f"{p:.1f} ({lo:.1f}-{hi:.1f})" for s, p, lo, hi in row]
    ratio = row[0][1] / row[1][1] if row[1][1] else float("nan")
    (so, ao), (sn, an) = answers["old"], answers["new"]
    if so == sn == "200":
        same = "equal" if close(series_order(ao), series_order(an)) else "DIFFER"
    else:
        same = f"old {so}, new {sn}"
    print(f"| {name} | {cells[0]} | {cells[1]} | {ratio:.1f}x | {same} |")
for build in ("old", "new"):
    size = int(open(os.path.join(out, f"{build}-data-bytes")).read())
    j = ingest(build)
    print(
        f"{build}: ingest {j['points_per_sec'] / 1e6:.2f} M points/s, peak RSS "
        f"{j['server']['peak_rss_bytes'] >> 20} MiB; data directory {size / 1e6:.1f} MB after the restart"
    )
EOF
