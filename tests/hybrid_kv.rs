//! vLLM v1's hybrid KV cache in the simulation (`src/engine/alloc/paged/groups.rs`): models with
//! sliding-window or chunked layers keep a block table per KV cache group, share one pool of
//! page-sized blocks, and free the blocks behind a window. Checked here: the pool vLLM's startup
//! arithmetic gives, the window changing a run's answer against the same model with every layer
//! full, every invariant after every step (sliding windows, seven groups; a chunked model runs
//! every layer full, as vLLM 0.33.0 does by default), the memory map's
//! groups and freed blocks, and the refusal of prefix caching beside hybrid groups.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{preset, preset_text, repo_path, run_checked};
use kvlab::engine::SimConfig;
use kvlab::engine::{MapCell, Simulation};
use kvlab::formats::preset::parse_preset;
use serde_json::{json, Value};

/// A catalogue model's config.json keys.
fn hf_config(id: &str) -> Value {
    let text = std::fs::read_to_string(repo_path("assets/models/catalogue.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let models = doc["models"].as_array().unwrap();
    models.iter().find(|m| m["id"] == id).unwrap_or_else(|| panic!("{id} in the catalogue"))["hf_config"].clone()
}

/// The `gpt-oss-window` preset with `edit` applied to its JSON.
fn gpt_oss_window(edit: impl FnOnce(&mut Value)) -> Result<SimConfig, kvlab::engine::ConfigError> {
    let mut p: Value = serde_json::from_str(&preset_text("gpt-oss-window")).unwrap();
    edit(&mut p);
    parse_preset(&p.to_string())
}

/// gpt-oss-20b with every layer full attention: the same bytes per token, weights and time.
fn every_layer_full(p: &mut Value) {
    let mut hf = hf_config("openai/gpt-oss-20b");
    hf["layer_types"] = json!(vec!["full_attention"; 24]);
    p["model"] = json!({ "hf_config": hf });
}

#[test]
fn the_pool_holds_the_blocks_vllms_startup_arithmetic_gives() {
    let c = preset("gpt-oss-window");
    // 12 layers a group, 16 tokens of 8 KV heads × 64 × 2 (K, V) × 2 bytes: 384 KiB a block.
    assert_eq!(c.bytes_per_block(16), 12 * 16 * 8 * 64 * 2 * 2);
    assert_eq!(c.num_gpu_blocks(), Some(6 * (1 << 30) / (384 * 1024)));
    assert_eq!(c.kv_cache_group_kinds().map(|k| k.len()), Some(2));
    let full = gpt_oss_window(every_layer_full).unwrap();
    assert_eq!(full.kv_cache_group_kinds(), None);
    assert_eq!(full.kv_bytes_per_token(), c.kv_bytes_per_token(), "the formula's 48 KiB a token either way");
    let sim = Simulation::new(c).unwrap();
    // vLLM prints blocks ÷ groups × block size tokens, and a concurrency above the formula's 8x.
    assert_eq!(
        sim.report().capacity_line,
        "GPU KV cache size: 131,072 tokens, Maximum concurrency for 16,384 tokens per request: 10.60x"
    );
}

/// The mission's fix: on 6 GiB the window's blocks are freed as decode goes on, so the replica
/// runs every request the traffic brings without preempting, more at once than the formula
/// allows; with every layer full the same 6 GiB queues and preempts.
#[test]
fn the_sliding_window_changes_the_answer() {
    let (_, hybrid) = run_checked(preset("gpt-oss-window"));
    let (_, full) = run_checked(gpt_oss_window(every_layer_full).unwrap());
    assert!(hybrid.latency_ms.ttft_p95 <= 1000.0, "{}", hybrid.latency_ms.ttft_p95);
    assert_eq!(hybrid.preemptions, 0);
    assert!(full.latency_ms.ttft_p95 > 3000.0, "{}", full.latency_ms.ttft_p95);
    assert!(full.preemptions > 10, "{}", full.preemptions);
    assert!(hybrid.running_max > full.running_max, "{} vs {}", hybrid.running_max, full.running_max);
}

/// Runs `config` with the checker after every step, and counts the steps whose memory map shows
/// a block of a group above 0 and a free block freed behind the window.
fn run_hybrid(what: &str, config: SimConfig) -> (u64, u64) {
    let groups = config.kv_cache_group_kinds().unwrap_or_else(|| panic!("{what}: hybrid")).len();
    let mut sim = Simulation::new(config).unwrap();
    let (mut grouped, mut behind) = (0, 0);
    while sim.step() {
        sim.check_invariants().unwrap_or_else(|e| panic!("{what}: step {}: {e}", sim.steps()));
        if sim.steps() % 25 == 0 {
            let map = sim.memory_map();
            assert!(map.cells.iter().all(|c| usize::from(c.group) < groups), "{what}: a group id past the groups");
            grouped += u64::from(map.cells.iter().any(|c| c.group + 1 == groups as u8 && !c.is_free()));
            behind += u64::from(map.cells.iter().any(|c| c.is_free() && c.flags & MapCell::BEHIND_WINDOW != 0));
        }
    }
    assert!(sim.report().requests.finished > 10, "{what}: too few finished");
    (grouped, behind)
}

#[test]
fn hybrid_models_keep_every_invariant_at_every_step() {
    let short = |p: &mut Value| {
        p["duration_s"] = json!(20);
        p["kv_memory_gib"] = json!(1.5);
        p["scheduler"]["max_num_batched_tokens"] = json!(1024);
    };
    // gpt-oss under memory pressure (preemptions) with small chunks, two block sizes.
    for bs in [16, 32] {
        let c = gpt_oss_window(|p| {
            short(p);
            p["allocator"]["block_size"] = json!(bs);
        })
        .unwrap();
        let (grouped, behind) = run_hybrid(&format!("gpt-oss, block size {bs}"), c);
        assert!(grouped > 0 && behind > 0, "block size {bs}: {grouped} {behind}");
    }
    // gemma-3-4b: 29 sliding layers of 1,024 tokens and 5 global ones, seven groups of five.
    let c = gpt_oss_window(|p| {
        short(p);
        p["model"] = json!("google/gemma-3-4b-it");
        p["workload"]["classes"][0]["prompt_tokens"] = json!({ "mean": 2500, "p99": 6000 });
    })
    .unwrap();
    assert_eq!(c.kv_cache_group_kinds().unwrap().len(), 7);
    let (grouped, behind) = run_hybrid("gemma-3-4b", c);
    assert!(grouped > 0 && behind > 0, "gemma-3-4b: {grouped} {behind}");
    // Llama-4's chunked local attention: vLLM 0.33.0 turns its hybrid manager off for it by
    // default (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE unset), so every layer is full.
    let c = gpt_oss_window(|p| {
        short(p);
        p["model"] = json!("meta-llama/Llama-4-Scout-17B-16E-Instruct");
        p["tensor_parallel_size"] = json!(4);
        p["kv_memory_gib"] = json!(4);
    })
    .unwrap();
    assert_eq!(c.kv_cache_group_kinds(), None);
    assert_eq!(c.num_gpu_blocks(), Some(4 * (1 << 30) / c.kv_bytes_per_token() / 16));
}

#[test]
fn prefix_caching_beside_hybrid_groups_is_refused_and_v0_runs_every_layer_full() {
    let e = gpt_oss_window(|p| p["allocator"]["prefix_caching"] = json!(true)).unwrap_err();
    assert_eq!(e.field, "allocator.prefix_caching");
    assert!(
        e.message.contains("hybrid KV cache") && e.message.contains("set allocator.prefix_caching to false"),
        "{e}"
    );
    let v0 = gpt_oss_window(|p| {
        p["scheduler"]["engine"] = json!("v0");
        p["allocator"]["prefix_caching"] = json!(true);
    })
    .unwrap();
    assert_eq!(v0.kv_cache_group_kinds(), None, "vLLM v0 has no hybrid allocator");
    let full = gpt_oss_window(every_layer_full).unwrap();
    assert_eq!(v0.num_gpu_blocks(), full.num_gpu_blocks());
}

/// The map's inspector reads every group's table of a request: at 20 s some running request of
/// `gpt-oss-window` has freed blocks behind the window in its sliding group (group 0, nulls at
/// its head) while its full-attention group (group 1) holds every block.
#[test]
fn a_requests_view_shows_each_groups_table() {
    let mut sim = Simulation::new(preset("gpt-oss-window")).unwrap();
    sim.run_until(20_000_000);
    let views: Vec<_> = (0..sim.groups().len() as u32).filter_map(|r| sim.request_view(r)).collect();
    let tables: Vec<&Vec<Vec<u32>>> =
        views.iter().flat_map(|v| &v.samples).map(|s| &s.kv_cache_groups).filter(|t| !t.is_empty()).collect();
    assert!(!tables.is_empty(), "running requests at 20 s");
    for t in &tables {
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].len(), t[1].len(), "both groups cover the request's tokens");
        assert!(!t[1].contains(&0), "full attention keeps every block");
    }
    assert!(tables.iter().any(|t| t[0].first() == Some(&0)), "a sliding group freed blocks behind its window");
}
