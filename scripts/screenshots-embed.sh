#!/usr/bin/env bash
# Screenshots of the embedded lab (docs/EMBED.md): the default preset at 30 s in frames of
# 360×640, 600×400 and 800×500, light and dark. They come from the end-to-end test that checks
# the embed fits those frames (tests/e2e_embed.rs, headless Chromium through chromedriver, the
# viewport set exactly), copied to docs/screenshots/embed-<theme>-<w>x<h>.png or into the folder
# given as $1. (`chromium --screenshot` is not used: it may resize the view just before the
# capture without letting the page lay itself out again, which shows a map fitted to another
# size.) Also a mission mid-run on a phone (390×844, tests/e2e_access.rs) as
# mission-phone-390x844.png, and mission 2 (the longest goals) in each frame as
# embed-mission-<w>x<h>.png. Needs dist/ (scripts/test-web.sh builds it) and the tools of scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.tools/bin:$HOME/.cargo/bin:$PATH"
out="${1:-docs/screenshots}"
[ -f dist/index.html ] || { echo "dist/ is missing: run scripts/test-web.sh first" >&2; exit 1; }
CHROMEDRIVER="$(command -v chromedriver)" cargo test --test e2e_embed the_embed_fits_every_frame_without_scrolling
CHROMEDRIVER="$(command -v chromedriver)" cargo test --test e2e_access on_a_phone
mkdir -p "$out"
for theme in light dark; do
  for size in 360x640 600x400 800x500; do
    cp "target/screenshots/e2e-embed-$theme-$size.png" "$out/embed-$theme-$size.png"
    echo "$out/embed-$theme-$size.png"
  done
done
for size in 360x640 600x400 800x500; do
  cp "target/screenshots/e2e-embed-m2-block-size-$size.png" "$out/embed-mission-$size.png"
  echo "$out/embed-mission-$size.png"
done
cp target/screenshots/mission-phone-390x844.png "$out/mission-phone-390x844.png"
echo "$out/mission-phone-390x844.png"
