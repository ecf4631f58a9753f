#!/usr/bin/env bash
# The commands behind BENCHMARKS.md "Series churn, step 15" (from the repository root; not a
# script to run as a whole). Builds, each `cargo build --release -p hourglass -p hourglass-bench`
# copied from target/release/hourglass:
#   base    = 2027e6d (HEAD before this step)
#   bulk    = an experiment not landed: base plus the first-flush tier rows (b93cac0's) with
#             each flush piece's tier rows and newest hours written as one meta table file of
#             their own (`Store::write_bulk`), not through the store log and memtable
#   fast    = base plus b93cac0's first-flush tier rows alone
#   dbg     = base plus look-debug/look-debug.patch (one line per look to stderr: the round
#             ended, the newest data time, rows taken, series forgotten and their last points)
#   fix     = dad0d2e (the look clears its own ask) plus b93cac0 = fixfast below
#   fixfast = b93cac0 (this step)
# One ingest with RSS and the head's gauges sampled every 0.25 s (runs/NAME.txt and .mem), the
# churn table's workload, with step 13's run.sh:
R=bench/results/2026-11-28b-alloc/run.sh
$R /work/bins/base telnet runs/base-t1.txt              # base-t1..t7, base-p1/p2 (prom-write)
$R /work/bins/bulk telnet runs/bulk-t1.txt              # bulk-t1..t5, bulk-p1/p2
$R /work/bins/fast telnet runs/fast-t1.txt              # fast-t1..t4, fast-p1/p2
HG_CONFIG=/tmp/smallcache.toml $R /work/bins/base telnet runs/sc-1.txt   # sc-1/2; the file:
#   [server]
#   telnet_series_cache_bytes = 1048576
# Interleaved, one of each build per round, four rounds (base, fast, bulk: runs/{base,fast,bulk}-t{1..4}
# in ab/ originally; copied here as ab-*):
for i in 1 2 3 4; do for b in base fast bulk; do $R /work/bins/$b telnet runs/ab-$b-t$i.txt; done; done
# The first look's evictions, six telnet ingests with the dbg build (look-debug/):
for i in 1 2 3 4 5 6; do bash look-debug/run.sh look-debug/d$i.txt; done
# The fix, eight telnet ingests:
for i in 1 2 3 4 5 6 7 8; do $R /work/bins/fix telnet runs/fix-t$i.txt; done
# Profiles (profiles/): step 13's profile.sh, then perf script through profiles/agg.py
# (self samples by function, and inclusive by frame, of the flusher thread):
bash bench/results/2026-11-28b-alloc/profile.sh /work/bins/base telnet /tmp/prof1      # and bulk, fixfast
perf report -i /tmp/prof1/perf.data --no-children --sort comm -g none
perf script -i /tmp/prof1/perf.data --comm hourglass-flush -F ip,sym,dso | python3 profiles/agg.py 40 90
# Acceptance 1 (churn.log):
bench/churn.sh /work/bins/base /work/bins/fixfast 2 /tmp/churn15
# Acceptance 4 (cpu-ab.log):
PROTOCOLS=prom-write bench/ab.sh /work/bins/base /work/bins/fixfast 2 /tmp/ab15
# First line of each run: the series forgotten at the first look that wrote anything:
for f in runs/*-t*.mem; do awk '{for(i=1;i<=NF;i++){split($i,a,"="); if(a[1]=="series_stopped_total" && a[2]>0){print FILENAME, a[2]; exit}}}' $f; done
bash bench/results/2026-11-28b-alloc/sum.sh runs/*.txt > summary.txt
# Acceptance 2 (soak.log, soak-ingest.txt, soak-samples.txt):
bench/churn-soak.sh /work/bins/fixfast /tmp/soak15
# Acceptance 4, telnet and the queries measured again (cpu-ab-telnet.log):
PROTOCOLS=none bench/ab.sh /work/bins/base /work/bins/fixfast 3 /tmp/ab15t
# Looks less than 30 s of data time after the one before (the race), per dbg run:
for i in 1 2 3 4 5 6; do awk '{split($4,a,"="); n=a[2]; if (prev!="" && n-prev<30) print FILENAME, $3, $5; prev=n}' look-debug/d$i.txt.dbg; done
# The writer threads' split on this step's build (profiles/head-telnet-io.txt), target/release from cff55f1:
bash bench/results/2026-11-28b-alloc/profile.sh target/release/hourglass telnet /tmp/prof4
perf script -i /tmp/prof4/perf.data --comm hourglass-io -F ip,sym,dso | python3 profiles/agg.py 30 120
