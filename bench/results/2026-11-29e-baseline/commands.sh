#!/usr/bin/env bash
# The runs behind BENCHMARKS "Series churn, step 18", acceptance 4: the cpu
# workload against d71f7c9, the build issue 18 was filed against
# (/work/bins/issue-base; see ../2026-11-29e-imm/commands.sh for the builds).
set -x
d=bench/results/2026-11-29e-baseline
bench/ab.sh /work/bins/issue-base /work/bins/head 3 /tmp/ab-base                               # cpu-ab-issue-base.log (step 17's last build)
PROTOCOLS=prom-write bench/ab.sh /work/bins/issue-base /work/bins/head 5 /tmp/ab-base-prom     # cpu-ab-issue-base-prom5.log
$d/hour-avg.sh /work/bins/issue-base /work/bins/head 6 /tmp/hour-avg                           # hour-avg.log
$d/profile-cpu.sh /work/bins/issue-base prom-write /tmp/prof-issue-base                        # perf report --no-children --sort sym
$d/profile-cpu.sh /work/bins/head prom-write /tmp/prof-head
PROTOCOLS=prom-write bench/ab.sh /work/bins/issue-base /work/bins/wire 4 /tmp/ab-wire          # cpu-ab-issue-base-wire.log
bench/ab.sh /work/bins/issue-base /work/bins/wire 5 /tmp/ab-all                                # cpu-ab-issue-base-all.log
for i in 1 2 3 4 5 6; do for b in issue-base wire; do echo "$i $b $($d/cpu-one.sh /work/bins/$b influx-http)"; done; done   # influx-http-6.txt
for i in 1 2 3 4 5 6; do for b in issue-base lean; do echo "$i $b $($d/cpu-one.sh /work/bins/$b influx-http)"; done; done   # influx-http-6-lean.txt
for i in 1 2 3 4 5; do for b in issue-base wire lean; do echo "$i $b $($d/cpu-one.sh /work/bins/$b influx-http)"; done; done   # influx-http-3way.txt
bench/ab.sh /work/bins/issue-base /work/bins/final 5 /tmp/ab-final                             # cpu-ab-issue-base-final.log
bench/results/2026-11-29e-baseline/hour-avg-fresh.sh   # hour-avg-fresh.txt
for conf in "" "dirty_decay_ms:0"; do _RJEM_MALLOC_CONF=$conf $d/prom-rss.sh /work/bins/final; done   # prom-rss.txt
# Two guesses at InfluxDB HTTP's gap, neither moved it (five / four interleaved ingests):
#  slim = c8d41bd with Entry::SentAs's digest as [u8; 16] (Entry 96 -> 88 bytes, Item 48 -> 40); not kept
for i in 1 2 3 4 5; do for b in issue-base final slim; do echo "$i $b $($d/cpu-one.sh /work/bins/$b influx-http)"; done; done   # influx-http-slim.txt
for i in 1 2 3 4; do echo "$i issue-base $($d/cpu-one.sh /work/bins/issue-base influx-http)"; echo "$i final $($d/cpu-one.sh /work/bins/final influx-http)"; echo "$i final-narenas8 $(_RJEM_MALLOC_CONF=narenas:8 $d/cpu-one.sh /work/bins/final influx-http)"; done   # influx-http-narenas.txt
# Where InfluxDB HTTP's gap is not: the allocator's return of pages, the allocator itself, the instruction count.
for i in 1 2 3 4; do echo "$i issue-base $($d/cpu-one.sh /work/bins/issue-base influx-http)"; echo "$i final $($d/cpu-one.sh /work/bins/final influx-http)"; echo "$i final-decay10s $(_RJEM_MALLOC_CONF=dirty_decay_ms:10000 $d/cpu-one.sh /work/bins/final influx-http)"; done   # influx-http-decay.txt
for i in 1 2 3; do for b in issue-base final; do echo "$i $b $($d/usersys.sh /work/bins/$b influx-http)"; done; done   # influx-http-usersys.txt
# final-glibc = c8d41bd without the #[global_allocator] (the system's malloc); not kept
for i in 1 2 3 4; do for b in issue-base final final-glibc; do echo "$i $b $($d/usersys.sh /work/bins/$b influx-http)"; done; done   # influx-http-allocator.txt
for b in issue-base final; do $d/callgrind.sh /work/bins/$b influx-http /tmp/cg6-$b.out; callgrind_annotate /tmp/cg6-$b.out | sed -n '/PROGRAM TOTALS/,+45p'; done   # callgrind-influx-http-*.txt
for b in issue-base final; do VALGRIND_ARGS=--cache-sim=yes DURATION=3h $d/callgrind.sh /work/bins/$b influx-http /tmp/cgc-$b.out; done   # callgrind-cachesim-influx-http-*.txt (callgrind_annotate --show=Ir,D1mr,DLmr,D1mw,DLmw)
for b in issue-base final; do VALGRIND_ARGS=--branch-sim=yes DURATION=3h $d/callgrind.sh /work/bins/$b influx-http /tmp/cgb-$b.out; done   # callgrind-branchsim-influx-http-*.txt (callgrind_annotate --show=Ir,Bcm,Bim --sort=Bcm)
for b in issue-base lean; do $d/flat.sh /work/bins/$b influx-http /tmp/flat-$b.data; done   # the flat profiles BENCHMARKS step 18 compares (perf report --no-children --sort sym)
