//! The allocators on their own: placement and hole merging of the contiguous allocator, the free
//! block queue's eviction order, copy-on-write, prefix-cache hits and swap of the paged allocator.
#![cfg(not(target_arch = "wasm32"))]

use kvlab::engine::alloc::{ComputedBlocks, ContiguousAllocator, Fit, PagedAdmit, PagedAllocator, TokenIdentity};
use kvlab::engine::config::EngineVersion;

/// Admits `seq` with `num_new_tokens` after the `computed` hits (the whole sequence is what is
/// written now), keeping the watermark free; true when it fit.
fn admit(
    p: &mut PagedAllocator,
    seq: u32,
    request: u32,
    identity: TokenIdentity,
    computed: &ComputedBlocks,
    num_new_tokens: u32,
) -> bool {
    let req = PagedAdmit {
        request,
        identity,
        num_new_tokens,
        full_tokens: computed.num_tokens + num_new_tokens,
        apply_watermark: true,
        preempted_before: false,
    };
    p.admit(seq, &req, computed).is_ok()
}

fn identity(request: u32, seq: u32, prompt: u32, shared: u32) -> TokenIdentity {
    TokenIdentity {
        request,
        seq,
        prefix_key: if shared > 0 { 1 } else { 0 },
        shared_prefix_tokens: shared,
        prompt_tokens: prompt,
        prompt_blocks: None,
        sole_sample: false,
    }
}

#[test]
fn first_fit_takes_the_lowest_hole_and_best_fit_the_tightest() {
    for (fit, expected_start) in [(Fit::FirstFit, 0), (Fit::BestFit, 700)] {
        let mut c = ContiguousAllocator::new(1000, fit);
        for (seq, len) in [(0, 300), (1, 400), (2, 100), (3, 150)] {
            assert!(c.reserve_all(seq, &[seq], len)); // [0,300) [300,700) [700,800) [800,950)
        }
        c.free(0); // hole [0,300)
        c.free(2); // hole [700,800); the tail hole [950,1000) stays
        assert_eq!(c.num_holes(), 3);
        assert!(c.reserve_all(4, &[4], 90));
        assert_eq!(c.slab(4).unwrap().start, expected_start, "{fit:?}");
        c.check_invariants().unwrap();
    }
}

#[test]
fn freed_neighbours_merge_into_one_hole() {
    let mut c = ContiguousAllocator::new(900, Fit::FirstFit);
    for s in 0..3 {
        assert!(c.reserve_all(s, &[s], 300));
    }
    c.free(0);
    c.free(2);
    assert_eq!(c.num_holes(), 2);
    assert_eq!(c.largest_hole(), 300);
    c.free(1);
    assert_eq!(c.num_holes(), 1);
    assert_eq!(c.largest_hole(), 900);
    c.check_invariants().unwrap();
}

#[test]
fn external_fragmentation_refuses_a_slab_that_fits_in_total() {
    let mut c = ContiguousAllocator::new(1000, Fit::FirstFit);
    for s in 0..4 {
        assert!(c.reserve_all(s, &[s], 250));
    }
    c.free(0);
    c.free(2);
    assert_eq!(c.free_tokens(), 500);
    assert!(!c.reserve_all(9, &[9], 400), "no single hole holds 400");
    c.check_invariants().unwrap();
}

#[test]
fn a_group_of_slabs_is_reserved_all_or_nothing() {
    let mut c = ContiguousAllocator::new(1000, Fit::FirstFit);
    assert!(!c.reserve_all(0, &[0, 1, 2], 400));
    assert_eq!(c.free_tokens(), 1000);
    c.check_invariants().unwrap();
}

#[test]
fn blocks_are_taken_one_at_a_time_as_tokens_arrive() {
    let mut p = PagedAllocator::new(10, 16, false, 0.0, EngineVersion::V0);
    assert!(admit(&mut p, 0, 0, identity(0, 0, 20, 0), &ComputedBlocks::default(), 20));
    assert_eq!(p.table(0).unwrap().blocks.len(), 2);
    for _ in 0..12 {
        p.allocate_slots(0, 1).unwrap();
    }
    assert_eq!(p.table(0).unwrap().blocks.len(), 2, "32 tokens fill exactly two blocks");
    p.allocate_slots(0, 1).unwrap();
    assert_eq!(p.table(0).unwrap().blocks.len(), 3);
    assert_eq!(p.num_free_blocks(), 7);
    p.check_invariants().unwrap();
}

