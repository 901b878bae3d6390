//! The step-time model's terms, each on the real model of a shipped configuration: CUDA-graph
//! padding and eager launches, prefill attention quadratic in the context (with chunk offsets),
//! the cost per sequence, and the published figures the clock must reproduce (vLLM's batch-1
//! decode fit on an H100, and the attention FLOPs a 120k-token prefill needs at the least), and
//! sliding-window layers reading only their window.

mod common;

use kvlab::engine::clock::{clock_for, ClockSource};
use kvlab::engine::clock::{CudaGraphs, StepWork};
use kvlab::engine::SimConfig;
use kvlab::formats::preset::parse_preset;

/// Llama-3.1-8B from the catalogue on an H100, paged, as vLLM serves it.
fn llama_h100(enforce_eager: bool) -> SimConfig {
    let text = format!(
        r#"{{"schema": "kvlab/preset@1", "model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "h100-sxm",
            "gpu_memory_utilization": 0.9, "enforce_eager": {enforce_eager},
            "allocator": {{"kind": "paged", "block_size": 16}},
            "scheduler": {{"max_model_len": 131072, "max_num_batched_tokens": 8192, "chunked_prefill": true}}}}"#
    );
    parse_preset(&text).expect("a valid preset")
}

fn decode(seqs: u64, context: u64) -> StepWork {
    let mut w = StepWork::default();
    for _ in 0..seqs {
        w.add(1, context as u32, false);
    }
    w
}

#[test]
fn cuda_graph_sizes_are_vllms() {
    let g = CudaGraphs::default();
    let sizes: Vec<Option<u64>> = [1, 2, 3, 5, 9, 255, 257, 500, 512, 513].iter().map(|&t| g.padded(t)).collect();
    assert_eq!(sizes, [Some(1), Some(2), Some(4), Some(8), Some(16), Some(256), Some(272), Some(512), Some(512), None]);
    let eager = CudaGraphs { enforce_eager: true, ..g };
    assert_eq!(eager.padded(1), None);
}

#[test]
fn a_batch_pays_for_its_captured_size_and_eager_mode_for_its_launches() {
    let graphs = llama_h100(false).clock();
    let eager = llama_h100(true).clock();
    // 9 decodes run the graph captured for 16: no cheaper than 16 of them but for the per-sequence
    // cost and their KV.
    let (nine, sixteen) = (graphs.step_us(&decode(9, 1)), graphs.step_us(&decode(16, 1)));
    assert!(nine < sixteen && sixteen - nine <= 7 * 12, "{nine} vs {sixteen}");
    // Without graphs every layer launches its kernels: a small batch costs more.
    assert!(eager.step_us(&decode(1, 1024)) > graphs.step_us(&decode(1, 1024)) + 1000);
    // Above the largest captured size both launch eagerly.
    let big = decode(600, 1024);
    assert_eq!(eager.step_us(&big), graphs.step_us(&big));
}

#[test]
fn prefill_attention_grows_with_the_square_of_the_context_and_counts_chunk_offsets() {
    let mut first = StepWork::default();
    first.add(2048, 2048, true);
    let mut later = StepWork::default();
    later.add(2048, 100_000, true);
    assert_eq!(first.prefill_attention_pairs, 2048 * 2049 / 2);
    assert_eq!(later.prefill_attention_pairs, 2048 * (100_000 - 2048) + 2048 * 2049 / 2);
    let t = llama_h100(false).clock();
    // The same 2,048 tokens cost more late in a long prompt than at its start.
    assert!(t.step_us(&later) > t.step_us(&first) + 10_000, "{} vs {}", t.step_us(&later), t.step_us(&first));
}

#[test]
fn a_120k_token_prefill_costs_at_least_its_flops() {
    // Llama-3.1-8B: 2 × 8.0e9 linear FLOPs per token, and causal attention over 120k tokens of
    // 32 layers × 32 heads × 128: 4 × 4096 × 32 × 120k² / 2 FLOPs. At the H100's dense 989 TFLOPs
    // the two need at least this long, whatever the efficiency.
    let (tokens, chunk) = (120_000u64, 8192u64);
    let t = llama_h100(false).clock();
    let mut total_us = 0;
    let mut done = 0;
    while done < tokens {
        let c = chunk.min(tokens - done);
        let mut w = StepWork::default();
        w.add(c as u32, (done + c) as u32, true);
        total_us += t.step_us(&w);
        done += c;
    }
    let flops = 2.0 * 8.03e9 * tokens as f64 + 4.0 * 4096.0 * 32.0 * (tokens as f64).powi(2) / 2.0;
    let floor_us = flops / 989e12 * 1e6;
    assert!(total_us as f64 > floor_us, "{total_us} µs for a 120k prefill, below the {floor_us:.0} µs its FLOPs need");
    // The old clock, linear layers only at half of peak, took 3.9 s; attention at least doubles it.
    assert!(total_us > 7_000_000, "{total_us} µs");
}

