//! The kernel clock: the shipped kernel tables (`assets/kernels/`, from NVIDIA AIConfigurator's
//! vLLM kernel database) read back, the clock chosen only where they can price the run, and its
//! steps checked against the published figure it must meet: vLLM's batch-1 decode fit on an
//! H100 (the vLLM blog's FP8 KV cache post: ITL = 6.44 ms + 4.37e-5 ms per context token).

use kvlab::engine::clock::{StepClock, StepWork};
use kvlab::engine::SimConfig;
use kvlab::formats::kernel_tables::{parse_kernel_tables, shipped_kernel_tables, with_kernels};
use kvlab::formats::preset::parse_preset;

const GPUS: [&str; 5] = ["h100-sxm", "h200", "b200", "l40s", "a100-80gb"];

fn llama(gpu: &str, tp: u32) -> SimConfig {
    let text = format!(
        r#"{{"schema": "kvlab/preset@1", "model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "{gpu}",
            "gpu_memory_utilization": 0.9, "tensor_parallel_size": {tp},
            "allocator": {{"kind": "paged", "block_size": 16}},
            "scheduler": {{"max_model_len": 32768, "max_num_batched_tokens": 8192, "chunked_prefill": true}}}}"#
    );
    parse_preset(&text).expect("a valid preset")
}

fn decode(seqs: u64, context: u64) -> StepWork {
    let mut w = StepWork::default();
    w.add_decodes(seqs, seqs * context, 0);
    w
}

#[test]
fn every_shipped_table_file_reads_back_for_the_gpu_it_names() {
    for gpu in GPUS {
        let t = shipped_kernel_tables(gpu).expect("shipped");
        assert_eq!(t.gpu, gpu);
        assert!(t.describe().contains("vLLM"), "{}", t.describe());
    }
    assert!(shipped_kernel_tables("rtx-4090").is_none(), "the database has no RTX 4090");
}

#[test]
fn a_malformed_table_file_names_the_field_and_the_fix() {
    let text = kvlab::shipped::kernel_tables("h100-sxm").expect("shipped");
    let bad_schema = text.replacen("kvlab/kernels@1", "kvlab/preset@1", 1);
    let e = parse_kernel_tables(&bad_schema).expect_err("refused");
    assert_eq!(e.field, "schema");
    let bad_axis = text.replacen(r#"{"name":"m""#, r#"{"name":"rows""#, 1);
    let e = parse_kernel_tables(&bad_axis).expect_err("refused");
    assert_eq!(e.field, "tables.gemm_bf16.axes", "{e}");
    assert!(e.message.contains(r#"["m", "n", "k"]"#), "{e}");
    let short = text.replacen(r#""us":["#, r#""us":[1,"#, 1);
    let e = parse_kernel_tables(&short).expect_err("refused");
    assert!(e.field.starts_with("tables.") && e.message.contains("points"), "{e}");
}

#[test]
fn the_kernel_clock_runs_only_where_its_tables_can_price_the_run() {
    let plain = llama("h100-sxm", 1);
    assert!(matches!(plain.clock(), StepClock::Roofline(_)), "no tables attached: the roofline");
    let with = with_kernels(plain.clone());
    assert!(matches!(with.clock(), StepClock::Kernels(_)));
    assert!(with.clock().report("H100").line.contains("h100_sxm"), "{}", with.clock().report("H100").line);
    // Another GPU's tables do not price this one.
    let mut other = plain.clone();
    other.kernels = shipped_kernel_tables("b200");
    assert!(matches!(other.clock(), StepClock::Roofline(_)));
    // A GPU the database does not cover keeps the roofline.
    assert!(matches!(with_kernels(llama("rtx-4090", 1)).clock(), StepClock::Roofline(_)));
}

#[test]
fn batch_one_decode_meets_vllms_published_h100_fit() {
    let clock = with_kernels(llama("h100-sxm", 1)).clock();
    for context in [1_000u64, 4_000, 16_000, 64_000] {
        let blog_ms = 6.44 + 4.37e-5 * context as f64;
        let ms = clock.step_us(&decode(1, context)) as f64 / 1e3;
        let err = (ms / blog_ms - 1.0) * 100.0;
        println!("context {context}: {ms:.2} ms vs {blog_ms:.2} ms ({err:+.1}%)");
        assert!(err.abs() < 10.0, "context {context}: {ms:.2} ms vs the blog's {blog_ms:.2} ms");
    }
}

#[test]
fn steps_grow_with_their_work_and_shrink_with_tensor_parallelism() {
    let one = with_kernels(llama("h100-sxm", 1)).clock();
    let two = with_kernels(llama("h100-sxm", 2)).clock();
    let (small, big) = (one.step_us(&decode(8, 2_000)), one.step_us(&decode(256, 2_000)));
    assert!(big > small, "256 decodes take longer than 8: {big} vs {small} µs");
    let longer = one.step_us(&decode(8, 32_000));
    assert!(longer > small, "a longer context reads more KV: {longer} vs {small} µs");
    let mut prefill = StepWork::default();
    prefill.add(8_192, 8_192, true);
    let (p1, p2) = (one.step_us(&prefill), two.step_us(&prefill));
    assert!(p2 < p1 && p2 * 2 > p1, "TP 2 halves the work but adds all-reduces: {p2} vs {p1} µs");
}
