#!/usr/bin/env python3
"""Steps vLLM 0.33.0's own v1 scheduler over a step-indexed trace and prints per-step figures as JSON.

Usage (run with the venv that scripts/vllm-reference/setup.sh creates):
  .tools/vllm-venv/bin/python scripts/vllm-reference/harness.py TRACE.csv --num-blocks N \
      --block-size B --max-num-seqs S --max-num-batched-tokens T [--chunked-prefill] \
      [--prefix-caching] [--watermark W] [--max-model-len L] --json

Every scheduling and allocation decision is made by the wheel's unmodified code: the scheduler is
`vllm.v1.core.sched.scheduler.Scheduler`, built the way `EngineCore.__init__` builds it, with its KV
cache config planned by vLLM's own functions in the order `EngineCore._initialize_kv_caches` calls
them. The only stand-in is the model runner, which returns one token for each scheduled request whose
chunk reaches the end of its known tokens (the GPU model runner's `discard_request_mask` rule), as
`EngineCore.step()` feeds it back with async scheduling off. Before stepping, the harness checks that
every vLLM file it imported is byte-identical to the wheel's (the hashes in the dist-info RECORD) and
that the classes it steps were not patched.

See scripts/vllm-reference/README.md for the trace format and the output.
"""

import argparse
import base64
import copy
import csv
import hashlib
import json
import os
import random
import sys
import tempfile
import time

# No hub, no telemetry, quiet logs: all of this must hold before vllm is imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

VLLM_VERSION = "0.33.0"
SEED = 20251130  # token ids of prompts and outputs derive from it
VOCAB = 128000  # Llama-3 ids below the special tokens

# Llama-3-8B's shape (meta-llama/Meta-Llama-3-8B config.json): 32 layers, 8 KV heads of 128.
LLAMA3_8B_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 8192,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.40.0.dev0",
    "use_cache": True,
    "vocab_size": 128256,
}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace")
    p.add_argument("--num-blocks", type=int, required=True, help="vLLM's count; block 0 is the null block")
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--max-num-seqs", type=int, required=True)
    p.add_argument("--max-num-batched-tokens", type=int, required=True)
    p.add_argument("--chunked-prefill", action="store_true")
    p.add_argument("--prefix-caching", action="store_true")
    p.add_argument("--watermark", type=float, default=0.0, help="SchedulerConfig.watermark (vLLM default 0.0)")
    p.add_argument("--max-model-len", type=int, default=8192)
    p.add_argument(
        "--sliding-window",
        type=int,
        default=None,
        help="every even layer is a SlidingWindowSpec of this many tokens (Gemma-2's layout): two KV cache groups",
    )
    p.add_argument("--json", action="store_true", help="print the JSON report (the only output format)")
    return p.parse_args(argv)


# ----------------------------------------------------------------------------------------------
# Trace


def read_trace(path):
    """Rows of arrival_step,prompt_tokens,output_tokens[,prefix_id,prefix_tokens][,n], in file order."""
    rows = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        need = {"arrival_step", "prompt_tokens", "output_tokens"}
        missing = need - set(reader.fieldnames or [])
        if missing:
            raise SystemExit(f"{path}: missing column(s) {sorted(missing)}")
        for line, r in enumerate(reader, start=2):
            row = {
                "arrival_step": int(r["arrival_step"]),
                "prompt_tokens": int(r["prompt_tokens"]),
                "output_tokens": int(r["output_tokens"]),
                "prefix_id": (r.get("prefix_id") or "").strip() or None,
                "prefix_tokens": int(r.get("prefix_tokens") or 0),
                "n": int(r.get("n") or 1),
            }
            if row["prompt_tokens"] < 1 or row["output_tokens"] < 1 or row["n"] < 1 or row["arrival_step"] < 0:
                raise SystemExit(f"{path}:{line}: counts must be positive and arrival_step >= 0")
            if row["prefix_id"] is not None and not 0 <= row["prefix_tokens"] <= row["prompt_tokens"]:
                raise SystemExit(f"{path}:{line}: prefix_tokens must lie in [0, prompt_tokens]")
            rows.append(row)
    return rows