#[test]
fn batch_one_decode_on_an_h100_follows_vllms_published_fit() {
    // vLLM's blog (FP8 KV cache, 2026-04-22): ITL = 6.44 ms + 4.37e-5 ms per context token.
    let t = llama_h100(false).clock();
    for context in [1024u64, 16_384, 65_536, 120_000] {
        let step_ms = t.step_us(&decode(1, context)) as f64 / 1000.0;
        let published = 6.44 + 4.37e-5 * context as f64;
        assert!((step_ms / published - 1.0).abs() < 0.02, "context {context}: {step_ms:.2} ms vs {published:.2} ms");
    }
}

#[test]
fn every_sequence_costs_the_host_something() {
    let t = llama_h100(false).clock();
    // Same tokens and KV, more sequences: 8 sequences of 1 token and 1 prefill chunk of 8.
    let mut one = StepWork::default();
    one.add(8, 8, true);
    let many = decode(8, 1);
    assert!(t.step_us(&many) > t.step_us(&one), "{} vs {}", t.step_us(&many), t.step_us(&one));
}

#[test]
fn the_report_says_where_the_clock_comes_from() {
    let r = common::run(llama_h100(false));
    assert!(matches!(clock_for("h100-sxm").1, ClockSource::Measured { .. }));
    assert!(r.clock.line.starts_with("step times checked against "), "{}", r.clock.line);
    assert!(r.clock.median_abs_error_pct.is_some() && r.clock.measured_runs > 0);
    let (_, source) = clock_for("l40s");
    assert_eq!(source, ClockSource::Extrapolated { from: "rtx-4090" });
    assert_eq!(
        source.describe("NVIDIA L40S"),
        "no measured run on the NVIDIA L40S: step times extrapolated from the NVIDIA GeForce RTX 4090"
    );
    // The A100 has runs but no constants of its own: the H100's, and the error they give there.
    let (_, source) = clock_for("a100-80gb");
    assert!(matches!(source, ClockSource::Borrowed { from: "h100-sxm", runs, .. } if runs > 0), "{source:?}");
    let line = source.describe("NVIDIA A100 80GB");
    assert!(line.starts_with("step times on the NVIDIA H100 SXM's constants, checked against "), "{line}");
}

#[test]
fn enforce_eager_leaves_the_cuda_graphs_memory_to_the_kv_cache() {
    let (graphs, eager) = (llama_h100(false), llama_h100(true));
    let (g, e) = (graphs.memory_budget().unwrap(), eager.memory_budget().unwrap());
    assert!(g.cuda_graph_bytes > 0 && e.cuda_graph_bytes == 0, "{g:?} {e:?}");
    assert!(eager.kv_memory_gib > graphs.kv_memory_gib);
}

/// gpt-oss-20b on an H100: half its layers attend to a 128-token window, so a decode's KV read
/// grows with its context in the other half only (the same model with every layer full grows
/// twice as fast), while a short context costs the same either way.
#[test]
fn sliding_window_layers_read_only_their_window() {
    use kvlab::engine::model_arch::LayerAttention;
    let text = r#"{"schema": "kvlab/preset@1", "model": "openai/gpt-oss-20b", "gpu": "h100-sxm",
        "gpu_memory_utilization": 0.9, "allocator": {"kind": "paged", "block_size": 16, "prefix_caching": false},
        "scheduler": {"max_model_len": 131072, "max_num_batched_tokens": 8192, "chunked_prefill": true}}"#;
    let windowed = parse_preset(text).expect("a valid preset");
    let window = windowed.model.sliding_window().expect("gpt-oss has windows");
    assert_eq!((window.window, window.layers), (128, 12));
    let mut full = windowed.clone();
    let arch = full.model.arch.as_mut().expect("an architecture");
    arch.layer_attention.iter_mut().for_each(|l| *l = LayerAttention::Full);
    let step = |c: &SimConfig, ctx: u32| {
        let mut w = StepWork::new(c.model.sliding_window().map_or(0, |s| s.window), 0);
        for _ in 0..64 {
            w.add(1, ctx, false);
        }
        c.clock().step_us(&w) as f64
    };
    let slope = |c: &SimConfig| step(c, 100_000) - step(c, 1_000);
    let ratio = slope(&windowed) / slope(&full);
    assert!((0.45..=0.55).contains(&ratio), "windowed / full KV-read slope {ratio:.3}");
    assert_eq!(step(&windowed, 100), step(&full, 100), "under the window every layer reads it all");
}
