//! The step-indexed trace CSV and the replay JSON: the contract between `kvlab replay` and the
//! vLLM reference harness (`scripts/vllm-reference/harness.py`), documented in
//! docs/VLLM_PARITY.md.
//!
//! CSV: a header `arrival_step,prompt_tokens,output_tokens[,prefix_id,prefix_tokens][,n]`, then
//! one row per request. JSON: `{"per_step": {…}, "summary": {…}}` with the harness's field names.

use serde_json::{json, Value};

use crate::engine::replay::{Replay, ReplayParams, StepTraceRow};

/// Largest trace accepted, in rows.
pub const MAX_TRACE_ROWS: usize = 100_000;

/// Reads a step-indexed trace; errors name the line and the column.
pub fn parse_step_trace(text: &str) -> Result<Vec<StepTraceRow>, String> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    let Some((_, header)) = lines.next() else { return Err("the trace is empty; expected a header line".into()) };
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let known = ["arrival_step", "prompt_tokens", "output_tokens", "prefix_id", "prefix_tokens", "n"];
    for name in &names {
        if !known.contains(name) {
            return Err(format!("line 1: unknown column \"{name}\"; use {}", known.join(", ")));
        }
    }
    let col = |name: &str| names.iter().position(|n| *n == name);
    let (Some(c_step), Some(c_prompt), Some(c_out)) = (col("arrival_step"), col("prompt_tokens"), col("output_tokens"))
    else {
        return Err("line 1: the header must name arrival_step, prompt_tokens and output_tokens".into());
    };
    let (c_pid, c_ptok, c_n) = (col("prefix_id"), col("prefix_tokens"), col("n"));
    let mut rows = Vec::new();
    for (i, line) in lines {
        let at = |what: String| format!("line {}: {what}", i + 1);
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if cells.len() != names.len() {
            return Err(at(format!("{} cells, but the header has {}", cells.len(), names.len())));
        }
        let int = |c: usize, lo: u64, hi: u64| -> Result<u64, String> {
            cells[c]
                .parse::<u64>()
                .ok()
                .filter(|v| (lo..=hi).contains(v))
                .ok_or_else(|| at(format!("{} must be a whole number from {lo} to {hi}", names[c])))
        };
        let prefix_tokens = match c_ptok {
            Some(c) if !cells[c].is_empty() => int(c, 0, 1 << 20)? as u32,
            _ => 0,
        };
        let prefix = c_pid.map(|c| cells[c]).filter(|id| !id.is_empty()).map(|id| (id.to_string(), prefix_tokens));
        rows.push(StepTraceRow {
            arrival_step: int(c_step, 0, 1_000_000)?,
            prompt_tokens: int(c_prompt, 1, 1 << 20)? as u32,
            output_tokens: int(c_out, 1, 1 << 20)? as u32,
            prefix,
            n: match c_n {
                Some(c) => int(c, 1, 16)? as u32,
                None => 1,
            },
        });
        if rows.len() > MAX_TRACE_ROWS {
            return Err(format!("more than {MAX_TRACE_ROWS} rows; split the trace"));
        }
    }
    Ok(rows)
}

/// The replay as the harness writes it (`config` echoes the flags).
pub fn replay_json(trace_name: &str, params: &ReplayParams, r: &Replay) -> Value {
    let s = &r.summary;
    let p = &r.per_step;
    let mut doc = json!({
        "engine": params.engine.name(),
        "config": {
            "trace": trace_name,
            "num_blocks": params.num_blocks,
            "block_size": params.block_size,
            "max_num_seqs": params.max_num_seqs,
            "max_num_batched_tokens": params.max_num_batched_tokens,
            "chunked_prefill": params.chunked_prefill,
            "prefix_caching": params.prefix_caching,
            "watermark": params.watermark.unwrap_or(params.engine.default_watermark()),
            "max_model_len": params.max_model_len,
        },
        "summary": {
            "steps": s.steps,
            "total_preemptions": s.total_preemptions,
            "prefix_hit_rate": s.prefix_hit_rate,
            "mean_kv_usage": s.mean_kv_usage,
            "peak_kv_usage": s.peak_kv_usage,
            "max_num_running": s.max_num_running,
            "num_requests": s.num_requests,
            "total_tokens_scheduled": s.total_tokens_scheduled,
            "prefix_queries": s.prefix_queries,
            "prefix_hits": s.prefix_hits,
            "preempted_prefix_queries": s.preempted_prefix_queries,
            "preempted_prefix_hits": s.preempted_prefix_hits,
        },
        "per_step": {
            "num_running": p.num_running,
            "num_waiting": p.num_waiting,
            "kv_usage": p.kv_usage,
            "preemptions_cum": p.preemptions_cum,
            "prefix_queries": p.prefix_queries,
            "prefix_hits": p.prefix_hits,
            "tokens_scheduled": p.tokens_scheduled,
            "finished": p.finished,
        },
    });
    if let Some(w) = params.sliding_window {
        doc["config"]["sliding_window"] = json!(w);
    }
    doc
}