def prompt_token_ids(index, row, prefixes):
    """Deterministic ids: rows sharing a prefix_id share its first prefix_tokens ids."""
    ids = []
    if row["prefix_id"] is not None and row["prefix_tokens"] > 0:
        # One stream per prefix_id, so every row reads the same ids however long its share is.
        shared = prefixes.get(row["prefix_id"], [])
        if len(shared) < row["prefix_tokens"]:
            rng = random.Random(f"{SEED}/prefix/{row['prefix_id']}")
            shared = prefixes[row["prefix_id"]] = [rng.randrange(VOCAB) for _ in range(row["prefix_tokens"])]
        ids.extend(shared[: row["prefix_tokens"]])
    rng = random.Random(f"{SEED}/prompt/{index}")
    ids.extend(rng.randrange(VOCAB) for _ in range(row["prompt_tokens"] - len(ids)))
    return ids


# ----------------------------------------------------------------------------------------------
# The wheel's files, checked


def verify_vllm_files():
    """Every imported vllm module must come from the installed wheel, byte for byte (RECORD sha256)."""
    import importlib.metadata as md

    dist = md.distribution("vllm")
    if dist.version != VLLM_VERSION:
        raise SystemExit(f"vllm {dist.version} is installed; the harness needs {VLLM_VERSION}")
    record = {}
    for f in dist.files or []:
        if f.hash is not None and f.hash.mode == "sha256":
            record[os.path.realpath(str(f.locate()))] = f.hash.value
    if not record:
        raise SystemExit("the vllm dist-info has no RECORD hashes")
    checked = 0
    for name, mod in sorted(sys.modules.items()):
        if not (name == "vllm" or name.startswith("vllm.")):
            continue
        path = getattr(mod, "__file__", None)
        if path is None:
            continue  # namespace package
        real = os.path.realpath(path)
        expected = record.get(real)
        if expected is None:
            raise SystemExit(f"{name} was imported from {path}, which the vllm wheel's RECORD does not list")
        with open(real, "rb") as fh:
            digest = base64.urlsafe_b64encode(hashlib.sha256(fh.read()).digest()).rstrip(b"=").decode()
        if digest != expected:
            raise SystemExit(f"{path} differs from the vllm {VLLM_VERSION} wheel (sha256 mismatch)")
        checked += 1
    return checked, record


def verify_unpatched(classes, record):
    """The methods the harness steps through live in the wheel's files (nothing monkeypatched)."""
    for cls in classes:
        for klass in cls.__mro__:
            if klass is object:
                continue
            for attr, value in vars(klass).items():
                fn = getattr(value, "__func__", value)
                if isinstance(value, property):
                    fn = value.fget
                code = getattr(fn, "__code__", None)
                if code is None:
                    continue
                if os.path.realpath(code.co_filename) not in record and klass.__module__.startswith("vllm"):
                    raise SystemExit(f"{klass.__qualname__}.{attr} is defined outside the vllm wheel")


# ----------------------------------------------------------------------------------------------
# Building the scheduler the way EngineCore does


