//! `kvlab plan --gpu G --gpu-memory-utilization U --tensor-parallel-size N`: the KV budget from
//! the GPU up, as vLLM's worker derives it, with vLLM's startup lines and startup checks, then the
//! same per-policy capacity figures `--kv-gib` gives, for the replica's KV cache.

use serde::Serialize;

use crate::engine::batch_defaults::serve_batch_defaults;
use crate::engine::memory_budget::{
    format_gib, gpu_total_gib, switched_nvlink, ActivationShape, MemoryBudget, MemoryBudgetInput, DEFAULT_MAX_NUM_SEQS,
    TENSOR_PARALLEL_SIZES,
};
use crate::engine::model::{gpu_preset, KvDtype, ModelSpec, GIB, GPU_IDS};
use crate::engine::model_arch::Attention;
use crate::engine::plan::{group_thousands, CapacityPlan, PlanInput};
use crate::engine::startup_checks::{check_block_size, check_free_memory, check_kv_cache_memory, AttentionBackend};

use super::plan::PlanArgs;
use super::plan_model::ModelJson;

/// vLLM 0.33's defaults for `vllm serve` on `gpu` (`engine::batch_defaults`), before the model's
/// length is known: chunked prefill is on, so the budget is the GPU's.
fn serve_defaults(gpu: &str) -> (u32, u32) {
    gpu_preset(gpu).map_or((2048, DEFAULT_MAX_NUM_SEQS), |g| serve_batch_defaults(&g))
}

#[derive(Serialize)]
struct GpuPlanJson<'a> {
    gpu: &'a str,
    attention_backend: &'static str,
    budget: &'a MemoryBudget,
    replica_gpus: u32,
    replica_kv_bytes: i64,
    /// What a --model-config's architecture gives (absent for the model ids).
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<ModelJson>,
    startup_lines: Vec<String>,
    plan: CapacityPlan,
    #[serde(skip_serializing_if = "Option::is_none")]
    host_tier: Option<super::plan::HostTierPlan>,
}

pub fn plan_from_gpu(args: &PlanArgs) -> Result<(), String> {
    let g = &args.gpu_budget;
    let gpu = g.gpu.as_deref().unwrap_or_default();
    let (model, backend, budget) = compute_budget(args, gpu)?;
    let lines = budget.startup_lines();
    if let Err(message) = check_kv_cache_memory(&budget) {
        // vLLM has logged the model loading and the available memory by the time it refuses.
        for line in lines.iter().filter(|l| !l.starts_with("GPU KV cache size") && !l.starts_with("Free memory")) {
            println!("{line}");
        }
        return Err(format!("{message}{}", larger_tp_hint(args, gpu)));
    }
    // The replica's tokens at the full model's bytes per token give the policies' capacity.
    let plan = CapacityPlan::compute(&PlanInput {
        model: model.clone(),
        kv_dtype: budget_kv_dtype(args, &model),
        kv_bytes: budget.kv_cache_tokens * model.kv_bytes_per_token(budget_kv_dtype(args, &model)),
        prompt_tokens: args.prompt_tokens,
        output_tokens: args.output_tokens,
        max_tokens: args.max_tokens,
        max_model_len: args.max_model_len,
        block_size: args.block_size,
    });
    let host = args.kv_offload_gib.map(|gib| {
        super::plan::HostTierPlan::compute(gib, plan.kv_bytes_per_token, plan.block_size, plan.capacity_tokens)
    });
    if args.json {
        let doc = GpuPlanJson {
            gpu,
            attention_backend: backend.vllm_name(),
            budget: &budget,
            replica_gpus: budget.tensor_parallel_size,
            replica_kv_bytes: budget.replica_kv_bytes(),
            model: ModelJson::of(&model, budget_kv_dtype(args, &model)),
            startup_lines: lines,
            plan,
            host_tier: host,
        };
        println!("{}", serde_json::to_string_pretty(&doc).expect("plan serializes"));
        return Ok(());
    }
    print_plan(args, gpu, &model, backend, &budget, &lines, &plan);
    if let Some(h) = host {
        println!("{}", h.line());
    }
    Ok(())
}

fn budget_kv_dtype(args: &PlanArgs, model: &ModelSpec) -> KvDtype {
    args.kv_dtype.kv_dtype(model)
}

/// Resolves the flags and computes vLLM's memory budget, refusing what vLLM refuses before it
/// profiles (an unsupported block size, not enough free memory).
fn compute_budget(args: &PlanArgs, gpu: &str) -> Result<(ModelSpec, AttentionBackend, MemoryBudget), String> {
    compute_budget_at(args, gpu, args.gpu_budget.tensor_parallel_size)
}

