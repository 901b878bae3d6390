//! The `kvlab` binary as a user runs it: every shipped preset, the Belgavi plan, and bad input
//! that must exit non-zero with a message naming the field — never a panic.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::process::{Command, Output};

use common::{repo_path, shipped_presets};

fn kvlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvlab")).args(args).output().expect("kvlab runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write_tmp(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("kvlab-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn run_prints_a_summary_and_the_report_json_for_every_shipped_preset() {
    for id in shipped_presets() {
        let path = repo_path(&format!("assets/presets/{id}.json"));
        let path = path.to_str().unwrap();
        let o = kvlab(&["run", path]);
        assert!(o.status.success(), "{id}: {}", stderr(&o));
        assert!(stdout(&o).contains("GPU KV cache size:"), "{id}");
        let o = kvlab(&["run", path, "--json"]);
        assert!(o.status.success(), "{id}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("report JSON");
        for key in ["kv_bytes_per_token", "capacity_tokens", "steps", "preemptions", "hol_blocked_steps"] {
            assert!(v.get(key).is_some(), "{id}: report lacks {key}");
        }
        assert_eq!(v["preset"], id.as_str());
        assert!(v["kv"]["utilization_mean"].as_f64().is_some());
    }
}

#[test]
fn run_replays_a_trace() {
    let preset = repo_path("assets/presets/paged-default.json");
    let trace = repo_path("assets/traces/sample.csv");
    let o = kvlab(&["run", preset.to_str().unwrap(), "--trace", trace.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["requests"]["arrived"], 7);
    assert_eq!(v["requests"]["finished"], 7);
}

const BELGAVI: &[&str] = &[
    "plan",
    "--model",
    "llama-3-8b",
    "--kv-gib",
    "24",
    "--prompt-tokens",
    "1100",
    "--output-tokens",
    "250",
    "--max-tokens",
    "2048",
    "--max-model-len",
    "8192",
    "--block-size",
    "16",
];

#[test]
fn plan_prints_the_belgavi_figures_and_the_vllm_startup_line() {
    let o = kvlab(BELGAVI);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("GPU KV cache size: 196,608 tokens, Maximum concurrency for 8,192 tokens per request: 24.00x"),
        "{out}"
    );
    assert!(out.contains("at most 62 sequences"), "{out}");
    assert!(out.contains("24 sequences"), "{out}");
    let mut json = BELGAVI.to_vec();
    json.push("--json");
    let v: serde_json::Value = serde_json::from_str(&stdout(&kvlab(&json))).unwrap();
    assert_eq!(v["kv_bytes_per_token"], 131072);
    assert_eq!(v["capacity_tokens"], 196608);
    assert_eq!(v["max_seqs"]["contiguous_prompt_plus_max_tokens"], 62);
    assert_eq!(v["max_seqs"]["contiguous_max_model_len"], 24);
    let paged = v["max_seqs"]["paged"].as_u64().unwrap();
    assert!((157..=161).contains(&paged), "{paged}");
}

#[test]
fn plan_with_fp8_doubles_capacity() {
    let mut args = BELGAVI.to_vec();
    args.extend(["--kv-dtype", "fp8", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&kvlab(&args))).unwrap();
    assert_eq!(v["capacity_tokens"], 393216);
}

fn assert_fails_naming(o: &Output, needle: &str) {
    assert!(!o.status.success(), "should fail");
    assert_ne!(o.status.code(), Some(101), "a panic reached the user: {}", stderr(o));
    assert!(stderr(o).contains(needle), "message should name {needle:?}: {}", stderr(o));
}

#[test]
fn bad_flags_fail_with_a_message() {
    assert_fails_naming(
        &kvlab(&[
            "plan",
            "--model",
            "gpt-9",
            "--kv-gib",
            "24",
            "--prompt-tokens",
            "1",
            "--output-tokens",
            "1",
            "--max-tokens",
            "1",
            "--max-model-len",
            "10",
        ]),
        "--model",
    );
    let mut args = BELGAVI.to_vec();
    args[4] = "-3";
    assert_fails_naming(&kvlab(&args), "kv-gib");
    let mut args = BELGAVI.to_vec();
    args[14] = "0";
    assert_fails_naming(&kvlab(&args), "block-size");
    assert_fails_naming(&kvlab(&["run"]), "PRESET");
    assert_fails_naming(&kvlab(&["frobnicate"]), "frobnicate");
}

#[test]
fn bad_presets_fail_naming_the_field() {
    let cases = [
        (r#"{"schema":"kvlab/preset@1","scheduler":{"max_num_seqs":0}}"#, "scheduler.max_num_seqs"),
        (r#"{"schema":"kvlab/preset@1","scheduler":{"max_num_seqs":"many"}}"#, "scheduler.max_num_seqs"),
        (r#"{"schema":"kvlab/preset@1","kv_memroy_gib":10}"#, "kv_memroy_gib"),
        (r#"{"schema":"kvlab/preset@2"}"#, "schema"),
        (r#"{"schema":"kvlab/preset@1","gpu":"tpu"}"#, "gpu"),
        (r#"{"schema":"kvlab/preset@1","allocator":{"kind":"paged","block_size":512}}"#, "allocator.block_size"),
        (
            r#"{"schema":"kvlab/preset@1","workload":{"classes":[{"prompt_tokens":{"mean":100,"p99":50},"output_tokens":{"mean":10,"p99":20}}]}}"#,
            "workload.classes[0].prompt_tokens",
        ),
        (r#"{"schema":"kvlab/preset@1","kv_memory_gib":0.1}"#, "workload.classes[0].max_tokens"),
        (r#"{"schema":"kvlab/preset@1","#, "JSON"),
    ];
    for (i, (json, field)) in cases.iter().enumerate() {
        let path = write_tmp(&format!("bad{i}.json"), json);
        assert_fails_naming(&kvlab(&["run", &path]), field);
        assert_fails_naming(&kvlab(&["check", &path]), field);
    }
    assert_fails_naming(&kvlab(&["run", "/nonexistent/preset.json"]), "cannot read");
}

#[test]
fn check_accepts_every_shipped_preset() {
    for id in shipped_presets() {
        let path = repo_path(&format!("assets/presets/{id}.json"));
        let o = kvlab(&["check", path.to_str().unwrap()]);
        assert!(o.status.success(), "{id}: {}", stderr(&o));
    }
}

#[test]
fn run_writes_the_series_as_csv() {
    let preset = repo_path("assets/presets/paged-default.json");
    let out = std::env::temp_dir().join(format!("kvlab-series-{}.csv", std::process::id()));
    let o = kvlab(&["run", preset.to_str().unwrap(), "--series", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(&out).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("allocator,t_s,allocated_tokens,live_tokens,running,waiting,swapped,preemptions"));
    let rows: Vec<&str> = lines.collect();
    assert!(rows.len() > 1000, "{} rows", rows.len());
    assert!(rows.iter().all(|r| r.starts_with("paged,") && r.split(',').count() == 8));
}

#[test]
fn a_preset_names_a_shipped_calibration_and_the_report_says_so() {
    let ok = write_tmp(
        "cal.json",
        r#"{"schema":"kvlab/preset@1","allocator":{"kind":"paged"},"calibration":"host-xeon-2core"}"#,
    );
    let o = kvlab(&["run", &ok, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["calibration"], "host-xeon-2core");
    let bad = write_tmp("cal-bad.json", r#"{"schema":"kvlab/preset@1","calibration":"nope"}"#);
    assert_fails_naming(&kvlab(&["run", &bad]), "calibration");
}

/// `kvlab replay` writes the reference harness's JSON: vLLM's own figures for the same trace and
/// flags come back step for step (tests/vllm_parity.rs compares every field; this checks the
/// command line end to end on one golden).
#[test]
fn replay_writes_the_harness_json_and_agrees_with_vllm() {
    let trace = repo_path("tests/golden/vllm/traces/preemption_storm.csv");
    let o = kvlab(&[
        "replay",
        trace.to_str().unwrap(),
        "--num-blocks",
        "384",
        "--max-num-seqs",
        "64",
        "--max-num-batched-tokens",
        "2048",
        "--max-model-len",
        "2048",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ours: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let golden: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo_path("tests/golden/vllm/preemption_storm.json")).unwrap())
            .unwrap();
    for field in ["num_running", "num_waiting", "preemptions_cum", "tokens_scheduled", "finished"] {
        assert_eq!(ours["per_step"][field], golden["per_step"][field], "per_step.{field}");
    }
    assert_eq!(ours["summary"]["total_preemptions"], 93);
}

#[test]
fn replay_refuses_bad_flags_and_traces_naming_them() {
    let trace = repo_path("tests/golden/vllm/traces/long_prompts.csv");
    let o = kvlab(&["replay", trace.to_str().unwrap(), "--num-blocks", "1200", "--max-num-batched-tokens", "512"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--max-num-batched-tokens") && stderr(&o).contains("--chunked-prefill"),
        "{}",
        stderr(&o)
    );
    let bad = write_tmp("bad-trace.csv", "arrival_step,prompt_tokens,output_tokens\n0,12,x\n");
    let o = kvlab(&["replay", &bad, "--num-blocks", "100"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("line 2: output_tokens must be a whole number"), "{}", stderr(&o));
    let o = kvlab(&["replay", &bad, "--num-blocks", "100", "--engine", "v2"]);
    assert_eq!(o.status.code(), Some(2), "clap refuses an unknown engine");
}

/// A mission whose broken server vLLM refuses to start: `check` passes (0 stars broken, 3 fixed)
/// and prints vLLM's refusal; `mission` scores it 0 with the refusal, and `--json` has no report.
#[test]
fn a_mission_that_does_not_start_is_scored_with_vllms_words() {
    let path = repo_path("assets/missions/m8-max-model-len.json");
    let path = path.to_str().unwrap();
    let o = kvlab(&["check", path]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("broken setup: 0 of 3 stars\n  0 stars: the server did not start: To serve at least one request with the model's max seq len (32768)"), "{out}");
    assert!(out.contains("the estimated maximum model length is 6736"), "{out}");
    assert!(out.contains("3 of 3 stars"), "{out}");
    let o = kvlab(&["mission", path]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("0 stars: the server did not start:"), "{}", stdout(&o));
    let o = kvlab(&["mission", path, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert!(v["report"].is_null());
    assert_eq!(v["score"]["stars"], 0);
    assert!(v["score"]["startup_refusal"].as_str().unwrap().contains("estimated maximum model length"));
    // A malformed patch is still an error naming the field.
    let patch = write_tmp("bad-patch.json", r#"{"scheduler": {"max_num_batched_tokens": 0}}"#);
    assert_fails_naming(&kvlab(&["mission", path, "--patch", &patch]), "scheduler.max_num_batched_tokens");
}

/// `kvlab run --clock kernels` prices the run's steps from its GPU's measured kernels and says
/// so; a GPU the kernel database does not cover is refused with the ones it does, and so is a
/// model the tables cannot price.
#[test]
fn run_on_the_kernel_clock_says_which_clock_it_ran() {
    let path = repo_path("assets/presets/bench-concurrency.json");
    let path = path.to_str().unwrap();
    let o = kvlab(&["run", path, "--clock", "kernels"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("clock: step times from kernels measured on the h100_sxm with vLLM 0.24.0"),
        "{}",
        stdout(&o)
    );
    let roofline = stdout(&kvlab(&["run", path]));
    assert!(roofline.contains("clock: step times checked against"), "{roofline}");
    let text = std::fs::read_to_string(path).unwrap().replace(r#""gpu": "h100-sxm""#, r#""gpu": "h100-pcie""#);
    let o = kvlab(&["run", &write_tmp("on-h100-pcie.json", &text), "--clock", "kernels"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no kernel tables for the h100-pcie") && stderr(&o).contains("h100-sxm"),
        "{}",
        stderr(&o)
    );
    // The lab's Llama-3-8B is priced as its catalogue twin; its Mistral-7B has none.
    let paged = repo_path("assets/presets/paged-default.json");
    let o = kvlab(&["run", paged.to_str().unwrap(), "--clock", "kernels"]);
    assert!(stdout(&o).contains("clock: step times from kernels measured"), "{}", stderr(&o));
    let text = std::fs::read_to_string(&paged).unwrap().replace(r#""model": "llama-3-8b""#, r#""model": "mistral-7b""#);
    let o = kvlab(&["run", &write_tmp("mistral.json", &text), "--clock", "kernels"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot price mistral-7b"), "{}", stderr(&o));
}

#[test]
fn kv_offload_gib_adds_a_host_tier_to_run_plan_and_sweep_and_bad_sizes_name_the_flag() {
    let preset = repo_path("assets/presets/mooncake-conversation.json");
    let preset = preset.to_str().unwrap();
    let o = kvlab(&["run", preset, "--kv-offload-gib", "256"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("host tier: 256 GiB (131,072 blocks"), "{}", stdout(&o));
    // The summary sets the run beside the same run without the tier.
    let example = repo_path("docs/examples/host-tier.json");
    let o = kvlab(&["run", example.to_str().unwrap()]);
    let text = stdout(&o);
    let saved = text.lines().find(|l| l.starts_with("without the host tier:")).unwrap_or_else(|| panic!("{text}"));
    let without = kvlab(&["run", example.to_str().unwrap(), "--kv-offload-gib", "0"]);
    let ttft =
        |t: &str| t.lines().find(|l| l.starts_with("TTFT p50")).map(|l| l.split(',').next().unwrap().to_string());
    let p50 = ttft(&stdout(&without)).expect("a TTFT line").replace("TTFT ", "");
    assert!(saved.contains(&p50), "the line quotes the run without the tier ({p50}): {saved}");
    assert!(saved.contains("the tier's hits saved TTFT p50"), "{saved}");
    assert!(!stdout(&without).contains("without the host tier"), "no such line without a tier");
    let o = kvlab(&["run", preset, "--kv-offload-gib", "256", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("report JSON");
    assert_eq!(report["offload"]["capacity_blocks"], 131_072);
    assert!(report["offload"]["stored_bytes"].as_u64().unwrap() > 0, "prompt blocks are written through");
    // 0 takes the tier away; a negative size or one on the contiguous allocator names the flag.
    let o = kvlab(&["run", preset, "--kv-offload-gib", "0", "--json"]);
    assert!(!stdout(&o).contains("\"offload\""));
    assert_fails_naming(&kvlab(&["run", preset, "--kv-offload-gib", "-3"]), "--kv-offload-gib -3");
    let contiguous = repo_path("assets/presets/contiguous-default.json");
    assert_fails_naming(&kvlab(&["run", contiguous.to_str().unwrap(), "--kv-offload-gib", "8"]), "prefix_caching");
    let o = kvlab(&[
        "plan",
        "--model",
        "llama-3-8b",
        "--kv-gib",
        "20",
        "--max-model-len",
        "8192",
        "--kv-offload-gib",
        "256",
    ]);
    assert!(stdout(&o).contains("host tier of 256 GiB: 131,072 blocks, 2,097,152 tokens"), "{}", stdout(&o));
    let o =
        kvlab(&["sweep", preset, "--kv-offload-gib", "1", "--knob", "kv_offload.cpu_gib", "--values", "1,64", "--csv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().filter(|l| l.contains(",paged,")).count(), 2, "{}", stdout(&o));
}

#[test]
fn a_fleet_runs_from_the_command_line_and_its_flags_name_themselves() {
    let preset = repo_path("docs/examples/fleet-prefix.json");
    let preset = preset.to_str().unwrap();
    let o = kvlab(&["run", preset, "--router", "round_robin"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("fleet: 4 replicas behind round_robin"), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("  replica ")).count(), 4, "{text}");
    let o = kvlab(&["run", preset, "--replicas", "2", "--router", "kv_aware", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("report JSON");
    assert_eq!(report["fleet"]["replicas"], 2);
    assert_eq!(report["fleet"]["policy"], "kv_aware");
    let o = kvlab(&["run", preset, "--replicas", "1", "--json"]);
    assert!(!stdout(&o).contains("\"fleet\""), "one replica has no fleet object");
    assert_fails_naming(&kvlab(&["run", preset, "--replicas", "99"]), "--replicas 99");
    assert_fails_naming(&kvlab(&["run", preset, "--router", "fastest"]), "--router fastest");
    assert_fails_naming(&kvlab(&["run", preset, "--router-weights", "1,2"]), "--router-weights 1,2");
    assert_fails_naming(&kvlab(&["run", preset, "--prefix-index", "exact"]), "--prefix-index exact");
    assert_fails_naming(
        &kvlab(&["sweep", preset, "--min-replicas-for-ttft-p95-ms", "500", "--replicas-range", "4:2"]),
        "--replicas-range 4:2",
    );
    let o = kvlab(&["sweep", preset, "--min-replicas-for-ttft-p95-ms", "500", "--replicas-range", "1:8", "--json"]);
    let found: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    assert_eq!(found["replicas"], 3);
    assert_eq!(found["misses_at_replicas"], 2);
    // The sweep takes the router over the preset's: behind round robin the search needs four.
    let o = kvlab(&[
        "sweep",
        preset,
        "--min-replicas-for-ttft-p95-ms",
        "500",
        "--replicas-range",
        "1:8",
        "--router",
        "round_robin",
        "--json",
    ]);
    let found: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    assert_eq!(found["replicas"], 4);
    assert_fails_naming(
        &kvlab(&["sweep", preset, "--knob", "kv_memory_gib", "--values", "4,6", "--router", "fastest"]),
        "--router fastest",
    );
    assert_fails_naming(
        &kvlab(&["sweep", preset, "--min-replicas-for-ttft-p95-ms", "500", "--replicas", "2"]),
        "--replicas",
    );
    let o = kvlab(&[
        "sweep",
        preset,
        "--knob",
        "duration_s",
        "--values",
        "10",
        "--replicas",
        "2",
        "--router",
        "kv_aware",
        "--json",
    ]);
    let swept: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    let mut two = kvlab::formats::preset::parse_preset(&std::fs::read_to_string(preset).unwrap()).unwrap();
    (two.duration_s, two.replicas, two.router.policy) = (10.0, 2, kvlab::engine::fleet::RouterPolicy::KvAware);
    let r = kvlab::engine::fleet::Fleet::new(two).unwrap().run_to_end();
    assert_eq!(swept["points"][0]["paged"]["ttft_p95_ms"], serde_json::json!(r.latency_ms.ttft_p95), "{swept}");
}