def build_scheduler(args, model_dir):
    import torch
    from vllm.config import (
        CacheConfig,
        DeviceConfig,
        ModelConfig,
        ParallelConfig,
        SchedulerConfig,
        VllmConfig,
    )
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
    from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts, resolve_kv_cache_layout
    from vllm.v1.core.kv_cache_planning import get_global_kv_cache_groups, get_kv_cache_configs
    from vllm.v1.core.kv_cache_utils import (
        generate_scheduler_kv_cache_config,
        get_request_block_hasher,
        init_none_hash,
        resolve_cache_hit_alignment_tokens,
        resolve_kv_cache_block_sizes,
        update_kv_cache_capacity,
    )
    from vllm.v1.core.single_type_kv_cache_manager import register_all_kvcache_specs
    from vllm.v1.kv_cache_interface import FullAttentionSpec, SlidingWindowSpec
    from vllm.v1.structured_output import StructuredOutputManager

    model_config = ModelConfig(
        model=model_dir,
        tokenizer=model_dir,
        skip_tokenizer_init=True,
        max_model_len=args.max_model_len,
        dtype="bfloat16",
        seed=0,
    )
    cache_config = CacheConfig(
        block_size=args.block_size,
        enable_prefix_caching=args.prefix_caching,
        num_gpu_blocks_override=args.num_blocks,
    )
    scheduler_config = SchedulerConfig(
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        max_model_len=args.max_model_len,
        enable_chunked_prefill=args.chunked_prefill,
        watermark=args.watermark,
        async_scheduling=False,
        is_encoder_decoder=False,
    )
    vllm_config = VllmConfig(
        model_config=model_config,
        cache_config=cache_config,
        scheduler_config=scheduler_config,
        parallel_config=ParallelConfig(),
        device_config=DeviceConfig(device="cuda"),
    )

    if args.sliding_window is not None:
        # VllmConfig.__post_init__ turns the hybrid KV cache manager off where the platform does
        # not support it, and this CPU-only install's platform does not; a CUDA GPU's does and
        # leaves it on (no KV connector, no chunked local attention), which is what this sets.
        vllm_config.scheduler_config.disable_hybrid_kv_cache_manager = False

    # EngineCore._initialize_kv_caches, in its order. The worker's part (get_kv_cache_specs) is what
    # the GPU model runner reports for this model: one full-attention spec per decoder layer.
    register_all_kvcache_specs(vllm_config)
    hf = model_config.hf_config
    head_size = hf.hidden_size // hf.num_attention_heads
    def layer_spec(i):
        if args.sliding_window is not None and i % 2 == 0:
            # What the GPU model runner reports for a sliding-window layer (Gemma-2's even layers).
            return SlidingWindowSpec(
                block_size=cache_config.block_size,
                num_kv_heads=hf.num_key_value_heads,
                head_size=head_size,
                dtype=torch.bfloat16,
                sliding_window=args.sliding_window,
            )
        return FullAttentionSpec(
            block_size=cache_config.block_size,
            num_kv_heads=hf.num_key_value_heads,
            head_size=head_size,
            dtype=torch.bfloat16,
        )

    worker_specs = {f"model.layers.{i}.self_attn.attn": layer_spec(i) for i in range(hf.num_hidden_layers)}
    kv_cache_specs = [worker_specs]
    # Executor.get_supported_kv_cache_layouts: one list per worker, from its attention backends
    # (FlashAttention on a CUDA GPU). The scheduler never reads the layout, but planning needs it.
    supported = [[layout.name for layout in get_supported_kv_cache_layouts([FlashAttentionBackend])]]
    resolve_kv_cache_layout(vllm_config, supported, [s for specs in kv_cache_specs for s in specs.values()])
    global_groups = get_global_kv_cache_groups(vllm_config, kv_cache_specs)
    vllm_config.adjust_dcp_kv_cache_interleave_size(global_groups)
    # What the worker would profile as free memory; num_gpu_blocks_override replaces it in
    # get_kv_cache_configs, so any figure does (80 GiB, an H100's).
    available_memory = [80 << 30]
    kv_cache_configs = get_kv_cache_configs(vllm_config, kv_cache_specs, available_memory, global_groups)
    for kv_cache_config in kv_cache_configs:
        kv_cache_config.kv_cache_layout = vllm_config.cache_config.kv_cache_layout
    scheduler_kv_cache_config = generate_scheduler_kv_cache_config(kv_cache_configs)
    vllm_config.cache_config.num_gpu_blocks = scheduler_kv_cache_config.num_blocks
    groups = scheduler_kv_cache_config.kv_cache_groups
    participating = [g.kv_cache_spec.block_size for g in groups if g.kv_cache_spec.prefix_cacheable]
    vllm_config.cache_config.block_size = min(participating or [g.kv_cache_spec.block_size for g in groups])
    update_kv_cache_capacity(vllm_config, scheduler_kv_cache_config)
    vllm_config.validate_block_size()
    scheduler_block_size, hash_block_size = resolve_kv_cache_block_sizes(scheduler_kv_cache_config, vllm_config)
    alignment = resolve_cache_hit_alignment_tokens(
        scheduler_kv_cache_config, vllm_config, scheduler_block_size, hash_block_size
    )
    for kv_cache_config in (*kv_cache_configs, scheduler_kv_cache_config):
        kv_cache_config.hash_block_size = hash_block_size
        kv_cache_config.cache_hit_alignment_tokens = alignment
    # The engine's config must be what the flags asked for (VllmConfig.__post_init__ may adjust it).
    effective = {
        "block_size": vllm_config.cache_config.block_size,
        "prefix_caching": bool(vllm_config.cache_config.enable_prefix_caching),
        "chunked_prefill": bool(vllm_config.scheduler_config.enable_chunked_prefill),
        "max_num_seqs": vllm_config.scheduler_config.max_num_seqs,
        "max_num_batched_tokens": vllm_config.scheduler_config.max_num_batched_tokens,
        "watermark": vllm_config.scheduler_config.watermark,
        "max_model_len": vllm_config.model_config.max_model_len,
        "async_scheduling": bool(vllm_config.scheduler_config.async_scheduling),
    }
    asked = {k: getattr(args, k) for k in effective if k != "async_scheduling"}
    asked["async_scheduling"] = False
    if effective != asked:
        raise SystemExit(f"vLLM adjusted the configuration: asked {asked}, got {effective}")
    expected_groups = 1 if args.sliding_window is None else 2
    if len(groups) != expected_groups:
        raise SystemExit(f"vLLM planned {len(groups)} KV cache groups, not {expected_groups}")
    if scheduler_kv_cache_config.num_blocks != args.num_blocks:
        raise SystemExit(f"vLLM planned {scheduler_kv_cache_config.num_blocks} blocks, not {args.num_blocks}")

    # EngineCore.__init__: the scheduler class, then the block hasher when prefix caching is on.
    scheduler_cls = vllm_config.scheduler_config.get_scheduler_cls()
    if f"{scheduler_cls.__module__}.{scheduler_cls.__qualname__}" != "vllm.v1.core.sched.scheduler.Scheduler":
        raise SystemExit(f"vLLM picked {scheduler_cls}, not the synchronous v1 Scheduler")
    scheduler_block_size, hash_block_size = resolve_kv_cache_block_sizes(scheduler_kv_cache_config, vllm_config)
    scheduler = scheduler_cls(
        vllm_config=vllm_config,
        kv_cache_config=scheduler_kv_cache_config,
        structured_output_manager=StructuredOutputManager(vllm_config),
        include_finished_set=False,
        log_stats=True,
        block_size=scheduler_block_size,
        hash_block_size=hash_block_size,
    )
    block_hasher = None
    if vllm_config.cache_config.enable_prefix_caching:
        hash_fn = get_hash_fn_by_name(vllm_config.cache_config.prefix_caching_hash_algo)
        init_none_hash(hash_fn)
        block_hasher = get_request_block_hasher(hash_block_size, hash_fn, vllm_config.num_hash_lookahead_tokens)
    return vllm_config, scheduler, block_hasher


