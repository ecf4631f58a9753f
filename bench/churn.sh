#!/usr/bin/env bash
# Series churn (issue 18): the high-cardinality workload (20,000 hosts x 10
# metrics at 10 s for 10 minutes from 1700006400, a new pod every 10 points:
# 200 k live series, 1.2 M created, 12 M points) over Prometheus remote
# write and telnet, into a fresh server each time: two hourglass builds and
# VictoriaMetrics, the order rotating from run to run:
#
#   bench/churn.sh OLD_SERVER NEW_SERVER [RUNS] [OUT_DIR]     (default 2 runs)
#
# OLD_SERVER / NEW_SERVER are hourglass binaries (the same one twice is
# fine); VictoriaMetrics comes from bench/peers/install.sh (skipped if it is
# not installed). Reports are kept as JSON in OUT_DIR, named old-*, new-* and
# vm-*; bench/peers/summary.py prints the medians (points/s, peak RSS, CPU
# per point). HOSTS, CHURN and DURATION change the workload.
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench/churn.sh OLD_SERVER NEW_SERVER [RUNS] [OUT_DIR]}
new=${2:?usage: bench/churn.sh OLD_SERVER NEW_SERVER [RUNS] [OUT_DIR]}
runs=${3:-2}
out=${4:-$(mktemp -d /tmp/churn.XXXXXX)}
mkdir -p "$out"
B=target/release/hourglass-bench
for bin in "$B" "$old" "$new"; do
    [ -x "$bin" ] || { echo "churn: not an executable: $bin (cargo build --release -p hourglass -p hourglass-bench)" >&2; exit 1; }
done
work=(--workload high-cardinality --hosts "${HOSTS:-20000}" --churn "${CHURN:-10}"
      --duration "${DURATION:-10m}" --start 1700006400)
# shellcheck source=bench/lib.sh
. bench/lib.sh
trap cleanup EXIT
peers=(old new)
command -v victoria-metrics >/dev/null 2>&1 && peers+=(vm)

for r in $(seq "$runs"); do
    echo "run $r of $runs"
    shift_by=$(( (r - 1) % ${#peers[@]} ))
    order=("${peers[@]:$shift_by}" "${peers[@]:0:$shift_by}")
    for p in ${PROTOCOLS:-prom-write telnet}; do
        for who in "${order[@]}"; do
            case "$who" in
                old|new)
                    if [ "$who" = old ]; then bin=$old; else bin=$new; fi
                    start_hourglass "$bin"
                    ingest "$who-$p" "$HG_PID" --addr "$HG_ADDR" --protocol "$p"
                    ;;
                vm)
                    eval "$(bench/peers/start.sh victoriametrics)"
                    started+=("$DIR")
                    if [ "$p" = telnet ]; then
                        ingest "vm-$p" "$PID" --addr "$OPENTSDB_TELNET" --protocol telnet --tcp-ack close
                    else
                        ingest "vm-$p" "$PID" --addr "$ADDR" --protocol "$p"
                    fi
                    ;;
            esac
            cleanup
        done
    done
done
python3 bench/peers/summary.py "$out"
