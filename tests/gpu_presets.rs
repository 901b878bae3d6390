//! Presets from the GPU up (issue: KV memory as vLLM derives it): `gpu_memory_utilization` and
//! `tensor_parallel_size` in a preset, vLLM's startup checks in vLLM's words, block sizes the
//! attention backend does not run, and tensor parallelism in the step time.
#![cfg(not(target_arch = "wasm32"))]

use kvlab::engine::clock::StepWork;
use kvlab::engine::Simulation;
use kvlab::formats::preset::parse_preset;

fn preset(fields: &str) -> String {
    format!(r#"{{"schema": "kvlab/preset@1", "duration_s": 10, {fields}}}"#)
}

#[test]
fn a_max_model_len_the_pool_cannot_hold_is_refused_as_vllm_refuses_it() {
    let e = parse_preset(&preset(
        r#""kv_memory_gib": 1, "allocator": {"kind": "paged"}, "scheduler": {"max_model_len": 32768, "max_num_batched_tokens": 32768}"#,
    ))
    .unwrap_err();
    assert_eq!(e.field, "scheduler.max_model_len");
    assert!(e.message.starts_with("To serve at least one request with the model's max seq len (32768)"), "{e}");
    // 1 GiB is 512 blocks of 16 Llama-3-8B tokens; one is the null block.
    assert!(e.message.contains("the estimated maximum model length is 8176"), "{e}");
    // The contiguous allocator is not vLLM's: it keeps its own check.
    assert!(parse_preset(&preset(r#""kv_memory_gib": 1, "scheduler": {"max_model_len": 4096}"#)).is_ok());
}

#[test]
fn block_sizes_flash_attention_does_not_run_are_labelled_or_refused() {
    let c =
        parse_preset(&preset(r#""allocator": {"kind": "paged", "block_size": 8}"#)).expect("allowed for the lesson");
    let note = c.block_size_note().expect("labelled");
    assert!(note.contains("FlashAttention") && note.contains("multiples of 16"), "{note}");
    let r = Simulation::new(c).unwrap().run_to_end();
    assert_eq!(r.block_size_note.as_deref(), Some(note.as_str()));
    assert!(parse_preset(&preset(r#""allocator": {"kind": "paged", "block_size": 32}"#))
        .unwrap()
        .block_size_note()
        .is_none());
    let e =
        parse_preset(&preset(r#""attention_backend": "flash-attn", "allocator": {"kind": "paged", "block_size": 8}"#))
            .unwrap_err();
    assert_eq!(e.field, "allocator.block_size");
    assert!(e.message.contains("AttentionBackendEnum.FLASH_ATTN is not valid for this configuration"), "{e}");
    let e = parse_preset(&preset(r#""attention_backend": "flashattention""#)).unwrap_err();
    assert_eq!(e.field, "attention_backend");
}

#[test]
fn llama_3_70b_on_four_h100s_plans_and_simulates_with_per_gpu_figures() {
    let c = parse_preset(&preset(
        r#""model": "llama-3-70b", "gpu": "h100-sxm", "gpu_memory_utilization": 0.9, "tensor_parallel_size": 4,
           "allocator": {"kind": "paged"}"#,
    ))
    .expect("plans");
    let r = Simulation::new(c).unwrap().run_to_end();
    let g = r.gpu_memory.expect("derived from the GPU");
    assert_eq!((g.tensor_parallel_size, g.kv_heads_per_gpu), (4, 2));
    // 70.6 B parameters × 2 bytes over 4 GPUs.
    assert!((32.0..34.0).contains(&g.weights_gib_per_gpu), "{g:?}");
    assert!((g.kv_gib_per_replica - 4.0 * g.kv_gib_per_gpu).abs() < 1e-3, "{g:?}");
    assert!(g.startup_lines[0].starts_with("Model loading took"), "{:?}", g.startup_lines);
    assert!(g.startup_lines.iter().any(|l| l.starts_with("Available KV cache memory")));
    assert!(r.requests.finished > 0);
}

#[test]
fn two_instances_on_one_gpu_each_need_their_own_fraction() {
    let second = |u: f64| {
        parse_preset(&preset(&format!(
            r#""gpu": "h100-sxm", "gpu_memory_utilization": {u}, "gpu_memory_in_use_gib": 36, "allocator": {{"kind": "paged"}}"#
        )))
    };
    let e = second(0.9).unwrap_err();
    assert_eq!(e.field, "gpu_memory_utilization");
    assert!(
        e.message.starts_with("Free memory on device cuda:0 (43.22/79.22 GiB) on startup is less than desired"),
        "{e}"
    );
    let c = second(0.45).expect("half the GPU fits beside the first instance");
    assert!((15.0..25.0).contains(&c.kv_memory_gib), "{}", c.kv_memory_gib);
    let e = parse_preset(&preset(r#""kv_memory_gib": 10, "gpu_memory_utilization": 0.9"#)).unwrap_err();
    assert_eq!(e.field, "gpu_memory_utilization");
    let e = parse_preset(&preset(r#""gpu_memory_in_use_gib": 3"#)).unwrap_err();
    assert_eq!(e.field, "gpu_memory_in_use_gib");
}

#[test]
fn tensor_parallel_sizes_vllm_cannot_use_are_refused() {
    let e = parse_preset(&preset(r#""tensor_parallel_size": 3"#)).unwrap_err();
    assert_eq!(e.field, "tensor_parallel_size");
    assert!(e.message.contains("use 1, 2, 4 or 8"), "{e}");
}

#[test]
fn tensor_parallelism_splits_the_step_and_adds_all_reduces() {
    let at = |tp: u32| {
        let c = parse_preset(&preset(&format!(
            r#""model": "llama-3-70b", "gpu": "h100-sxm", "kv_memory_gib": 10, "tensor_parallel_size": {tp}, "allocator": {{"kind": "paged"}}"#
        )))
        .unwrap();
        c.clock().step_us(&StepWork {
            decode_tokens: 64,
            decode_seqs: 64,
            decode_context_tokens: 64 * 2000,
            ..StepWork::default()
        })
    };
    // Llama-3-70B's 131.5 GiB of weights need two H100s at least (`engine::gpu_fit`).
    let (two, eight) = (at(2), at(8));
    assert!(eight < two / 2, "eight GPUs stream a quarter of what two do each: {eight} vs {two} µs");
    assert!(eight > two / 4, "but the all-reduces cost something: {eight} vs {two} µs");
}

/// KV given in GiB must fit the GPUs as it must when derived from them: weights split by tensor
/// parallelism + that GPU's KV share + activation + other memory (`engine::gpu_fit`).
#[test]
fn kv_in_gib_that_no_gpu_can_hold_is_refused_with_the_arithmetic() {
    let e = parse_preset(&preset(r#""gpu": "l4", "kv_memory_gib": 1000"#)).unwrap_err();
    assert_eq!(e.field, "kv_memory_gib");
    assert!(e.message.contains("1000 GiB of KV does not fit one l4"), "{e}");
    assert!(e.message.contains("more than its 22.1 GiB; lower kv_memory_gib to 5.93 or less"), "{e}");
    let e = parse_preset(&preset(r#""model": "llama-3-70b", "gpu": "h100-sxm", "kv_memory_gib": 10"#)).unwrap_err();
    assert_eq!(e.field, "model");
    assert!(e.message.contains("llama-3-70b needs 131.5 GiB of weights on one h100-sxm, which has 79.2 GiB"), "{e}");
    assert!(e.message.ends_with("use tensor_parallel_size 2 or more"), "{e}");
    // Two GPUs hold it, and the most KV that fits is what the KV search tops out at.
    let c = parse_preset(&preset(
        r#""model": "llama-3-70b", "gpu": "h100-sxm", "kv_memory_gib": 10, "tensor_parallel_size": 2"#,
    ))
    .unwrap();
    // (18.7 GiB: vLLM's profile run on an H100 takes 1,024 sequences and, without chunked
    // prefill, a whole 8,192-token prompt by default.)
    let most = kvlab::engine::gpu_fit::max_kv_gib(&c);
    assert!((15.0..30.0).contains(&most), "{most}");
    let fits =
        format!(r#""model": "llama-3-70b", "gpu": "h100-sxm", "kv_memory_gib": {most}, "tensor_parallel_size": 2"#);
    assert!(parse_preset(&preset(&fits)).is_ok());
    let over = format!(
        r#""model": "llama-3-70b", "gpu": "h100-sxm", "kv_memory_gib": {}, "tensor_parallel_size": 2"#,
        most + 0.1
    );
    let e = parse_preset(&preset(&over)).unwrap_err();
    assert!(e.message.contains("use tensor_parallel_size 4 or more, or lower kv_memory_gib to"), "{e}");
}
