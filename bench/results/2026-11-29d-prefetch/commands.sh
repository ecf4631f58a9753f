#!/usr/bin/env bash
# Step 17 of issue 18 (BENCHMARKS "Series churn, step 17"): every command behind its figures,
# run from the repository root on 2026-11-29, 15:06-16:40 UTC. Builds in /work/bins:
#   head  = c9c7c81 (HEAD before this step)
#   pf1   = 56a12c3 (the next line's cache slot prefetched, always)
#   uidw  = 406665a (+ new UIDs made durable by the WAL's sync thread)
#   zc    = 9d1a896 (+ kept zstd contexts)
#   thr3  = final   = fef9a3a (read ahead only past a 2 MiB table); 0c1a060 (the review's mend) not measured again
#   thr, thr2, ht   = intermediate variants of the read-ahead (not landed; cpu-telnet runs only)
# Each: cargo build --release -q --bins -p hourglass -p hourglass-bench; cp target/release/hourglass /work/bins/NAME

# Where the telnet churn ingest's time goes, head (profiles/head-telnet-*.txt) and pf1 (pf1-telnet-io.txt):
bash bench/results/2026-11-28b-alloc/profile.sh /work/bins/head telnet /tmp/prof1
perf report -i /tmp/prof1/perf.data --no-children --sort comm -g none
for c in hourglass-io hourglass-flush hourglass-compa; do
  perf script -i /tmp/prof1/perf.data --comm $c -F ip,sym,dso | python3 bench/results/2026-11-29b-lookrace/profiles/agg.py 30 70
done
bash bench/results/2026-11-28b-alloc/profile.sh /work/bins/pf1 telnet /tmp/prof2
perf script -i /tmp/prof2/perf.data --comm hourglass-io -F ip,sym,dso | python3 bench/results/2026-11-29b-lookrace/profiles/agg.py 25 400
perf script -i /tmp/prof2/perf.data --comm hourglass-io -F ip,sym,dso | python3 profiles/children.py 'resolve_named$' 1

# Idle CPU during the ingest (vmstat) and off-CPU time by blocking stack (profiles/pf1-offcpu.txt):
bash bench/results/2026-11-29d-prefetch/one.sh /work/bins/pf1
bash bench/results/2026-11-29d-prefetch/offcpu.sh /work/bins/pf1 /tmp/off2
perf script -i /tmp/off2/sw.data -F comm,tid,time,event,trace,ip,sym | python3 bench/results/2026-11-29d-prefetch/profiles/offcpu.py

# The churn table, telnet, builds against each other with VictoriaMetrics (runs/):
PROTOCOLS=telnet bench/churn.sh /work/bins/head /work/bins/head 2 /tmp/churnA   # runs/churn-head-twice.log
PROTOCOLS=telnet bench/churn.sh /work/bins/head /work/bins/pf1 3 /tmp/churnB    # runs/churn-pf1.log
PROTOCOLS=telnet bench/churn.sh /work/bins/head /work/bins/uidw 3 /tmp/churnC   # runs/churn-uidw.log
for i in 1 2 3; do for b in pf1 uidw; do bash bench/results/2026-11-29d-prefetch/one.sh /work/bins/$b; done; done
for i in 1 2 3; do for b in uidw zc; do bash bench/results/2026-11-29d-prefetch/one.sh /work/bins/$b; done; done

# Acceptance 1: both paths, three servers (churn-zc.log), and telnet on the final build (churn-final.log):
bench/churn.sh /work/bins/head /work/bins/zc 3 /tmp/r17/churn
PROTOCOLS=telnet bench/churn.sh /work/bins/head /work/bins/thr3 3 /tmp/r17/churn-t3

# Acceptance 4: the cpu workload
PROTOCOLS=prom-write bench/ab.sh /work/bins/head /work/bins/zc 3 /tmp/r17/ab          # cpu-ab-zc.log
for i in 1 2 3 4 5; do for b in head thr; do bash bench/results/2026-11-29d-prefetch/cpu-telnet.sh /work/bins/$b; done; done   # runs/cpu-telnet-thr.txt (also thr2, thr3)
PROTOCOLS=none bench/ab.sh /work/bins/head /work/bins/thr3 4 /tmp/r17/ab-none        # cpu-ab-final.log

# Acceptance 2: the 10 M-series soak on the final build (soak.log, soak-summary.txt)
bench/churn-soak.sh /work/bins/final /tmp/r17/soak
