#!/usr/bin/env bash
# Trunk's post-build hook (Trunk.toml), in two steps.
# 1. The page's second module: trunk builds www/index.html's module (the first view, without the
#    `panels` feature); this puts the full lab beside it: kvlab-full.js and kvlab-full_bg.wasm,
#    the same crate built with `panels`, through the same wasm-bindgen and, for release builds,
#    the same wasm-opt passes as trunk's. www/boot.js loads it when the page asks for what the
#    first view leaves out (docs/LAB.md, "Two modules"); the long-run worker (www/worker.js) runs
#    it too.
# 2. The kernel tables (assets/kernels/<gpu>.json) into kernels/: the full module fetches the
#    one a run on measured kernels needs (src/web/kernel_clock.rs); no first view asks for them.
# 3. Release builds only: terser (scripts/setup.sh installs it) minifies the scripts the page
#    runs, both wasm-bindgen modules' and www's boot.js and early.js: their doc comments and
#    names are 5.9 KB of the first load gzipped (docs/PERFORMANCE.md, "The first load").
#    Trunk's own minifier cannot parse wasm-bindgen's `export { … as default }`. Debug builds keep
#    the scripts as written; the worker's and the embed example's (read by authors) are copied
#    as they are.
#
# Trunk sets TRUNK_STAGING_DIR (where the files go) and TRUNK_PROFILE (debug or release).
# KVLAB_WEB_FEATURES adds features to this module's build, as `trunk build --features` adds them
# to the first one's (scripts/test-web.sh and scripts/bench-web.sh: test-hooks).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${TRUNK_STAGING_DIR:?run by trunk (Trunk.toml hooks), or set TRUNK_STAGING_DIR}"
features="panels${KVLAB_WEB_FEATURES:+,$KVLAB_WEB_FEATURES}"
if [ "${TRUNK_PROFILE:-debug}" = "release" ]; then
  profile=wasm-release
else
  profile=dev
fi
dir=$([ "$profile" = dev ] && echo debug || echo "$profile")
# Step 1.
cargo build --lib --target wasm32-unknown-unknown --no-default-features --features "$features" \
  --profile "$profile" --target-dir target/full-module
wasm-bindgen --target web --no-typescript --out-dir "$out" --out-name kvlab-full \
  "target/full-module/wasm32-unknown-unknown/$dir/kvlab.wasm"
# Step 2.
mkdir -p "$out/kernels"
cp assets/kernels/*.json "$out/kernels/"
if [ "$profile" = wasm-release ]; then
  # www/index.html's data-wasm-opt="z" data-wasm-opt-params="--converge", as trunk runs it.
  wasm-opt -Oz --converge --output "$out/kvlab-full_bg.wasm.opt" "$out/kvlab-full_bg.wasm"
  mv "$out/kvlab-full_bg.wasm.opt" "$out/kvlab-full_bg.wasm"
  # Step 3. ES modules (the two wasm-bindgen modules, boot.js) and a classic script (early.js,
  # whose top-level names stay as they are).
  for f in kvlab.js kvlab-full.js boot.js early.js; do
    module=$([ "$f" = early.js ] && echo "" || echo --module)
    terser "$out/$f" $module --compress --mangle --output "$out/$f.min"
    mv "$out/$f.min" "$out/$f"
  done
fi
