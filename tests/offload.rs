//! The host-memory KV tier (`kv_offload`, vLLM's `OffloadingConnector`) through the real engine.
//! On a window of the real Mooncake conversation trace with a GPU pool too small for its shared
//! prefixes and a host tier twenty times larger, the tier's hits plus the GPU's equal an
//! independent count over the trace's hash ids with an LRU of the tier's size; the host raises
//! the combined hit rate over the GPU alone, and requests served from it wait for their loads
//! instead of recomputing. Invariants hold throughout (checked every few steps: the tier holds
//! 280,000 blocks), and event-driven stepping gives the step-by-step run bit for bit.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use kvlab::engine::offload::{KvOffloadConfig, OffloadPolicy};
use kvlab::engine::workload::{Arrival, TraceRow};
use kvlab::engine::{Report, SimConfig, Simulation, Stepping};
use kvlab::formats::preset::parse_preset;

/// The window replayed: the first two minutes (339 requests), played six times slower so that
/// one H100 keeps up (the trace's own rate needs several replicas).
const WINDOW_MS: u64 = 120_000;
const SLOWER: f64 = 6.0;
const TRACE_BLOCK: u32 = 512;
const BLOCK: u32 = 16;
/// GPU blocks: about 1.6 of the window's longest prompts, far fewer than its shared prefixes.
const GPU_BLOCKS: u32 = 14_000;
/// Host chunks (one GPU block each): twenty times the GPU pool, 547 GiB, about what the
/// window's prefixes need to be found again (an LRU of five times the pool finds few more than
/// the GPU: the conversation trace comes back to a prefix after millions of tokens).
const HOST_BLOCKS: u32 = 20 * GPU_BLOCKS;

type Row = common::MooncakeRow;

/// The window's rows.
fn window() -> Vec<Row> {
    common::mooncake_window(WINDOW_MS)
}

/// The full 16-token blocks of a prompt, head first, each named by its trace block's id and its
/// place in it (ids are chained: an equal id is an equal prefix).
fn block_keys(r: &Row) -> Vec<(u32, u32)> {
    (0..r.input / BLOCK)
        .map(|b| {
            let i = (b * BLOCK / TRACE_BLOCK) as usize;
            (r.ids[i], b % (TRACE_BLOCK / BLOCK))
        })
        .collect()
}

/// Hits of both tiers counted from the ids alone: in arrival order, each request hits its
/// leading blocks an LRU of `capacity` blocks holds (up to its whole prompt), then every full
/// block of its prompt is used, from its last to its first, so that a prompt's head is the
/// freshest, as vLLM's policy ranks a finished request's blocks.
fn independent_hits(rows: &[Row], capacity: usize) -> u64 {
    let mut lru: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    let mut by_age: BTreeMap<u64, (u32, u32)> = BTreeMap::new();
    let mut clock = 0u64;
    let mut hits = 0u64;
    for r in rows {
        let keys = block_keys(r);
        let held = keys.iter().take_while(|k| lru.contains_key(k)).count() as u64;
        hits += held * u64::from(BLOCK);
        for k in keys.iter().rev() {
            clock += 1;
            if let Some(old) = lru.insert(*k, clock) {
                by_age.remove(&old);
            }
            by_age.insert(clock, *k);
            if lru.len() > capacity {
                let (_, oldest) = by_age.pop_first().expect("not empty");
                lru.remove(&oldest);
            }
        }
    }
    hits
}

