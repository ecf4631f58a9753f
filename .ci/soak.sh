#!/usr/bin/env bash
# 60 s of mixed and hostile traffic against the real server (hourglass-bench
# soak): steady acknowledged ingest, ordinary and oversized queries, bad
# input, idle connections and a storm of stalled ones and of slow-body
# attackers (64 MiB declared, a byte every 2 s) with fresh-client probes.
# Fails if an acknowledged point is missing, a client is locked out, the
# writers slow down during the storm, a slow body is held past 25 s (the
# server's body timeout is 10 s here), the server dies or its RSS passes the
# ceiling.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib.sh
work=$(mktemp -d)
# The server writes its data directory as it shuts down: wait for it before
# removing the directory, and never let the cleanup fail the stage.
trap 'kill ${HG_PID:-} 2>/dev/null || true; wait ${HG_PID:-} 2>/dev/null || true; rm -rf "$work" || true' EXIT
cargo build -q -p hourglass-bench --bin hourglass-bench
cargo build -q --bin hourglass
printf '[server]\nhttp_body_timeout_secs = 10\n' >"$work/soak.toml"
HG_CONFIG="$work/soak.toml" start_server "$work"
target/debug/hourglass-bench soak --addr "$HG_ADDR" --duration "${SOAK_DURATION:-60s}" \
    --server-pid "$HG_PID" --max-rss-mb "${SOAK_MAX_RSS_MB:-512}" --rate 10000 --no-progress \
    --slow-body-max-hold 25s
kill -0 "$HG_PID"
