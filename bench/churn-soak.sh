#!/usr/bin/env bash
# Series-churn soak (issue 18): the high-cardinality workload long enough
# to create ~10 M series (20,000 hosts x 10 metrics, a new pod every 10
# points at 10 s, 84 minutes of data from 1700006400: 10.2 M series, 101 M
# points) over Prometheus remote write into a fresh server with the default
# configuration, every point read back at the end (`ingest --verify`).
# Every 5 s the server's gauges are sampled: points written, series in
# memory and created, RSS. Prints the ingest rate over the first and the
# last tenth of the series created, the peak RSS sampled during the
# ingest, and the peak of the whole run (VmHWM, the read-back included).
#
#   bench/churn-soak.sh SERVER_BINARY [OUT_DIR]
#
# HOSTS, DURATION and PROTOCOL change the workload; VERIFY=0 skips the
# read-back.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: bench/churn-soak.sh SERVER_BINARY [OUT_DIR]}
out=${2:-$(mktemp -d /tmp/churn-soak.XXXXXX)}
mkdir -p "$out"
B=target/release/hourglass-bench
[ -x "$B" ] || { echo "churn-soak: build hourglass-bench first (cargo build --release -p hourglass-bench)" >&2; exit 1; }
# shellcheck source=bench/lib.sh
. bench/lib.sh
trap 'kill "${sampler:-}" 2>/dev/null || true; cleanup' EXIT
start_hourglass "$bin"
(
    while kill -0 "$HG_PID" 2>/dev/null; do
        m=$(curl -s --max-time 2 "http://$HG_ADDR/metrics" || true)
        rss=$(awk '/VmRSS/{print $2}' "/proc/$HG_PID/status" 2>/dev/null || echo 0)
        g() { echo "$m" | awk -v k="$1" '$1==k{printf "%d", $2}'; }
        echo "$(date +%s.%N) $(g hourglass_points_written_total) $(g hourglass_series) $(g hourglass_series_created_total) $rss"
        sleep 5
    done
) >"$out/samples.txt" &
sampler=$!
rc=0
verify=(--verify)
[ "${VERIFY:-1}" = 0 ] && verify=()
"$B" ingest --addr "$HG_ADDR" --protocol "${PROTOCOL:-prom-write}" --workload high-cardinality \
    --hosts "${HOSTS:-20000}" --churn 10 --duration "${DURATION:-84m}" --start 1700006400 \
    --server-pid "$HG_PID" "${verify[@]}" --no-progress | tee "$out/ingest.txt" || rc=$?
kill "$sampler" 2>/dev/null || true
# The server's peak RSS over the whole run, the read-back's queries
# included (the kernel's high-water mark, not a sample).
hwm=$(awk '/VmHWM/{print $2}' "/proc/$HG_PID/status" 2>/dev/null || echo 0)
# samples: time, points written, series in memory, series created, RSS (KiB).
python3 - "$out/samples.txt" <<'PY' | tee "$out/summary.txt"
import sys
rows = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 5 and all(x.replace('.', '', 1).isdigit() for x in f):
        rows.append([float(x) for x in f])
if len(rows) < 3:
    sys.exit("too few samples")
# The ingest ends by the first sample holding every point, which may
# already see the read-back: the samples before it are the soak's (the
# bench's own peak RSS, taken as the ingest ends, is in ingest.txt).
total = max(r[1] for r in rows)
rows = rows[: max(next(i for i, r in enumerate(rows) if r[1] >= total), 3)]
created = rows[-1][3]
def rate(lo, hi):
    # points/s between the samples where the series created pass lo and hi
    a = next(r for r in rows if r[3] >= lo)
    b = next(r for r in rows if r[3] >= hi)
    return (b[1] - a[1]) / max(b[0] - a[0], 1e-9)
first = rate(0.0 * created + 1, 0.1 * created)
last = rate(0.9 * created, created)
print(f"series created {created:,.0f}; most in memory {max(r[2] for r in rows):,.0f}")
print(f"ingest rate, first tenth of the series created: {first:,.0f} points/s")
print(f"ingest rate, last tenth:                        {last:,.0f} points/s (first/last {first / max(last, 1):.2f})")
print(f"peak RSS sampled during the ingest: {max(r[4] for r in rows) / 1024:,.0f} MiB")
PY
echo "peak RSS of the whole run, read-back included (VmHWM): $((hwm / 1024)) MiB" | tee -a "$out/summary.txt"
exit "$rc"
