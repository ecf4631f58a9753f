#!/usr/bin/env bash
# PromQL stage (issue 21): Debian's Prometheus 2.42 scrapes, every second,
# itself and the two targets of tests/promql/exporter.py (counters with a
# reset, gauges with NaN and ±Inf, a classic histogram, a summary, series
# that stop and restart, a target that is down for 15 s), and remote-writes
# every sample to a fresh hourglass. After the exporter's 90 s of phases, the
# queries of tests/promql/queries.txt go to both, as a range query over the
# whole run and as instant queries at chosen moments, and every answer must
# be equal (tests/promql/compare.py prints the score).
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib.sh

need_prometheus

RUN=90      # seconds of phases (see tests/promql/exporter.py)
work=$(mktemp -d)
PROM_PID=
EXP_PID=
cleanup() {
  # Prometheus first, while hourglass still takes its last remote write.
  if [ -n "$PROM_PID" ]; then kill "$PROM_PID" 2>/dev/null || true; wait "$PROM_PID" 2>/dev/null || true; fi
  [ -n "$EXP_PID" ] && kill "$EXP_PID" 2>/dev/null || true
  [ -n "${HG_PID:-}" ] && kill "$HG_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
start_server "$work/hg"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PROM_PORT=$(free_port)
PORT_A=$(free_port)
PORT_B=$(free_port)
cat > "$work/prometheus.yml" <<CONF
global: {scrape_interval: 1s}
scrape_configs:
  - job_name: self
    static_configs: [{targets: ["127.0.0.1:$PROM_PORT"]}]
  - job_name: hg
    static_configs:
      - {targets: ["127.0.0.1:$PORT_A"], labels: {instance: a}}
      - {targets: ["127.0.0.1:$PORT_B"], labels: {instance: b}}
remote_write:
  - url: http://$HG_ADDR/api/v1/write
    queue_config: {batch_send_deadline: 1s}
CONF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --storage.remote.flush-deadline=2s >"$work/prometheus.log" 2>&1 &
PROM_PID=$!
# The phases start once Prometheus scrapes (it takes seconds to start).
python3 - "$PROM_PORT" <<'PY' || { echo "prometheus is not ready:"; cat "$work/prometheus.log"; exit 1; }
import sys, time, urllib.request
for _ in range(600):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/-/ready", timeout=1)
        sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit(1)
PY

START=$(date +%s)
python3 tests/promql/exporter.py --start "$START" --ports "$PORT_A,$PORT_B" --ports-file "$work/ports" &
EXP_PID=$!
for _ in $(seq 50); do [ -s "$work/ports" ] && break; sleep 0.1; done
[ -s "$work/ports" ] || { echo "exporter did not start"; exit 1; }
echo "exporter pid $EXP_PID on 127.0.0.1:$PORT_A (a), :$PORT_B (b), phases from $START"
echo "prometheus pid $PROM_PID on 127.0.0.1:$PROM_PORT; scraping for $RUN s"
# The phases end at START+RUN; 3 s more lets the last samples reach hourglass
# (compare.py also waits until both have the same `up` samples).
wait_s=$(( START + RUN + 3 - $(date +%s) ))
[ "$wait_s" -gt 0 ] && sleep "$wait_s"
kill -0 "$PROM_PID" 2>/dev/null || { echo "prometheus exited:"; cat "$work/prometheus.log"; exit 1; }
kill -0 "$EXP_PID" 2>/dev/null || { echo "exporter exited"; exit 1; }
python3 tests/promql/compare.py --hourglass "$HG_ADDR" --prometheus "127.0.0.1:$PROM_PORT" \
  --start "$START" --run "$RUN"
