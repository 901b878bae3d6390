#!/usr/bin/env python3
"""Turns the vLLM rows of NVIDIA AIConfigurator's silicon measurements into kvlab's validation
runs: assets/validation/aiconfigurator-runs.json (kvlab/published-runs@1).

Source: github.com/ai-dynamo/aiconfigurator at 095f58a51c4ca8e61b66ec108d86f223f8d559ce
(Apache-2.0), aic-core/src/aiconfigurator_core/systems/silicon_sample.csv: measured TTFT and
TPOT of closed loops (a fixed number of clients, `silicon_concurrency`) of random prompts of
fixed input and output lengths (`isl`, `osl`), one row per (model, GPU, precision, parallelism,
lengths, concurrency). Only the dense models the validation corpus asks for are taken:
Qwen3-32B (BF16, vLLM 0.12.0, H100, TP 2/4/8), Llama-3.1-70B (FP8 and FP4),
Llama-3.1-8B-Instruct-FP8 and the MoE Qwen3-235B-A22B-FP8 (H200); the disaggregated rows are left out (one engine serves a kvlab run).

What the source does not say, and what the runs assume instead (the file's notes repeat it):
- the number of requests: 20 x concurrency, AIConfigurator's own benchmark template
  (generator/config/backend_templates/benchmark/bench_run.sh.j2, `--num-requests
  $((concurrency*BENCH_MULTI_ROUND))`, default 20);
- whether TTFT and TPOT are means or medians: compared as means (with fixed lengths and a
  steady closed loop the two differ little);
- vLLM's flags: the token budget AIConfigurator's own launch rule gives an aggregated vLLM
  worker (src/aiconfigurator/generator/rule_plugin/vllm.rule at the same commit:
  `agg max_num_tokens = max_batch_size + isl + 1500`, with the batch at the concurrency), else
  vLLM's defaults for an OpenAI server on a GPU of 70 GiB or more (max_num_seqs 1024, chunked
  prefill and prefix caching on), gpu_memory_utilization 0.9, the model's own maximum length;
- the benchmark client: kvlab's default round trip between a request's end and its client's
  next request reaching the engine (2 ms);
- an FP8 row's KV cache: the model's dtype (vLLM's default, "auto").

FP8 rows replay the catalogue's model with FP8 weights (vLLM's `--quantization fp8`) and its KV
cache in the model's dtype (kv_cache_dtype "auto"), except where the launch is known:

- Llama-3.1-70B in FP8 (the rows measured 2025-10-29, on H100, H200 and B200) are SemiAnalysis'
  InferenceX sweep of that date (github.com/SemiAnalysisAI/InferenceX at
  24ea7def4aeaade77e95e35ae0cab30c5259a9ff, Apache-2.0): the same GPUs, TP lists and 1k/1k,
  1k/8k, 8k/1k lengths, with nvidia/Llama-3.3-70B-Instruct-FP8 (Llama-3.1-70B's shapes) on
  vllm/vllm-openai:v0.10.2 (.github/workflows/70b-tmpl.yml). Its launch scripts
  (benchmarks/70b_fp8_{h100,h200}_slurm.sh, 70b_fp8_b200_docker.sh) set kv-cache-dtype fp8,
  prefix caching off, max-num-batched-tokens 8192, gpu-memory-utilization 0.9, max-num-seqs the
  concurrency (512 on the B200), max-model-len 10240 on the H100, ISL + OSL + 20 (1k/1k) or
  + 200 on the H200, 2,048 (1k/1k) or 9,216 on the B200 (full-sweep-tmpl.yml), and its client
  sends 10 x concurrency prompts (benchmark_serving.py `--num-prompts $(( CONC * 10 ))`) with
  `--random-range-ratio 0.8`: lengths drawn between 0.8 and 1 times the nominal ones (the
  range benchmark_serving.py drew before vLLM 0.9; the symmetric one of later versions would send
  8k prompts longer than the max-model-len of 8,192 + 1,024 these launches set), which the replay
  draws from a log-normal of the same mean and 99th percentile (`random_range_ratio`).
  The scripts also turn on vLLM's async scheduling, which kvlab does not model. Rows kvlab cannot replay yet are kept with
the reason (`not_replayed`): FP4 weights (NVFP4, MXFP4 dense GEMMs). Runs on a GPU whose clock
has no measured constants of its own (the H200) are judged on the constants it borrows.

Runs offline: `scripts/validation-aiconfigurator.py SILICON_SAMPLE.csv > assets/validation/aiconfigurator-runs.json`
(the CSV from a checkout of the repository at that commit). Not part of the test run.
"""
import csv
import json
import sys

