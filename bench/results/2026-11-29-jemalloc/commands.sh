#!/usr/bin/env bash
# The commands behind BENCHMARKS.md "Series churn, step 14" (from the repository root; not a
# script to run as a whole). Builds:
#   base  = ad1062b (mimalloc), target/release/hourglass copied to /work/bins/base
#   jem   = ad1062b with `tikv-jemallocator` as the global allocator and no built-in options
#           (each run's options through `_RJEM_MALLOC_CONF`)
#   jemc  = this step's commit (jemalloc with MALLOC_CONF built in)
#   glibc = ad1062b with `#[global_allocator]` commented out (heaptrack)
#   look14 = ad1062b with CLOSED_ROWS_LOOK = 1 << 14
# One ingest with RSS and the head's gauges sampled every 0.25 s (runs/NAME.txt and .mem):
R=bench/results/2026-11-28b-alloc/run.sh
$R /work/bins/base prom-write runs/base-1.txt                        # and base-2, baset-* (telnet)
MIMALLOC_PURGE_DELAY=0 $R /work/bins/base prom-write runs/p0.txt
$R /work/bins/base prom-write runs/c0.txt --workload high-cardinality --hosts 20000 --churn 0 --duration 10m
MIMALLOC_PAGE_RECLAIM_ON_FREE=1 $R /work/bins/base prom-write runs/mo-MIMALLOC_PAGE_RECLAIM_ON_FREE_1.txt   # and the other mo-*
printf '[rollup]\ntiers = []\n' > /tmp/notiers.toml
HG_CONFIG=/tmp/notiers.toml $R /work/bins/base prom-write runs/nt-1.txt   # nt10-*: also [head] flush_interval_secs = 10
HG_CONFIG=/tmp/nt10.toml $R /work/bins/look14 prom-write runs/l14nt-1.txt # l14-*: flush_interval_secs = 10 only
_RJEM_MALLOC_CONF=background_thread:true $R /work/bins/jem prom-write runs/jem-bg.txt
_RJEM_MALLOC_CONF=background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0 $R /work/bins/jem prom-write runs/jem-bg-d1000.txt
_RJEM_MALLOC_CONF=background_thread:true,narenas:1 $R /work/bins/jem prom-write runs/jem-bg-n1.txt
_RJEM_MALLOC_CONF=background_thread:true,narenas:1,dirty_decay_ms:300,muzzy_decay_ms:0 $R /work/bins/jem prom-write runs/j300-1.txt  # j300-*, j300t-* (telnet)
_RJEM_MALLOC_CONF=background_thread:true,narenas:1,dirty_decay_ms:1000,muzzy_decay_ms:0 $R /work/bins/jem telnet runs/jem-n1-d1000-telnet.txt
_RJEM_MALLOC_CONF=background_thread:true,narenas:2,dirty_decay_ms:300,muzzy_decay_ms:0 $R /work/bins/jem telnet runs/jem-n2-d300-telnet.txt
$R /work/bins/jemc prom-write runs/jc-prom-write-1.txt                 # and jc-telnet-*
bash bench/results/2026-11-28b-alloc/sum.sh runs/*.txt > summary.txt
# Acceptance 1, 2 and 4:
bench/churn.sh /work/bins/base /work/bins/jemc 2 /tmp/churn14                    # churn.log
bench/churn-soak.sh /work/bins/jemc /tmp/soak14                                  # soak.log, soak-*.txt
PROTOCOLS=prom-write bench/ab.sh /work/bins/base /work/bins/jemc 2 /tmp/ab14     # cpu-ab.log
# Flush timing (flush-timing/): f8571e9 with eprintln! timings around each flush piece's
# take_some, write_frozen, roll_up_frozen and record_newest (not landed), seven telnet ingests:
for i in 1 2 3 4 5 6 7; do bash flush-timing/run-dbg.sh /work/bins/jdbg telnet flush-timing/td-$i.txt; done
TAIL=12 $R /work/bins/jemc prom-write runs/idle-j.txt; TAIL=12 $R /work/bins/base prom-write runs/idle-b.txt   # idle after the ingest
for i in 1 2 3; do $R /work/bins/base prom-write flush-timing/ord-b-$i.txt; bash flush-timing/run-dbg.sh /work/bins/jdbg telnet flush-timing/ord-t-$i.txt; done   # telnet right after a remote-write ingest
# The flusher's split (tiers 44 % of its samples), from step 13's script and its report commands:
bash bench/results/2026-11-28b-alloc/profile.sh /work/bins/base prom-write /tmp/prof1
perf report -i /tmp/prof1/perf.data --no-children --sort comm -g none                        # flusher 35.1 %
perf report -i /tmp/prof1/perf.data --children --comm hourglass-flush --sort sym -g none     # write_tier_values 15.6 %
