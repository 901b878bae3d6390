#!/usr/bin/env bash
# The browsers a test run leaves behind. `scripts/browsers-left.sh snapshot FILE` writes the pids
# of every Chromium and ChromeDriver process alive now; `scripts/browsers-left.sh check FILE`
# lists those alive now that FILE does not name (started since the snapshot) and exits 1 when
# there is any. scripts/test.sh takes the snapshot first and checks last.
set -euo pipefail

browsers() {
  for d in /proc/[0-9]*; do
    [ "${d#/proc/}" = "$$" ] && continue
    cmd=$(tr "\\0" " " 2>/dev/null <"$d/cmdline") || continue
    case "$cmd" in
      *chromedriver* | *chromium* | *chrome_crashpad* | *headless_shell*) echo "${d#/proc/} $cmd" ;;
    esac
  done
}

case "${1:-}" in
  snapshot) browsers | cut -d' ' -f1 >"$2" ;;
  check)
    left=$(browsers | while read -r pid cmd; do grep -qx "$pid" "$2" || echo "$pid ${cmd:0:160}"; done)
    if [ -n "$left" ]; then
      echo "the run left $(echo "$left" | wc -l) browser processes alive:" >&2
      echo "$left" >&2
      exit 1
    fi
    echo "no browser process of this run is left"
    ;;
  *) echo "usage: $0 snapshot FILE | check FILE" >&2; exit 2 ;;
esac
