#!/usr/bin/env bash
# Runs each hourglass-ingest fuzz target for a bounded time; exits non-zero if any target crashes.
#
#   ingest/fuzz/run.sh [SECONDS_PER_TARGET]      (default 30)
#
# The runner, its requirements and FUZZ_SANITIZER / CARGO_TARGET_DIR are .ci/fuzz.sh's.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
exec "$root/.ci/fuzz.sh" ingest/fuzz "${1:-30}" telnet_line put_json influx_line prom_write import_lines selector
