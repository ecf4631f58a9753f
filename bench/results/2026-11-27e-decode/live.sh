#!/usr/bin/env bash
# live.sh BIN HOSTS OUT: BENCHMARKS "Head memory at 1 M series" (churn 0, telnet, 1 minute of open hours), then /metrics.
set -u
bin=$1; hosts=$2; out=$3
d=$(mktemp -d /tmp/hgl.XXXXXX); port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
$bin serve --data-dir $d/data --bind 127.0.0.1 --port $port > /dev/null 2>&1 &
pid=$!
for i in $(seq 100); do curl -s -o /dev/null 127.0.0.1:$port/api/version && break; sleep 0.1; done
/work/main/target/release/hourglass-bench ingest --workload high-cardinality --churn 0 --hosts $hosts --addr 127.0.0.1:$port --duration 1m --start now-2m --server-pid $pid --no-progress > $out 2>&1
sleep 5
echo "== after 5 s: $(grep -E 'VmRSS|VmHWM' /proc/$pid/status | tr -s ' \t' ' ' | tr '\n' ' ')" >> $out
curl -s 127.0.0.1:$port/metrics | grep -E '^hourglass_(head|series|uid|registry|cache|memtable)[a-z_]*' >> $out
kill $pid; sleep 3; kill -9 $pid 2>/dev/null; rm -rf $d
