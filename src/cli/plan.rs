//! `kvlab plan`: the reference article's capacity arithmetic for one deployment.

use clap::{Args, ValueEnum};

use crate::engine::model::{model_preset, KvDtype, GIB, MODEL_IDS};
use crate::engine::plan::{group_thousands, CapacityPlan, PlanInput};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DtypeArg {
    Fp16,
    Fp8,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Model id (llama-3-8b, llama-3-70b, mistral-7b, opt-13b, llama-2-7b).
    #[arg(long)]
    pub model: String,
    /// GiB of GPU memory left for the KV cache (or derive it with --gpu).
    #[arg(long, value_parser = parse_gib, allow_negative_numbers = true, required_unless_present = "gpu", conflicts_with = "gpu")]
    pub kv_gib: Option<f64>,
    /// Mean prompt length, tokens.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub prompt_tokens: u32,
    /// Mean output length, tokens.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..))]
    pub output_tokens: u32,
    /// The max_tokens cap a contiguous allocator reserves for.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: u32,
    /// The model's maximum context length.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_model_len: u32,
    /// Paged block size in tokens.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub block_size: u32,
    #[arg(long, value_enum, default_value = "fp16")]
    pub kv_dtype: DtypeArg,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    // --- From the GPU up (src/cli/plan_gpu.rs): vLLM's own memory budget instead of --kv-gib. ---
    #[command(flatten)]
    pub gpu_budget: super::plan_gpu::GpuBudgetArgs,
}

fn parse_gib(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 4096.0 => Ok(v),
        _ => Err(format!("'{s}' is not a size in GiB; use a number above 0 and at most 4096, e.g. 24")),
    }
}

pub fn plan(args: &PlanArgs) -> Result<(), String> {
    if args.gpu_budget.gpu.is_some() {
        return super::plan_gpu::plan_from_gpu(args);
    }
    let kv_gib = args.kv_gib.ok_or("--kv-gib or --gpu is required")?;
    let model = model_preset(&args.model)
        .ok_or_else(|| format!("--model: unknown model \"{}\"; use one of {}", args.model, MODEL_IDS.join(", ")))?;
    let input = PlanInput {
        model,
        kv_dtype: match args.kv_dtype {
            DtypeArg::Fp16 => KvDtype::Fp16,
            DtypeArg::Fp8 => KvDtype::Fp8,
        },
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
    if args.json {
        println!("{}", serde_json::to_string_pretty(&p).expect("plan serializes"));
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
    Ok(())
}
