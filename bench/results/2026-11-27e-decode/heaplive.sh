#!/usr/bin/env bash
# heaplive.sh BIN HOSTS OUT: live.sh's workload under heaptrack (the server's heap by allocation site).
set -u
bin=$1; hosts=$2; out=$3; mkdir -p $out
d=$(mktemp -d /tmp/hgh.XXXXXX); port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
heaptrack -o $out/heap $bin serve --data-dir $d/data --bind 127.0.0.1 --port $port > $out/heaptrack.log 2>&1 &
for i in $(seq 300); do curl -s -o /dev/null 127.0.0.1:$port/api/version && break; sleep 0.2; done
pid=$(pgrep -f "data-dir $d/data" | head -1)
/work/main/target/release/hourglass-bench ingest --workload high-cardinality --churn 0 --hosts $hosts --addr 127.0.0.1:$port --duration 1m --start now-2m --server-pid $pid --no-progress > $out/bench.out 2>&1
sleep 5
curl -s 127.0.0.1:$port/metrics | grep -E '^hourglass_(head|series)[a-z_]*' >> $out/bench.out
kill $pid; sleep 15; rm -rf $d
