//! `kvlab plan --gpu …`: the KV budget from the GPU up, vLLM's startup lines, per-GPU and
//! per-replica figures, and vLLM's startup refusals with vLLM's messages.
#![cfg(not(target_arch = "wasm32"))]

use std::process::{Command, Output};

fn kvlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvlab")).args(args).output().expect("kvlab runs")
}

fn plan(extra: &[&str]) -> Output {
    let mut args = vec!["plan", "--prompt-tokens", "1000", "--output-tokens", "300", "--max-tokens", "1024"];
    args.extend_from_slice(extra);
    kvlab(&args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn llama3_70b_plans_on_four_h100s_at_0_9() {
    let o = plan(&[
        "--model",
        "llama-3-70b",
        "--gpu",
        "h100-sxm",
        "--gpu-memory-utilization",
        "0.9",
        "--tensor-parallel-size",
        "4",
        "--max-model-len",
        "8192",
    ]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    let pos = |needle: &str| out.find(needle).unwrap_or_else(|| panic!("`{needle}` missing:\n{out}"));
    // vLLM's order: model loading, CUDA graphs, available KV, KV cache size, the breakdown.
    let order = [
        pos("Model loading took 32.88 GiB memory"),
        pos("Estimated CUDA graph memory"),
        pos("Available KV cache memory: "),
        pos("GPU KV cache size: "),
        pos("Free memory on device (79.22/79.22 GiB) on startup. Desired GPU memory utilization is (0.9, 71.3 GiB)."),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{out}");
    assert!(out.contains("Maximum concurrency for 8,192 tokens per request: "), "{out}");
    assert!(out.contains("per GPU: 2 of 8 KV heads, 81,920 KV bytes per token"), "{out}");
    assert!(out.contains("per replica (4 GPUs): weights 131.5 GiB"), "{out}");
}

#[test]
fn one_h100_cannot_hold_llama3_70b() {
    let o = plan(&["--model", "llama-3-70b", "--gpu", "h100-sxm", "--max-model-len", "8192"]);
    assert!(!o.status.success());
    // The weights alone (131.5 GiB) are more than the GPU: vLLM runs out of memory loading
    // them, and the refusal names the tensor-parallel size at which the server starts. At TP 2
    // the weights load (65.75 GiB per GPU), but NVLink's 2.1 GiB of non-torch memory, the
    // profiling pass and the CUDA graphs leave 0.95 GiB, less than one 8,192-token request's
    // 1.25 GiB: TP 4.
    let e = stderr(&o);
    assert!(
        e.contains("--model: llama-3-70b needs 131.5 GiB of weights on one h100-sxm, more than its 79.2 GiB free"),
        "{e}"
    );
    assert!(e.contains("use tensor_parallel_size 4 or more"), "{e}");
}

#[test]
fn a_32k_context_on_too_little_memory_is_refused_with_vllms_estimate() {
    let o = plan(&["--model", "llama-3-8b", "--gpu", "l4", "--max-model-len", "32768"]);
    let err = stderr(&o);
    assert!(!o.status.success(), "{}", stdout(&o));
    assert!(
        err.contains("To serve at least one request with the model's max seq len (32768), (4.0 GiB KV cache is needed, which is larger than the available KV cache memory ("),
        "{err}"
    );
    assert!(err.contains("Based on the available memory, the estimated maximum model length is "), "{err}");
    // What vLLM logged before refusing.
    assert!(stdout(&o).contains("Available KV cache memory: "), "{}", stdout(&o));
    // The same setup with the estimate vLLM suggests starts.
    let estimate: String = err
        .split("the estimated maximum model length is ")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let ok = plan(&["--model", "llama-3-8b", "--gpu", "l4", "--max-model-len", &estimate]);
    assert!(ok.status.success(), "{}", stderr(&ok));
}

#[test]
fn block_size_8_is_refused_under_flash_attention_and_the_backend_is_a_knob() {
    let o = plan(&["--model", "llama-3-8b", "--gpu", "h100-sxm", "--max-model-len", "8192", "--block-size", "8"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(
            "Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. Reason: ['block_size not supported']"
        ),
        "{}",
        stderr(&o)
    );
    let cpu =
        plan(&["--model", "llama-3-8b", "--gpu", "h100-sxm", "--max-model-len", "8192", "--attention-backend", "cpu"]);
    assert!(stderr(&cpu).contains("AttentionBackendEnum.CPU_ATTN"), "{}", stderr(&cpu));
}

#[test]
fn a_second_instance_must_fit_beside_the_first() {
    let args = ["--model", "llama-3-8b", "--gpu", "h100-sxm", "--max-model-len", "8192", "--other-processes-gib", "40"];
    let o = plan(&args);
    assert!(
        stderr(&o).contains("Free memory on device cuda:0 (39.22/79.22 GiB) on startup is less than desired GPU memory utilization (0.9, 71.3 GiB)."),
        "{}",
        stderr(&o)
    );
    let mut fits = args.to_vec();
    fits.extend_from_slice(&["--gpu-memory-utilization", "0.45"]);
    assert!(plan(&fits).status.success());
}

#[test]
fn json_carries_the_budget_and_kv_gib_still_works() {
    let o = plan(&[
        "--model",
        "mistral-7b",
        "--gpu",
        "a100-80gb",
        "--max-model-len",
        "8192",
        "--tensor-parallel-size",
        "2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(doc["budget"]["tensor_parallel_size"], 2);
    assert_eq!(doc["budget"]["kv_heads_per_gpu"], 4);
    assert!(doc["budget"]["kv_cache_tokens"].as_u64().unwrap() > 0);
    assert_eq!(doc["attention_backend"], "FLASH_ATTN");

    let old = plan(&["--model", "llama-3-8b", "--kv-gib", "10", "--max-model-len", "8192"]);
    assert!(stdout(&old).contains("GPU KV cache size: 81,920 tokens"), "{}", stdout(&old));
    let neither = plan(&["--model", "llama-3-8b", "--max-model-len", "8192"]);
    assert!(!neither.status.success());
    let both = plan(&["--model", "llama-3-8b", "--kv-gib", "10", "--gpu", "l4", "--max-model-len", "8192"]);
    assert!(!both.status.success());
}
