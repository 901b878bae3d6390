#!/usr/bin/env bash
# The shipped presets whose traffic is fitted from public production traces (docs/TRACES.md):
# each preset's workload is replaced by `kvlab fit` on a window of the trace; the rest of the
# preset (model, GPU, allocator, scheduler) is kept. The traces' first 2,000 rows are enough for
# every window, and the files in ../shared/traces/ are those rows of the public files.
#
#   scripts/trace-presets.sh [OUT_DIR]     # default: rewrite assets/presets/ in place
#
# KVLAB (default target/release/kvlab) and KVLAB_TRACES (default ../shared/traces) override the
# binary and the trace folder; tests/trace_fit.rs runs this into a temporary folder and insists
# the shipped files are what it writes.
set -euo pipefail
cd "$(dirname "$0")/.."
KVLAB=${KVLAB:-target/release/kvlab}
TRACES=${KVLAB_TRACES:-../shared/traces}
OUT=${1:-assets/presets}
mkdir -p "$OUT"

fit() { # fit ID TRACE FLAGS...: refit assets/presets/ID.json's workload from TRACE
    local id=$1 trace=$2
    shift 2
    "$KVLAB" fit "assets/presets/$id.json" --trace "$TRACES/$trace" "$@" >"$OUT/$id.json.tmp"
    mv "$OUT/$id.json.tmp" "$OUT/$id.json"
}

# Azure LLM inference 2023, conversation: one minute from 60 s in, at twice the trace's rate.
fit azure-conversation azure_llm_2023_conv.head2000.csv --trace-window 60: --trace-speed 2 \
    --class-name conversation
# Azure LLM inference 2023, code: the minute from 180 s in, whose bursts are seconds apart, in
# 1 s intervals.
fit azure-code azure_llm_2023_code.head2000.csv --trace-window 180: --bin-s 1 --class-name code
# Mooncake (FAST'25) conversation: the first minute, one request in four (one replica of four).
fit mooncake-conversation mooncake_fast25_conversation.head2000.jsonl --trace-sample 4 \
    --class-name conversation
