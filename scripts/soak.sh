#!/usr/bin/env bash
# Soak: runs N random accepted presets (default 100,000) from SEED (default 1) in release mode
# (cases of the soak's size, or of CI's with a third argument `ci`),
# each with the invariant checker after every step and the run bounds checked
# (tests/fuzz_presets.rs). Every failure prints its case seed, the whole preset JSON and a
# one-line command that replays exactly it; the failing presets are also saved under
# target/fuzz-failures/. Exits non-zero if any case panicked or broke an invariant or a bound.
#
#   scripts/soak.sh 100000        # 100,000 cases from seed 1
#   scripts/soak.sh 5000 42       # 5,000 cases from seed 42
#   scripts/soak.sh 100000 1 ci   # the small cases CI draws (about 25x faster per case)
set -euo pipefail
cd "$(dirname "$0")/.."
cases="${1:-100000}"
seed="${2:-1}"
budget="${3:-soak}"
case "$cases$seed" in
  *[!0-9]*) echo "usage: scripts/soak.sh N [SEED] [ci]  (N and SEED whole numbers)" >&2; exit 2 ;;
esac
case "$budget" in
  soak|ci) ;;
  *) echo "usage: scripts/soak.sh N [SEED] [ci]  (the third argument is 'ci' or absent)" >&2; exit 2 ;;
esac
echo "soak: $cases cases from seed $seed, $budget-sized (release build)"
KVLAB_FUZZ_CASES="$cases" KVLAB_FUZZ_SEED="$seed" KVLAB_FUZZ_BUDGET="$budget" \
  cargo test --release --test fuzz_presets soak -- --ignored --nocapture
