//! `kvlab plan`: the reference article's capacity arithmetic for one deployment.

use clap::{Args, ValueEnum};

use crate::engine::model::{KvDtype, ModelSpec, GIB};
use crate::engine::model_arch::WeightDtype;
use crate::engine::numbers::show_number;
use crate::engine::offload::{KvOffloadConfig, OffloadPolicy};
use crate::engine::plan::{group_thousands, CapacityPlan, PlanInput};
use crate::engine::startup_checks::check_derived_max_model_len;
use crate::formats::hf_config::{read_hf_config, Overrides};
use crate::formats::model_catalogue::resolve_model_id;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DtypeArg {
    /// vLLM's `auto`: the model's dtype (16-bit; float32 for a float32 --dtype).
    Auto,
    Fp16,
    Fp8,
    Fp32,
}

impl DtypeArg {
    /// The KV cache dtype for `model` (`auto` follows its weights' dtype, as vLLM's does).
    pub fn kv_dtype(self, model: &ModelSpec) -> KvDtype {
        match self {
            DtypeArg::Auto if model.arch.as_ref().is_some_and(|a| a.dtype == WeightDtype::Fp32) => KvDtype::Fp32,
            DtypeArg::Auto | DtypeArg::Fp16 => KvDtype::Fp16,
            DtypeArg::Fp8 => KvDtype::Fp8,
            DtypeArg::Fp32 => KvDtype::Fp32,
        }
    }
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Model id (llama-3-8b, llama-3-70b, mistral-7b, opt-13b, llama-2-7b, or a Hugging Face id of
    /// the catalogue such as meta-llama/Llama-3.1-8B-Instruct), or --model-config.
    #[arg(long, required_unless_present = "model_config", conflicts_with = "model_config")]
    pub model: Option<String>,
    /// A Hugging Face config.json to read the model from (docs/MODELS.md) instead of --model.
    #[arg(long, value_name = "FILE")]
    pub model_config: Option<std::path::PathBuf>,
    /// vLLM's --dtype for a --model-config: auto, bfloat16, float16 or float32.
    #[arg(long, requires = "model_config")]
    pub dtype: Option<String>,
    /// vLLM's --quantization for a --model-config (fp8, gptq, awq, mxfp4, …).
    #[arg(long, requires = "model_config")]
    pub quantization: Option<String>,
    /// GiB of GPU memory left for the KV cache (or derive it with --gpu).
    #[arg(long, value_parser = parse_gib, allow_negative_numbers = true, required_unless_present = "gpu", conflicts_with = "gpu")]
    pub kv_gib: Option<f64>,
    /// Mean prompt length, tokens (default: the lab's chat class, 1100).
    #[arg(long, default_value_t = 1100, value_parser = clap::value_parser!(u32).range(1..))]
    pub prompt_tokens: u32,
    /// Mean output length, tokens (default 250).
    #[arg(long, default_value_t = 250, value_parser = clap::value_parser!(u32).range(0..))]
    pub output_tokens: u32,
    /// The max_tokens cap a contiguous allocator reserves for (default 2048).
    #[arg(long, default_value_t = 2048, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: u32,
    /// The model's maximum context length.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_model_len: u32,
    /// Paged block size in tokens.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub block_size: u32,
    /// KV cache dtype, as vLLM's --kv-cache-dtype (auto: the model's dtype).
    #[arg(long, value_enum, default_value = "auto")]
    pub kv_dtype: DtypeArg,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// A host-memory KV tier of this many GiB beside the GPU pool (vLLM's --kv-offloading-size):
    /// the blocks it holds (docs/OFFLOAD.md).
    #[arg(long, value_name = "GIB", value_parser = parse_host_gib, allow_negative_numbers = true)]
    pub kv_offload_gib: Option<f64>,
    // --- From the GPU up (src/cli/plan_gpu.rs): vLLM's own memory budget instead of --kv-gib. ---
    #[command(flatten)]
    pub gpu_budget: GpuBudgetArgs,
}

/// `kvlab plan --gpu …` (run by `plan_gpu.rs`): vLLM's own memory budget instead of --kv-gib.
#[derive(Args, Debug)]
pub struct GpuBudgetArgs {
    /// Derive the KV memory from this GPU (an id of docs/MODELS.md: h100-sxm, a100-80gb, h200, l4, b200, mi300x, …) instead of --kv-gib.
    #[arg(long)]
    pub gpu: Option<String>,
    /// vLLM's --gpu-memory-utilization: the share of the GPU this instance may use, weights included.
    #[arg(long, default_value_t = 0.9, value_parser = parse_fraction, requires = "gpu")]
    pub gpu_memory_utilization: f64,
    /// vLLM's --tensor-parallel-size: 1, 2, 4 or 8 GPUs per replica.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=8), requires = "gpu")]
    pub tensor_parallel_size: u32,
    /// GiB already held on each GPU by other processes (another vLLM instance, say).
    #[arg(long, default_value_t = 0.0, value_parser = parse_nonnegative, requires = "gpu")]
    pub other_processes_gib: f64,
    /// Tokens in vLLM's profiling pass (default: vLLM 0.33's for the GPU, 8192 on H100/H200, else 2048).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), requires = "gpu")]
    pub max_num_batched_tokens: Option<u32>,
    /// Sequences sampled in the profiling pass (default: 1024 on H100/H200, else 256).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), requires = "gpu")]
    pub max_num_seqs: Option<u32>,
    /// Attention backend whose kernel block sizes apply (flash-attn, flashinfer, triton, flex-attention, rocm-aiter-fa, cpu).
    #[arg(long, default_value = "flash-attn", requires = "gpu")]
    pub attention_backend: String,
    /// vLLM's --enforce-eager: no CUDA graphs, so none of their memory is taken from the budget.
    #[arg(long, requires = "gpu")]
    pub enforce_eager: bool,
}

fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1.0 => Ok(v),
        _ => Err(format!("'{s}' is not a fraction; use a number above 0 and at most 1, e.g. 0.9")),
    }
}

