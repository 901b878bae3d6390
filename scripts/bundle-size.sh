#!/usr/bin/env bash
# The browser bundle's first load: what the page fetches before its first view (www/index.html's
# scripts early.js and boot.js, the first view's wasm-bindgen module kvlab.js and its wasm
# kvlab_bg.wasm), each gzipped (-9) as a server sends it. The full lab's module (kvlab-full.js,
# kvlab-full_bg.wasm: docs/LAB.md, "Two modules") loads only when something asks for it, and is
# printed apart. Prints the sizes against the 400 KB target; with
# --check, fails when the total passes the budget, the size the bundle has reached plus a little,
# so it only shrinks (docs/PERFORMANCE.md; lower the budget with each cut until it is the
# target). The worker's script, the embed example and the other
# files of dist/ load later, if at all, and are not counted.
# Usage: scripts/bundle-size.sh [--check] [DIST]   (DIST defaults to dist/)
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = "--check" ] && { check=1; shift; }
dist="${1:-dist}"
FIRST_LOAD_TARGET=400000
FIRST_LOAD_BUDGET=399345

gz() { gzip -9c "$1" | wc -c; }
wasm_raw=$(wc -c < "$dist/kvlab_bg.wasm")
wasm_gz=$(gz "$dist/kvlab_bg.wasm")
js_gz=0
for f in kvlab.js boot.js early.js; do js_gz=$((js_gz + $(gz "$dist/$f"))); done
total=$((wasm_gz + js_gz))
echo "bundle: wasm $wasm_gz + js $js_gz bytes gzipped (wasm $wasm_raw bytes)"
echo "first load: $total bytes gzipped, budget $FIRST_LOAD_BUDGET, target $FIRST_LOAD_TARGET"
if [ -f "$dist/kvlab-full_bg.wasm" ]; then
  echo "full lab, on demand: wasm $(gz "$dist/kvlab-full_bg.wasm") + js $(gz "$dist/kvlab-full.js") bytes gzipped"
fi
if [ "$total" -gt "$FIRST_LOAD_TARGET" ]; then
  echo "first load is $((total - FIRST_LOAD_TARGET)) bytes over the $FIRST_LOAD_TARGET-byte target (docs/PERFORMANCE.md)"
fi
if [ "$check" = 1 ] && [ "$total" -gt "$FIRST_LOAD_BUDGET" ]; then
  echo "first load is $((total - FIRST_LOAD_BUDGET)) bytes over its $FIRST_LOAD_BUDGET-byte budget: it grew (docs/PERFORMANCE.md)" >&2
  exit 1
fi
