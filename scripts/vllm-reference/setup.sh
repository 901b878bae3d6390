#!/usr/bin/env bash
# Creates the virtualenv that runs vLLM's own scheduler (scripts/vllm-reference/harness.py), idempotently.
# Usage: scripts/vllm-reference/setup.sh      (prints the venv's python on its last line)
# The venv lives in .tools/vllm-venv (gitignored). The first run downloads vLLM 0.33.0 and torch from
# PyPI (~200 s, ~9.4 GB); later runs find it installed and return in about a second.
set -euo pipefail
cd "$(dirname "$0")/../.."
VLLM_VERSION=0.33.0
VENV="${VLLM_VENV:-$PWD/.tools/vllm-venv}"

installed_version() {
  [ -x "$VENV/bin/python" ] || return 0
  "$VENV/bin/python" - <<'PY' 2>/dev/null || true
import importlib.metadata as m
try:
    print(m.version("vllm"))
except m.PackageNotFoundError:
    pass
PY
}

if [ "$(installed_version)" = "$VLLM_VERSION" ]; then
  echo "vllm $VLLM_VERSION already installed in $VENV" >&2
else
  echo "==> creating $VENV and installing vllm==$VLLM_VERSION from PyPI (~200 s, ~9.4 GB)" >&2
  mkdir -p "$(dirname "$VENV")"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "vllm==$VLLM_VERSION" >&2
  [ "$(installed_version)" = "$VLLM_VERSION" ] || { echo "vllm $VLLM_VERSION did not install" >&2; exit 1; }
fi
echo "$VENV/bin/python"
