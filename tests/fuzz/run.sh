#!/usr/bin/env bash
# Runs the hourglass codec and storage-file fuzz targets for a bounded time; exits non-zero on a crash.
#
#   tests/fuzz/run.sh [SECONDS_PER_TARGET]      (default 60)
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`) and a C++ compiler (libfuzzer-sys builds
# libFuzzer). Stable toolchain only:
#   FUZZ_SANITIZER=address (default) builds with AddressSanitizer, which needs RUSTC_BOOTSTRAP=1
#     (set here) for `-Zsanitizer`; its comparison interceptors guide libFuzzer better.
#   FUZZ_SANITIZER=none uses no unstable flag at all (pure stable), and runs several times faster.
# Set CARGO_TARGET_DIR to build elsewhere (default: tests/fuzz/target).
set -euo pipefail

secs="${1:-60}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -eq 0 ]; then
    echo "usage: $0 [seconds-per-target > 0]" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is not installed: cargo install cargo-fuzz --locked" >&2
    exit 2
fi

sanitizer="${FUZZ_SANITIZER:-address}"
if [ "$sanitizer" != "none" ]; then
    export RUSTC_BOOTSTRAP=1
fi

fuzz_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$fuzz_dir/../.."    # the repository root; --fuzz-dir points cargo fuzz at tests/fuzz

target_dir_args=()
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
    target_dir_args=(--target-dir "$CARGO_TARGET_DIR")
fi

status=0
for target in cell_decode table_file log_file; do
    case "$target" in
        table_file) max_len=16384 ;;   # the seeds are whole table files
        *) max_len=8192 ;;
    esac
    corpus="tests/fuzz/corpus/$target"
    mkdir -p "$corpus"
    echo "== fuzzing $target for ${secs}s (sanitizer: $sanitizer)"
    # New inputs go to $corpus; seeds/ is read-only extra input.
    if ! cargo fuzz run --fuzz-dir tests/fuzz --sanitizer "$sanitizer" "${target_dir_args[@]}" \
        "$target" "$corpus" "tests/fuzz/seeds/$target" -- \
        -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1; then
        echo "FAIL: $target crashed; reproducer in tests/fuzz/artifacts/$target/" >&2
        echo "      replay: RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz --sanitizer $sanitizer $target <artifact>" >&2
        status=1
    fi
done
if [ "$status" -eq 0 ]; then
    echo "fuzz: no crashes"
fi
exit "$status"
