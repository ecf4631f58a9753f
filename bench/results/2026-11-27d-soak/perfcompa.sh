#!/usr/bin/env bash
# perfcompa.sh BIN DURATION OUT: the soak's ingest with perf (timestamps) on the compaction thread, thread CPU every 5 s, and the store's files every 30 s.
set -u
bin=$1; dur=$2; out=$3; mkdir -p $out
d=$(mktemp -d /tmp/hgp.XXXXXX); port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
$bin serve --data-dir $d/data --bind 127.0.0.1 --port $port > $out/log 2>&1 &
pid=$!
for i in $(seq 100); do curl -s -o /dev/null 127.0.0.1:$port/api/version && break; sleep 0.1; done
/work/notes/thrmon.sh $pid $out/threads.txt &
( while kill -0 $pid 2>/dev/null; do echo "== $(date +%s)"; ls -l $d/data/store | awk '{print $5, $9}'; sleep 30; done ) > $out/files.txt 2>&1 &
tid=$(ps -T -p $pid -o spid=,comm= | awk '$2=="hourglass-compa"{print $1; exit}')
perf record -q -T --call-graph dwarf,8192 -F 25 -t $tid -o $out/compa.data >/dev/null 2>&1 &
pp=$!
/work/main/target/release/hourglass-bench ingest --addr 127.0.0.1:$port --protocol prom-write --workload high-cardinality --hosts 20000 --churn 10 --duration $dur --start 1700006400 --server-pid $pid --no-progress > $out/bench.out 2>&1
kill -INT $pp; sleep 3
curl -s 127.0.0.1:$port/metrics | grep -iE "compact|table_files|store_" > $out/metrics.txt
kill $pid; sleep 3; kill -9 $pid 2>/dev/null; rm -rf $d