fn parse_nonnegative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=4096.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a size in GiB; use a number from 0 to 4096")),
    }
}

fn parse_gib(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 4096.0 => Ok(v),
        _ => Err(format!("'{s}' is not a size in GiB; use a number above 0 and at most 4096, e.g. 24")),
    }
}

/// `--kv-offload-gib`: a host tier's size, as the preset's `kv_offload.cpu_gib` takes it.
fn parse_host_gib(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 65_536.0 => Ok(v),
        _ => Err(format!("'{s}' is not a size in GiB; use a number above 0 and at most 65536, e.g. 256")),
    }
}

/// The model `--model` names, or the one `--model-config` reads (with `--dtype`, `--quantization`).
/// The model of `--model` or `--model-config`, refused as vLLM refuses it when `--max-model-len`
/// is longer than its config.json allows.
pub fn resolve_model(args: &PlanArgs) -> Result<ModelSpec, String> {
    let model = read_model(args)?;
    if let Some(a) = model.arch.as_deref() {
        check_derived_max_model_len(a, args.max_model_len).map_err(|m| format!("--max-model-len: {m}"))?;
    }
    Ok(model)
}

fn read_model(args: &PlanArgs) -> Result<ModelSpec, String> {
    let Some(path) = &args.model_config else {
        let id = args.model.as_deref().unwrap_or_default();
        return resolve_model_id(id).map_err(|m| format!("--model: {m}"));
    };
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("--model-config {shown}: {e}"))?;
    let config: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("--model-config {shown}: not JSON ({e})"))?;
    let overrides = Overrides { dtype: args.dtype.as_deref(), quantization: args.quantization.as_deref() };
    let arch = read_hf_config(&config, overrides).map_err(|e| match e.field.as_str() {
        "dtype" | "quantization" => format!("--{}: {}", e.field, e.message),
        "" => format!("--model-config {shown}: {}", e.message),
        field => format!("--model-config {shown}: {field}: {}", e.message),
    })?;
    let id = config_file_id(path).unwrap_or_else(|| arch.architecture.clone());
    Ok(ModelSpec::from_arch(id, arch))
}

