#!/usr/bin/env bash
# perfio.sh BIN PROTO OUT: the 10-minute churn table's ingest (one protocol) with perf on the whole server.
set -u
bin=$1; proto=$2; out=$3; mkdir -p $out
d=$(mktemp -d /tmp/hgp.XXXXXX); port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
$bin serve --data-dir $d/data --bind 127.0.0.1 --port $port > $out/log 2>&1 &
pid=$!
for i in $(seq 100); do curl -s -o /dev/null 127.0.0.1:$port/api/version && break; sleep 0.1; done
/work/notes/thrmon.sh $pid $out/threads.txt &
perf record -q -T --call-graph dwarf,16384 -F ${FREQ:-49} -p $pid -o $out/perf.data >/dev/null 2>&1 &
pp=$!
/work/main/target/release/hourglass-bench ingest --addr 127.0.0.1:$port --protocol $proto --workload high-cardinality --hosts 20000 --churn 10 --duration 10m --start 1700006400 --server-pid $pid --no-progress > $out/bench.out 2>&1
kill -INT $pp; sleep 5
kill $pid; sleep 3; kill -9 $pid 2>/dev/null; rm -rf $d
