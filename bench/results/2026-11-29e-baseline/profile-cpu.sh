#!/usr/bin/env bash
# profile-cpu.sh BIN PROTO OUTDIR (from the repository root): the cpu workload
# (100 hosts x 1 day) over PROTO into a fresh server under `perf record`
# (999 Hz, DWARF stacks), by ../2026-11-28b-alloc/profile.sh. Read with
#   perf report -i OUTDIR/perf.data --no-children --sort sym -g none
WORKLOAD="--hosts 100 --duration 1d --start 1700006400" PERF_HZ=999 \
    exec "$(dirname "$0")/../2026-11-28b-alloc/profile.sh" "$@"
