#!/usr/bin/env bash
# Bigtable stage (issue 9): Google's Bigtable emulator on loopback, then
#  * the backend's unit tests,
#  * the proof test (tests/bigtable: 100 k points, kill -9, two nodes, UID
#    race, packing while another node writes),
#  * the integration tests of the HTTP API against Bigtable-backed servers
#    (the same tests as the embedded run; only the modules about the local
#    data directory, durability:: and damage::, and rollup:: — the rollup
#    tiers are the embedded store's — are embedded-only; rollup_api::, the
#    rollups written from outside, runs on both; snapshot:: checks that a
#    Bigtable node refuses snapshots with 501; the million-point export and
#    import round trip is a property of the server's codecs, measured on the
#    embedded store (the emulator would take minutes for it), while the
#    import/export error test runs here too; likewise the telnet read-ahead
#    test, a property of the connection's line loop that needs 90,000
#    points of 30,000 new series, which the emulator takes minutes over).
# The emulator is preinstalled on the build machines (Debian package
# google-cloud-cli-bigtable-emulator); if it is missing it is built from
# Debian's Go sources (about 35 s). Under CI=true a missing emulator fails
# the stage; nothing here is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

EMU=$(dpkg -L google-cloud-cli-bigtable-emulator 2>/dev/null | grep '/cbtemulator$' | head -n1 || true)
if [ -z "$EMU" ] || [ ! -x "$EMU" ]; then
  echo "cbtemulator not installed: building it from Debian's golang-google-cloud-dev"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends golang-go golang-google-cloud-dev >/dev/null
  W=$(mktemp -d)
  mkdir -p "$W/src/cbtemulator"
  cp .ci/cbtemulator.go "$W/src/cbtemulator/main.go"
  (cd "$W/src/cbtemulator" && GO111MODULE=off GOPATH="$W:/usr/share/gocode" GOPROXY=off \
     GOCACHE="$W/cache" go build -o "$W/cbtemulator" .)
  EMU=$W/cbtemulator
fi
[ -x "$EMU" ] || { echo "no Bigtable emulator available"; exit 1; }

PORT=$((20000 + RANDOM % 20000))
log=$(mktemp)
"$EMU" -host 127.0.0.1 -port "$PORT" >"$log" 2>&1 &
EMU_PID=$!
trap 'kill $EMU_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break
  sleep 0.1
done
(exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null || { echo "emulator did not start"; cat "$log"; exit 1; }
export BIGTABLE_EMULATOR_HOST=127.0.0.1:$PORT
echo "Bigtable emulator $EMU on $BIGTABLE_EMULATOR_HOST"

# `--workspace`: features resolved as for `cargo test --workspace`, plus the
# backend's (unified in the root Cargo.toml's dev-dependencies), so only
# hourglass itself is compiled again here.
cargo test --workspace --features hourglass/bigtable --lib storage::bigtable
cargo test --workspace --features hourglass/bigtable --test bigtable
HOURGLASS_TEST_BACKEND=bigtable cargo test --workspace --features hourglass/bigtable --test integration -- \
  --skip durability:: --skip damage:: --skip rollup:: \
  --skip export_import::a_million_points_round_trip_bit_for_bit_in_both_formats \
  --skip telnet::a_connection_with_a_large_series_cache_reads_ahead_and_stays_exact
