#!/usr/bin/env bash
# Finds NVRTC (libnvrtc.so*), which compiles kvlab's calibration kernels, where machines ship it,
# and prints its path. kvlab loads NVRTC by the names libnvrtc.so, libnvrtc.so.12, .11, … only,
# while CUDA 13 installs libnvrtc.so.13 alone; so with --link DIR the script also links the
# library as DIR/libnvrtc.so and prints the LD_LIBRARY_PATH entries to add instead
# ("DIR:<the library's own directory>", which also holds libnvrtc-builtins).
#
# Search order (the first hit wins):
#   1. $KVLAB_NVRTC: a library file, or a directory holding one;
#   2. CUDA toolkits: $CUDA_HOME, /usr/local/cuda, /usr/local/cuda-* (newest first), each in lib64
#      and targets/*/lib;
#   3. Python wheels (nvidia-cuda-nvrtc: nvidia/cu13/lib; nvidia-cuda-nvrtc-cu12:
#      nvidia/cuda_nvrtc/lib) in the site-packages of python3 on PATH, /opt/*/.venv,
#      /opt/*/lib/python3*, /usr/local/lib/python3*, /usr/lib/python3*;
#   4. this checkout's .tools/nvrtc (scripts/setup.sh installs the wheel there for the tests);
#   5. the loader's cache (ldconfig -p) and /usr/lib/x86_64-linux-gnu.
# Within a directory the highest version wins (libnvrtc.so.13 over .so.12, a real file over the
# unversioned link); libnvrtc-builtins and libnvrtc.alt are never picked.
#
# Usage: scripts/find-nvrtc.sh [--link DIR]
# KVLAB_NVRTC_ROOT=/prefix puts every fixed path under /prefix and skips python3 and ldconfig
# (tests/nvrtc_discovery.rs builds fake layouts that way). Exit status 1 when nothing is found.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
root="${KVLAB_NVRTC_ROOT:-}"
link=""
if [ "${1:-}" = "--link" ]; then
  link="${2:?--link needs a directory}"
elif [ $# -gt 0 ]; then
  echo "usage: $0 [--link DIR]" >&2
  exit 2
fi

# The best NVRTC library in directory $1, if any.
best_in() {
  local dir="$1" f best=""
  [ -d "$dir" ] || return 1
  best=$(for f in "$dir"/libnvrtc.so "$dir"/libnvrtc.so.[0-9]*; do
    [ -e "$f" ] && basename "$f"
  done | sort -V | tail -n 1)
  [ -n "$best" ] || return 1
  echo "$dir/$best"
}

candidates() {
  local d
  if [ -n "${KVLAB_NVRTC:-}" ]; then
    echo "$KVLAB_NVRTC"
    return
  fi
  for d in ${CUDA_HOME:+"$root$CUDA_HOME"} "$root/usr/local/cuda" \
           $(ls -d "$root"/usr/local/cuda-* 2>/dev/null | sort -rV); do
    echo "$d/lib64"
    ls -d "$d"/targets/*/lib 2>/dev/null || true
  done
  local sites=()
  if [ -z "$root" ] && command -v python3 >/dev/null 2>&1; then
    mapfile -t sites < <(python3 -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null || true)
  fi
  for d in "${sites[@]}" "$root"/opt/*/.venv/lib/python3*/site-packages "$root"/opt/*/lib/python3*/site-packages \
           "$root"/usr/local/lib/python3*/dist-packages "$root"/usr/local/lib/python3*/site-packages \
           "$root"/usr/lib/python3*/dist-packages "$root"/usr/lib/python3/dist-packages; do
    [ -d "$d/nvidia" ] || continue
    ls -d "$d"/nvidia/cu1[0-9]*/lib "$d"/nvidia/cuda_nvrtc/lib 2>/dev/null | sort -rV || true
  done
  [ -n "$root" ] || echo "$here/.tools/nvrtc/nvidia/cu13/lib"
  if [ -z "$root" ] && command -v ldconfig >/dev/null 2>&1; then
    ldconfig -p 2>/dev/null | sed -n 's/^[[:space:]]*libnvrtc\.so[.0-9]* (.*) => //p' | xargs -r -n1 dirname | sort -u
  fi
  echo "$root/usr/lib/x86_64-linux-gnu"
}

found=""
while IFS= read -r c; do
  [ -n "$c" ] || continue
  if [ -f "$c" ]; then
    found="$c"
  else
    found=$(best_in "$c" || true)
  fi
  [ -n "$found" ] && break
  if [ -n "${KVLAB_NVRTC:-}" ]; then
    echo "KVLAB_NVRTC=$KVLAB_NVRTC is neither an NVRTC library nor a directory holding libnvrtc.so*" >&2
    exit 1
  fi
done < <(candidates)

if [ -z "$found" ]; then
  echo "NVRTC (libnvrtc.so*) not found in KVLAB_NVRTC, CUDA_HOME, /usr/local/cuda*, Python nvidia-cuda-nvrtc wheels, .tools/nvrtc or the loader cache; install it (pip install nvidia-cuda-nvrtc) or set KVLAB_NVRTC to the library" >&2
  exit 1
fi
if [ -z "$link" ]; then
  echo "$found"
else
  mkdir -p "$link"
  ln -sfn "$found" "$link/libnvrtc.so"
  echo "$link:$(dirname "$found")"
fi