REPO = "ai-dynamo/aiconfigurator"
COMMIT = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"
PATH = "aic-core/src/aiconfigurator_core/systems/silicon_sample.csv"
GPUS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200"}
# Catalogue ids and maximum lengths (config.json's max_position_embeddings) of the models taken.
MODELS = {
    "Qwen/Qwen3-32B": ("Qwen/Qwen3-32B", 40960),
    "meta-llama/Llama-3.1-70B": ("meta-llama/Llama-3.1-70B-Instruct", 131072),
    "nvidia/Llama-3.1-8B-Instruct-FP8": ("meta-llama/Llama-3.1-8B-Instruct", 131072),
    "Qwen/Qwen3-235B-A22B-FP8": ("Qwen/Qwen3-235B-A22B", 40960),
}
# The mixture-of-experts models taken: their MoE layers' parallelism must be the attention's.
MOE = {"Qwen/Qwen3-235B-A22B-FP8"}
# A GPU whose clock has no measured constants of its own (the H200) is judged on the sibling's
# it borrows (engine/clock/constants.rs `clock_for`: the H100's): its runs say how well that extrapolates.
ASSUMED = (
    "Assumed (the source does not say): 20 x concurrency requests (AIConfigurator's benchmark "
    "template), TTFT and TPOT compared as means, vLLM's default flags for a 70+ GiB GPU "
    "(max_num_seqs 1024, chunked prefill and prefix caching on) with AIConfigurator's launch rule's token "
    "budget (max_num_batched_tokens = concurrency + input length + 1500, generator/rule_plugin/vllm.rule), "
    "gpu_memory_utilization 0.9; an FP8 row's KV cache in the model's dtype (kv_cache_dtype auto); "
    "except Llama-3.1-70B's FP8 rows of 2025-10-29, replayed with the launch of SemiAnalysis InferenceX's sweep of that date "
    "(github.com/SemiAnalysisAI/InferenceX@24ea7def4aea: vLLM 0.10.2, FP8 KV cache, prefix caching off, 8,192 batched tokens, "
    "max_num_seqs the concurrency (512 on B200), 10 x concurrency prompts); "
    "the benchmark client's round trip kvlab's default (2 ms from a request's end to the next reaching the engine)."
)


# The runs the kernel clock's host costs (vLLM v1: a fixed cost a step, a cost a sequence) are
# fitted on, beside the vLLM blog's batch-1 decodes ("fit_host": the roofline holds them out):
# one sweep of concurrencies (4 to 64 clients) of the same launch on the H100 and the H200,
# Llama-3.1-70B in FP8 at TP 4 with 1,024 tokens in and out. Every other row (the other lengths,
# TP 1, 2 and 8, Qwen3-32B, Qwen3-235B, Llama-3.1-8B, the B200's) is held out. Not the B200's
# sweep: there the kernels price prefill fast and decode slow at TP 2 to 8 (TTFT -28%, TPOT +9
# to +14% on the prior), which host costs cannot both mend; fitted on it they traded one for the
# other and predicted the B200's held-out runs worse (20.3% -> 22.5%, docs/FIDELITY.md).
def role_of(model, precision, gpu, tp, isl, osl):
    fit = model == "meta-llama/Llama-3.1-70B-Instruct" and precision == "fp8" and tp == 4 and (isl, osl) == (1024, 1024)
    return "fit_host" if fit and gpu in ("h100-sxm", "h200") else "holdout"


def inferencex_launch(row, gpu, clients, isl, osl, precision):
    """The replay flags of a row from SemiAnalysis' InferenceX sweep of 2025-10-29 (the module
    doc), or None for any other row."""
    measured = dict(p.strip().partition("=")[::2] for p in row["silicon_data_source"].split(";")).get("measured", "")
    if row["model_path"] != "meta-llama/Llama-3.1-70B" or precision != "fp8" or not measured.startswith("2025-10-29"):
        return None
    if clients is None or gpu not in ("h100-sxm", "h200", "b200"):
        return None
    if gpu == "h100-sxm":
        max_len = 10240
    elif gpu == "h200":
        max_len = isl + osl + (20 if (isl, osl) == (1024, 1024) else 200)
    else:
        max_len = 2048 if (isl, osl) == (1024, 1024) else 9216
    return {
        "max_num_seqs": 512 if gpu == "b200" else clients,
        "max_num_batched_tokens": 8192,
        "max_model_len": max_len,
        "prefix_caching": False,
        "kv_dtype": "fp8",
    }


def concurrency(row):
    for part in row["silicon_data_source"].split(";"):
        key, _, value = part.strip().partition("=")
        if key == "silicon_concurrency":
            return int(value)
    return None


