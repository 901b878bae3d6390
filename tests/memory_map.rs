//! The memory map's "free, cached prefix" mark tells the truth: under vLLM v1's prefix caching
//! every full block keeps its hash once freed, but the map marks a free block only where a later
//! request could hit it: a system prompt (or a block a trace names) other requests share, or the
//! blocks of a request still in the system that comes back for them after a preemption. Checked
//! on the real allocator and scheduler, step by step, against the pool's own records.
#![cfg(not(target_arch = "wasm32"))]

use kvlab::engine::alloc::KvCacheManager;
use kvlab::engine::memory_map::MapCell;
use kvlab::engine::request::GroupStatus;
use kvlab::engine::Simulation;
use kvlab::formats::preset::parse_preset;

fn preset(name: &str, rate_per_s: f64) -> Simulation {
    let path = format!("{}/assets/presets/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["allocator"]["prefix_caching"] = serde_json::Value::Bool(true);
    v["workload"]["arrival"]["rate_per_s"] = serde_json::json!(rate_per_s);
    Simulation::new(parse_preset(&v.to_string()).expect("valid preset")).expect("valid config")
}

/// Per sampled step and at the end: (free blocks that carry a hash, free cells the map marks as
/// cached).
fn sample(sim: &mut Simulation, every: u64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    while sim.step() {
        if sim.steps() % every == 0 {
            out.push(check(sim));
        }
    }
    out.push(check(sim));
    out
}

/// Checks every cell's mark against the pool's records.
fn check(sim: &Simulation) -> (usize, usize) {
    {
        let KvCacheManager::Paged(p) = sim.kv() else { panic!("a paged run") };
        let pool = p.pool();
        let first = pool.first_usable();
        let map = sim.memory_map();
        let mut hashed_free = 0;
        for (i, cell) in map.cells.iter().enumerate() {
            let id = first + i as u32;
            let block = pool.block(id);
            let hashed = block.ref_cnt == 0 && pool.block_hash(id).is_some();
            hashed_free += usize::from(hashed);
            let marked = cell.flags & MapCell::CACHED != 0;
            let owner_waiting = sim
                .groups()
                .get(block.owner as usize)
                .is_some_and(|g| !matches!(g.status, GroupStatus::Finished | GroupStatus::Rejected));
            assert_eq!(
                marked,
                hashed && (block.shared_content || owner_waiting),
                "step {}: block {id} (hash {:?}, shared {}, owner {} unfinished {owner_waiting})",
                sim.steps(),
                pool.block_hash(id),
                block.shared_content,
                block.owner
            );
        }
        let marked = map.cells.iter().filter(|c| c.flags & MapCell::CACHED != 0).count();
        (hashed_free, marked)
    }
}

#[test]
fn private_blocks_of_finished_requests_are_not_marked_as_a_cached_prefix() {
    // Chat traffic with no shared prompt: nothing a later request can hit, whatever the hashes.
    let mut sim = preset("paged-default", 12.0);
    let samples = sample(&mut sim, 256);
    let hashed: usize = samples.iter().map(|s| s.0).sum();
    let marked: usize = samples.iter().map(|s| s.1).sum();
    let report = sim.report();
    assert_eq!(report.prefix_cache_hit_rate, 0.0, "nothing shared, nothing hit");
    assert!(hashed > 10_000, "freed blocks keep their hashes under v1 ({hashed} over the samples)");
    assert!(marked * 20 < hashed, "{marked} of {hashed} hashed free blocks marked as hittable");
}

#[test]
fn a_shared_system_prompt_is_marked_where_it_lies_free() {
    // Slow traffic: between requests the system prompt lies free, with the finished ones' blocks.
    let mut sim = preset("prefix-caching", 0.2);
    let samples = sample(&mut sim, 1);
    assert!(sim.report().prefix_cache_hit_rate > 0.3, "{}", sim.report().prefix_cache_hit_rate);
    // 2,000 shared tokens are 125 full blocks of 16; when all of them lie free, only they are marked.
    let idle: Vec<_> = samples.iter().filter(|s| s.1 == 125).collect();
    assert!(!idle.is_empty(), "the system prompt lies free and marked between requests");
    assert!(idle.iter().all(|s| s.0 > 125), "the finished requests' own blocks stay unmarked: {idle:?}");
}
