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
    let report = with.clock().report("NVIDIA H100 SXM");
    assert!(report.line.contains("h100_sxm"), "{}", report.line);
    // Beside the latencies, the held-out error of the kernel clock on this GPU's real runs.
    assert!(
        report.line.contains("real vLLM runs on the NVIDIA H100 SXM") && report.median_abs_error_pct.is_some(),
        "{}",
        report.line
    );
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

fn gpt_oss(gpu: &str) -> SimConfig {
    let text = format!(
        r#"{{"schema": "kvlab/preset@1", "model": "openai/gpt-oss-20b", "gpu": "{gpu}",
            "gpu_memory_utilization": 0.9, "allocator": {{"kind": "paged", "block_size": 16, "prefix_caching": false}},
            "scheduler": {{"max_model_len": 32768, "max_num_batched_tokens": 8192, "chunked_prefill": true}}}}"#
    );
    parse_preset(&text).expect("a valid preset")
}

#[test]
fn every_hopper_and_blackwell_file_holds_the_fused_moe_of_the_gpt_oss_shape() {
    use kvlab::engine::clock::kernels::MoeDtype;
    for gpu in ["h100-sxm", "h200", "b200", "l40s"] {
        let t = shipped_kernel_tables(gpu).expect("shipped");
        // gpt-oss-20b: hidden 2880, experts of 2880, 4 of 32 per token, MXFP4.
        let moe =
            t.moe_for(MoeDtype::Mxfp4, 2880, 2880, 4, 32).unwrap_or_else(|| panic!("{gpu}: no gpt-oss-20b table"));
        assert!(moe.at(&[2880.0, 1.0]) < moe.at(&[2880.0, 4096.0]), "{gpu}: more tokens take longer");
        assert!(
            moe.at(&[1440.0, 4096.0]) < moe.at(&[2880.0, 4096.0]),
            "{gpu}: half the experts' width per GPU takes less"
        );
    }
    // A dtype kvlab does not price is refused naming the field.
    let text = kvlab::shipped::kernel_tables("h100-sxm").expect("shipped");
    let bad = text.replacen(r#""dtype":"bfloat16""#, r#""dtype":"int3""#, 1);
    let e = parse_kernel_tables(&bad).expect_err("refused");
    assert_eq!(e.field, "moe[0].dtype", "{e}");
    assert!(e.message.contains("fp8_block"), "{e}");
}

#[test]
fn a_moe_models_decode_reads_its_measured_fused_moe_and_comes_closer_to_vllms_blog() {
    // vLLM's FP8 KV cache post fits gpt-oss-20b's batch-1 ITL on an H100 as 4.05 ms + 8.94e-6 ms
    // per context token (a held-out run of the corpus). The MoE layer measured for this shape
    // replaces the estimate from the experts' bytes, which missed its fixed costs.
    let with = with_kernels(gpt_oss("h100-sxm"));
    let mut without = with.clone();
    let mut tables = (**without.kernels.as_ref().expect("tables")).clone();
    tables.moe.clear();
    without.kernels = Some(std::sync::Arc::new(tables));
    let (measured, estimated) = (with.clock(), without.clock());
    assert!(matches!(measured, StepClock::Kernels(_)) && matches!(estimated, StepClock::Kernels(_)));
    for context in [1_024u64, 8_192, 32_768] {
        let blog_ms = 4.05 + 8.94e-6 * context as f64;
        let ms = measured.step_us(&decode(1, context)) as f64 / 1e3;
        let before = estimated.step_us(&decode(1, context)) as f64 / 1e3;
        println!("context {context}: {ms:.2} ms with the MoE table, {before:.2} ms without, blog {blog_ms:.2} ms");
        assert!((ms - blog_ms).abs() < (before - blog_ms).abs(), "context {context}: {ms:.2} vs {before:.2} ms");
    }
}

/// The lab's models known by their sizes alone take their catalogue twin's architecture on the
/// kernel clock (`LAB_MODEL_TWINS`): the kernels price them, and their KV cache is the one the
/// roofline's run has, byte for byte. Mistral-7B (v0.1's sliding window would change its cache)
/// and OPT-13B have no twin and stay on the roofline.
#[test]
fn the_labs_models_run_on_the_kernels_as_their_catalogue_twins() {
    for model in ["llama-3-8b", "llama-3-70b", "llama-2-7b", "mistral-7b", "opt-13b"] {
        let text = format!(
            r#"{{"schema": "kvlab/preset@1", "model": "{model}", "gpu": "h100-sxm", "kv_memory_gib": 20,
                "tensor_parallel_size": 4, "allocator": {{"kind": "paged", "block_size": 16}}}}"#
        );
        let plain = parse_preset(&text).expect("a valid preset");
        let priced = with_kernels(plain.clone());
        let twin = kvlab::formats::kernel_tables::LAB_MODEL_TWINS.iter().any(|(lab, _)| *lab == model);
        assert_eq!(priced.runs_on_kernels(), twin, "{model}");
        assert_eq!(priced.kv_bytes_per_token(), plain.kv_bytes_per_token(), "{model}");
        assert_eq!(priced.kv_bytes(), plain.kv_bytes(), "{model}");
        assert_eq!(priced.model.params_b, plain.model.params_b, "{model}");
    }
}

