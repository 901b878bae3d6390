//! vLLM v0's scheduler (the one the contiguous allocator also runs under) on its own, without a
//! `Simulation`: FCFS admission under `max_num_seqs`, the
//! token budget and the KV pool; head-of-line blocking and its reason; recompute preemption of
//! the newest running request; the queues it owns agreeing with the requests' states.
#![cfg(not(target_arch = "wasm32"))]

use kvlab::engine::alloc::{ContiguousAllocator, Fit, KvCacheManager, PagedAllocator};
use kvlab::engine::config::{EngineVersion, Reserve, SchedulerConfig};
use kvlab::engine::request::{GroupStatus, Sequence, SequenceGroup};
use kvlab::engine::scheduler::{HolReason, Target, V0Scheduler as Scheduler};

/// Request `id` with one sample and a prompt of `prompt` tokens.
fn group(id: u32, prompt: u32) -> SequenceGroup {
    SequenceGroup {
        request: id,
        arrival_us: 0,
        class: 0,
        prompt_tokens: prompt,
        max_tokens: 64,
        shared_prefix_tokens: 0,
        tenant: 0,
        prompt_blocks: None,
        status: GroupStatus::Waiting,
        forked: false,
        prefill_computed: 0,
        samples: vec![Sequence {
            seq: id,
            num_tokens: prompt,
            num_computed: 0,
            generated: 0,
            target: 32,
            finished: false,
            preemptions: 0,
            last_token_us: 0,
        }],
        first_token_us: None,
        finish_us: None,
        swapped: None,
        preemptions: 0,
        reject_reason: None,
    }
}

fn cfg(max_num_seqs: u32, max_num_batched_tokens: u32) -> SchedulerConfig {
    SchedulerConfig {
        max_num_seqs,
        max_num_batched_tokens,
        engine: EngineVersion::V0,
        watermark: Some(0.0),
        ..SchedulerConfig::default()
    }
}

fn queued(s: &mut Scheduler, groups: &[SequenceGroup]) {
    for g in groups {
        s.add_waiting(g);
    }
}

#[test]
fn admits_in_arrival_order_up_to_max_num_seqs() {
    let mut groups: Vec<_> = (0..3).map(|i| group(i, 100)).collect();
    let mut kv = KvCacheManager::Paged(PagedAllocator::new(1000, 16, false, 0.0, EngineVersion::V0));
    let mut s = Scheduler::new(cfg(2, 8192), None, 0);
    queued(&mut s, &groups);
    let out = s.schedule(&mut groups, &mut kv);
    let admitted: Vec<_> = out.work.iter().map(|w| (w.request, w.target, w.num_new_tokens)).collect();
    assert_eq!(admitted, [(0, Target::Prefill, 100), (1, Target::Prefill, 100)]);
    assert!(matches!(out.hol, Some(HolReason::SeqLimit)));
    assert_eq!(s.running(), [0, 1]);
    assert_eq!(s.waiting().iter().copied().collect::<Vec<_>>(), [2]);
    assert_eq!((groups[0].status, groups[2].status), (GroupStatus::Running, GroupStatus::Waiting));
    s.check_invariants(&groups).unwrap();
}

#[test]
fn the_token_budget_blocks_the_head_and_everything_behind_it() {
    let mut groups = vec![group(0, 600), group(1, 600), group(2, 10)];
    let mut kv = KvCacheManager::Paged(PagedAllocator::new(1000, 16, false, 0.0, EngineVersion::V0));
    let mut s = Scheduler::new(cfg(256, 1000), None, 0);
    queued(&mut s, &groups);
    let out = s.schedule(&mut groups, &mut kv);
    assert_eq!(out.work.len(), 1, "only the first prompt fits the budget");
    assert!(matches!(out.hol, Some(HolReason::TokenBudget)));
    assert_eq!(s.waiting().len(), 2, "the short request behind the head waits too (FCFS)");
    s.check_invariants(&groups).unwrap();
}

#[test]
fn a_full_contiguous_pool_blocks_admission_and_says_whether_memory_was_free_in_total() {
    // Slabs of prompt + max_tokens = 164 tokens; the pool holds two of them.
    let mut groups: Vec<_> = (0..3).map(|i| group(i, 100)).collect();
    let mut kv = KvCacheManager::Contiguous(ContiguousAllocator::new(330, Fit::FirstFit));
    let mut s = Scheduler::new(cfg(256, 8192), Some(Reserve::PromptPlusMaxTokens), 0);
    queued(&mut s, &groups);
    let out = s.schedule(&mut groups, &mut kv);
    assert_eq!(out.work.len(), 2);
    match out.hol {
        Some(HolReason::Memory(blocked)) => assert!(!blocked.enough_total_free),
        other => panic!("expected a memory block, got {other:?}"),
    }
    s.check_invariants(&groups).unwrap();
}

#[test]
fn running_requests_go_first_and_the_newest_is_preempted_when_blocks_run_out() {
    // 4 blocks of 16 tokens: two 32-token prompts fill the pool exactly.
    let mut groups = vec![group(0, 32), group(1, 32)];
    let mut kv = KvCacheManager::Paged(PagedAllocator::new(4, 16, false, 0.0, EngineVersion::V0));
    let mut s = Scheduler::new(cfg(256, 8192), None, 0);
    queued(&mut s, &groups);
    let out = s.schedule(&mut groups, &mut kv);
    assert_eq!(out.work.len(), 2);
    // Both prefills computed and forked into their sample; each now needs one more slot.
    for g in &mut groups {
        g.samples[0].num_computed = 32;
        g.samples[0].num_tokens = 33;
        g.samples[0].generated = 1;
        g.prefill_computed = 32;
        g.forked = true;
    }
    s.recycle(out.work);
    let out = s.schedule(&mut groups, &mut kv);
    assert_eq!(out.preempted, 1);
    assert_eq!(s.running(), [0], "the oldest keeps running");
    assert_eq!(groups[1].status, GroupStatus::Waiting, "recompute puts the newest back in the queue");
    assert_eq!(s.waiting().front(), Some(&1));
    assert_eq!(s.preemptions(), (1, 0));
    s.check_invariants(&groups).unwrap();
}

#[test]
fn finishing_takes_a_request_off_the_running_queue() {
    let mut groups = vec![group(0, 16)];
    let mut kv = KvCacheManager::Paged(PagedAllocator::new(10, 16, false, 0.0, EngineVersion::V0));
    let mut s = Scheduler::new(cfg(256, 8192), None, 0);
    queued(&mut s, &groups);
    s.schedule(&mut groups, &mut kv);
    assert!(!s.is_idle());
    s.finish(0);
    groups[0].status = GroupStatus::Finished;
    assert!(s.is_idle());
    s.check_invariants(&groups).unwrap();
}
