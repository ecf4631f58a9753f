#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/../../.."
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$1"
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol telnet --hosts 100 --duration 1d --start 1700006400 --server-pid "$HG_PID" --no-progress 2>&1 | grep -E "points/s|CPU" | tr -s ' ' | tr '\n' ' '; echo
