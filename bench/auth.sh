#!/usr/bin/env bash
# What access control and TLS cost on the write paths (issue 19): the cpu
# workload (100 hosts x 10 metrics x 1 day at 10 s = 8.64 M points) ingested
# over each protocol into a fresh server of one build, three ways: open,
# with `[auth] enabled = true` (a write token: `auth <token>` on telnet, a
# bearer token on HTTP), and with auth and `[server.tls]` (the same over
# TLS: HTTPS, the line protocol over TLS; an openssl P-256 certificate), the
# order rotating from run to run:
#
#   bench/auth.sh [RUNS] [OUT_DIR]          (default 3 runs)
#
# MODES="open auth" narrows the ways. Reports are kept as JSON in OUT_DIR,
# named open-*, auth-* and tls-*;
# bench/peers/summary.py prints the medians.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
out=${2:-$(mktemp -d /tmp/auth.XXXXXX)}
mkdir -p "$out"
B=target/release/hourglass-bench
bin=target/release/hourglass
for b in "$B" "$bin"; do
    [ -x "$b" ] || { echo "auth: not built: $b (cargo build --release -p hourglass -p hourglass-bench)" >&2; exit 1; }
done
work=(--hosts 100 --duration 1d --start 1700006400)
# shellcheck source=bench/lib.sh
. bench/lib.sh
trap cleanup EXIT
cfg=$(mktemp /tmp/hourglass-auth.XXXXXX.toml)
printf '[auth]\nenabled = true\n' >"$cfg"
tlsdir=$(mktemp -d /tmp/hourglass-tls.XXXXXX)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -addext "basicConstraints=critical,CA:FALSE" -addext "extendedKeyUsage=serverAuth" \
    -keyout "$tlsdir/key.pem" -out "$tlsdir/cert.pem" 2>/dev/null
tlscfg=$tlsdir/tls.toml
printf '[auth]\nenabled = true\n[server.tls]\ncert_file = "%s"\nkey_file = "%s"\n' \
    "$tlsdir/cert.pem" "$tlsdir/key.pem" >"$tlscfg"

for r in $(seq "$runs"); do
    echo "run $r of $runs"
    modes=(${MODES:-open auth tls})
    # Rotate: each way goes first in turn.
    shift_by=$(( (r - 1) % ${#modes[@]} ))
    order=("${modes[@]:$shift_by}" "${modes[@]:0:$shift_by}")
    for p in ${PROTOCOLS:-telnet http-put influx-http prom-write}; do
        for mode in "${order[@]}"; do
            if [ "$mode" = auth ] || [ "$mode" = tls ]; then
                HG_DIR=$(mktemp -d /tmp/hourglass-sbs.XXXXXX)
                started+=("$HG_DIR")
                token=$("$bin" token create --data-dir "$HG_DIR/data" --name bench --scope write 2>/dev/null)
                if [ "$mode" = auth ]; then
                    HG_CONFIG=$cfg launch_hourglass "$bin"
                    ingest "auth-$p" "$HG_PID" --addr "$HG_ADDR" --protocol "$p" --token "$token"
                else
                    HG_CONFIG=$tlscfg launch_hourglass "$bin"
                    ingest "tls-$p" "$HG_PID" --addr "$HG_ADDR" --protocol "$p" --token "$token" \
                        --tls-ca "$tlsdir/cert.pem"
                fi
            else
                start_hourglass "$bin"
                ingest "open-$p" "$HG_PID" --addr "$HG_ADDR" --protocol "$p"
            fi
            cleanup
        done
    done
done
rm -rf "$cfg" "$tlsdir"
python3 bench/peers/summary.py "$out"
