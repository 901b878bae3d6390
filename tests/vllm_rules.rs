//! vLLM's scheduling and allocation rules one at a time, and one regression test per bug the
//! comparison with vLLM found (each opens with what broke). The rule numbers are those of
//! docs/VLLM_PARITY.md; the goldens in `tests/vllm_parity.rs` check them all together.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{preset, run_checked};
use kvlab::engine::alloc::{BlockPool, ComputedBlocks, KvCacheManager, PagedAdmit, PagedAllocator, TokenIdentity};
use kvlab::engine::{AllocatorConfig, EngineVersion, Simulation};

fn identity(request: u32, seq: u32, prompt: u32) -> TokenIdentity {
    TokenIdentity {
        request,
        seq,
        prefix_key: 0,
        shared_prefix_tokens: 0,
        prompt_tokens: prompt,
        prompt_blocks: None,
        sole_sample: false,
    }
}

/// Rule 1: block 0 is the null block; N blocks hold N − 1 blocks of tokens.
#[test]
fn v1_reserves_block_0_as_the_null_block() {
    let mut pool = BlockPool::new(4, true, EngineVersion::V1);
    assert_eq!((pool.num_free_blocks(), pool.num_usable_blocks()), (3, 3));
    let got: Vec<u32> = (0..3).map(|_| pool.get_new_block(0).unwrap()).collect();
    assert_eq!(got, [1, 2, 3]);
    assert_eq!(pool.get_new_block(0), None);
    pool.check_invariants().unwrap();
}

/// Rule 19: freed blocks without a hash go to the head of the free queue (reused first), hashed
/// ones to the tail (evicted last); v0 puts both at the tail.
#[test]
fn v1_reuses_unhashed_blocks_first_and_evicts_cached_ones_last() {
    for (engine, expected) in [(EngineVersion::V1, [2, 3, 1]), (EngineVersion::V0, [3, 2, 1])] {
        let mut pool = BlockPool::new(4, true, engine);
        let first = u32::from(engine == EngineVersion::V0); // v0 has no null block: use 1..=3 too
        if first == 1 {
            assert_eq!(pool.get_new_block(0), Some(0)); // keep block 0 out of the way
        }
        let (a, b) = (pool.get_new_block(0).unwrap(), pool.get_new_block(0).unwrap());
        assert_eq!((a, b), (1, 2));
        pool.set_filled(a, 16);
        pool.cache_full_block(a, 0xabc, true);
        pool.free_blocks([b, a]); // a table [a, b] freed tail first
        let order: Vec<u32> = (0..3).map(|_| pool.get_new_block(1).unwrap()).collect();
        assert_eq!(order, expected, "{engine:?}");
        assert_eq!(pool.get_cached_block(0xabc), None, "the cached block was evicted when reused");
        pool.check_invariants().unwrap();
    }
}

/// Rule 17: v1 keeps duplicate hashes (block tables stay append-only); lookups return the oldest.
#[test]
fn v1_caches_a_block_whose_hash_is_already_cached() {
    let mut pool = BlockPool::new(4, true, EngineVersion::V1);
    let (a, b) = (pool.get_new_block(0).unwrap(), pool.get_new_block(1).unwrap());
    pool.cache_full_block(a, 7, true);
    pool.cache_full_block(b, 7, true);
    assert_eq!((pool.block_hash(a), pool.block_hash(b)), (Some(7), Some(7)));
    assert_eq!(pool.get_cached_block(7), Some(a));
    pool.free_blocks([a]);
    assert_eq!(pool.get_new_block(2), Some(3), "a hashed free block waits at the tail");
    assert_eq!(pool.get_new_block(2), Some(a));
    assert_eq!(pool.get_cached_block(7), Some(b), "evicting one copy leaves the other");
    pool.check_invariants().unwrap();
}

/// Broke: `cache_full_block` added a hash without bumping the epoch, so a refusal memoised
/// before a prefix became cached was reused after it.
#[test]
fn caching_a_block_changes_the_epoch() {
    let mut pool = BlockPool::new(4, true, EngineVersion::V1);
    let a = pool.get_new_block(0).unwrap();
    let before = pool.epoch();
    pool.cache_full_block(a, 9, true);
    assert!(pool.epoch() > before);
}

/// Rule 13: admission needs the whole known sequence to fit, not just the first chunk.
#[test]
fn v1_admission_requires_the_whole_prompt_to_fit() {
    // 5 usable blocks of 16: a 100-token prompt needs 7 even if only 32 tokens are scheduled now.
    let mut p = PagedAllocator::new(6, 16, false, 0.0, EngineVersion::V1);
    let mut req = PagedAdmit {
        request: 0,
        identity: identity(0, 0, 100),
        num_new_tokens: 32,
        full_tokens: 100,
        apply_watermark: false,
        preempted_before: false,
    };
    let short = p.admit(0, &req, &ComputedBlocks::default()).unwrap_err();
    assert_eq!((short.need, short.free), (7, 5));
    req.full_tokens = 80;
    p.admit(0, &req, &ComputedBlocks::default()).expect("80 tokens fit in 5 blocks");
    assert_eq!(p.num_free_blocks(), 3, "only the first chunk's blocks are taken now");
    p.check_invariants().unwrap();
}

