#!/usr/bin/env bash
# cpu-one.sh BIN PROTO: one cpu-workload ingest (100 hosts x 1 day) over PROTO
# into a fresh server; prints points/s and server CPU.
set -u
cd "$(dirname "$0")/../../.."
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$1"
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol "$2" --hosts 100 --duration 1d --start 1700006400 --server-pid "$HG_PID" --no-progress 2>&1 | grep -E "points/s|CPU" | tr -s ' ' | tr '\n' ' '; echo
