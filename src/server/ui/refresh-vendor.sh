#!/usr/bin/env bash
# Refresh the vendored chart library of the web UI (uPlot, MIT) from the npm
# registry: pack the given version, check the tarball against the registry's
# integrity hash, copy the minified build, its CSS and LICENSE into
# assets/vendor/uplot/ and print the version.
#
#   src/server/ui/refresh-vendor.sh            # the pinned version
#   src/server/ui/refresh-vendor.sh 1.6.33     # another one
set -euo pipefail

VERSION="${1:-1.6.32}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="$HERE/assets/vendor/uplot"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

command -v npm >/dev/null || { echo "npm is needed" >&2; exit 1; }

expected="$(npm view "uplot@$VERSION" dist.integrity)"
[ -n "$expected" ] || { echo "no integrity for uplot@$VERSION" >&2; exit 1; }

(cd "$WORK" && npm pack --silent "uplot@$VERSION" >/dev/null)
tarball="$WORK/uplot-$VERSION.tgz"
[ -f "$tarball" ] || { echo "npm pack made no $tarball" >&2; exit 1; }

algo="${expected%%-*}"          # sha512
case "$algo" in sha256|sha384|sha512) ;; *) echo "unknown integrity $expected" >&2; exit 1 ;; esac
if command -v openssl >/dev/null; then
    actual="$algo-$(openssl dgst "-$algo" -binary "$tarball" | base64 -w0)"
else
    actual="$algo-$(python3 -c 'import base64,hashlib,sys; print(base64.b64encode(hashlib.new(sys.argv[1], open(sys.argv[2],"rb").read()).digest()).decode())' "$algo" "$tarball")"
fi
if [ "$actual" != "$expected" ]; then
    echo "integrity mismatch for uplot@$VERSION: registry $expected, tarball $actual" >&2
    exit 1
fi

tar -xzf "$tarball" -C "$WORK"
packed="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$WORK/package/package.json" | head -n1)"
[ "$packed" = "$VERSION" ] || { echo "package.json says $packed, not $VERSION" >&2; exit 1; }

mkdir -p "$DEST"
cp "$WORK/package/dist/uPlot.iife.min.js" "$DEST/uPlot.iife.min.js"
cp "$WORK/package/dist/uPlot.min.css" "$DEST/uPlot.min.css"
cp "$WORK/package/LICENSE" "$DEST/LICENSE"
echo "$VERSION" > "$DEST/VERSION"
echo "uplot $VERSION ($expected) -> $DEST"
