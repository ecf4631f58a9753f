#!/usr/bin/env bash
# Interop stage: real Prometheus (Debian package) on loopback, scraping
# itself every 2 s, with remote_write to a fresh hourglass and remote_read
# from it (config of clients.md §6.1). After ~20 s:
#  * /api/query on hourglass must return Prometheus's own `up` and
#    prometheus_* series, with their labels (mapped as docs/http-api.md says);
#  * Prometheus's /api/v1/query must evaluate rate() over a series that only
#    hourglass holds (written with /api/put), i.e. through remote read.
# hourglass runs with access control on (issue 19): Prometheus sends a write
# token with `authorization` on remote write and a read token with
# `basic_auth` on remote read, as its users configure it.
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
bin=${HOURGLASS_BIN:-target/debug/hourglass}
[ -x "$bin" ] || cargo build -q --bin hourglass
token() { "$bin" token create --data-dir "$work/hg/data" --name "$1" --scope "$2" 2>/dev/null; }
WRITE_TOKEN=$(token prometheus-write write)
READ_TOKEN=$(token prometheus-read read)
ADMIN_TOKEN=$(token ci admin)
printf '[auth]\nenabled = true\n' > "$work/auth.toml"
HG_CONFIG="$work/auth.toml" start_server "$work/hg"

PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/prometheus.yml" <<CONF
global: {scrape_interval: 2s}
scrape_configs: [{job_name: self, static_configs: [{targets: ["127.0.0.1:$PROM_PORT"]}]}]
remote_write:
  - url: http://$HG_ADDR/api/v1/write
    queue_config: {batch_send_deadline: 1s}
    authorization: {credentials: $WRITE_TOKEN}
remote_read:
  - url: http://$HG_ADDR/api/v1/read
    read_recent: true
    basic_auth: {username: prometheus, password: $READ_TOKEN}
CONF

# A counter only hourglass holds: 12 points over the last minute, 10 to 120
# in steps of 10 every 5 s. PromQL's rate() over [1m] at the last point
# extrapolates to the whole minute: exactly 2/s.
now=$(date +%s)
python3 - "$HG_ADDR" "$now" "$WRITE_TOKEN" <<'PY'
import json, sys, urllib.request
addr, now, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
pts = [{"metric": "ci.only_in_hourglass", "timestamp": now - 55 + 5 * i,
        "value": 10 * (i + 1), "tags": {"host": "ci"}} for i in range(12)]
req = urllib.request.Request(f"http://{addr}/api/put", data=json.dumps(pts).encode(),
                             headers={"Content-Type": "application/json",
                                      "Authorization": f"Bearer {token}"})
status = urllib.request.urlopen(req).status
assert status == 204, f"/api/put answered {status}"
print("wrote 12 points of ci.only_in_hourglass{host=ci} with /api/put")
PY

prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$work/prometheus.log" 2>&1 &
PROM_PID=$!
echo "prometheus pid $PROM_PID on 127.0.0.1:$PROM_PORT; waiting 20 s"
sleep 20
kill -0 "$PROM_PID" 2>/dev/null || { echo "prometheus exited:"; cat "$work/prometheus.log"; exit 1; }

if ! python3 - "$HG_ADDR" "127.0.0.1:$PROM_PORT" "$now" "$ADMIN_TOKEN" <<'PY'
import json, sys, time, urllib.parse, urllib.request, urllib.error
hg, prom, now, token = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
prom_port = prom.rsplit(":", 1)[1]

def get(addr, path):
    headers = {"Authorization": f"Bearer {token}"} if addr == hg else {}
    req = urllib.request.Request(f"http://{addr}{path}", headers=headers)
    try:
        return json.load(urllib.request.urlopen(req, timeout=30))
    except urllib.error.HTTPError as e:
        raise SystemExit(f"{addr}{path}: HTTP {e.code}: {e.read().decode()}")

def check_remote_write():
    metrics = get(hg, "/api/suggest?type=metrics&q=prometheus_&max=1000")
    assert len(metrics) >= 20, f"only {len(metrics)} prometheus_* metrics arrived: {metrics}"
    # `up`: instance 127.0.0.1:<port> is stored as 127.0.0.1%3A<port>.
    up = get(hg, "/api/query?start=1m-ago&m=sum:up{job=self}")
    assert len(up) == 1, up
    want = {"job": "self", "instance": f"127.0.0.1%3A{prom_port}"}
    assert up[0]["tags"] == want, up[0]["tags"]
    assert up[0]["dps"] and all(v == 1 for v in up[0]["dps"].values()), up[0]["dps"]
    # A prometheus_* series with more labels.
    bi = get(hg, "/api/query?start=1m-ago&m=sum:prometheus_build_info{job=self}")
    assert len(bi) == 1, bi
    for k in ("version", "goversion", "instance", "job"):
        assert k in bi[0]["tags"], (k, bi[0]["tags"])
    assert bi[0]["tags"]["version"].startswith("2."), bi[0]["tags"]
    h = get(hg, "/api/query?start=1m-ago&m=sum:prometheus_http_requests_total{handler=/metrics,code=200}")
    assert len(h) == 1 and h[0]["dps"], h
    return (f"{len(metrics)} prometheus_* metrics; up{up[0]['tags']}: {len(up[0]['dps'])} points;"
            f" prometheus_build_info version={bi[0]['tags']['version']}")

def check_remote_read():
    q = urllib.parse.quote('rate(ci:only_in_hourglass{host="ci"}[1m])')
    r = get(prom, f"/api/v1/query?query={q}&time={now}")
    assert r["status"] == "success", r
    res = r["data"]["result"]
    assert len(res) == 1, f"rate() over the hourglass-only series returned {res}"
    labels, value = res[0]["metric"], float(res[0]["value"][1])
    assert labels == {"host": "ci"}, labels
    assert abs(value - 2.0) < 1e-9, f"rate {value}, expected 2/s"
    q = urllib.parse.quote('ci:only_in_hourglass[2m]')
    raw = get(prom, f"/api/v1/query?query={q}&time={now}")
    values = [float(v) for _, v in raw["data"]["result"][0]["values"]]
    assert values == [10.0 * (i + 1) for i in range(12)], values
    return (f"PromQL rate(ci:only_in_hourglass[1m]) = {value}/s through remote read"
            f" ({len(values)} samples read back exactly)")

errors = None
for attempt in range(20):
    try:
        print(check_remote_write())
        print(check_remote_read())
        break
    except (AssertionError, KeyError, IndexError) as e:
        errors = e
        time.sleep(1)
else:
    raise SystemExit(f"prometheus interop failed: {errors!r}")
print("prometheus interop: ok")
PY
then
  echo "--- prometheus log (remote storage lines)"
  grep -i "remote" "$work/prometheus.log" | tail -20 || true
  echo "--- hourglass log"
  tail -20 "$work/hg/server.log"
  exit 1
fi
# A refused remote-write batch is logged by Prometheus; there must be none.
if grep -qi "non-recoverable error" "$work/prometheus.log"; then
  echo "prometheus dropped remote-write batches:"
  grep -i "non-recoverable error" "$work/prometheus.log" | head -5
  exit 1
fi
