#!/usr/bin/env bash
# prom-rss.sh BIN: the cpu workload over remote write into a fresh server; the
# bench's peak RSS, then /metrics' buffer and head bytes and /proc's VmRSS and
# VmHWM after it. prom-rss.txt: once as built, once with
# _RJEM_MALLOC_CONF=dirty_decay_ms:0 in the environment.
set -u
cd "$(dirname "$0")/../../.."
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$1"
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol prom-write --hosts 100 --duration 1d --start 1700006400 --server-pid "$HG_PID" --no-progress 2>&1 | grep -E 'RSS|batches|connections'
curl -s "http://$HG_ADDR/metrics" | grep -E '^hourglass_prom_write_buffer_bytes|^hourglass_head_bytes|^hourglass_series '
grep -E 'VmRSS|VmHWM' /proc/$HG_PID/status
