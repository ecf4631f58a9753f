#!/usr/bin/env bash
# sum.sh OUT…: points/s and peak RSS of each run (run.sh), and the largest head series count,
# registry bytes and head points its gauges showed.
for f in "$@"; do echo "== $f: $(grep -E "points/s" $f | awk '{print $2}') pts/s $(grep -E "peak" $f | awk '{print $4}') MiB $(awk '{for(i=2;i<=NF;i++){split($i,a,"="); if(a[1]=="series"&&a[2]>s)s=a[2]; if(a[1]=="series_registry_bytes"&&a[2]>r)r=a[2]; if(a[1]=="head_points"&&a[2]>p)p=a[2]}} END{print "max series",s,"reg MB",int(r/1e6),"head pts",p}' $f.mem)"; done