/// A preset's `clock`, as an instructor writes it.
fn preset_with_clock(gpu: &str, model: &str, more: &str) -> String {
    format!(
        r#"{{"schema": "kvlab/preset@1", "model": "{model}", "gpu": "{gpu}", "kv_memory_gib": 4,
            "allocator": {{"kind": "paged", "block_size": 16}}, "clock": "kernels"{more}}}"#
    )
}

#[test]
fn a_preset_asks_for_the_kernel_clock_by_name_and_a_setup_that_cannot_have_it_is_refused_at_the_field() {
    // On a GPU with tables, a lab model with a catalogue twin runs on them.
    let config = parse_preset(&preset_with_clock("h100-sxm", "llama-3-8b", "")).expect("runs on kernels");
    assert!(matches!(config.clock(), StepClock::Kernels(_)));
    // Left out, or "roofline", the clock is the roofline's; the field is written back only when
    // it says something.
    let plain = preset_with_clock("h100-sxm", "llama-3-8b", "").replace(r#", "clock": "kernels""#, "");
    assert!(matches!(parse_preset(&plain).unwrap().clock(), StepClock::Roofline(_)));
    let roofline = preset_with_clock("h100-sxm", "llama-3-8b", "").replace("kernels", "roofline");
    assert!(matches!(parse_preset(&roofline).unwrap().clock(), StepClock::Roofline(_)));
    let dto = kvlab::formats::preset::parse_preset_dto(&roofline).unwrap();
    assert!(serde_json::to_value(&dto).unwrap().get("clock").is_none());
    let dto = kvlab::formats::preset::parse_preset_dto(&preset_with_clock("h200", "llama-3-8b", "")).unwrap();
    assert_eq!(serde_json::to_value(&dto).unwrap()["clock"], "kernels");

    // Each refusal names `clock` and the way back to the roofline.
    for (text, says) in [
        (preset_with_clock("rtx-4090", "llama-3-8b", ""), "no measured kernel tables for the rtx-4090"),
        (preset_with_clock("h100-sxm", "mistral-7b", ""), "known by its sizes alone"),
        (preset_with_clock("h200", "llama-3-8b", r#", "calibration": "cuda-nvidia-h200""#), "leave calibration out"),
    ] {
        let e = parse_preset(&text).expect_err("refused");
        assert_eq!(e.field, "clock", "{e}");
        assert!(e.message.contains(says) && e.message.contains(r#"set clock to "roofline""#), "{e}");
    }
    let e = parse_preset(&preset_with_clock("h100-sxm", "llama-3-8b", "").replace(r#""kernels""#, r#""kernel""#))
        .expect_err("an unknown clock");
    assert!(e.to_string().contains("clock") && e.to_string().contains("roofline"), "{e}");
}

#[test]
fn the_lab_runs_a_kernel_clock_preset_on_its_tables_with_no_note_natively() {
    use kvlab::session::lab::Lab;
    use kvlab::session::url_state::{LabState, PageOptions};
    let dto = kvlab::formats::preset::parse_preset_dto(&preset_with_clock("h100-sxm", "llama-3-8b", "")).unwrap();
    let mut lab = Lab::new(LabState::new(dto), PageOptions::default()).expect("the lab takes it");
    lab.seek(5_000_000);
    let report = lab.runs[0].report();
    assert!(report.clock.line.starts_with("step times from"), "{}", report.clock.line);
    assert!(report.clock.median_abs_error_pct.is_some(), "the H100's held-out error is quoted");
    // Native builds carry the tables: nothing to fetch, nothing to say.
    assert_eq!(lab.kernel_tables_wanted(), None);
    assert!(lab.clock_notes().is_empty());
}
