#!/usr/bin/env bash
# Sets up everything kvlab needs (scripts/setup.sh, idempotent) and runs every test: the browser
# tests (release bundle, wasm tests in headless Chromium, end-to-end tests of the lab), then the
# native tests, clippy on both targets, and the CUDA backend build.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.tools/bin:$PWD/.tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"

step() { printf '\n==> %s\n' "$*"; }
# Every Chromium and ChromeDriver alive before the run; the last step checks none was added.
browsers_before="$(mktemp)"
scripts/browsers-left.sh snapshot "$browsers_before"

# Builds dist/ first: the native end-to-end tests (tests/e2e_*.rs) drive the built page.
step "Browser: bundle, wasm tests in headless Chromium, end-to-end tests of the lab"
scripts/test-web.sh

step "Native tests: engine, CLI, fidelity, invariants, determinism, missions, calibration, layering"
# Every test runs once: the browser ones (tests/web_*.rs, tests/e2e_*.rs) ran in test-web.sh above.
native_tests=()
for f in tests/*.rs; do
  name="$(basename "$f" .rs)"
  case "$name" in e2e_* | web_*) ;; *) native_tests+=(--test "$name") ;; esac
done
cargo test --lib --bins --benches "${native_tests[@]}"

step "CUDA calibration backend: build with --features gpu; its kernels compile with NVRTC for sm_80 and sm_90 without spills (no GPU needed)"
cargo build --features gpu
nvrtc_path=$(scripts/find-nvrtc.sh --link "$PWD/target/nvrtc-link")
LD_LIBRARY_PATH="$nvrtc_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" cargo test --features gpu --lib --test gpu_kernels

step "Formatting (rustfmt.toml)"
cargo fmt --check

step "Clippy (native and wasm32)"
cargo clippy --all-targets -- -D warnings
cargo clippy --all-targets --features gpu -- -D warnings
cargo clippy --target wasm32-unknown-unknown --no-default-features --lib -- -D warnings
cargo clippy --target wasm32-unknown-unknown --no-default-features --features panels --lib -- -D warnings

step "No browser left behind (scripts/browsers-left.sh)"
scripts/browsers-left.sh check "$browsers_before"

step "All tests passed"
