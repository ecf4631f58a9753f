#!/usr/bin/env bash
# usersys.sh BIN PROTO: one cpu-workload ingest into a fresh server; its user and system CPU,
# VmHWM and page faults from /proc.
set -u
cd "$(dirname "$0")/../../.."
. bench/lib.sh
trap cleanup EXIT
start_hourglass "$1"
target/release/hourglass-bench ingest --addr "$HG_ADDR" --protocol "$2" --hosts 100 --duration 1d --start 1700006400 --server-pid "$HG_PID" --no-progress >/dev/null 2>&1
awk '{printf "utime %.2f stime %.2f ", $14/100, $15/100}' /proc/$HG_PID/stat
grep -E 'VmHWM' /proc/$HG_PID/status | tr -s ' ' | tr '\n' ' '
awk '{print "minflt", $10, "majflt", $12}' /proc/$HG_PID/stat
