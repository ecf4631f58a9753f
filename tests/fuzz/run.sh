#!/usr/bin/env bash
# Runs the hourglass codec and storage-file fuzz targets for a bounded time; exits non-zero on a crash.
#
#   tests/fuzz/run.sh [SECONDS_PER_TARGET]      (default 60)
#
# The runner, its requirements and FUZZ_SANITIZER / CARGO_TARGET_DIR are .ci/fuzz.sh's. The
# table-file seeds are whole table files, hence their longer inputs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
exec "$root/.ci/fuzz.sh" tests/fuzz "${1:-60}" cell_decode:8192 table_file:16384 log_file:8192