/// The window on Llama-3-8B, H100: a pool of `GPU_BLOCKS` blocks, with prefix caching, and a
/// host tier of `HOST_BLOCKS` chunks when `offload`.
fn config(rows: &[Row], offload: bool) -> SimConfig {
    let block_bytes = 131_072 * u64::from(BLOCK);
    let gib = (u64::from(GPU_BLOCKS + 1) * block_bytes) as f64 / (1u64 << 30) as f64;
    let mut config = parse_preset(&format!(
        r#"{{"schema": "kvlab/preset@1", "id": "mooncake-window", "duration_s": 900, "kv_memory_gib": {gib},
            "model": "llama-3-8b", "gpu": "h100-sxm",
            "allocator": {{"kind": "paged", "block_size": {BLOCK}, "prefix_caching": true}},
            "scheduler": {{"max_num_seqs": 256, "max_num_batched_tokens": 8192, "max_model_len": 131072,
                "chunked_prefill": true}}}}"#
    ))
    .expect("valid preset");
    if offload {
        let cpu_gib = (u64::from(HOST_BLOCKS) * block_bytes) as f64 / (1u64 << 30) as f64;
        config.kv_offload = Some(KvOffloadConfig { cpu_gib, policy: OffloadPolicy::Lru });
    }
    let trace: Vec<TraceRow> = rows
        .iter()
        .map(|r| TraceRow {
            hash_ids: Some(Arc::from(r.ids.as_slice())),
            ..TraceRow::new(r.t_ms as f64 / 1000.0 * SLOWER, r.input, r.output.min(64), 1)
        })
        .collect();
    config.workload.arrival = Arrival::Trace { rows: trace.into(), max_tokens: 64, hash_block_tokens: TRACE_BLOCK };
    config.workload.classes.clear();
    config.until_all_finished = true;
    config
}

/// Runs to the end, checking the invariants and the host tier's map every 256 steps and at the
/// end.
fn run_checked(config: SimConfig, stepping: Stepping) -> Report {
    let mut sim = Simulation::new(config).expect("valid config");
    sim.set_stepping(stepping);
    while sim.step() {
        if sim.steps() % 256 == 0 {
            sim.check_invariants().unwrap_or_else(|e| panic!("step {}: {e}", sim.steps()));
            check_host_map(&sim);
        }
    }
    sim.check_invariants().expect("invariants at the end");
    check_host_map(&sim);
    sim.report()
}

/// The host tier's map: a cell per chunk of the tier, as many held as the tier holds, each held
/// one owned by a request that arrived and full unless its store is in flight, and what the
/// inspector reads of a cell agreeing with it.
fn check_host_map(sim: &Simulation) {
    let Some(map) = sim.host_memory_map(usize::MAX) else { return };
    assert_eq!(map.cells.len(), HOST_BLOCKS as usize);
    assert_eq!(map.cell_tokens, BLOCK);
    let held = map.allocated_cells();
    let report = sim.report();
    let resident = report.offload.as_ref().map(|o| o.resident_blocks).unwrap_or(0);
    assert_eq!(held, resident as usize, "step {}", sim.steps());
    for (id, cell) in map.cells.iter().enumerate() {
        let chunk = sim.host_chunk(id as u32);
        assert_eq!(chunk.map(|c| c.owner + 1).unwrap_or(0), cell.owner, "chunk {id}");
        let Some(c) = chunk else { continue };
        assert!(sim.request_view(c.owner).is_some(), "chunk {id} owned by request {}", c.owner);
        assert_eq!(cell.live_tokens == 0, c.ref_cnt < 0, "chunk {id}: live {} ref_cnt {}", cell.live_tokens, c.ref_cnt);
        assert_eq!(cell.flags == kvlab::engine::MapCell::LOADING, c.ref_cnt > 0, "chunk {id}");
    }
}

