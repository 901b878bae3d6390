//! The GPU catalogue (`engine::gpus`): fifteen GPUs with driver-reported memory, the lab's first
//! four unchanged, every id planning from the GPU up, and a custom `"gpu": {…}` in a preset whose
//! errors name the field.
#![cfg(not(target_arch = "wasm32"))]

use std::process::Command;

use kvlab::engine::model::{gpu_preset, GPU_IDS};
use kvlab::formats::preset::parse_preset;

#[test]
fn fifteen_gpus_and_the_first_four_keep_their_numbers() {
    assert!(GPU_IDS.len() >= 15, "{GPU_IDS:?}");
    for id in [
        "a10g",
        "l4",
        "l40s",
        "rtx-4090",
        "rtx-pro-6000",
        "a100-40gb",
        "a100-80gb",
        "a100-80gb-pcie",
        "h100-pcie",
        "h100-sxm",
        "h100-nvl",
        "h200",
        "h20",
        "b200",
        "mi300x",
    ] {
        let g = gpu_preset(id).unwrap_or_else(|| panic!("{id} missing"));
        assert!(GPU_IDS.contains(&id));
        assert!(g.total_memory_gib < g.memory_gib && g.total_memory_gib > 0.9 * g.memory_gib, "{id}: {g:?}");
        assert!(g.mem_bandwidth_gb_s > 0.0 && g.peak_tflops > 0.0 && g.interconnect_gb_s > 0.0, "{id}");
        assert!(g.fp8_tflops == 0.0 || g.fp8_tflops >= g.peak_tflops, "{id}: FP8 at least BF16");
    }
    // The lab's first four, as the goldens were made with them.
    let old = |id: &str| {
        let g = gpu_preset(id).unwrap();
        (g.memory_gib, g.total_memory_gib, g.mem_bandwidth_gb_s, g.peak_tflops, g.pcie_gb_s, g.interconnect_gb_s)
    };
    assert_eq!(old("a100-80gb"), (80.0, 79.15, 2039.0, 312.0, 25.0, 300.0));
    assert_eq!(old("h100-sxm"), (80.0, 79.22, 3350.0, 989.0, 50.0, 450.0));
    assert_eq!(old("h200"), (141.0, 139.81, 4800.0, 989.0, 50.0, 450.0));
    assert_eq!(old("l4"), (24.0, 22.05, 300.0, 121.0, 25.0, 25.0));
    assert_eq!(&GPU_IDS[..4], &["a100-80gb", "h100-sxm", "h200", "l4"]);
}

#[test]
fn every_gpu_plans_llama_3_8b_from_the_gpu_up() {
    for id in GPU_IDS {
        let o = Command::new(env!("CARGO_BIN_EXE_kvlab"))
            .args(["plan", "--model", "llama-3-8b", "--gpu", id, "--max-model-len", "4096", "--json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{id}: {}", String::from_utf8_lossy(&o.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let total = doc["budget"]["gpu_total_bytes"].as_f64().unwrap() / (1u64 << 30) as f64;
        assert!((total - gpu_preset(id).unwrap().total_memory_gib).abs() < 0.01, "{id}");
    }
}

fn preset(gpu: &str) -> String {
    format!(
        r#"{{"schema": "kvlab/preset@1", "duration_s": 10, "gpu": {gpu}, "gpu_memory_utilization": 0.9, "allocator": {{"kind": "paged"}}}}"#
    )
}

#[test]
fn a_custom_gpu_object_plans_and_names_its_fields_in_errors() {
    let c = parse_preset(&preset(
        r#"{"name": "my-48g", "memory_gib": 48, "total_memory_gib": 47.5, "mem_bandwidth_gb_s": 1000, "peak_tflops": 400}"#,
    ))
    .expect("a custom GPU plans");
    assert_eq!(c.gpu.name, "my-48g");
    let b = c.memory_budget().expect("from the GPU up");
    assert_eq!(b.gpu_total_bytes, (47.5 * (1u64 << 30) as f64) as u64);
    assert!((20.0..40.0).contains(&c.kv_memory_gib), "{}", c.kv_memory_gib);
    let e = parse_preset(&preset(r#"{"memory_gib": 48, "peak_tflops": 400}"#)).unwrap_err();
    assert_eq!(e.field, "gpu.mem_bandwidth_gb_s", "{e}");
    let e = parse_preset(&preset(r#"{"memory_gib": 48, "mem_bandwidth_gb_s": 1000, "peak_tflops": 400, "hbm": 1}"#))
        .unwrap_err();
    assert_eq!(e.field, "gpu.hbm", "{e}");
    let e = parse_preset(&preset(r#"{"memory_gib": -1, "mem_bandwidth_gb_s": 1000, "peak_tflops": 400}"#)).unwrap_err();
    assert_eq!(e.field, "gpu.memory_gib", "{e}");
    let e = parse_preset(&preset(r#""h100""#)).unwrap_err();
    assert_eq!(e.field, "gpu");
    assert!(e.message.contains("h100-nvl") && e.message.contains("or an object {name, memory_gib"), "{e}");
    let e = parse_preset(&preset("7")).unwrap_err();
    assert_eq!(e.field, "gpu");
}
