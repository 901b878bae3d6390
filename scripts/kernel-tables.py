#!/usr/bin/env python3
"""Writes assets/kernels/<gpu>.json: the measured kernel times kvlab's kernel clock reads.

Input: the CSV extracts of NVIDIA AIConfigurator's vLLM kernel database in ../shared/kernels/
(github.com/ai-dynamo/aiconfigurator @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce,
aic-core/src/aiconfigurator_core/systems/data/<system>/, Apache-2.0; that folder's README gives the
columns, units and vLLM versions). Output: for each GPU, only the rows and precision the clock
reads, in microseconds per call rounded to three significant digits, on dense grids:

- gemm_bf16 / gemm_fp8: one dense GEMM by (m, n, k); m without the "+1" tile-boundary points.
- context_bf16kv / context_fp8kv: prefill attention of one prompt (batch 1, causal, no window)
  for one layer by (head_dim, query heads, prompt length), KV heads = min(query heads, 8).
- decode_bf16kv / decode_fp8kv: decode attention for one layer by (head_dim, KV heads, query heads
  per KV head, batch, context).
- custom_all_reduce: vLLM's custom all-reduce (CUDA-graph backend, bf16) by (GPUs, elements).
- nccl_all_reduce: NCCL all-reduce (half) by (GPUs, elements).
- moe (with --moe DIR): vLLM's fused MoE layer (routing, both grouped GEMMs and the activation,
  as AIConfigurator's collector times it) for each model shape measured (weights' dtype, hidden
  size, expert intermediate size, experts per token, experts), by (intermediate size per GPU =
  intermediate / TP, tokens), expert parallelism off, routing skewed as AIConfigurator's MoE
  models assume (power law, alpha 1.2; 1.01 or balanced where that was not measured). DIR holds
  the database's `<system>_moe.parquet` files at the same commit, copied out of
  `aic-core/src/aiconfigurator_core/systems/data/<system>/moe/vllm/<version>/moe_perf.parquet`
  (the CSV extracts have no MoE table); reading them needs pyarrow.

A grid point the database did not measure (a few out-of-memory corners) is filled from its
measured neighbours along the last axis (log-log), and the count of filled points is written in
the file. Runs offline, deterministic, not part of the test run:

    python3 scripts/kernel-tables.py ../shared/kernels assets/kernels [--moe DIR]
"""
import csv
import json
import math
import os
import sys

SOURCE = {
    "repository": "github.com/ai-dynamo/aiconfigurator",
    "commit": "095f58a51c4ca8e61b66ec108d86f223f8d559ce",
    "path": "aic-core/src/aiconfigurator_core/systems/data/<system>/",
    "licence": "Apache License 2.0. Derived from NVIDIA AIConfigurator's performance database "
    "(Copyright NVIDIA CORPORATION & AFFILIATES); rows selected and rounded to three significant digits, "
    "milliseconds converted to microseconds.",
}

# kvlab GPU id -> (database system, vLLM version of its tables, NCCL version).
SYSTEMS = {
    "h100-sxm": ("h100_sxm", "0.24.0", "2.29.2"),
    "h200": ("h200_sxm", "0.24.0", "2.29.2"),
    "b200": ("b200_sxm", "0.24.0", "2.29.2"),
    "l40s": ("l40s", "0.24.0", "2.27.3"),
    "a100-80gb": ("a100_sxm", "0.14.0", "2.27.3"),
}

HEAD_DIMS = [64, 128]
CTX_HEADS = [1, 2, 4, 8, 16, 32, 64]
KV_HEADS = [1, 2, 4, 8]
Q_PER_KV = [1, 2, 4, 8]
TP = [2, 4, 8]


def sig3(x):
    if x <= 0:
        raise SystemExit(f"non-positive latency {x}")
    d = 2 - int(math.floor(math.log10(abs(x))))
    v = round(x, d)
    return int(v) if d <= 0 else v


def rows(folder, system, kind):
    with open(os.path.join(folder, f"{system}_{kind}.csv")) as f:
        return list(csv.DictReader(f))


def fill(values, axes, what):
    """values: dict from index tuple to µs. Fills missing points along the last axis (log-log
    between measured neighbours, or scaled from the nearest one beyond the measured range)."""
    filled = 0
    last = axes[-1]
    out = []
    for idx in grid_indices(axes):
        key = tuple(idx)
        if key in values:
            out.append(values[key])
            continue
        head = key[:-1]
        present = [(j, values[head + (j,)]) for j in range(len(last)) if head + (j,) in values]
        if not present:
            raise SystemExit(f"{what}: nothing measured at {[a[i] for a, i in zip(axes, head)]}")
        j = key[-1]
        lo = [p for p in present if p[0] < j]
        hi = [p for p in present if p[0] > j]
        x = math.log(last[j])
        if lo and hi:
            (a, ta), (b, tb) = lo[-1], hi[0]
            t = (x - math.log(last[a])) / (math.log(last[b]) - math.log(last[a]))
            v = math.exp(math.log(ta) + t * (math.log(tb) - math.log(ta)))
        else:
            a, ta = lo[-1] if lo else hi[0]
            v = ta * last[j] / last[a] if lo else ta
        values[key] = v
        out.append(v)
        filled += 1
    return out, filled