/// The model a config.json's file name gives: `org__name.config.json` (how the files are often
/// saved) names `org/name`; a plain `config.json` names none.
pub fn config_file_id(path: &std::path::Path) -> Option<String> {
    let stem = path.file_name().and_then(|n| n.to_str())?;
    let id = stem.trim_end_matches(".json").trim_end_matches(".config").replace("__", "/");
    (id != "config" && !id.is_empty()).then_some(id)
}

/// `kvlab plan --kv-gib …` (the CLI sends `--gpu` to `plan_gpu::plan_from_gpu`).
pub fn plan(args: &PlanArgs) -> Result<(), String> {
    let kv_gib = args.kv_gib.ok_or("--kv-gib or --gpu is required")?;
    let model = resolve_model(args)?;
    let input = PlanInput {
        kv_dtype: args.kv_dtype.kv_dtype(&model),
        model,
        kv_bytes: (kv_gib * GIB as f64) as u64,
        prompt_tokens: args.prompt_tokens,
        output_tokens: args.output_tokens,
        max_tokens: args.max_tokens,
        max_model_len: args.max_model_len,
        block_size: args.block_size,
    };
    let p = CapacityPlan::compute(&input);
    if p.capacity_tokens == 0 {
        return Err("--kv-gib: not even one token fits; raise it".into());
    }
    let host = args
        .kv_offload_gib
        .map(|gib| HostTierPlan::compute(gib, p.kv_bytes_per_token, p.block_size, p.capacity_tokens));
    if args.json {
        let mut v = serde_json::to_value(&p).expect("plan serializes");
        if let Some(h) = &host {
            v["host_tier"] = serde_json::to_value(h).expect("host tier serializes");
        }
        println!("{}", serde_json::to_string_pretty(&v).expect("plan serializes"));
        return Ok(());
    }
    println!("model {} with {} KV cache", p.model, p.kv_dtype);
    println!(
        "KV bytes per token: {} ({} KiB)",
        group_thousands(p.kv_bytes_per_token),
        p.kv_bytes_per_token as f64 / 1024.0
    );
    println!("{}", p.startup_line());
    println!(
        "contiguous, reserve prompt + max_tokens ({} tokens): at most {} sequences",
        (args.prompt_tokens + args.max_tokens).min(args.max_model_len),
        p.max_seqs.contiguous_prompt_plus_max_tokens
    );
    println!(
        "contiguous, reserve max_model_len ({} tokens): {} sequences",
        args.max_model_len, p.max_seqs.contiguous_max_model_len
    );
    println!(
        "paged, {}-token blocks (~{:.0} tokens per sequence): about {} sequences before preemption",
        p.block_size, p.paged_tokens_per_seq, p.max_seqs.paged
    );
    if let Some(h) = &host {
        println!("{}", h.line());
    }
    Ok(())
}

/// `--kv-offload-gib`: what a host tier of that size holds beside the GPU pool.
#[derive(Debug, serde::Serialize)]
pub struct HostTierPlan {
    pub cpu_gib: f64,
    /// Blocks of the GPU's block size (vLLM's chunks, one block each, page-aligned).
    pub blocks: u32,
    pub tokens: u64,
    /// The host tier's tokens over the GPU pool's.
    pub times_gpu_pool: f64,
}

impl HostTierPlan {
    pub fn compute(cpu_gib: f64, kv_bytes_per_token: u64, block_size: u32, gpu_tokens: u64) -> Self {
        let tier = KvOffloadConfig { cpu_gib, policy: OffloadPolicy::Lru };
        let blocks = tier.capacity_chunks(kv_bytes_per_token * u64::from(block_size));
        let tokens = u64::from(blocks) * u64::from(block_size);
        let times_gpu_pool =
            if gpu_tokens > 0 { (tokens as f64 / gpu_tokens as f64 * 100.0).round() / 100.0 } else { 0.0 };
        HostTierPlan { cpu_gib, blocks, tokens, times_gpu_pool }
    }

    pub fn line(&self) -> String {
        format!(
            "host tier of {} GiB: {} blocks, {} tokens of prompt prefixes ({}x the GPU pool); prefixes evicted from the GPU are found there and loaded instead of recomputed",
            show_number(self.cpu_gib),
            group_thousands(u64::from(self.blocks)),
            group_thousands(self.tokens),
            show_number(self.times_gpu_pool)
        )
    }
}
