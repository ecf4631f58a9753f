#!/usr/bin/env bash
# UI stage (issue 20): the web UI in a real browser. Debian's headless
# Chromium, driven by Debian's chromium-driver through selenium (PyPI, in a
# venv), against a real server with data: tests/ui/browser_test.py checks
# every page and writes a screenshot of each to target/ui-screenshots.
# Set HG_UI_VENV to reuse a venv that already has selenium.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib.sh

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-dejavu-core >/dev/null
fi
chromium --version 2>/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work" || true' EXIT
venv=${HG_UI_VENV:-$work/venv}
make_venv "$venv" 'selenium>=4.20,<5'

bin=${HOURGLASS_BIN:-target/debug/hourglass}
[ -x "$bin" ] || cargo build -q --bin hourglass
mkdir -p target/ui-screenshots
timeout 600 "$venv/bin/python" tests/ui/browser_test.py --bin "$bin" --screenshots target/ui-screenshots
