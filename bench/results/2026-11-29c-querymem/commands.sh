#!/usr/bin/env bash
# Step 16 of issue 18: the churn soak's read-back queries. Every command
# behind BENCHMARKS.md "Series churn, step 16", in the order run, from the
# repository root. Builds: /work/bins/head = 813d419 (HEAD before this
# step), /work/bins/final = this step's code (080f3f2). A `-glibc` build is
# the same code with `#[global_allocator]` in src/main.rs commented out,
# for heaptrack.
set -euo pipefail
exit 0  # a record, not a script to run as is

# The data: the soak's workload into a fresh server, stopped with SIGTERM.
hourglass serve --data-dir /tmp/qm/data --bind 127.0.0.1 --port 14242 &
target/release/hourglass-bench ingest --addr 127.0.0.1:14242 --protocol prom-write \
    --workload high-cardinality --hosts 20000 --churn 10 --duration 84m --start 1700006400 --no-progress

# One wide query, as the read-back sends them, three interleaved runs per
# build on the same data after a restart -> wide-query.txt, runs/*.rss
for r in 1 2 3; do for b in head coded; do
    bench/results/2026-11-29c-querymem/wide-query.sh /work/bins/$b /tmp/qm/data runs/$b-$r
done; done

# Where the base build's time goes (perf, DWARF stacks, 199 Hz) during one
# such query -> perf-base-813d419.txt
perf record -F 199 --call-graph dwarf,16384 -p "$PID" -o perf.data -- sleep 45
perf report -i perf.data --children --sort sym -g none

# Where the memory is at the heap's peak (glibc builds under heaptrack,
# one query each after a restart) -> heap-*.txt
heaptrack -o ht /work/bins/glibc serve --data-dir /tmp/qm/data ...
heaptrack_print -f ht.zst -F stacks.txt --flamegraph-cost-type peak
python3 bench/results/2026-11-27e-decode/heap_by_site.py stacks.txt

# The soak, with this step's build -> soak.log, soak-samples.txt, soak-summary.txt
bench/churn-soak.sh /work/bins/final /tmp/soak2
