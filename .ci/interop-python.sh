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
# The server writes its data directory as it shuts down: wait for it before
# removing the directory, and never let the cleanup fail the stage.
trap 'kill ${HG_PID:-} 2>/dev/null || true; wait ${HG_PID:-} 2>/dev/null || true; rm -rf "$work" || true' EXIT
venv=${HG_PY_VENV:-$work/venv}
make_venv "$venv" opentsdb-client==0.6.1 potsdb==1.0.3 pyopentsdb==0.2.1 pyarrow
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

# With access control (issue 19): a server with [auth] enabled, tokens from
# `hourglass token create`; pyopentsdb on a requests session with Basic
# auth (the token as the password) reads what opentsdb-client wrote over
# the line protocol after `auth <token>`; without credentials, 401.
kill "$HG_PID" 2>/dev/null || true
bin=${HOURGLASS_BIN:-target/debug/hourglass}
read_token=$("$bin" token create --data-dir "$work/auth/data" --name grafana --scope read)
write_token=$("$bin" token create --data-dir "$work/auth/data" --name collector --scope write)
printf '[auth]\nenabled = true\n' > "$work/auth.toml"
HG_CONFIG="$work/auth.toml" start_server "$work/auth"
timeout 120 "$venv/bin/python" - "$HG_ADDR" "$read_token" "$write_token" <<'PY'
import datetime, socket, sys, time
import requests
from pyopentsdb import tsdb
addr, read_token, write_token = sys.argv[1:4]
host, port = addr.rsplit(":", 1)
now = int(time.time())

# The line protocol: refused before `auth`, stored after it.
s = socket.create_connection((host, int(port)))
s.sendall(f"put py.auth {now - 60} 1 host=a\nauth {write_token}\nput py.auth {now - 30} 2 host=a\nversion\n".encode())
reply = b""
while b"hourglass " not in reply:
    reply += s.recv(4096)
lines = reply.decode().splitlines()
assert lines[0].startswith("put: authentication required"), lines
assert lines[1] == "ok", lines
s.close()

# Without credentials: 401 with a challenge.
r = requests.get(f"http://{addr}/api/version")
assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer"), r
# pyopentsdb over a session with Basic auth.
session = requests.Session()
session.auth = ("grafana", read_token)
t = tsdb.tsdb_connection(f"http://{addr}", session=session)
res = t.query(start=datetime.datetime.fromtimestamp(now - 3600),
              metrics=[{"metric": "py.auth", "aggregator": "sum"}])
assert len(res) == 1 and list(res[0]["dps"].values()) == [2], res
assert "py.auth" in t.suggest(type="metrics", q="py")
# The read token cannot write.
r = session.post(f"http://{addr}/api/put",
                 json={"metric": "py.auth", "timestamp": now, "value": 3, "tags": {"host": "a"}})
assert r.status_code == 403, (r.status_code, r.text)
print("python interop with auth: ok (Basic auth through pyopentsdb, auth on the line protocol)")
PY
