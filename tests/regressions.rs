//! One regression test per bug fixed, each opening with a line that says what broke.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::preset;
use kvlab::calibrate::backend::{BlockPoolBackend, PoolGeometry};
use kvlab::calibrate::host::HostPool;
use kvlab::engine::Simulation;
use kvlab::formats::preset::parse_preset;
use kvlab::missions::mission::parse_mission;

/// Broke: requests arriving during the last step were never counted, so `requests.arrived`
/// changed with unrelated knobs (175 vs 176 for the same seed and traffic).
#[test]
fn arrivals_before_the_end_are_counted_whatever_the_last_step_length() {
    let base = preset("long-report-2gb");
    let expected = Simulation::new(base.clone()).unwrap().requests().len() as u32;
    for max_num_seqs in [4, 16, 256] {
        let mut c = base.clone();
        c.scheduler.max_num_seqs = max_num_seqs;
        let r = Simulation::new(c).unwrap().run_to_end();
        assert_eq!(r.requests.arrived, expected, "max_num_seqs {max_num_seqs}");
    }
}

/// Broke: serde reads a JSON array as a struct by position, so `"scheduler": [1, 2]` silently
/// meant max_num_seqs 1 and max_num_batched_tokens 2, and `["kvlab/preset@1"]` was a preset.
#[test]
fn arrays_where_objects_belong_are_refused_with_the_field() {
    let e = parse_preset(r#"{"schema":"kvlab/preset@1","scheduler":[1,2]}"#).unwrap_err();
    assert_eq!(e.field, "scheduler", "{e}");
    let e = parse_preset(r#"["kvlab/preset@1"]"#).unwrap_err();
    assert!(e.message.contains("JSON object"), "{e}");
}

/// Broke: a JSON syntax error was reported against a field named "?".
#[test]
fn a_syntax_error_names_no_field() {
    let e = parse_preset(r#"{"schema":"kvlab/preset@1","seed":"#).unwrap_err();
    assert_eq!(e.field, "");
    assert!(e.message.starts_with("not valid JSON"), "{e}");
    let e = parse_mission(r#"{"schema":"#).unwrap_err();
    assert_eq!(e.field, "");
}

/// Broke: running a mission file as a preset said "unknown field `number`".
#[test]
fn a_mission_given_as_a_preset_says_what_it_is() {
    let text = std::fs::read_to_string(common::repo_path("assets/missions/m1-paging.json")).unwrap();
    let e = parse_preset(&text).unwrap_err();
    assert_eq!(e.field, "schema");
    assert!(e.message.contains("mission"), "{e}");
}

/// Broke: the host pool's contiguous copy started wherever the allocator put it, so its reads
/// straddled cache lines and contiguous looked slower than it is (the calibrated paged overhead
/// came out too low). The copy now starts on a 64-byte line, and reads back the paged checksum.
#[test]
fn the_host_pools_contiguous_copy_starts_on_a_cache_line() {
    let g = PoolGeometry { num_blocks: 64, block_size: 16, planes: 4, plane_bytes: 8 };
    let mut pool = HostPool::new(g).unwrap();
    for b in 0..64 {
        pool.write_tokens(b, 0, 16, u64::from(b));
    }
    let tables: [&[u32]; 3] = [&[5, 9, 2], &[40], &[63, 0, 17, 33]];
    for tokens in [[33, 7, 50], [1, 16, 64], [48, 3, 49]] {
        pool.stage_contiguous(&tables, &tokens);
        assert_eq!(pool.staged_line_offset_bytes(), 0, "tokens {tokens:?}");
        assert_eq!(pool.gather_contiguous().checksum, pool.gather(&tables, &tokens).checksum);
    }
}

/// Broke (found by `scripts/soak.sh`, case 0x710240423c993043): a v0 sample group swapped out in
/// the middle of its chunked prefill came back and was given decode work for samples that had no
/// block table yet ("blocks_needed on unknown seq").
#[test]
fn a_group_swapped_out_mid_prefill_comes_back_without_decoding_unforked_samples() {
    let text = r#"{"allocator":{"block_size":128,"kind":"paged","prefix_caching":false},"duration_s":8.0,"gpu":"h200","id":"fuzz-927b388762273d6a","kv_dtype":"fp8","kv_memory_gib":0.1832,"model":"llama-3-8b","scheduler":{"chunked_prefill":true,"engine":"v0","max_model_len":2048,"max_num_batched_tokens":256,"max_num_seqs":32,"preemption":"swap","swap_space_gib":0.01,"watermark":0.01},"schema":"kvlab/preset@1","seed":460706117188913911,"workload":{"arrival":{"bursts":[],"kind":"poisson","rate_per_s":30.0},"classes":[{"max_tokens":16,"n":2,"name":"class0","output_tokens":{"mean":128.0,"p99":128.0},"prompt_tokens":{"mean":64.0,"p99":96.0},"shared_prefix_tokens":100,"weight":1.0},{"max_tokens":256,"n":1,"name":"class1","output_tokens":{"mean":500.0,"p99":2500.0},"prompt_tokens":{"mean":300.0,"p99":900.0},"shared_prefix_tokens":1000,"weight":0.1},{"max_tokens":2048,"n":1,"name":"class2","output_tokens":{"mean":1.0,"p99":5.0},"prompt_tokens":{"mean":1.0,"p99":1.5},"shared_prefix_tokens":16,"weight":1.0}]}}"#;
    let mut sim = Simulation::new(parse_preset(text).unwrap()).unwrap();
    while sim.step() {
        sim.check_invariants().unwrap();
    }
    assert!(sim.report().swap_preemptions > 0, "the case swaps");
}