/// `compute_budget` at another tensor-parallel size.
fn compute_budget_at(
    args: &PlanArgs,
    gpu: &str,
    tensor_parallel_size: u32,
) -> Result<(ModelSpec, AttentionBackend, MemoryBudget), String> {
    let g = &args.gpu_budget;
    let total_gib =
        gpu_total_gib(gpu).ok_or_else(|| format!("--gpu: unknown GPU \"{gpu}\"; use one of {}", GPU_IDS.join(", ")))?;
    let model = super::plan::resolve_model(args)?;
    let shape = ActivationShape::of(&model).expect("every model preset and config.json has its shape");
    let backend = AttentionBackend::from_id(&g.attention_backend).ok_or_else(|| {
        format!(
            "--attention-backend: unknown backend \"{}\"; use flash-attn, flashinfer, triton, flex-attention, rocm-aiter-fa or cpu",
            g.attention_backend
        )
    })?;
    // vLLM selects the backend before it loads anything.
    check_block_size(backend, args.block_size)?;
    let (default_tokens, default_seqs) = serve_defaults(gpu);
    let budget = MemoryBudget::compute(&MemoryBudgetInput {
        model: model.clone(),
        shape,
        weight_bytes: 2.0,
        kv_dtype: budget_kv_dtype(args, &model),
        gpu_total_bytes: (total_gib * GIB as f64) as u64,
        other_processes_bytes: (g.other_processes_gib * GIB as f64) as u64,
        gpu_memory_utilization: g.gpu_memory_utilization,
        tensor_parallel_size,
        max_num_batched_tokens: g.max_num_batched_tokens.unwrap_or(default_tokens),
        max_num_seqs: g.max_num_seqs.unwrap_or(default_seqs),
        max_model_len: args.max_model_len,
        block_size: args.block_size,
        cuda_graphs_in_budget: !g.enforce_eager,
        switched_nvlink: gpu_preset(gpu).is_some_and(|p| switched_nvlink(&p.interconnect)),
    });
    check_free_memory(&budget)?;
    // The smallest larger size at which vLLM would also find room for the KV cache.
    let starts_at = |t: u32| compute_budget_at(args, gpu, t).is_ok_and(|(_, _, b)| check_kv_cache_memory(&b).is_ok());
    crate::engine::gpu_fit::check_weights_fit(&model, gpu, &budget, &starts_at).map_err(|m| format!("--model: {m}"))?;
    Ok((model, backend, budget))
}

/// The plan as text: the setup, vLLM's startup lines, then the per-GPU and per-replica split
/// vLLM does not print, and the sequences each allocation policy holds.
fn print_plan(
    args: &PlanArgs,
    gpu: &str,
    model: &ModelSpec,
    backend: AttentionBackend,
    budget: &MemoryBudget,
    lines: &[String],
    plan: &CapacityPlan,
) {
    let tp = budget.tensor_parallel_size;
    println!(
        "model {} on {tp} x {gpu} ({} GiB each) at gpu_memory_utilization {}, {} KV cache, {} backend, block size {}",
        model.id,
        format_gib(budget.gpu_total_bytes as i64),
        args.gpu_budget.gpu_memory_utilization,
        budget_kv_dtype(args, model).name(),
        backend.vllm_name(),
        args.block_size
    );
    if let Some(m) = ModelJson::of(model, budget_kv_dtype(args, model)) {
        println!("{}", m.summary());
    }
    for line in lines {
        println!("{line}");
    }
    println!(
        "per GPU: requested {} GiB = weights {} + non-torch {} + peak activation {} + CUDA graphs {} + KV {} GiB",
        format_gib(budget.requested_bytes as i64),
        format_gib(budget.weights_bytes as i64),
        format_gib(budget.non_torch_bytes as i64),
        format_gib(budget.peak_activation_bytes as i64),
        format_gib(budget.cuda_graph_bytes as i64),
        format_gib(budget.available_kv_bytes)
    );
    println!(
        "per GPU: {} of {} KV heads{}, {} KV bytes per token, {} blocks of {} tokens",
        budget.kv_heads_per_gpu,
        model.kv_heads,
        if matches!(model.arch.as_deref().map(|a| a.attention), Some(Attention::Latent { .. })) {
            " (one MLA latent, replicated on every GPU)"
        } else if model.kv_heads < tp {
            " (replicated: TP exceeds the KV heads)"
        } else {
            ""
        },
        group_thousands(budget.kv_bytes_per_token_per_gpu),
        group_thousands(budget.num_gpu_blocks),
        budget.block_size
    );
    println!(
        "per replica ({tp} GPU{}): weights {} GiB, KV {} GiB, {} tokens of KV",
        if tp == 1 { "" } else { "s" },
        format_gib((budget.weights_bytes * u64::from(tp)) as i64),
        format_gib(budget.replica_kv_bytes()),
        group_thousands(budget.kv_cache_tokens)
    );
    println!(
        "contiguous, reserve prompt + max_tokens: at most {} sequences; reserve max_model_len: {}; paged: about {} before preemption",
        plan.max_seqs.contiguous_prompt_plus_max_tokens, plan.max_seqs.contiguous_max_model_len, plan.max_seqs.paged
    );
}

/// When vLLM would refuse for want of KV memory: the smallest larger tensor-parallel size whose
/// budget leaves room for one `max_model_len` request, with its KV memory per GPU.
fn larger_tp_hint(args: &PlanArgs, gpu: &str) -> String {
    let tp = args.gpu_budget.tensor_parallel_size;
    for t in TENSOR_PARALLEL_SIZES.into_iter().filter(|&t| t > tp) {
        let Ok((_, _, b)) = compute_budget_at(args, gpu, t) else { continue };
        if check_kv_cache_memory(&b).is_ok() {
            return format!(
                " (kvlab: --tensor-parallel-size {t} leaves {} GiB of KV cache memory on each GPU)",
                format_gib(b.available_kv_bytes)
            );
        }
    }
    String::new()
}
