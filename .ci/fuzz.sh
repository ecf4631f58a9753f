#!/usr/bin/env bash
# Runs cargo-fuzz targets of one fuzz directory for a bounded time each; exits non-zero if any
# target crashes. Shared by ingest/fuzz/run.sh and tests/fuzz/run.sh.
#
#   .ci/fuzz.sh FUZZ_DIR SECONDS_PER_TARGET TARGET[:MAX_LEN]...
#
# FUZZ_DIR is relative to the repository root; new inputs go to FUZZ_DIR/corpus/TARGET,
# FUZZ_DIR/seeds/TARGET is read-only extra input, crashes land in FUZZ_DIR/artifacts/TARGET.
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`) and a C++ compiler (libfuzzer-sys builds
# libFuzzer). Stable toolchain only:
#   FUZZ_SANITIZER=address (default) builds with AddressSanitizer, which needs RUSTC_BOOTSTRAP=1
#     (set here) for `-Zsanitizer`; its comparison interceptors let libFuzzer guess keywords, so
#     it explores far better.
#   FUZZ_SANITIZER=none uses no unstable flag at all (pure stable), faster, weaker guidance.
# FUZZ_PROFILE=release (default) builds optimised; FUZZ_PROFILE=dev builds with the fuzz
#   directory's dev profile (tests/fuzz: the fuzzed crate at opt-level 1, its ~300 dependencies
#   unoptimised): a quarter of the build time, a sixth of the executions per second.
# Set CARGO_TARGET_DIR to build elsewhere (default: FUZZ_DIR/target).
set -euo pipefail

usage() { echo "usage: $0 fuzz-dir seconds-per-target target[:max-len]..." >&2; exit 2; }
[ $# -ge 3 ] || usage
dir=$1 secs=$2
shift 2
[[ "$secs" =~ ^[0-9]+$ ]] && [ "$secs" -gt 0 ] || usage
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is not installed: cargo install cargo-fuzz --locked" >&2
    exit 2
fi
sanitizer="${FUZZ_SANITIZER:-address}"
if [ "$sanitizer" != "none" ]; then
    export RUSTC_BOOTSTRAP=1
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
profile_args=()
case "${FUZZ_PROFILE:-release}" in
    release) ;;
    dev) profile_args=(--dev) ;;
    *) echo "FUZZ_PROFILE must be release or dev" >&2; exit 2 ;;
esac
target_dir_args=()
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
    target_dir_args=(--target-dir "$CARGO_TARGET_DIR")
fi

status=0
for spec in "$@"; do
    target=${spec%%:*}
    max_len=4096
    [ "$spec" != "$target" ] && max_len=${spec#*:}
    corpus="$dir/corpus/$target"
    mkdir -p "$corpus"
    echo "== fuzzing $target for ${secs}s (sanitizer: $sanitizer)"
    if ! cargo fuzz run "${profile_args[@]}" --fuzz-dir "$dir" --sanitizer "$sanitizer" "${target_dir_args[@]}" \
        "$target" "$corpus" "$dir/seeds/$target" -- \
        -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1; then
        echo "FAIL: $target crashed; reproducer in $dir/artifacts/$target/" >&2
        echo "      replay: RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir $dir --sanitizer $sanitizer $target <artifact>" >&2
        status=1
    fi
done
if [ "$status" -eq 0 ]; then
    echo "fuzz: no crashes"
fi
exit "$status"
