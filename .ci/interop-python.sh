#!/usr/bin/env bash
# Interop stage (issue 8, acceptance 2): real Python OpenTSDB clients from
# PyPI, in a venv, write to and read from a fresh server; pyarrow reads the
# Arrow output of a query and gets the same numbers as the JSON output.
#   opentsdb-client 0.6.1 (HTTP put with gzip, and telnet put)
#   potsdb 1.0.3           (telnet put)
#   pyopentsdb 0.2.1       (HTTP query, suggest, aggregators, version, filters)
#   pyarrow                (Arrow IPC stream of /api/query?format=arrow)
# Set HG_PY_VENV to reuse a venv that already has them.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib.sh

work=$(mktemp -d)
trap 'kill $HG_PID 2>/dev/null || true' EXIT
venv=${HG_PY_VENV:-$work/venv}
if [ ! -x "$venv/bin/python" ]; then
  if ! python3 -m venv "$venv" 2>/dev/null; then
    # Debian's python3 ships venv separately.
    rm -rf "$venv"
    apt-get update -qq && apt-get install -y -qq python3-venv python3-pip >/dev/null
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install -q opentsdb-client==0.6.1 potsdb==1.0.3 pyopentsdb==0.2.1 pyarrow
fi
start_server "$work"

timeout 120 "$venv/bin/python" - "$HG_ADDR" <<'PY'
import datetime, json, sys, time, urllib.request
import pyarrow as pa
addr = sys.argv[1]
host, port = addr.rsplit(":", 1)
port = int(port)

def get(path, headers=None):
    req = urllib.request.Request(f"http://{addr}{path}", headers=headers or {})
    return urllib.request.urlopen(req, timeout=10).read()

now = int(time.time())

# opentsdb-client over HTTP (gzip JSON batches) and telnet.
from opentsdb import TSDBClient, TSDBConnectProtocols
for proto, metric in ((TSDBConnectProtocols.HTTP, "py.http"), (TSDBConnectProtocols.TELNET, "py.telnet")):
    c = TSDBClient(host, port=port, protocol=proto, host_tag=False)
    for i in range(10):
        c.send(metric, i * 1.5, timestamp=now - 100 + i * 10, client="opentsdb-client")
    c.close()
    c.wait()
    assert c.statuses["failed"] == 0, (metric, c.statuses)
    print(metric, c.statuses)

# potsdb over telnet.
import potsdb
p = potsdb.Client(host, port=port, host_tag="h1")
for i in range(10):
    p.log("py.potsdb", i, client="potsdb")
p.wait()

time.sleep(1)

# pyopentsdb reads everything back.
from pyopentsdb import tsdb
t = tsdb.tsdb_connection(f"http://{addr}")
start = datetime.datetime.fromtimestamp(now - 3600)
for metric, n in (("py.http", 10), ("py.telnet", 10), ("py.potsdb", 1)):
    res = t.query(start=start, metrics=[{"metric": metric, "aggregator": "sum"}])
    assert len(res) == 1, (metric, res)
    assert len(res[0]["dps"]) >= n, (metric, res[0]["dps"])
    print(metric, len(res[0]["dps"]), "points, tags", res[0]["tags"])
assert {"py.http", "py.potsdb", "py.telnet"} <= set(t.suggest(type="metrics", q="py"))
assert "sum" in t.aggregators()
assert "wildcard" in t.filters()
print("version:", t.version().get("version"))

# pyarrow: the Arrow output carries the JSON output's numbers.
path = f"/api/query?start={now - 3600}&m=sum:py.http%7Bclient=*%7D"
want = sorted(
    (int(ts) * 1000, float(v))
    for r in json.loads(get(path)) for ts, v in r["dps"].items()
)
for headers, suffix in (({}, "&format=arrow"), ({"Accept": "application/vnd.apache.arrow.stream"}, "")):
    table = pa.ipc.open_stream(get(path + suffix, headers)).read_all()
    got = sorted(zip(table.column("timestamp").cast(pa.int64()).to_pylist(),
                     table.column("value").to_pylist()))
    assert got == want, (got, want)
    assert set(table.column("tag.client").to_pylist()) == {"opentsdb-client"}
print("pyarrow:", len(want), "points, same as JSON")
print("python interop: ok")
PY
