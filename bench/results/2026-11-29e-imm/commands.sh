#!/usr/bin/env bash
# The runs behind BENCHMARKS "Series churn, step 18" (issue 18), from the
# repository root. Builds: /work/bins/head = 8d8fc4b (step 17's last),
# /work/bins/imm = 468505a, /work/bins/wire = 258b2f8, /work/bins/final =
# c8d41bd, /work/bins/issue-base = d71f7c9 (the build the issue was filed
# against), each `cargo build --release --bins -p hourglass` of that commit.
set -x
# The memtable written out without the store's lock (imm against head):
PROTOCOLS=telnet bench/churn.sh /work/bins/head /work/bins/imm 3 /tmp/churn-imm-t      # churn-telnet.log
PROTOCOLS=prom-write bench/churn.sh /work/bins/head /work/bins/imm 3 /tmp/churn-imm-p  # churn-prom.log
# Acceptance 1 and 2 on the final build:
PROTOCOLS=telnet bench/churn.sh /work/bins/head /work/bins/final 3 /tmp/churn-final-t      # churn-final-telnet.log
PROTOCOLS=prom-write bench/churn.sh /work/bins/head /work/bins/final 3 /tmp/churn-final-p  # churn-final-prom.log
bench/churn-soak.sh /work/bins/final /tmp/soak-final                                     # soak.log
# Acceptance 4 against the starting build: see ../2026-11-29e-baseline/commands.sh
