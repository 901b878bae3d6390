#!/usr/bin/env bash
# Regenerates the vLLM goldens: installs vLLM 0.33.0 if needed, rewrites the traces, then runs vLLM's
# own scheduler (scripts/vllm-reference/harness.py) on each scenario and writes <name>.json here.
# Usage: tests/golden/vllm/regen.sh [NAME...]     (no names: all of them)
# Timings on a 2-core machine: setup ~10 min the first time (9.4 GB), 0.3 s after; each run below
# ~30-40 s, almost all of it importing vllm and torch.
set -euo pipefail
cd "$(dirname "$0")/../../.."
PY="$(scripts/vllm-reference/setup.sh)"
G=tests/golden/vllm
T=$G/traces
python3 $G/gen_traces.py $T
export PYTHONHASHSEED=0

# name | trace | harness flags (block size 16, Llama-3-8B shape throughout)
SCENARIOS=(
  "decode_heavy|decode_heavy|--num-blocks 1500 --block-size 16 --max-num-seqs 32 --max-num-batched-tokens 8192 --max-model-len 8192"
  "long_prompts_chunked512|long_prompts|--num-blocks 1200 --block-size 16 --max-num-seqs 16 --max-num-batched-tokens 512 --chunked-prefill --max-model-len 8192"
  "long_prompts_chunked2048|long_prompts|--num-blocks 1200 --block-size 16 --max-num-seqs 16 --max-num-batched-tokens 2048 --chunked-prefill --max-model-len 8192"
  "preemption_storm|preemption_storm|--num-blocks 384 --block-size 16 --max-num-seqs 64 --max-num-batched-tokens 2048 --max-model-len 2048"
  "shared_prefix|shared_prefix|--num-blocks 1024 --block-size 16 --max-num-seqs 32 --max-num-batched-tokens 2048 --chunked-prefill --prefix-caching --max-model-len 8192"
  "burst_mixed|burst_mixed|--num-blocks 800 --block-size 16 --max-num-seqs 48 --max-num-batched-tokens 1024 --chunked-prefill --prefix-caching --max-model-len 8192"
  "n4_sampling|n4_sampling|--num-blocks 600 --block-size 16 --max-num-seqs 64 --max-num-batched-tokens 2048 --chunked-prefill --prefix-caching --max-model-len 8192"
  "held_out_mix|held_out_mix|--num-blocks 400 --block-size 16 --max-num-seqs 32 --max-num-batched-tokens 512 --chunked-prefill --prefix-caching --max-model-len 2048"
  "sliding_window|sliding_window|--num-blocks 1200 --block-size 16 --max-num-seqs 32 --max-num-batched-tokens 1024 --chunked-prefill --max-model-len 4096 --sliding-window 256"
  "sliding_held_out|sliding_held_out|--num-blocks 600 --block-size 16 --max-num-seqs 24 --max-num-batched-tokens 768 --chunked-prefill --max-model-len 3072 --sliding-window 128"
)

for entry in "${SCENARIOS[@]}"; do
  IFS='|' read -r name trace flags <<<"$entry"
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
  # shellcheck disable=SC2086
  "$PY" scripts/vllm-reference/harness.py "$T/$trace.csv" $flags --json >"$G/$name.json.tmp" \
    2> >(grep -v -E '^W[0-9]{4} |FlashInfer kernels are disabled|vllm\._C' >&2)
  mv "$G/$name.json.tmp" "$G/$name.json"
done
