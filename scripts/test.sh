#!/usr/bin/env bash
# Sets up everything kvlab needs (scripts/setup.sh, idempotent) and runs every test:
# native unit/integration tests, clippy, the wasm build check, and the browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.tools/bin:$HOME/.cargo/bin:$PATH"

step() { printf '\n==> %s\n' "$*"; }

step "Native tests: engine, CLI, fidelity, invariants, determinism"
cargo test --all-targets

if grep -q '^gpu *=' Cargo.toml; then
  step "Build with the CUDA calibration backend (--features gpu; no GPU needed to build)"
  cargo build --features gpu
fi

step "Clippy"
cargo clippy --all-targets -- -D warnings

step "The library builds for wasm32-unknown-unknown"
cargo check --target wasm32-unknown-unknown --lib

if [ -x scripts/test-web.sh ]; then
  step "Browser: wasm tests in headless Chromium and end-to-end tests of the lab"
  scripts/test-web.sh
fi

step "All tests passed"