#[test]
fn a_host_tier_larger_than_the_gpu_pool_hits_as_an_lru_of_its_size_counted_from_the_hash_ids() {
    let rows = window();
    assert_eq!(rows.len(), 339, "the window of the sample");
    let gpu_only = Simulation::new(config(&rows, false)).expect("valid").run_to_end();
    let report = run_checked(config(&rows, true), Stepping::Events);
    let o = report.offload.as_ref().expect("the report has the host tier");
    assert_eq!(o.capacity_blocks, HOST_BLOCKS);
    assert_eq!(report.requests.finished, 339, "{:?}", report.requests);
    // One denominator: every prompt token looked up.
    let prompt_tokens: u64 = rows.iter().map(|r| u64::from(r.input)).sum();
    assert_eq!(report.prefix_cache_queries, prompt_tokens);
    let combined = report.prefix_cache_hits + o.offload_hits;
    let expected = independent_hits(&rows, HOST_BLOCKS as usize);
    let (got_rate, want_rate) = (combined as f64 / prompt_tokens as f64, expected as f64 / prompt_tokens as f64);
    println!(
        "GPU alone {:.4}; with the host tier GPU {:.4} + host {:.4} = {got_rate:.4}; independent LRU count {want_rate:.4}",
        gpu_only.prefix_cache_hit_rate, report.prefix_cache_hit_rate, o.offload_hit_rate
    );
    assert!((got_rate - want_rate).abs() <= 0.01, "combined {got_rate:.4}, independent count {want_rate:.4}");
    assert!(
        o.combined_hit_rate > gpu_only.prefix_cache_hit_rate + 0.05,
        "the host tier raises the hit rate: {} against {}",
        o.combined_hit_rate,
        gpu_only.prefix_cache_hit_rate
    );
    // Every block loaded crossed the link, and every stored block is a prompt block.
    assert!(o.loads > 0 && o.loaded_bytes > 0);
    assert_eq!(o.loaded_bytes % (131_072 * u64::from(BLOCK)), 0);
    assert!(o.stored_bytes <= prompt_tokens * 131_072);
}

#[test]
fn host_hits_load_instead_of_recomputing_so_time_to_first_token_falls() {
    let rows = window();
    let gpu_only = Simulation::new(config(&rows, false)).expect("valid").run_to_end();
    let with_host = Simulation::new(config(&rows, true)).expect("valid").run_to_end();
    let (a, b) = (&gpu_only.latency_ms, &with_host.latency_ms);
    println!("TTFT p50 {:.1} → {:.1} ms, mean {:.1} → {:.1} ms", a.ttft_p50, b.ttft_p50, a.ttft_mean, b.ttft_mean);
    assert!(b.ttft_mean < a.ttft_mean, "loads are cheaper than the prefills they replace");
    // The prefill tokens computed fall by the tokens loaded.
    let o = with_host.offload.as_ref().expect("host tier");
    assert!(o.offload_hits > 0);
}

#[test]
fn event_driven_stepping_gives_the_step_by_step_run_with_a_host_tier() {
    let rows = window();
    let events = run_checked(config(&rows, true), Stepping::Events);
    let reference = run_checked(config(&rows, true), Stepping::Reference);
    assert_eq!(events, reference);
    assert!(events.offload.as_ref().is_some_and(|o| o.offload_hits > 0), "the window hits the host tier");
}

#[test]
fn without_kv_offload_the_report_has_no_host_tier_and_a_preset_without_prefix_caching_is_refused() {
    let rows: Vec<Row> = window().into_iter().take(5).collect();
    let report = Simulation::new(config(&rows, false)).expect("valid").run_to_end();
    assert!(report.offload.is_none());
    let json = kvlab::formats::report::report_json(&report);
    assert!(!json.contains("offload"), "the report's JSON is unchanged without a host tier");
    let err = parse_preset(
        r#"{"schema": "kvlab/preset@1", "allocator": {"kind": "paged", "prefix_caching": false},
            "kv_offload": {"cpu_gib": 8}}"#,
    )
    .expect_err("refused");
    assert_eq!(err.field, "kv_offload");
    assert!(err.message.contains("prefix_caching"), "{}", err.message);
    let err = parse_preset(r#"{"schema": "kvlab/preset@1", "kv_offload": {"cpu_gib": 8, "policy": "arc"}}"#)
        .expect_err("refused");
    assert!(err.to_string().contains("kv_offload.policy"), "{err}");
}
