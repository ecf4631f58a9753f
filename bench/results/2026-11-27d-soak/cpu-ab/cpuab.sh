#!/usr/bin/env bash
# cpuab.sh BIN OUT: the cpu workload (telnet, 100 hosts x 1 day) into a fresh server, then the reference queries after 90 s.
set -u
bin=$1; out=$2
B=/work/main/target/release/hourglass-bench
d=$(mktemp -d /tmp/hgab.XXXXXX); port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
$bin serve --data-dir $d/data --bind 127.0.0.1 --port $port > $d/log 2>&1 &
pid=$!
for i in $(seq 100); do curl -s -o /dev/null 127.0.0.1:$port/api/version && break; sleep 0.1; done
$B ingest --addr 127.0.0.1:$port --protocol telnet --hosts 100 --duration 1d --start 1700006400 --server-pid $pid --no-progress 2>&1 | grep -E "points/s|RSS|CPU" > $out.ingest
sleep 90
ls $d/data/store | grep -c sst > $out.files
$B query --hosts 100 --duration 1d --start 1700006400 --target hourglass=127.0.0.1:$port --repeat 20 --queries hour-avg,day-avg,max-per-host,sum-all > $out.query 2>&1
kill $pid; sleep 2; kill -9 $pid 2>/dev/null; rm -rf $d