def main():
    rows = list(csv.DictReader(open(sys.argv[1], newline="")))
    runs = []
    for line, row in enumerate(rows, start=2):
        if row["backend"] != "vllm" or row["model_path"] not in MODELS or row["mode"] != "agg":
            continue
        model, max_len = MODELS[row["model_path"]]
        gpu = GPUS.get(row["system"])
        clients = concurrency(row)
        tp = int(row["tp_size"])
        isl, osl = int(row["isl"]), int(row["osl"])
        precision = row["precision"] or "bf16"
        run_id = f"aic-{model.split('/')[1].lower()}-{precision}-{row['system'].split('_')[0]}-tp{tp}-{isl}in-{osl}out-c{clients}"
        run = {
            "id": run_id,
            "source": {
                "url": f"https://github.com/{REPO}/blob/{COMMIT}/{PATH}#L{line}",
                "repo": REPO,
                "path": PATH,
                "commit": COMMIT,
                "line": line,
                "title": f"AIConfigurator silicon measurement {row['id']}",
            },
            "vllm_version": row["backend_version"] or None,
            "gpu": gpu or row["system"],
            "model": row["model_path"],
            "tensor_parallel_size": tp,
            "workload": {
                "kind": "concurrency",
                "max_concurrency": clients,
                "num_prompts": 20 * clients if clients else None,
                "input_len": isl,
                "output_len": osl,
                "dataset": "random, fixed lengths",
            },
            "results": {"ttft_ms_mean": round(float(row["silicon_ttft_ms"]), 3), "tpot_ms_mean": round(float(row["silicon_tpot_ms"]), 4)},
            "notes": f"Precision {precision}; vLLM {row['backend_version'] or 'version not given'}; the assumptions in this file's notes.",
        }
        reason = None
        if precision not in ("bf16", "fp8"):
            reason = f"{precision.upper()} weights ({row['gemm_quant_mode'] or precision}): a quantization kvlab does not price yet"
        elif gpu is None:
            reason = f"{row['system']}: not in the GPU catalogue"
        elif row["model_path"] in MOE and int(row["moe_ep_size"] or 1) > 1:
            reason = f"expert parallelism ({row['moe_ep_size']} GPUs): kvlab splits a MoE's experts by tensor parallelism only"
        elif row["model_path"] in MOE and int(row["moe_tp_size"] or 0) != tp:
            reason = f"the MoE layers' tensor parallelism ({row['moe_tp_size']}) differs from the attention's ({tp}): one engine runs one"
        elif clients is None:
            reason = "the concurrency is not given"
        inferencex = inferencex_launch(row, gpu, clients, isl, osl, precision)
        if inferencex:
            run["vllm_version"] = "0.10.2"
            run["workload"]["num_prompts"] = 10 * clients
            run["workload"]["dataset"] = "random, --random-range-ratio 0.8"
            run["workload"]["random_range_ratio"] = 0.8
            run["notes"] = (
                f"Precision {precision}; SemiAnalysis InferenceX's vLLM 0.10.2 launch of "
                "nvidia/Llama-3.3-70B-Instruct-FP8 (the recipe in this file's notes and scripts/validation-aiconfigurator.py)."
            )
        if reason:
            run["not_replayed"] = reason
        else:
            run["replay"] = {
                "role": role_of(model, precision, gpu, tp, isl, osl),
                "gpu": gpu,
                "model": model,
                "tensor_parallel_size": tp,
                "max_num_seqs": 1024,
                # AIConfigurator's launch rule for an aggregated vLLM worker
                # (generator/rule_plugin/vllm.rule): max_batch_size + isl + 1500.
                "max_num_batched_tokens": clients + int(row["isl"]) + 1500,
                "max_model_len": max_len,
                "gpu_memory_utilization": 0.9,
                "prefix_caching": True,
                "chunked_prefill": True,
            }
            if precision == "fp8":
                # An FP8 checkpoint of the model (vLLM's `--quantization fp8` widths); the KV
                # cache stays in the model's dtype (vLLM's kv_cache_dtype "auto").
                run["replay"]["quantization"] = "fp8"
                if row["model_path"].startswith("Qwen/") and row["model_path"].endswith("-FP8"):
                    # Qwen's own FP8 checkpoints scale each 128 x 128 block of weights
                    # (huggingface.co/Qwen/Qwen3-235B-A22B-FP8: "fine-grained fp8 quantization
                    # with block size of 128"; config.json's weight_block_size [128, 128]).
                    run["replay"]["weight_block_size"] = [128, 128]
            if inferencex:
                run["replay"].update(inferencex)
        runs.append(run)
    runs.sort(key=lambda r: r["id"])
    seen = set()
    for r in runs:
        base, n = r["id"], 2
        while r["id"] in seen:
            r["id"] = f"{base}-{n}"
            n += 1
        seen.add(r["id"])
    doc = {
        "schema": "kvlab/published-runs@1",
        "notes": f"Generated by scripts/validation-aiconfigurator.py from {REPO}@{COMMIT[:12]} {PATH} (Apache-2.0; only the figures kvlab compares, with each row's line). {ASSUMED}",
        "runs": runs,
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