def grid_indices(axes):
    idx = [0] * len(axes)
    while True:
        yield list(idx)
        d = len(axes) - 1
        while d >= 0:
            idx[d] += 1
            if idx[d] < len(axes[d]):
                break
            idx[d] = 0
            d -= 1
        if d < 0:
            return


def table(names, axes, values, what):
    us, filled = fill(values, axes, what)
    return {
        "axes": [{"name": n, "points": a} for n, a in zip(names, axes)],
        "filled": filled,
        "us": [sig3(v) for v in us],
    }


def gemm_tables(folder, system):
    by_dtype = {}
    for r in rows(folder, system, "gemm"):
        by_dtype.setdefault(r["gemm_dtype"], {})[(int(r["m"]), int(r["n"]), int(r["k"]))] = float(r["latency"]) * 1000
    out = {}
    for dtype, name in (("bfloat16", "gemm_bf16"), ("fp8", "gemm_fp8")):
        got = by_dtype.get(dtype)
        if not got:
            continue
        ms = sorted({m for m, _, _ in got})
        ms = [m for m in ms if m <= 16 or (m - 1) not in ms]
        ns = sorted({n for _, n, _ in got if n >= 128})
        ks = sorted({k for _, _, k in got if k >= 128})
        axes = [ms, ns, ks]
        values = {}
        for (m, n, k), v in got.items():
            if m in ms and n in ns and k in ks:
                values[(ms.index(m), ns.index(n), ks.index(k))] = v
        out[name] = table(["m", "n", "k"], axes, values, f"{system} {name}")
    return out


def context_tables(folder, system):
    out = {}
    measured = {}
    for r in rows(folder, system, "ctx"):
        if r["attn_dtype"] != "bfloat16" or r["batch_size"] != "1":
            continue
        h, kv = int(r["num_heads"]), int(r["num_key_value_heads"])
        if kv != min(h, 8):
            continue
        measured.setdefault(r["kv_cache_dtype"], {})[(int(r["head_dim"]), h, int(r["isl"]))] = float(r["latency"]) * 1000
    for dtype, name in (("bfloat16", "context_bf16kv"), ("fp8", "context_fp8kv")):
        got = measured.get(dtype)
        if not got:
            continue
        dims = [d for d in HEAD_DIMS if any(k[0] == d for k in got)]
        # Query-head counts measured at every head size (the grid must be whole).
        heads = [h for h in CTX_HEADS if all(any(k[:2] == (d, h) for k in got) for d in dims)]
        isl = sorted({k[2] for k in got})
        axes = [dims, heads, isl]
        values = {(dims.index(d), heads.index(h), isl.index(s)): v for (d, h, s), v in got.items() if d in dims and h in heads}
        out[name] = table(["head_dim", "heads", "isl"], axes, values, f"{system} {name}")
    return out


