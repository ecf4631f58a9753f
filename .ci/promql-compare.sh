#!/usr/bin/env bash
# PromQL stage (issue 21): Prometheus 2.42 (Debian's) scrapes itself every
# second and remote-writes every sample to a fresh hourglass; after a minute
# the queries of tests/promql/queries.txt go to both, as instant and range
# queries, and every answer must be equal (tests/promql/compare.py prints
# the score).
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib.sh

need_prometheus

work=$(mktemp -d)
PROM_PID=
cleanup() {
  [ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null || true
  [ -n "${HG_PID:-}" ] && kill "$HG_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
start_server "$work/hg"

PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/prometheus.yml" <<CONF
global: {scrape_interval: 1s}
scrape_configs: [{job_name: self, static_configs: [{targets: ["127.0.0.1:$PROM_PORT"]}]}]
remote_write:
  - url: http://$HG_ADDR/api/v1/write
    queue_config: {batch_send_deadline: 1s}
CONF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$work/prometheus.log" 2>&1 &
PROM_PID=$!
echo "prometheus pid $PROM_PID on 127.0.0.1:$PROM_PORT; scraping for 60 s"
sleep 60
kill -0 "$PROM_PID" 2>/dev/null || { echo "prometheus exited:"; cat "$work/prometheus.log"; exit 1; }
# Answers at 20 s ago: every sample before it has reached hourglass.
python3 tests/promql/compare.py --hourglass "$HG_ADDR" --prometheus "127.0.0.1:$PROM_PORT" --at "$(( $(date +%s) - 20 ))"
