#!/usr/bin/env bash
# Export and import throughput (issue 19): the cpu workload (100 hosts x 10
# metrics at 10 s from 1700006400; DURATION=6h, 2.16 M points, by default)
# ingested into a fresh hourglass, exported by `hourglass export` in both
# formats (VictoriaMetrics' JSON lines, OpenTSDB's import text), and each
# export imported by `hourglass import` into a fresh server; the JSON lines
# also into a fresh VictoriaMetrics (its /api/v1/import with the same file,
# sent by curl, then its force_flush), for the ratio. Each import is checked:
# the imported server's export equals the source's byte for byte.
#
#   bench/import.sh [RUNS] [OUT_DIR]            (default 3 runs)
#
# Prints one line per measurement and keeps them in OUT_DIR/results.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
out=${2:-$(mktemp -d /tmp/import.XXXXXX)}
mkdir -p "$out"
B=target/release/hourglass-bench
bin=target/release/hourglass
for b in "$B" "$bin"; do
    [ -x "$b" ] || { echo "import: not built: $b (cargo build --release -p hourglass -p hourglass-bench)" >&2; exit 1; }
done
work=(--hosts 100 --duration "${DURATION:-6h}" --start 1700006400)
r=0
# shellcheck source=bench/lib.sh
. bench/lib.sh
files=$(mktemp -d /tmp/hourglass-import-files.XXXXXX)
trap 'cleanup; rm -rf "$files"' EXIT
results=$out/results.txt
say() { echo "$*" | tee -a "$results"; }
now() { date +%s.%N; }

say "# bench/import.sh on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(date -u +%Y-%m-%d)"
start_hourglass "$bin"
ingest source "$HG_PID" --addr "$HG_ADDR" --protocol telnet
wait_idle "$HG_PID"
points=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['points'])" "$out/run0-ingest-source.json")
say "source: $points points"
for fmt in jsonl opentsdb; do
    t0=$(now)
    "$bin" export --url "http://$HG_ADDR" --start 1700000000 --format "$fmt" --quiet --output "$files/cpu.$fmt"
    t1=$(now)
    say "$(python3 -c "import sys; p,t,b=int(sys.argv[1]),float(sys.argv[2]),int(sys.argv[3]); print(f'export {sys.argv[4]:8s} {t:6.2f} s  {p/t/1e6:5.2f} M points/s  {b/1e6:7.1f} MB')" "$points" "$(echo "$t1 - $t0" | bc)" "$(stat -c %s "$files/cpu.$fmt")" "$fmt")"
done
cleanup

for r in $(seq "$runs"); do
    for fmt in jsonl opentsdb; do
        start_hourglass "$bin"
        t0=$(now)
        "$bin" import --url "http://$HG_ADDR" --quiet "$files/cpu.$fmt" >"$out/run$r-import-$fmt.txt"
        t1=$(now)
        cpu=$(awk '{print ($14 + $15) / 100}' "/proc/$HG_PID/stat")
        say "$(python3 -c "import sys; p,t,c=int(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]); print(f'run {sys.argv[4]} import hourglass {sys.argv[5]:8s} {t:6.2f} s  {p/t/1e6:5.2f} M points/s  server CPU {c:5.1f} s')" "$points" "$(echo "$t1 - $t0" | bc)" "$cpu" "$r" "$fmt")"
        "$bin" export --url "http://$HG_ADDR" --start 1700000000 --format "$fmt" --quiet --output "$files/again.$fmt"
        cmp -s "$files/cpu.$fmt" "$files/again.$fmt" || { say "MISMATCH: the $fmt import's export differs"; exit 1; }
        cleanup
    done
    if command -v victoria-metrics >/dev/null 2>&1; then
        eval "$(bench/peers/start.sh victoriametrics)"
        started+=("$DIR")
        t0=$(now)
        curl -sf --data-binary "@$files/cpu.jsonl" "http://$ADDR/api/v1/import"
        curl -sf "http://$ADDR/internal/force_flush" >/dev/null
        t1=$(now)
        cpu=$(awk '{print ($14 + $15) / 100}' "/proc/$PID/stat")
        say "$(python3 -c "import sys; p,t,c=int(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]); print(f'run {sys.argv[4]} import victoriametrics jsonl {t:6.2f} s  {p/t/1e6:5.2f} M points/s  server CPU {c:5.1f} s')" "$points" "$(echo "$t1 - $t0" | bc)" "$cpu" "$r")"
        cleanup
    fi
done
