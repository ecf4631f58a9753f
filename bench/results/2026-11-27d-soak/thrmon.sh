#!/usr/bin/env bash
# thrmon.sh PID OUT: every 5 s, CPU ticks per thread name (summed) and points written.
pid=$1; out=$2; port=$(ss -ltnp 2>/dev/null | awk -v p="pid=$pid," '$0 ~ p {split($4,a,":"); print a[2]; exit}')
while kill -0 $pid 2>/dev/null; do
  pts=$(curl -s --max-time 1 127.0.0.1:$port/metrics | awk '$1=="hourglass_points_written_total"{print $2}')
  line="$(date +%s) pts=$pts $(for t in /proc/$pid/task/*; do echo "$(cat $t/comm) $(awk '{print $14+$15}' $t/stat)"; done | awk '{a[$1]+=$2} END {for (k in a) printf "%s=%d ", k, a[k]}')"
  echo "$line"; sleep 5
done > $out
