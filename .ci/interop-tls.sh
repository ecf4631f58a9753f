#!/usr/bin/env bash
# Interop stage (issue 19): real TLS clients against a server with
# `[server.tls]` and access control on:
#  * curl over HTTPS with --cacert (a certificate made here with openssl),
#    a write token as a bearer token, then a read back;
#  * openssl s_client carrying the line protocol (`auth`, `put`, `version`)
#    over TLS on the same port;
#  * after the certificate is renewed and the server gets SIGHUP, curl with
#    the new CA only is accepted and with the old one refused.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib.sh
for tool in openssl curl; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends openssl curl >/dev/null
  fi
done
work=$(mktemp -d)
trap 'kill ${HG_PID:-} 2>/dev/null || true; wait ${HG_PID:-} 2>/dev/null || true; rm -rf "$work" || true' EXIT
cert() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -addext "basicConstraints=critical,CA:FALSE" -addext "extendedKeyUsage=serverAuth" \
    -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
}
cert
cp "$work/cert.pem" "$work/ca-old.pem"
bin=${HOURGLASS_BIN:-target/debug/hourglass}
[ -x "$bin" ] || cargo build -q --bin hourglass
write_token=$("$bin" token create --data-dir "$work/hg/data" --name ci-write --scope write 2>/dev/null)
read_token=$("$bin" token create --data-dir "$work/hg/data" --name ci-read --scope read 2>/dev/null)
printf '[auth]\nenabled = true\n[server.tls]\ncert_file = "%s"\nkey_file = "%s"\n' \
  "$work/cert.pem" "$work/key.pem" >"$work/tls.toml"
HG_CONFIG="$work/tls.toml" start_server "$work/hg"
url="https://localhost:$HG_PORT"
now=$(date +%s)

# HTTPS with curl.
code=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$work/ca-old.pem" \
  -H "Authorization: Bearer $write_token" -H 'Content-Type: application/json' \
  -d "{\"metric\":\"ci.tls\",\"timestamp\":$now,\"value\":1,\"tags\":{\"via\":\"curl\"}}" "$url/api/put")
[ "$code" = 204 ] || { echo "HTTPS put answered $code"; exit 1; }

# The line protocol over TLS with openssl s_client.
# (`head` ends the pipe early: s_client's SIGPIPE is not a failure.)
reply=$(printf 'auth %s\nput ci.tls %s 2 via=s_client\nversion\n' "$write_token" "$now" |
  timeout 20 openssl s_client -connect "127.0.0.1:$HG_PORT" -servername localhost \
    -CAfile "$work/ca-old.pem" -verify_return_error -quiet 2>/dev/null | head -n 2 || true)
echo "$reply" | head -n1 | grep -qx ok || { echo "s_client: expected ok, got: $reply"; exit 1; }
echo "$reply" | sed -n 2p | grep -q '^hourglass ' || { echo "s_client: no version reply: $reply"; exit 1; }

got=$(curl -sS --cacert "$work/ca-old.pem" -H "Authorization: Bearer $read_token" \
  "$url/api/query?start=$((now - 60))&m=sum:ci.tls%7Bvia=*%7D")
python3 - "$got" <<'PY'
import json, sys
series = {s["tags"]["via"]: list(s["dps"].values()) for s in json.loads(sys.argv[1])}
assert series == {"curl": [1], "s_client": [2]}, series
print("HTTPS (curl --cacert) and the line protocol over TLS (openssl s_client): ok")
PY

# A renewed certificate on SIGHUP.
cert
kill -HUP "$HG_PID"
for _ in $(seq 50); do
  curl -s -o /dev/null --cacert "$work/cert.pem" -H "Authorization: Bearer $read_token" "$url/api/version" && break
  sleep 0.1
done
curl -sS -o /dev/null --cacert "$work/cert.pem" -H "Authorization: Bearer $read_token" "$url/api/version"
if curl -s -o /dev/null --cacert "$work/ca-old.pem" "$url/api/version"; then
  echo "the old certificate is still served after SIGHUP"; exit 1
fi
echo "certificate reloaded on SIGHUP: ok"