/// Broke: `can_allocate` charged a copy-on-write to every sharer of a partial block, the last
/// holder included (who writes in place): two samples sharing a partial block with one free
/// block were refused, though both allocations then succeed.
#[test]
fn the_last_holder_of_a_shared_partial_block_writes_in_place() {
    // v0 groups: 3 blocks; the parent's 20-token prompt takes 2, the sample forks from it.
    let mut p = PagedAllocator::new(3, 16, false, 0.0, EngineVersion::V0);
    let req = PagedAdmit {
        request: 0,
        identity: identity(0, 0, 20),
        num_new_tokens: 20,
        full_tokens: 20,
        apply_watermark: true,
        preempted_before: false,
    };
    p.admit(0, &req, &ComputedBlocks::default()).unwrap();
    p.fork(0, 1, identity(0, 1, 20));
    assert_eq!(p.num_free_blocks(), 1);
    let mut kv = KvCacheManager::Paged(p);
    assert!(kv.can_allocate(&[(0, 1), (1, 1)]), "one copy, then the last holder writes in place");
    kv.allocate_slots(0, 1).expect("copies the partial block");
    kv.allocate_slots(1, 1).expect("writes in place");
    assert_eq!(kv.cow_copies(), 1);
    kv.check_invariants().unwrap();
}

/// Broke: `prefix_cache_hit_rate` counted re-admissions after preemption, so long reports with
/// caching on and nothing shared reported a 43.9% hit rate. vLLM reports them apart.
#[test]
fn re_admissions_after_preemption_stay_out_of_the_prefix_hit_rate() {
    let mut c = preset("long-report-2gb");
    c.allocator = AllocatorConfig::Paged { block_size: 16, prefix_caching: true };
    let (sim, r) = run_checked(c);
    assert!(r.preemptions > 0);
    assert_eq!(r.prefix_cache_hit_rate, 0.0, "nothing is shared between first admissions");
    let (_, preempted) = sim.kv().prefix_stats();
    assert!(preempted.hits > 0, "re-admitted requests find their own blocks: {preempted:?}");
}

/// Broke: admission checked only the first prefill chunk, so chunked prefill with a 512-token
/// budget preempted 727 times where whole-prompt admission (vLLM's, v1 and v0) preempts about as
/// often as without chunking.
#[test]
fn chunked_prefill_causes_no_preemption_storm_of_its_own() {
    for engine in [EngineVersion::V1, EngineVersion::V0] {
        let mut whole = preset("long-report-2gb");
        whole.scheduler.engine = engine;
        let mut chunked = preset("long-report-chunked-512");
        chunked.scheduler.engine = engine;
        let (a, b) = (Simulation::new(whole).unwrap().run_to_end(), Simulation::new(chunked).unwrap().run_to_end());
        assert!(
            b.preemptions <= a.preemptions.max(10) * 3 / 2,
            "{engine:?}: {} chunked vs {} whole",
            b.preemptions,
            a.preemptions
        );
    }
}

/// Broke: the watermark defaulted to v0's 0.01 and applied always, so the paged default spent
/// 278 steps head-of-line blocked with memory free. v1's default is 0.0.
#[test]
fn v1_keeps_no_watermark_by_default() {
    let c = preset("paged-default");
    assert_eq!(c.scheduler.watermark(), 0.0);
    let r = Simulation::new(c.clone()).unwrap().run_to_end();
    assert_eq!(r.hol_blocked_with_free_memory_steps, 0);
    let mut v0 = c;
    v0.scheduler.engine = EngineVersion::V0;
    assert_eq!(v0.scheduler.watermark(), 0.01);
}

/// Rule 8: v1 has no swap; asking for it names the field and the way out.
#[test]
fn swap_under_v1_is_refused_with_the_fix() {
    let mut c = preset("long-report-2gb");
    c.scheduler.preemption = kvlab::engine::PreemptionMode::Swap;
    let e = c.validate().unwrap_err();
    assert_eq!(e.field, "scheduler.preemption");
    assert!(e.message.contains("v0"), "{e}");
}

/// A preset that leaves out the batch limits takes vLLM's defaults for its GPU and engine, as
/// `vllm serve` fills them in; the settings form shows them; what a preset sets stays.
#[test]
fn left_out_batch_limits_take_vllms_defaults_for_the_gpu() {
    use kvlab::formats::preset::{parse_preset, parse_preset_dto};
    let text = |gpu: &str, engine: &str, chunked: bool, extra: &str| {
        format!(
            r#"{{"schema": "kvlab/preset@1", "model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "{gpu}",
                "gpu_memory_utilization": 0.9,
                "scheduler": {{"engine": "{engine}", "max_model_len": 16384, "chunked_prefill": {chunked}{extra}}}}}"#
        )
    };
    let limits = |gpu: &str, engine: &str, chunked: bool, extra: &str| {
        let s = parse_preset(&text(gpu, engine, chunked, extra)).expect("a valid preset").scheduler;
        (s.max_num_batched_tokens, s.max_num_seqs)
    };
    assert_eq!(limits("h100-sxm", "v1", true, ""), (8192, 1024));
    assert_eq!(limits("h100-sxm", "v1", false, ""), (16384, 1024), "a whole prompt fits in one step");
    assert_eq!(limits("b200", "v1", true, ""), (16384, 1024));
    assert_eq!(limits("a100-80gb", "v1", true, ""), (2048, 256));
    assert_eq!(limits("h100-sxm", "v0", false, ""), (16384, 256));
    assert_eq!(limits("h100-sxm", "v0", true, ""), (512, 256));
    assert_eq!(limits("h100-sxm", "v1", true, r#", "max_num_seqs": 64, "max_num_batched_tokens": 4096"#), (4096, 64));
    // The form reads what the run takes, and an export leaves the defaults to the GPU.
    let dto = parse_preset_dto(&text("a100-80gb", "v1", true, "")).expect("a valid preset");
    assert_eq!(dto.batch_limits(), Some((2048, 256)));
    let exported = serde_json::to_value(&dto).expect("serializes");
    assert!(exported["scheduler"].get("max_num_seqs").is_none(), "{exported}");
}
