//! `kvlab run --benchmark`: vLLM's Serving Benchmark Result block, its figures those of the
//! report (`--json`), laid out as `vllm bench serve` lays them out.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::process::Command;

use common::repo_path;

fn kvlab(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_kvlab")).args(args).output().expect("kvlab runs");
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn the_benchmark_block_prints_the_report_as_vllm_does() {
    let path = repo_path("assets/presets/paged-default.json");
    let path = path.to_str().unwrap();
    let text = kvlab(&["run", path, "--benchmark"]);
    let r: serde_json::Value = serde_json::from_str(&kvlab(&["run", path, "--json"])).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "============ Serving Benchmark Result ============");
    assert_eq!(lines.last(), Some(&"=".repeat(50).as_str()));
    let value = |label: &str| -> String {
        let line = lines.iter().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no {label} in\n{text}"));
        assert!(line.len() >= 51 && line[..40].trim_end() == label, "{line:?} is not padded to 40 columns");
        line[41..].trim_end().to_string()
    };
    let num = |p: &str| r.pointer(p).and_then(|v| v.as_f64()).unwrap_or_else(|| panic!("report lacks {p}"));
    assert_eq!(value("Successful requests:"), r["requests"]["finished"].to_string());
    assert_eq!(value("Total input tokens:"), r["throughput"]["input_tokens"].to_string());
    assert_eq!(value("Total generated tokens:"), r["throughput"]["output_tokens"].to_string());
    for (label, pointer) in [
        ("Benchmark duration (s):", "/throughput/duration_s"),
        ("Request throughput (req/s):", "/throughput/requests_per_s"),
        ("Output token throughput (tok/s):", "/throughput/output_tokens_per_s"),
        ("Total Token throughput (tok/s):", "/throughput/total_tokens_per_s"),
        ("Mean TTFT (ms):", "/latency_ms/ttft_mean"),
        ("Median TTFT (ms):", "/latency_ms/ttft_p50"),
        ("P99 TTFT (ms):", "/latency_ms/ttft_p99"),
        ("Mean TPOT (ms):", "/latency_ms/tpot_mean"),
        ("Median TPOT (ms):", "/latency_ms/tpot_p50"),
        ("P99 TPOT (ms):", "/latency_ms/tpot_p99"),
        ("Mean ITL (ms):", "/latency_ms/itl_mean"),
        ("Median ITL (ms):", "/latency_ms/itl_p50"),
        ("P99 ITL (ms):", "/latency_ms/itl_p99"),
    ] {
        assert_eq!(value(label), format!("{:.2}", num(pointer)), "{label}");
    }
    assert!(num("/requests/finished") > 0.0 && num("/latency_ms/itl_p50") > 0.0);
    for heading in [
        "---------------Time to First Token----------------",
        "-----Time per Output Token (excl. 1st token)------",
        "---------------Inter-token Latency----------------",
    ] {
        assert!(lines.contains(&heading), "no {heading} in\n{text}");
    }
}
