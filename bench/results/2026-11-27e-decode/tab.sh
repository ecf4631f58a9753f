#!/usr/bin/env bash
# tab.sh BIN PROTO OUT: one run of the 10-minute churn table's ingest (no perf).
set -u
bin=$1; proto=$2; out=$3
d=$(mktemp -d /tmp/hgt.XXXXXX); port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
$bin serve --data-dir $d/data --bind 127.0.0.1 --port $port > /dev/null 2>&1 &
pid=$!
for i in $(seq 100); do curl -s -o /dev/null 127.0.0.1:$port/api/version && break; sleep 0.1; done
/work/main/target/release/hourglass-bench ingest --addr 127.0.0.1:$port --protocol $proto --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --start 1700006400 --server-pid $pid --no-progress > $out 2>&1
kill $pid; sleep 3; kill -9 $pid 2>/dev/null; rm -rf $d
