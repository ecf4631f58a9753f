#!/usr/bin/env bash
# One wide read of the churn soak's data, as its read-back makes them:
# zimsum:<metric>{hostname=*} over the first hour (20,000 groups of 36
# pods: 720,000 series, 7.2 M points, a 160 MB answer), against a server
# started on a data directory that already holds the soak's data (the
# table files after a restart). Prints the seconds, the answer's size and
# md5, and the server's RSS at the start and at its peak (sampled every
# 50 ms).
#
#   wide-query.sh SERVER_BINARY DATA_DIR OUT_PREFIX
#
# DATA_DIR: from `hourglass-bench ingest --addr … --protocol prom-write
# --workload high-cardinality --hosts 20000 --churn 10 --duration 84m
# --start 1700006400` into a fresh server, stopped with SIGTERM.
set -euo pipefail
bin=${1:?}; data=${2:?}; out=${3:?}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
"$bin" serve --data-dir "$data" --bind 127.0.0.1 --port "$port" >"$out.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 300); do curl -s -o /dev/null "http://127.0.0.1:$port/api/version" && break; sleep 0.1; done
sleep 3
( while kill -0 $pid 2>/dev/null; do awk '/VmRSS/{print $2}' /proc/$pid/status; sleep 0.05; done ) >"$out.rss" &
sampler=$!
url="http://127.0.0.1:$port/api/query?start=1700006400000&end=1700009990000&ms=true&m=zimsum:container.cpu_usage%7Bhostname=*%7D"
t0=$(date +%s.%N)
code=$(curl -s -o "$out.json" -w '%{http_code}' "$url")
t1=$(date +%s.%N)
sleep 0.2
kill $sampler
printf '%s status %s seconds %.2f bytes %s md5 %s rss_start_mib %d rss_peak_mib %d\n' \
    "$(basename "$bin")" "$code" "$(echo "$t1 - $t0" | bc)" "$(stat -c %s "$out.json")" \
    "$(md5sum <"$out.json" | cut -c1-12)" \
    "$(head -1 "$out.rss" | awk '{print int($1/1024)}')" "$(sort -n "$out.rss" | tail -1 | awk '{print int($1/1024)}')"
rm -f "$out.json"
