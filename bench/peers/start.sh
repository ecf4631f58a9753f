#!/usr/bin/env bash
# Starts one peer on 127.0.0.1 with a fresh temporary data directory and
# prints where it listens:
#
#   bench/peers/start.sh victoriametrics|influxdb|prometheus
#
# Output (one line each, shell-sourceable): PEER, ADDR (HTTP host:port), PID,
# DIR (data directory, also holding pid and log), and for VictoriaMetrics and InfluxDB
# OPENTSDB_TELNET and OPENTSDB_HTTP (its OpenTSDB listeners; InfluxDB's one
# port serves both, writing to database `bench`). Stop it with
# bench/peers/stop.sh "$DIR".
#
# VictoriaMetrics: OpenTSDB telnet and HTTP listeners on, result cache off
# (-search.disableCache, as the peers were measured), no latency offset,
# retention long enough for data at any fixed start. InfluxDB: reporting off,
# no series/tag-value limits. Prometheus: remote-write receiver on, nothing
# scraped.
set -euo pipefail
peer=${1:?usage: start.sh victoriametrics|influxdb|prometheus}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Waits until an HTTP GET of $1 answers at all (any status), up to 30 s.
wait_http() {
    python3 - "$1" <<'PY'
import sys, time, urllib.request, urllib.error
url = sys.argv[1]
for _ in range(300):
    try:
        urllib.request.urlopen(url, timeout=1)
        sys.exit(0)
    except urllib.error.HTTPError:
        sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit(1)
PY
}

dir=$(mktemp -d "/tmp/hourglass-peer-$peer.XXXXXX")
port=$(free_port)
addr=127.0.0.1:$port
extra=()
case "$peer" in
    victoriametrics|vm)
        peer=victoriametrics
        telnet=127.0.0.1:$(free_port)
        ohttp=127.0.0.1:$(free_port)
        victoria-metrics \
            -storageDataPath="$dir/data" \
            -httpListenAddr="$addr" \
            -opentsdbListenAddr="$telnet" \
            -opentsdbHTTPListenAddr="$ohttp" \
            -retentionPeriod=100y \
            -search.disableCache \
            -search.latencyOffset=0s \
            >"$dir/log" 2>&1 &
        extra=("OPENTSDB_TELNET=$telnet" "OPENTSDB_HTTP=$ohttp")
        health=http://$addr/health
        ;;
    influxdb|influx)
        peer=influxdb
        rpc=127.0.0.1:$(free_port)
        otsdb=127.0.0.1:$(free_port)
        cat >"$dir/influxdb.conf" <<CONF
reporting-disabled = true
bind-address = "$rpc"
[meta]
  dir = "$dir/meta"
[data]
  dir = "$dir/data"
  wal-dir = "$dir/wal"
  max-series-per-database = 0
  max-values-per-tag = 0
  query-log-enabled = false
[http]
  bind-address = "$addr"
  log-enabled = false
[monitor]
  store-enabled = false
[[opentsdb]]
  enabled = true
  bind-address = "$otsdb"
  database = "bench"
CONF
        influxd -config "$dir/influxdb.conf" >"$dir/log" 2>&1 &
        extra=("OPENTSDB_TELNET=$otsdb" "OPENTSDB_HTTP=$otsdb")
        health=http://$addr/ping
        ;;
    prometheus|prom)
        peer=prometheus
        cat >"$dir/prometheus.yml" <<CONF
global:
  scrape_interval: 1h
scrape_configs: []
CONF
        prometheus \
            --config.file="$dir/prometheus.yml" \
            --storage.tsdb.path="$dir/data" \
            --storage.tsdb.retention.time=100y \
            --web.listen-address="$addr" \
            --web.enable-remote-write-receiver \
            >"$dir/log" 2>&1 &
        health=http://$addr/-/ready
        ;;
    *)
        echo "start.sh: unknown peer '$peer' (victoriametrics, influxdb, prometheus)" >&2
        rm -rf "$dir"
        exit 2
        ;;
esac
pid=$!
echo "$pid" >"$dir/pid"
if ! wait_http "$health"; then
    echo "start.sh: $peer did not come up on $addr; its log:" >&2
    tail -20 "$dir/log" >&2
    kill "$pid" 2>/dev/null || true
    exit 1
fi
echo "PEER=$peer"
echo "ADDR=$addr"
echo "PID=$pid"
echo "DIR=$dir"
for e in "${extra[@]}"; do echo "$e"; done
