#!/usr/bin/env bash
# Measures a step-time calibration on CUDA device 0, in one call, and writes NAME.json (after
# each block size, NAME.partial.json) plus logs into an output directory. It replays the
# paged-default preset's 60 s of traffic at block sizes 1..256 against a real device pool; under a
# minute on an H100/H200-class GPU, and cut at 170 s so that it always ends within 3 minutes.
#
# Usage: scripts/calibrate-gpu.sh [NAME] [more `kvlab calibrate` flags...]
#   NAME defaults to cuda-<gpu name>, e.g. cuda-nvidia-h200.
# Environment:
#   KVLAB_BIN=path   a kvlab built with --features gpu (the device machine has no Rust: build it
#                    elsewhere with `cargo build --release --features gpu` and carry it)
#   KVLAB_OUT=dir    where the calibration and the logs go (default assets/calibration)
#   PRESET=file      replay another preset (default assets/presets/paged-default.json)
#   KVLAB_NVRTC=path NVRTC to use (default: what scripts/find-nvrtc.sh finds)
# Files written under KVLAB_OUT: NAME.json (or NAME.partial.json if cut short), calibrate.log
# (everything kvlab printed), gpu-before.txt and gpu-after.txt (nvidia-smi), clocks.csv (SM and
# memory clocks every 500 ms during the run).
set -euo pipefail
cd "$(dirname "$0")/.."

name_args=()
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  name_args=(--name "$1")
  shift
fi
preset="${PRESET:-assets/presets/paged-default.json}"
out="${KVLAB_OUT:-assets/calibration}"
mkdir -p "$out"

bin="${KVLAB_BIN:-}"
if [ -z "$bin" ]; then
  if command -v cargo >/dev/null 2>&1; then
    cargo build --release --features gpu
    bin=target/release/kvlab
  else
    echo "error: no cargo here and KVLAB_BIN is not set; build kvlab with \`cargo build --release --features gpu\` on a machine with Rust, copy target/release/kvlab here and set KVLAB_BIN to it" >&2
    exit 1
  fi
fi
if [ ! -x "$bin" ]; then
  echo "error: KVLAB_BIN=$bin is not an executable file" >&2
  exit 1
fi

clock_pid=""
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi >"$out/gpu-before.txt" 2>&1 || true
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw \
    --format=csv | tee -a "$out/gpu-before.txt"
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu,power.draw --format=csv -lms 500 \
    >"$out/clocks.csv" 2>/dev/null &
  clock_pid=$!
else
  echo "note: nvidia-smi not found; kvlab will say whether a CUDA driver can be loaded" >&2
fi
stop_clocks() {
  if [ -n "$clock_pid" ]; then
    kill "$clock_pid" 2>/dev/null || true
    wait "$clock_pid" 2>/dev/null || true
    nvidia-smi >"$out/gpu-after.txt" 2>&1 || true
    nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee -a "$out/gpu-after.txt"
  fi
}
trap stop_clocks EXIT

# NVRTC: kvlab loads libnvrtc.so (or .so.12, …); CUDA 13 ships libnvrtc.so.13 only, so link it.
if paths=$(scripts/find-nvrtc.sh --link "${TMPDIR:-/tmp}/kvlab-nvrtc"); then
  export LD_LIBRARY_PATH="$paths${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "NVRTC: $(readlink "${TMPDIR:-/tmp}/kvlab-nvrtc/libnvrtc.so")"
else
  echo "error: NVRTC not found (see above); kvlab cannot compile its kernels" >&2
  exit 1
fi

set -o pipefail
timeout 170 "$bin" calibrate --device cuda --preset "$preset" --duration-s 60 \
  --block-sizes 1,8,16,32,64,128,256 --samples 32 --reps 7 --out-dir "$out" "${name_args[@]}" "$@" 2>&1 \
  | tee "$out/calibrate.log"