def decode_tables(folder, system):
    out = {}
    measured = {}
    for r in rows(folder, system, "gen"):
        if r["attn_dtype"] != "bfloat16":
            continue
        h, kv = int(r["num_heads"]), int(r["num_key_value_heads"])
        if h % kv or h // kv not in Q_PER_KV:
            continue
        context = int(r["isl"]) + int(r["step"])
        key = (int(r["head_dim"]), kv, h // kv, int(r["batch_size"]), context)
        measured.setdefault(r["kv_cache_dtype"], {})[key] = float(r["latency"]) * 1000
    for dtype, name in (("bfloat16", "decode_bf16kv"), ("fp8", "decode_fp8kv")):
        got = measured.get(dtype)
        if not got:
            continue
        dims = [d for d in HEAD_DIMS if any(k[0] == d for k in got)]
        kvs = [k for k in KV_HEADS if all(any(x[:2] == (d, k) for x in got) for d in dims)]
        qs = [q for q in Q_PER_KV if all(any(x[:3] == (d, k, q) for x in got) for d in dims for k in kvs)]
        batches = sorted({x[3] for x in got})
        contexts = sorted({x[4] for x in got})
        axes = [dims, kvs, qs, batches, contexts]
        values = {}
        for (d, kv, q, b, c), v in got.items():
            if d in dims and kv in kvs and q in qs:
                values[(dims.index(d), kvs.index(kv), qs.index(q), batches.index(b), contexts.index(c))] = v
        out[name] = table(["head_dim", "kv_heads", "q_per_kv", "batch", "context"], axes, values, f"{system} {name}")
    return out


def all_reduce_tables(folder, system):
    out = {}
    custom = {}
    for r in rows(folder, system, "allreduce"):
        if r["backend"] == "vllm_graph" and r["allreduce_dtype"] == "bfloat16":
            custom[(int(r["num_gpus"]), int(r["message_size"]))] = float(r["latency"]) * 1000
    nccl = {}
    for r in rows(folder, system, "nccl"):
        if r["op_name"] == "all_reduce" and r["nccl_dtype"] == "half":
            nccl[(int(r["num_gpus"]), int(r["message_size"]))] = float(r["latency"]) * 1000
    for name, got in (("custom_all_reduce", custom), ("nccl_all_reduce", nccl)):
        if not got:
            continue
        sizes = sorted({s for _, s in got})
        axes = [TP, sizes]
        values = {(TP.index(g), sizes.index(s)): v for (g, s), v in got.items() if g in TP}
        out[name] = table(["gpus", "elements"], axes, values, f"{system} {name}")
    return out


# The MoE weights' dtypes kvlab prices (AIConfigurator's names), and for a shape measured with
# more than one kernel, the one vLLM runs by default: Triton's fused MoE on Hopper for block FP8
# (FlashInfer's needs an environment variable), the only one elsewhere. Per-tensor FP8 is kept
# only where Triton's kernel was measured: the database's other "fp8" rows time ModelOpt
# checkpoints' FlashInfer kernels, which `--quantization fp8` does not run.
MOE_DTYPES = ["bfloat16", "fp8", "fp8_block", "w4a16_mxfp4"]
MOE_DISTRIBUTIONS = ["power_law_1.2", "power_law_1.01", "balanced"]


def moe_tables(folder, system):
    import pyarrow.parquet as pq  # only for --moe

    path = os.path.join(folder, f"{system}_moe.parquet")
    if not os.path.exists(path):
        return []
    shapes = {}
    for r in pq.read_table(path).to_pylist():
        if r["moe_ep_size"] != 1 or r["moe_dtype"] not in MOE_DTYPES or r["distribution"] not in MOE_DISTRIBUTIONS:
            continue
        if r["moe_dtype"] == "fp8" and "triton" not in r["kernel_source"]:
            continue
        key = (r["moe_dtype"], r["hidden_size"], r["inter_size"], r["topk"], r["num_experts"])
        by = shapes.setdefault(key, {}).setdefault((r["kernel_source"], r["distribution"]), {})
        by[(r["inter_size"] // r["moe_tp_size"], r["num_tokens"])] = float(r["latency"]) * 1000
    out = []
    for (dtype, hidden, inter, topk, experts), measured in sorted(shapes.items()):
        kernels = sorted({k for k, _ in measured})
        kernel = next((k for k in kernels if "triton" in k), kernels[0])
        distribution = next(d for d in MOE_DISTRIBUTIONS if (kernel, d) in measured)
        got = measured[(kernel, distribution)]
        per_gpu = sorted({i for i, _ in got})
        tokens = sorted({t for _, t in got})
        values = {(per_gpu.index(i), tokens.index(t)): v for (i, t), v in got.items()}
        what = f"{system} moe {dtype} {hidden}x{inter} top{topk}/{experts}"
        out.append({
            "dtype": dtype,
            "hidden": hidden,
            "inter": inter,
            "topk": topk,
            "experts": experts,
            "kernel": kernel,
            "distribution": distribution,
            "table": table(["inter_per_gpu", "tokens"], [per_gpu, tokens], values, what),
        })
    return out


def main():
    args = sys.argv[1:]
    moe = None
    if "--moe" in args:
        i = args.index("--moe")
        moe = args[i + 1]
        del args[i : i + 2]
    folder = args[0] if len(args) > 0 else os.path.join(os.path.dirname(__file__), "..", "..", "shared", "kernels")
    dest = args[1] if len(args) > 1 else os.path.join(os.path.dirname(__file__), "..", "assets", "kernels")
    os.makedirs(dest, exist_ok=True)
    for gpu, (system, vllm, nccl) in SYSTEMS.items():
        tables = {}
        tables.update(gemm_tables(folder, system))
        tables.update(context_tables(folder, system))
        tables.update(decode_tables(folder, system))
        tables.update(all_reduce_tables(folder, system))
        doc = {
            "schema": "kvlab/kernels@1",
            "gpu": gpu,
            "system": system,
            "vllm": vllm,
            "nccl": nccl,
            "source": SOURCE,
            "generated_by": "scripts/kernel-tables.py from the CSV extracts of the source (see docs/CALIBRATION.md)",
            "tables": tables,
        }
        if moe:
            doc["moe"] = moe_tables(moe, system)
        path = os.path.join(dest, f"{gpu}.json")
        with open(path, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.write("\n")
        filled = {k: v["filled"] for k, v in tables.items() if v["filled"]}
        print(f"{path}: {os.path.getsize(path)} B, tables {sorted(tables)}, filled {filled}, {len(doc.get('moe', []))} MoE shapes")


if __name__ == "__main__":
    main()
