#!/usr/bin/env bash
# Installs everything kvlab needs on a fresh Debian machine of this kind, idempotently:
# the wasm32 target, Chromium + ChromeDriver, wasm-bindgen-cli, wasm-opt (binaryen), terser, trunk, and
# NVRTC from PyPI (compiles the CUDA calibration kernels in a test; no GPU needed).
# Usage: scripts/setup.sh [--browser-only|--no-trunk]
# Each step prints what it does and is skipped when the tool is already there at the right version.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="$PWD/.tools"
mkdir -p "$TOOLS/bin"
export PATH="$TOOLS/bin:$TOOLS/node_modules/.bin:$HOME/.cargo/bin:$PATH"

WASM_BINDGEN_VERSION=0.2.130
TRUNK_VERSION=0.21.14
BINARYEN_VERSION=132
TERSER_VERSION=5.51.4
NVRTC_VERSION=13.0.88
want_trunk=1
[ "${1:-}" = "--no-trunk" ] && want_trunk=0

step() { printf '\n==> %s\n' "$*"; }

step "Rust target wasm32-unknown-unknown"
if rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  echo "already installed"
else
  rustup target add wasm32-unknown-unknown
fi

step "Chromium and ChromeDriver (Debian packages)"
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  echo "already installed: $(chromium --version 2>/dev/null | head -1)"
else
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium chromium-driver
fi

step "wasm-bindgen-cli $WASM_BINDGEN_VERSION (~4 min the first time)"
if [ -x "$TOOLS/bin/wasm-bindgen" ] && "$TOOLS/bin/wasm-bindgen" --version | grep -q "$WASM_BINDGEN_VERSION"; then
  echo "already installed"
else
  cargo install --root "$TOOLS" wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
fi

# An npm package's command into $TOOLS/bin, unless that version is there already.
npm_tool() {
  local package=$1 version=$2 command=$3
  if [ -x "$TOOLS/node_modules/.bin/$command" ] &&
    grep -q "\"version\": \"$version" "$TOOLS/node_modules/$package/package.json"; then
    echo "already installed"
  else
    npm install --silent --no-audit --no-fund --prefix "$TOOLS" "$package@$version"
  fi
  ln -sf "$TOOLS/node_modules/.bin/$command" "$TOOLS/bin/$command"
}

step "wasm-opt (binaryen $BINARYEN_VERSION from npm)"
npm_tool binaryen "$BINARYEN_VERSION" wasm-opt

step "terser $TERSER_VERSION from npm (minifies the page's scripts in release builds: scripts/post-build.sh)"
npm_tool terser "$TERSER_VERSION" terser

if [ "$want_trunk" = 1 ]; then
  step "trunk $TRUNK_VERSION (~10 min the first time)"
  if [ -x "$TOOLS/bin/trunk" ] && "$TOOLS/bin/trunk" --version | grep -q "$TRUNK_VERSION"; then
    echo "already installed"
  else
    CARGO_PROFILE_RELEASE_LTO=false cargo install --locked --root "$TOOLS" trunk --version "$TRUNK_VERSION"
  fi
fi

step "NVRTC $NVRTC_VERSION (the nvidia-cuda-nvrtc wheel, for tests/gpu_kernels.rs)"
if [ -f "$TOOLS/nvrtc/nvidia/cu13/lib/libnvrtc.so.13" ] && [ -d "$TOOLS/nvrtc/nvidia_cuda_nvrtc-$NVRTC_VERSION.dist-info" ]; then
  echo "already installed"
else
  rm -rf "$TOOLS/nvrtc"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$TOOLS/nvrtc" \
    "nvidia-cuda-nvrtc==$NVRTC_VERSION"
fi

step "Toolchain ready (tools in $TOOLS/bin)"
