#!/usr/bin/env bash
set -u
bin=$1
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$bin"
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol telnet --hosts 100 --duration 1d --start 1700006400 --server-pid "$HG_PID" --no-progress | grep -E "points/s|CPU"
curl -s $HG_ADDR/metrics | grep -E "^hourglass_(series_(created|stopped)_total|flush[a-z_]*|rows[a-z_]*|cells[a-z_]*) "
