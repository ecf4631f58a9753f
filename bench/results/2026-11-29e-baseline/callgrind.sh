#!/usr/bin/env bash
# callgrind.sh BIN PROTO OUT: the server under valgrind --tool=callgrind while 100 hosts x 6 h of
# the cpu workload (2.16 M points) arrive over PROTO; callgrind_annotate OUT reads it.
# VALGRIND_ARGS (e.g. --cache-sim=yes) and DURATION (e.g. 3h) change the run.
# cg.sh BIN PROTO OUT: the server under callgrind, a small cpu workload over PROTO
set -u
cd "$(dirname "$0")/../../.."
. bench/lib.sh
HG_DIR=$(mktemp -d /tmp/hourglass-cg.XXXXXX)
port=$(free_port)
valgrind --tool=callgrind ${VALGRIND_ARGS:-} --callgrind-out-file=$3 "$1" serve --data-dir "$HG_DIR/data" --bind 127.0.0.1 --port $port > $HG_DIR/log 2>&1 &
vpid=$!
for _ in $(seq 600); do curl -s -o /dev/null "http://127.0.0.1:$port/api/version" && break; sleep 0.2; done
target/release/hourglass-bench ingest --addr 127.0.0.1:$port --protocol "$2" --hosts 100 --duration "${DURATION:-6h}" --start 1700006400 --no-progress 2>&1 | grep -E 'points acked|points/s'
kill $vpid; wait $vpid
rm -rf $HG_DIR