# ----------------------------------------------------------------------------------------------
# Requests, fanned out for n > 1 the way LLMEngine.add_request does


def make_requests(index, row, prefixes, block_hasher):
    from vllm.sampling_params import SamplingParams
    from vllm.v1.engine import EngineCoreRequest
    from vllm.v1.engine.parallel_sampling import ParentRequest
    from vllm.v1.request import Request

    params = SamplingParams(n=row["n"], max_tokens=row["output_tokens"], ignore_eos=True, temperature=1.0)
    req_id = f"req-{index}"
    request = EngineCoreRequest(
        request_id=req_id,
        prompt_token_ids=prompt_token_ids(index, row, prefixes),
        mm_features=None,
        sampling_params=params,
        pooling_params=None,
        arrival_time=float(row["arrival_step"]),
        lora_request=None,
        cache_salt=None,
        data_parallel_rank=None,
        external_req_id=req_id,
    )
    core_requests = []
    if params.n == 1:
        core_requests.append(request)
    else:
        parent = ParentRequest(request)
        for idx in range(params.n):
            child_id, child_params = parent.get_child_info(idx)
            child = request if idx == params.n - 1 else copy.copy(request)
            child.request_id = child_id
            child.sampling_params = child_params
            core_requests.append(child)
    # EngineCore.preprocess_add_request
    return [Request.from_engine_core_request(r, block_hasher) for r in core_requests]


