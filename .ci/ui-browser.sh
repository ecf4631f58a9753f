#!/usr/bin/env bash
# UI stage (issue 20): the web UI in a real browser. Debian's headless
# Chromium, driven by Debian's chromium-driver through selenium (PyPI, in a
# venv), against a real server with data: tests/ui/browser_test.py checks
# every page and writes a screenshot of each to target/ui-screenshots.
# Set HG_UI_VENV to reuse a venv that already has selenium.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-dejavu-core >/dev/null
fi
chromium --version 2>/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work" || true' EXIT
venv=${HG_UI_VENV:-$work/venv}
if [ ! -x "$venv/bin/python" ]; then
  if ! python3 -m venv "$venv" 2>/dev/null; then
    rm -rf "$venv"
    apt-get update -qq && apt-get install -y -qq python3-venv python3-pip >/dev/null
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install -q --no-cache-dir 'selenium>=4.20,<5'
fi

bin=${HOURGLASS_BIN:-target/debug/hourglass}
[ -x "$bin" ] || cargo build -q --bin hourglass
mkdir -p target/ui-screenshots
timeout 600 "$venv/bin/python" tests/ui/browser_test.py --bin "$bin" --screenshots target/ui-screenshots