#[test]
fn allocate_slots_returns_none_and_changes_nothing_when_the_pool_is_short() {
    let mut p = PagedAllocator::new(2, 16, false, 0.0, EngineVersion::V0);
    assert!(admit(&mut p, 0, 0, identity(0, 0, 32, 0), &ComputedBlocks::default(), 32));
    assert_eq!(p.allocate_slots(0, 1), None);
    assert_eq!(p.table(0).unwrap().num_tokens, 32);
    p.check_invariants().unwrap();
}

#[test]
fn watermark_holds_back_admission_but_not_growth() {
    let mut p = PagedAllocator::new(100, 16, false, 0.1, EngineVersion::V0); // 10 blocks of watermark
    assert!(!admit(&mut p, 0, 0, identity(0, 0, 16 * 91, 0), &ComputedBlocks::default(), 16 * 91));
    assert!(admit(&mut p, 0, 0, identity(0, 0, 16 * 90, 0), &ComputedBlocks::default(), 16 * 90));
    for _ in 0..16 * 10 {
        p.allocate_slots(0, 1).unwrap();
    }
    assert_eq!(p.num_free_blocks(), 0);
    p.check_invariants().unwrap();
}

#[test]
fn samples_share_full_blocks_and_copy_the_partial_one_on_first_write() {
    let mut p = PagedAllocator::new(100, 16, false, 0.0, EngineVersion::V0);
    assert!(admit(&mut p, 0, 0, identity(0, 0, 40, 0), &ComputedBlocks::default(), 40)); // 2 full + 8
    p.fork(0, 1, identity(0, 1, 40, 0));
    p.fork(0, 2, identity(0, 2, 40, 0));
    assert_eq!(p.pool().block(p.table(0).unwrap().blocks[0]).ref_cnt, 3);
    p.allocate_slots(1, 1).unwrap();
    p.allocate_slots(2, 1).unwrap();
    assert_eq!(p.cow_copies, 2);
    p.allocate_slots(0, 1).unwrap(); // the last owner writes in place
    assert_eq!(p.cow_copies, 2);
    let t: Vec<Vec<u32>> = (0..3).map(|s| p.table(s).unwrap().blocks.clone()).collect();
    assert_eq!(t[0][..2], t[1][..2]);
    assert_ne!(t[0][2], t[1][2]);
    assert_ne!(t[1][2], t[2][2]);
    assert_eq!(p.live_tokens(), 32 + 3 * (8 + 1));
    p.check_invariants().unwrap();
    for s in 0..3 {
        p.free(s);
    }
    assert_eq!(p.num_free_blocks(), 100);
    p.check_invariants().unwrap();
}

#[test]
fn prefix_cache_finds_a_shared_system_prompt_after_its_owner_left() {
    let mut p = PagedAllocator::new(64, 16, true, 0.0, EngineVersion::V0);
    let first = identity(0, 0, 100, 64);
    assert!(admit(&mut p, 0, 0, first, &ComputedBlocks::default(), 100));
    p.free(0);
    let second = identity(1, 1, 120, 64);
    let hit = p.get_computed_blocks(&second, 120);
    assert_eq!(hit.num_tokens, 64, "the four shared-prefix blocks, not the request's own");
    assert!(admit(&mut p, 1, 1, second, &hit, 120 - 64));
    assert_eq!(p.table(1).unwrap().blocks.len(), 8);
    assert!((p.prefix.hits as f64 / p.prefix.queries as f64 - 64.0 / 220.0).abs() < 1e-9);
    p.check_invariants().unwrap();
}

#[test]
fn cached_free_blocks_are_evicted_least_recently_freed_first() {
    let mut p = PagedAllocator::new(4, 16, true, 0.0, EngineVersion::V0);
    assert!(admit(&mut p, 0, 0, identity(0, 0, 33, 32), &ComputedBlocks::default(), 33)); // 2 cached
    p.free(0); // freed last block first: the free queue is [unused, partial, block 1, block 0]
    let again = identity(1, 1, 33, 32);
    assert_eq!(p.get_computed_blocks(&again, 33).num_tokens, 32);
    assert!(admit(&mut p, 2, 2, identity(2, 2, 48, 0), &ComputedBlocks::default(), 48)); // takes 3
    assert_eq!(
        p.get_computed_blocks(&again, 33).num_tokens,
        16,
        "the prefix's tail block was evicted first; its head block still hits"
    );
    p.check_invariants().unwrap();
}

