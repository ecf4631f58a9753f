#!/usr/bin/env bash
# Step 16 of issue 18: the churn soak's read-back queries. Every command
# behind BENCHMARKS.md "Series churn, step 16", in the order run, from the
# repository root. Builds: /work/bins/head = 813d419 (HEAD before this
# step), /work/bins/final = 080f3f2, /work/bins/coded = 080f3f2 before its
# last small change (a group's TSUIDs freed with its points), /work/bins/final2
# = 1138002 (the review's fixes). A `-glibc` build is
# the same code with `#[global_allocator]` in src/main.rs commented out,
# for heaptrack.
set -euo pipefail
exit 0  # a record, not a script to run as is

# The data: the soak's workload into a fresh server, stopped with SIGTERM.
hourglass serve --data-dir /tmp/qm/data --bind 127.0.0.1 --port 14242 &
target/release/hourglass-bench ingest --addr 127.0.0.1:14242 --protocol prom-write \
    --workload high-cardinality --hosts 20000 --churn 10 --duration 84m --start 1700006400 --no-progress

# One wide query, as the read-back sends them, three interleaved runs per
# build on the same data after a restart -> wide-query-coded.txt (named
# wide-query.txt when run), runs/coded-*.rss
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

# The cpu workload, build against build (telnet and the reference queries)
# -> cpu-ab.log (2 runs), cpu-ab-4runs.log (4 runs)
PROTOCOLS=none bench/ab.sh /work/bins/head /work/bins/final 2 /tmp/ab16
PROTOCOLS=none bench/ab.sh /work/bins/head /work/bins/final 4 /tmp/ab16b

# The wide query again, head and final interleaved -> wide-query.txt,
# runs/head-*.rss and runs/final-*.rss (the first set, on the build before
# the last small change, was renamed wide-query-coded.txt; its head-*
# sample files were overwritten by this set)
for r in 1 2 3; do for b in head final; do
    bench/results/2026-11-29c-querymem/wide-query.sh /work/bins/$b /tmp/qm/data runs/$b-$r
done; done

# Heaptrack of this step's code (glibc build of 080f3f2) -> heap-final-080f3f2.txt
heaptrack -o ht3 /work/bins/final-glibc serve --data-dir /tmp/qm/data ...
heaptrack_print -f ht3.zst -F stacks3.txt --flamegraph-cost-type peak
python3 bench/results/2026-11-27e-decode/heap_by_site.py stacks3.txt

# The review's fixes (1138002, /work/bins/final2), two runs -> wide-query-final2.txt
for r in 1 2; do
    bench/results/2026-11-29c-querymem/wide-query.sh /work/bins/final2 /tmp/qm/data /tmp/qm/f2-$r
done
