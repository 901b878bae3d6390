#!/usr/bin/env bash
# Screenshots of the embedded lab (docs/EMBED.md): the default preset at 30 s in frames of
# 360×640, 600×400 and 800×500, light and dark, with headless Chromium against dist/ (build it
# first: scripts/test-web.sh or `trunk build --release --offline`). Writes
# docs/screenshots/embed-<theme>-<w>x<h>.png, or into the folder given as $1.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/screenshots}"
port="${PORT:-8731}"
[ -f dist/index.html ] || { echo "dist/ is missing: run scripts/test-web.sh first" >&2; exit 1; }
mkdir -p "$out"
(cd dist && exec python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
server=$!
trap 'kill "$server"' EXIT
sleep 1
profile="$(mktemp -d)"
for theme in light dark; do
  for size in 360x640 600x400 800x500; do
    chromium --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
      --user-data-dir="$profile/$theme-$size" --window-size="${size/x/,}" --virtual-time-budget=8000 \
      --screenshot="$out/embed-$theme-$size.png" \
      "http://127.0.0.1:$port/?embed=1&autoplay=0&t=30&theme=$theme" >/dev/null 2>&1
    echo "$out/embed-$theme-$size.png"
  done
done
rm -rf "$profile"