#[test]
fn swap_out_and_in_keeps_sharing() {
    let mut p = PagedAllocator::new(20, 16, false, 0.0, EngineVersion::V0);
    assert!(admit(&mut p, 0, 0, identity(0, 0, 40, 0), &ComputedBlocks::default(), 40));
    p.fork(0, 1, identity(0, 1, 40, 0));
    p.allocate_slots(1, 1).unwrap();
    assert_eq!(p.unique_blocks(&[0, 1]), 4);
    let kv = p.swap_out(&[0, 1]);
    assert_eq!(p.num_free_blocks(), 20);
    assert!(p.swap_in(&kv));
    assert_eq!(p.num_free_blocks(), 16);
    assert_eq!(p.table(0).unwrap().blocks[0], p.table(1).unwrap().blocks[0]);
    assert_eq!(p.table(1).unwrap().num_tokens, 41);
    p.check_invariants().unwrap();
}

mod own_blocks {
    //! Blocks holding one request's own tokens, listed by request (`engine/alloc/own_hashes.rs`).
    use kvlab::engine::alloc::{ComputedBlocks, PagedAdmit, PagedAllocator, RequestId, TokenIdentity};
    use kvlab::engine::version::EngineVersion;

    fn identity(request: RequestId, prompt_tokens: u32, shared_prefix_tokens: u32) -> TokenIdentity {
        let prefix_key = u32::from(shared_prefix_tokens > 0);
        TokenIdentity {
            request,
            seq: request,
            prefix_key,
            shared_prefix_tokens,
            prompt_tokens,
            prompt_blocks: None,
            sole_sample: false,
        }
    }

    fn admit(p: &mut PagedAllocator, id: &TokenIdentity, tokens: u32) -> ComputedBlocks {
        let hits = p.get_computed_blocks(id, tokens);
        let req = PagedAdmit {
            request: id.request,
            identity: id.clone(),
            num_new_tokens: tokens - hits.num_tokens,
            full_tokens: tokens,
            apply_watermark: false,
            preempted_before: false,
        };
        p.admit(id.seq, &req, &hits).expect("fits");
        p.check_invariants().expect("consistent after admission");
        hits
    }

    /// A preempted request finds its own blocks again (after the shared prefix, which is in the
    /// map), the same blocks, until they are evicted; another request never finds them, and
    /// once the request has ended they are no longer listed.
    #[test]
    fn a_preempted_request_hits_its_own_blocks_until_they_are_evicted() {
        let mut p = PagedAllocator::new(9, 4, true, 0.0, EngineVersion::V1);
        let a = identity(1, 18, 8); // blocks 0-1 a shared prefix, 2-3 its own, then a partial one
        assert_eq!(admit(&mut p, &a, 18).num_tokens, 0);
        let held = p.table(1).unwrap().blocks.clone();
        p.free(1); // preempted
        p.check_invariants().unwrap();
        let hits = p.get_computed_blocks(&a, 18);
        assert_eq!((hits.num_tokens, &hits.blocks[..]), (16, &held[..4]));
        let b = identity(2, 30, 8);
        assert_eq!(p.get_computed_blocks(&b, 30).num_tokens, 8, "only the shared prefix is anyone's");
        // Request 2 takes the four uncached free blocks, then the oldest cached ones: the free
        // queue's tail holds a's table last block first, so its own blocks go first.
        admit(&mut p, &b, 30);
        assert_eq!(p.get_computed_blocks(&a, 18).num_tokens, 8, "its own blocks were evicted");
        p.free(2);
        // Admitted again, a hits the prefix and caches its own blocks anew in blocks that held
        // them before (its stale entries for them must not count).
        assert_eq!(admit(&mut p, &a, 18).num_tokens, 8);
        let held = p.table(1).unwrap().blocks.clone();
        p.free(1);
        let hits = p.get_computed_blocks(&a, 18);
        assert_eq!((hits.num_tokens, &hits.blocks[..]), (16, &held[..4]));
        p.forget_request(1);
        p.check_invariants().unwrap();
        assert_eq!(p.get_computed_blocks(&a, 18).num_tokens, 8, "an ended request's blocks are not listed");
    }
}
