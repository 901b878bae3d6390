//! `kvlab replay TRACE.csv`: the engine on vLLM's step clock, with the flags and the JSON of
//! `scripts/vllm-reference/harness.py`, so a golden from vLLM and the engine's run can be diffed
//! by any script (docs/VLLM_PARITY.md).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::engine::config::EngineVersion;
use crate::engine::replay::{replay as run_replay, ReplayParams};
use crate::formats::step_trace::{parse_step_trace, replay_json};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum EngineArg {
    V1,
    V0,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// CSV: arrival_step,prompt_tokens,output_tokens[,prefix_id,prefix_tokens][,n]
    pub trace: PathBuf,
    /// KV blocks as vLLM counts num_gpu_blocks (under v1, block 0 is the reserved null block).
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=1_048_576))]
    pub num_blocks: u32,
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub block_size: u32,
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub max_num_seqs: u32,
    #[arg(long, default_value_t = 8192, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    pub max_num_batched_tokens: u32,
    #[arg(long)]
    pub chunked_prefill: bool,
    #[arg(long)]
    pub prefix_caching: bool,
    /// Fraction of blocks admission keeps free (default: 0.0 in v1, 0.01 in v0).
    #[arg(long)]
    pub watermark: Option<f64>,
    #[arg(long, default_value_t = 8192, value_parser = clap::value_parser!(u32).range(2..=1_048_576))]
    pub max_model_len: u32,
    #[arg(long, value_enum, default_value = "v1")]
    pub engine: EngineArg,
    /// Every even layer attends to its last W tokens (the harness's Gemma-2-like layers).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    pub sliding_window: Option<u32>,
    /// Print the JSON (the harness's format); without it, a one-screen summary.
    #[arg(long)]
    pub json: bool,
}

pub fn replay(args: &ReplayArgs) -> Result<(), String> {
    let text = std::fs::read_to_string(&args.trace)
        .map_err(|e| format!("cannot read the trace {}: {e}", args.trace.display()))?;
    let rows = parse_step_trace(&text).map_err(|e| format!("{}: {e}", args.trace.display()))?;
    let params = ReplayParams {
        num_blocks: args.num_blocks,
        block_size: args.block_size,
        max_num_seqs: args.max_num_seqs,
        max_num_batched_tokens: args.max_num_batched_tokens,
        chunked_prefill: args.chunked_prefill,
        prefix_caching: args.prefix_caching,
        watermark: args.watermark,
        max_model_len: args.max_model_len,
        engine: match args.engine {
            EngineArg::V1 => EngineVersion::V1,
            EngineArg::V0 => EngineVersion::V0,
        },
        sliding_window: args.sliding_window,
    };
    let replay = run_replay(&rows, &params).map_err(|e| e.to_string().replace("scheduler.", "--").replace('_', "-"))?;
    if args.json {
        let name = args.trace.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
        println!("{}", replay_json(&name, &params, &replay));
        return Ok(());
    }
    let s = &replay.summary;
    println!(
        "{} requests in {} steps ({}): {} preemptions, mean KV usage {:.4}, peak {:.4}, at most {} running",
        s.num_requests,
        s.steps,
        params.engine.name(),
        s.total_preemptions,
        s.mean_kv_usage,
        s.peak_kv_usage,
        s.max_num_running
    );
    if let Some(rate) = s.prefix_hit_rate {
        println!(
            "prefix cache: {:.4} hit rate ({} of {} tokens); re-admissions after preemption {} of {}",
            rate, s.prefix_hits, s.prefix_queries, s.preempted_prefix_hits, s.preempted_prefix_queries
        );
    }
    Ok(())
}
