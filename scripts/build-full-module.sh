#!/usr/bin/env bash
# The page's second module: trunk builds www/index.html's module (the first view, without the
# `panels` feature) and runs this as its post-build hook (Trunk.toml) to put the full lab beside
# it: kvlab-full.js and kvlab-full_bg.wasm, the same crate built with `panels`, through the same
# wasm-bindgen and, for release builds, the same wasm-opt passes as trunk's. www/boot.js loads it
# when the page asks for what the first view leaves out (docs/LAB.md, "Two modules"); the
# long-run worker (www/worker.js) runs it too.
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
cargo build --lib --target wasm32-unknown-unknown --no-default-features --features "$features" \
  --profile "$profile" --target-dir target/full-module
wasm-bindgen --target web --no-typescript --out-dir "$out" --out-name kvlab-full \
  "target/full-module/wasm32-unknown-unknown/$dir/kvlab.wasm"
if [ "$profile" = wasm-release ]; then
  # www/index.html's data-wasm-opt="z" data-wasm-opt-params="--converge", as trunk runs it.
  wasm-opt -Oz --converge --output "$out/kvlab-full_bg.wasm.opt" "$out/kvlab-full_bg.wasm"
  mv "$out/kvlab-full_bg.wasm.opt" "$out/kvlab-full_bg.wasm"
fi
