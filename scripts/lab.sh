#!/usr/bin/env bash
# Opens the lab locally: installs the tools if needed (scripts/setup.sh, idempotent), then
# serves the release build with trunk on http://127.0.0.1:8080/ (PORT=… to change it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.tools/bin:$PWD/.tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"
port="${PORT:-8080}"
cat <<MSG

kvlab will be at   http://127.0.0.1:$port/
embed mode         http://127.0.0.1:$port/?embed=1&preset=paged-default
(the first build takes a few minutes; Ctrl+C stops the server)

MSG
exec trunk serve --release --offline --address 127.0.0.1 --port "$port"