# ----------------------------------------------------------------------------------------------
# Stepping


def fake_model_runner_output(scheduler, scheduler_output):
    """One token per request whose scheduled chunk reaches its known length; none for partial prefills.

    schedule() has already advanced num_computed_tokens (Scheduler._update_after_schedule), so
    "computed + scheduled >= num_tokens" in the GPU runner reads "computed >= num_tokens" here.
    """
    from vllm.v1.outputs import ModelRunnerOutput

    req_ids = list(scheduler_output.num_scheduled_tokens)
    sampled = []
    for rid in req_ids:
        req = scheduler.requests[rid]
        if req.num_computed_tokens >= req.num_tokens:
            rng = random.Random(f"{SEED}/out/{rid}/{req.num_output_tokens}")
            sampled.append([rng.randrange(VOCAB)])
        else:
            sampled.append([])
    return ModelRunnerOutput(
        req_ids=req_ids,
        req_id_to_index={rid: i for i, rid in enumerate(req_ids)},
        sampled_token_ids=sampled,
    )


def run(args):
    t0 = time.monotonic()
    rows = read_trace(args.trace)
    with tempfile.TemporaryDirectory(prefix="kvlab-vllm-model-") as model_dir:
        with open(os.path.join(model_dir, "config.json"), "w") as f:
            json.dump(LLAMA3_8B_CONFIG, f)
        import vllm  # noqa: F401  (imported here so the env vars above are in place)
        from vllm.v1.core.block_pool import BlockPool
        from vllm.v1.core.kv_cache_manager import KVCacheManager
        from vllm.v1.core.kv_cache_utils import FreeKVCacheBlockQueue
        from vllm.v1.engine import EngineCoreEventType

        vllm_config, scheduler, block_hasher = build_scheduler(args, model_dir)
        t_import = time.monotonic() - t0
        n_files, record = verify_vllm_files()
        verify_unpatched(
            [type(scheduler), KVCacheManager, BlockPool, FreeKVCacheBlockQueue,
             type(scheduler.kv_cache_manager.coordinator)]
            + [type(m) for m in scheduler.kv_cache_manager.coordinator.single_type_managers],
            record,
        )

        arrivals = {}
        for i, row in enumerate(rows):
            arrivals.setdefault(row["arrival_step"], []).append((i, row))
        last_arrival = max(arrivals) if arrivals else -1
        prefixes = {}

        per_step = {k: [] for k in ("num_running", "num_waiting", "kv_usage", "preemptions_cum",
                                    "prefix_queries", "prefix_hits", "tokens_scheduled", "finished")}
        preemptions = 0
        preempted_events = 0
        preempted_queries = preempted_hits = 0
        num_requests = 0
        finished_total = 0
        step = 0
        while True:
            for i, row in arrivals.get(step, []):
                for req in make_requests(i, row, prefixes, block_hasher):
                    scheduler.add_request(req)  # EngineCore.add_request
                    num_requests += 1
            if step > last_arrival and not scheduler.has_requests():
                break
            finished = 0
            queries = hits = 0
            if scheduler.has_requests():
                out = scheduler.schedule()
                num_running, num_waiting = scheduler.get_request_counts()
                usage = scheduler.get_kv_cache_usage()
                preemptions += len(out.preempted_req_ids)
                tokens = out.total_num_scheduled_tokens
                engine_outputs = scheduler.update_from_output(out, fake_model_runner_output(scheduler, out))
                for eco in engine_outputs.values():
                    for o in eco.outputs:
                        if o.finish_reason is not None:
                            finished += 1
                        for ev in o.events or []:
                            if ev.type == EngineCoreEventType.PREEMPTED:
                                preempted_events += 1
                    stats = eco.scheduler_stats
                    if stats is not None:
                        pcs = stats.prefix_cache_stats
                        queries, hits = pcs.queries, pcs.hits
                        preempted_queries += pcs.preempted_queries
                        preempted_hits += pcs.preempted_hits
            else:
                # EngineCore.step() returns without scheduling when there is nothing to do.
                num_running, num_waiting = scheduler.get_request_counts()
                usage = scheduler.get_kv_cache_usage()
                tokens = 0
            finished_total += finished
            per_step["num_running"].append(num_running)
            per_step["num_waiting"].append(num_waiting)
            per_step["kv_usage"].append(usage)
            per_step["preemptions_cum"].append(preemptions)
            per_step["prefix_queries"].append(queries)
            per_step["prefix_hits"].append(hits)
            per_step["tokens_scheduled"].append(tokens)
            per_step["finished"].append(finished)
            step += 1

        # Each preemption also reaches the front end as a PREEMPTED event (vllm:num_preemptions).
        if preempted_events != preemptions:
            raise SystemExit(f"preemption counts disagree: {preemptions} in scheduler outputs, "
                             f"{preempted_events} PREEMPTED events")
        if scheduler.requests or finished_total != num_requests:
            raise SystemExit(f"run ended with {len(scheduler.requests)} requests left")
        # Modules imported lazily while stepping are checked too.
        n_files, _ = verify_vllm_files()

    steps = len(per_step["num_running"])
    total_q = sum(per_step["prefix_queries"])
    total_h = sum(per_step["prefix_hits"])
    summary = {
        "steps": steps,
        "total_preemptions": preemptions,
        "prefix_hit_rate": (total_h / total_q if total_q else 0.0) if args.prefix_caching else None,
        "mean_kv_usage": sum(per_step["kv_usage"]) / steps if steps else 0.0,
        "peak_kv_usage": max(per_step["kv_usage"], default=0.0),
        "max_num_running": max(per_step["num_running"], default=0),
        "num_requests": num_requests,
        "total_tokens_scheduled": sum(per_step["tokens_scheduled"]),
        "prefix_queries": total_q,
        "prefix_hits": total_h,
        "preempted_prefix_queries": preempted_queries,
        "preempted_prefix_hits": preempted_hits,
    }
    config = {
        "trace": os.path.basename(args.trace),
        "num_blocks": args.num_blocks,
        "block_size": args.block_size,
        "max_num_seqs": args.max_num_seqs,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        "chunked_prefill": args.chunked_prefill,
        "prefix_caching": args.prefix_caching,
        "watermark": args.watermark,
        "max_model_len": args.max_model_len,
        **({"sliding_window": args.sliding_window} if args.sliding_window is not None else {}),
        "scheduler_reserve_full_isl": vllm_config.scheduler_config.scheduler_reserve_full_isl,
        "policy": vllm_config.scheduler_config.policy,
        "model": "Llama-3-8B shape (32 layers, 8 KV heads x 128, bf16)",
    }
    report = {"vllm_version": VLLM_VERSION, "config": config, "summary": summary, "per_step": per_step}
    print(
        f"{os.path.basename(args.trace)}: {steps} steps, {preemptions} preemptions, "
        f"{n_files} vllm files verified; import+build {t_import:.1f} s, total {time.monotonic() - t0:.1f} s",
        file=sys.stderr,
    )
    return report


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    report = run(args)
    json.dump(report, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
