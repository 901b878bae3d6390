//! Hash-level prefix sharing: a trace's `hash_ids` (Mooncake: one id per 512-token block,
//! chained, so an equal id means an equal prefix up to it) drive vLLM v1's prefix cache through
//! the real allocator and scheduler. On a window of the real Mooncake conversation trace with a
//! pool that holds everything, the engine's hit rate equals an independent count of the leading
//! blocks each request shares with earlier ones; the report counts the tokens looked up and
//! found, and the memory map marks the blocks requests share.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::sync::Arc;

use kvlab::engine::memory_map::MapCell;
use kvlab::engine::workload::{Arrival, TraceRow};
use kvlab::engine::Simulation;
use kvlab::formats::preset::parse_preset;

/// The window replayed: the first two minutes (339 requests, 4.86 M prompt tokens).
const WINDOW_MS: u64 = 120_000;
const TRACE_BLOCK: u32 = 512;
const BLOCK: u32 = 16;

type Row = common::MooncakeRow;

/// The window's rows.
fn window() -> Vec<Row> {
    common::mooncake_window(WINDOW_MS)
}

/// vLLM's hit rate with a cache that never evicts, counted from the ids: each request hits the
/// full 16-token blocks of its leading trace blocks that an earlier request held (as far as that
/// request's prompt reached into the block), leaving at least one token to compute; the query is
/// its whole prompt.
fn independent_hit_rate(rows: &[Row]) -> f64 {
    // id → the most tokens of that trace block any earlier prompt held.
    let mut held: std::collections::BTreeMap<u32, u32> = std::collections::BTreeMap::new();
    let (mut hits, mut queries) = (0u64, 0u64);
    for r in rows {
        let mut shared = 0u32;
        for (i, id) in r.ids.iter().enumerate() {
            let Some(&tokens) = held.get(id) else { break };
            shared = i as u32 * TRACE_BLOCK + tokens;
            if tokens < TRACE_BLOCK {
                break;
            }
        }
        let hit_blocks = shared.min(r.input) / BLOCK;
        let hit_blocks = hit_blocks.min((r.input - 1) / BLOCK);
        hits += u64::from(hit_blocks * BLOCK);
        queries += u64::from(r.input);
        for (i, id) in r.ids.iter().enumerate() {
            let tokens = (r.input - i as u32 * TRACE_BLOCK).min(TRACE_BLOCK);
            let e = held.entry(*id).or_insert(0);
            *e = (*e).max(tokens);
        }
    }
    hits as f64 / queries as f64
}

fn config(rows: &[Row]) -> kvlab::engine::SimConfig {
    // A tiny model (8-byte tokens): 600,000 blocks hold the whole window and its outputs.
    let gib = 600_000.0 * f64::from(BLOCK) * 8.0 / (1u64 << 30) as f64;
    let mut config = parse_preset(&format!(
        r#"{{"schema": "kvlab/preset@1", "id": "mooncake-window", "duration_s": 600, "kv_memory_gib": {gib},
            "model": {{"layers": 1, "kv_heads": 1, "head_dim": 2, "params_b": 0.1}},
            "allocator": {{"kind": "paged", "block_size": {BLOCK}, "prefix_caching": true}},
            "scheduler": {{"max_num_seqs": 1024, "max_num_batched_tokens": 131072, "max_model_len": 131072}}}}"#
    ))
    .expect("valid preset");
    let trace: Vec<TraceRow> = rows
        .iter()
        .map(|r| TraceRow {
            hash_ids: Some(Arc::from(r.ids.as_slice())),
            ..TraceRow::new(r.t_ms as f64 / 1000.0, r.input, r.output, 1)
        })
        .collect();
    config.workload.arrival = Arrival::Trace { rows: trace.into(), max_tokens: 2048, hash_block_tokens: TRACE_BLOCK };
    config.workload.classes.clear();
    config
}

#[test]
fn mooncake_hash_ids_hit_the_prefix_cache_as_an_independent_count_says() {
    let rows = window();
    assert_eq!(rows.len(), 339, "the window of the sample");
    let expected = independent_hit_rate(&rows);
    assert!(expected > 0.1, "the conversation trace shares prefixes: {expected}");
    let mut sim = Simulation::new(config(&rows)).expect("valid config");
    // The memory map marks the blocks more than one running request holds: the shared prefixes.
    let mut most_shared_cells = 0;
    while sim.step() {
        if sim.steps() % 1024 == 0 {
            sim.check_invariants().unwrap_or_else(|e| panic!("step {}: {e}", sim.steps()));
        }
        if sim.steps() % 64 == 0 {
            let map = sim.memory_map();
            let shared = map.cells.iter().filter(|c| c.flags & MapCell::SHARED != 0 && !c.is_free()).count();
            most_shared_cells = most_shared_cells.max(shared);
        }
    }
    assert!(most_shared_cells > 0, "the map shows the blocks the trace's requests share");
    sim.check_invariants().expect("invariants at the end");
    let report = sim.report();
    assert_eq!(report.requests.arrived, 339);
    assert_eq!(report.requests.finished, 339, "every request finished: {:?}", report.requests);
    assert_eq!(report.preemptions, 0, "nothing was preempted (the pool holds everything)");
    // The report counts the tokens behind the rate: every prompt token looked up, those found.
    let prompt_tokens: u64 = rows.iter().map(|r| u64::from(r.input)).sum();
    assert_eq!(report.prefix_cache_queries, prompt_tokens);
    let counted = report.prefix_cache_hits as f64 / report.prefix_cache_queries as f64;
    assert!((counted - report.prefix_cache_hit_rate).abs() < 1e-4);
    let got = report.prefix_cache_hit_rate;
    println!("hit rate {got:.5}, independent count {expected:.5}, {} steps", sim.steps());
    assert!((got - expected).abs() <= 0.01, "hit rate {got:.4}, independent count {expected:.4}");
}

#[test]
fn without_hash_ids_the_same_window_shares_nothing() {
    let rows = window();
    let mut config = config(&rows);
    if let Arrival::Trace { rows, .. } = &mut config.workload.arrival {
        *rows = rows.iter().map(|r| TraceRow { hash_ids: None, ..r.clone() }).collect();
    }
    let report = Simulation::new(config).expect("valid").run_to_end();
    assert_eq!(report.prefix_cache_hit_rate, 0.0);
}
