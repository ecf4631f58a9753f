#!/usr/bin/env bash
# Interop stage: real collectd (Debian collectd-core) writes to a fresh
# server with write_tsdb for ~15 s; /api/query must then return cpu.*,
# memory.* and load.* series tagged fqdn=testhost env=test.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib.sh

if [ ! -x /usr/sbin/collectd ] || [ ! -f /usr/lib/collectd/write_tsdb.so ]; then
  echo "installing collectd-core"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends collectd-core >/dev/null
fi

work=$(mktemp -d)
trap 'kill ${HG_PID:-} 2>/dev/null || true; [ -f "$work/collectd.pid" ] && kill "$(cat "$work/collectd.pid")" 2>/dev/null || true' EXIT
start_server "$work"

cat > "$work/collectd.conf" <<CONF
Hostname "testhost"
FQDNLookup false
Interval 1
BaseDir "$work"
PIDFile "$work/collectd.pid"
PluginDir "/usr/lib/collectd"
TypesDB "/usr/share/collectd/types.db"
LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File "$work/collectd.log"
</Plugin>
LoadPlugin cpu
LoadPlugin memory
LoadPlugin load
<LoadPlugin write_tsdb>
  FlushInterval 1
</LoadPlugin>
<Plugin write_tsdb>
  <Node "local">
    Host "127.0.0.1"
    Port "$HG_PORT"
    HostTags "env=test"
  </Node>
</Plugin>
CONF
/usr/sbin/collectd -t -C "$work/collectd.conf"
echo "running collectd for 15 s"
timeout 15 /usr/sbin/collectd -f -C "$work/collectd.conf" || true
sleep 1

python3 - "$HG_ADDR" <<'PY'
import json, sys, urllib.request, urllib.error
addr = sys.argv[1]
def get(path):
    try:
        return json.load(urllib.request.urlopen(f"http://{addr}{path}"))
    except urllib.error.HTTPError as e:
        raise SystemExit(f"{path}: HTTP {e.code}: {e.read().decode()}")
metrics = get("/api/suggest?type=metrics&q=&max=1000")
print("metrics:", " ".join(metrics))
for prefix in ("cpu.", "memory.", "load."):
    assert any(m.startswith(prefix) for m in metrics), f"no {prefix}* metric arrived"
for m in ("cpu.0.cpu.idle", "memory.used.memory", "load.load.shortterm"):
    assert m in metrics, f"{m} missing"
    res = get(f"/api/query?start=2m-ago&m=sum:{m}{{fqdn=testhost,env=test}}")
    assert len(res) == 1, (m, res)
    r = res[0]
    assert r["tags"] == {"fqdn": "testhost", "env": "test"}, r["tags"]
    assert len(r["dps"]) >= 5, (m, r["dps"])
    print(f"{m}: {len(r['dps'])} points, tags {r['tags']}")
print("collectd interop: ok")
PY
