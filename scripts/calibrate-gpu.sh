#!/usr/bin/env bash
# Measures a step-time calibration on CUDA device 0 and writes assets/calibration/NAME.json.
# Builds kvlab with `--features gpu` (the CUDA driver and NVRTC are loaded at run time, so the
# build itself needs no CUDA), then replays the paged-default preset's 60 s of traffic at block
# sizes 1..256 against a real device pool. A minute or two on an H100/H200-class GPU; the run is
# cut at 280 s so that it always finishes within 5 minutes.
#
# Usage: scripts/calibrate-gpu.sh [NAME] [more `kvlab calibrate` flags...]
#   NAME defaults to cuda-<gpu name>, e.g. cuda-nvidia-h200.
# Environment:
#   KVLAB_BIN=path   use an already built binary (built with --features gpu) instead of cargo
#   PRESET=file      replay another preset (default assets/presets/paged-default.json)
set -euo pipefail
cd "$(dirname "$0")/.."

name_args=()
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  name_args=(--name "$1")
  shift
fi
preset="${PRESET:-assets/presets/paged-default.json}"

if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
else
  echo "note: nvidia-smi not found; kvlab will say whether a CUDA driver can be loaded" >&2
fi

# NVRTC (libnvrtc.so) compiles the gather kernels; add its directory when the loader cannot see it.
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so'; then
  for dir in /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 /usr/lib/x86_64-linux-gnu \
             $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null | tr ' ' '\n' | sed 's|$|/nvidia/cuda_nvrtc/lib|'); do
    if compgen -G "$dir/libnvrtc.so*" >/dev/null 2>&1; then
      export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      echo "using NVRTC from $dir"
      break
    fi
  done
fi

bin="${KVLAB_BIN:-}"
if [ -z "$bin" ]; then
  cargo build --release --features gpu
  bin=target/release/kvlab
fi

mkdir -p assets/calibration
timeout 280 "$bin" calibrate --device cuda --preset "$preset" --duration-s 60 \
  --block-sizes 1,8,16,32,64,128,256 --samples 32 --reps 7 "${name_args[@]}" "$@"
