//! The decode cohort of event-driven stepping: the running requests whose every step is one
//! decode token, kept as formulas of a tick counter instead of counters written every step.
//!
//! A member joined at tick `b` with `c` tokens computed and `g` generated has, before the step
//! of tick `t`, `c + (t − b)` computed, one more token known, and `g + (t − b)` generated; its
//! block table holds the computed tokens. Most of its writes take the allocator's fast path
//! (one token into its own partly filled last block), which changes nothing but counters, so
//! the cohort only schedules the two kinds of tick where something else happens:
//!
//! - a *slow write*: the token needs a new block, or (with prefix caching) fills a block that
//!   is then hashed, or lands in a shared block that is copied first. The next one is never
//!   more than a block ahead, so they wait in a ring of `block_size + 1` buckets;
//! - the *finish*: the token that reaches the sample's output length or `max_model_len`, known
//!   when it joins, kept in a heap.
//!
//! On contiguous slabs (reserved up front) no write is slow: finishes are the only events.
//!
//! For a model with sliding-window layers the cohort also keeps the sum of its members' contexts
//! capped at the window (what those layers read): a member below the window adds one a tick until
//! it reaches it, at a tick known when it joins (kept in a second heap).
//!
//! Members are numbered in joining order, which is the scheduler's running order (requests
//! join at the end of the running queue and leave from anywhere), so sorting a bucket by
//! member number gives the order the step-by-step engine would meet them in.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::engine::alloc::{RequestId, SeqId};

/// A running request in steady decode, as of the tick it joined.
#[derive(Clone, Copy, Debug)]
pub struct Member {
    pub request: RequestId,
    pub sample: u32,
    pub seq: SeqId,
    base_tick: u64,
    base_computed: u32,
    base_generated: u32,
    alive: bool,
}

impl Member {
    /// Tokens computed (and held in its block table) before the step of tick `tick`.
    pub fn computed_at(&self, tick: u64) -> u32 {
        self.base_computed + (tick - self.base_tick) as u32
    }

    /// Tokens generated before the step of tick `tick`.
    pub fn generated_at(&self, tick: u64) -> u32 {
        self.base_generated + (tick - self.base_tick) as u32
    }

    pub fn is_alive(&self) -> bool {
        self.alive
    }

    /// It has made a token in the cohort before the step of tick `tick`.
    pub fn served_before(&self, tick: u64) -> bool {
        tick > self.base_tick
    }
}

/// What a request brings when it joins the cohort (its counters now).
#[derive(Clone, Copy, Debug)]
pub struct Joining {
    pub request: RequestId,
    pub sample: u32,
    pub seq: SeqId,
    pub computed: u32,
    pub generated: u32,
    pub target: u32,
    pub max_model_len: u32,
    /// Its last block is partly filled and shared (the next write copies it).
    pub last_block_shared: bool,
}

const NONE: u32 = u32::MAX;

#[derive(Clone, Debug, Default)]
pub struct DecodeCohort {
    /// Decode steps taken since the cohort was formed.
    tick: u64,
    members: Vec<Member>,
    /// Member number of each sequence that is a live member (`NONE` otherwise).
    of_seq: Vec<u32>,
    alive: usize,
    /// Σ of the live members' computed tokens at `tick`.
    computed_sum: u64,
    /// The model's sliding window (0: none, and the three fields after it stay empty).
    window: u32,
    /// Σ of the live members' decode contexts (computed + 1) at `tick`, each capped at `window`.
    window_sum: u64,
    /// Live members whose context is still below the window (each adds one a tick).
    below_window: u64,
    /// (tick at which a member's context reaches the window, member), earliest first.
    window_reached: BinaryHeap<Reverse<(u64, u32)>>,
    /// Slow writes by tick modulo `block_size + 1`.
    ring: Vec<Vec<u32>>,
    /// `tick % ring.len()`, kept as the tick moves (no division per write).
    ring_head: usize,
    /// (tick of the step whose token finishes it, member), earliest first.
    finishes: BinaryHeap<Reverse<(u64, u32)>>,
    /// 0 for contiguous slabs (no slow writes).
    block_size: u32,
    /// The token that fills a block is a slow write (v0's prefix caching hashes the block in
    /// that write).
    slow_fill: bool,
    /// Formed from a running queue (the default cohort is not: it stands for none).
    formed: bool,
    /// Members joined since the last step: their previous token may predate that step's start.
    fresh: Vec<u32>,
    /// When the last step's tokens landed (µs).
    step_end_us: u64,
}

impl DecodeCohort {
    /// An empty cohort for blocks of `block_size` tokens, where the token that fills a block is
    /// a slow write if `slow_fill`.
    pub fn paged(block_size: u32, slow_fill: bool) -> Self {
        DecodeCohort {
            ring: vec![Vec::new(); block_size as usize + 1],
            block_size,
            slow_fill,
            formed: true,
            ..DecodeCohort::default()
        }
    }

    /// An empty cohort for contiguous slabs, reserved up front: no write is ever slow.
    pub fn contiguous() -> Self {
        DecodeCohort { formed: true, ..DecodeCohort::default() }
    }

    /// The same cohort for a model whose windowed layers read `window` tokens (0: none).
    pub fn with_window(mut self, window: u32) -> Self {
        self.window = window;
        self
    }

    /// The cohort stands for the running queue (false: none was formed, or it was disbanded).
    pub fn is_formed(&self) -> bool {
        self.formed
    }

    pub fn tick(&self) -> u64 {
        self.tick
    }
    /// Some writes wait to be written down (with 1-token blocks every write is slow, so the
    /// tables are always up to date).
    pub fn defers_writes(&self) -> bool {
        self.block_size != 1
    }
    /// Live members: the requests the running pass serves.
    pub fn alive(&self) -> usize {
        self.alive
    }
    pub fn computed_sum(&self) -> u64 {
        self.computed_sum
    }
    /// Σ of the live members' decode contexts at this tick, each capped at the window (0 without
    /// one).
    pub fn window_context_sum(&self) -> u64 {
        self.window_sum
    }
    pub fn member(&self, idx: u32) -> Member {
        self.members[idx as usize]
    }
    /// The live member running `seq`.
    pub fn of_seq(&self, seq: SeqId) -> Option<u32> {
        self.of_seq.get(seq as usize).copied().filter(|&i| i != NONE)
    }
    /// Live members in running order.
    pub fn live(&self) -> impl Iterator<Item = u32> + '_ {
        self.members.iter().enumerate().filter(|(_, m)| m.alive).map(|(i, _)| i as u32)
    }
    /// Every member ever joined, live or not (what the cohort's memory grows with).
    pub fn len_all(&self) -> usize {
        self.members.len()
    }

    /// Ticks from a write position to the next write that leaves the fast path, for a table
    /// holding `written` tokens.
    fn ticks_to_slow(&self, written: u32, last_block_shared: bool) -> u64 {
        let bs = self.block_size;
        let offset = if bs.is_power_of_two() { written & (bs - 1) } else { written % bs };
        if offset == 0 || last_block_shared {
            return 0;
        }
        // Unless the block is hashed in that write, the token that fills it is a fast write too.
        let fill = if self.slow_fill { self.block_size - 1 } else { self.block_size };
        u64::from(fill - offset)
    }

    fn schedule_slow(&mut self, idx: u32, at_tick: u64) {
        let len = self.ring.len();
        debug_assert!(at_tick >= self.tick && at_tick - self.tick < len as u64, "slow write beyond the ring");
        let mut slot = self.ring_head + (at_tick - self.tick) as usize;
        if slot >= len {
            slot -= len;
        }
        self.ring[slot].push(idx);
    }

    /// Adds a request at the end of the running order, at the current tick.
    pub fn join(&mut self, j: Joining) -> u32 {
        let idx = self.members.len() as u32;
        self.members.push(Member {
            request: j.request,
            sample: j.sample,
            seq: j.seq,
            base_tick: self.tick,
            base_computed: j.computed,
            base_generated: j.generated,
            alive: true,
        });
        if self.of_seq.len() <= j.seq as usize {
            self.of_seq.resize(j.seq as usize + 1, NONE);
        }
        self.of_seq[j.seq as usize] = idx;
        self.fresh.push(idx);
        self.alive += 1;
        self.computed_sum += u64::from(j.computed);
        if self.window > 0 {
            let context = j.computed + 1;
            self.window_sum += u64::from(context.min(self.window));
            if context < self.window {
                self.below_window += 1;
                self.window_reached.push(Reverse((self.tick + u64::from(self.window - context), idx)));
            }
        }
        if self.block_size > 0 {
            let slow = self.tick + self.ticks_to_slow(j.computed, j.last_block_shared);
            self.schedule_slow(idx, slow);
        }
        // The step of tick + k makes `generated + k + 1` tokens and `computed + k + 2` known.
        let known = j.computed + 1;
        let k = (j.target - j.generated - 1).min(j.max_model_len - known - 1);
        self.finishes.push(Reverse((self.tick + u64::from(k), idx)));
        idx
    }

    /// The members whose write at this tick is slow, in running order (dead ones included:
    /// skip them). Hand the list back with [`DecodeCohort::restore_bucket`].
    pub fn take_slow(&mut self) -> Vec<u32> {
        if self.ring.is_empty() {
            return Vec::new();
        }
        let mut bucket = std::mem::take(&mut self.ring[self.ring_head]);
        bucket.sort_unstable();
        bucket
    }

    /// Returns a bucket's memory to the ring once its members are handled.
    pub fn restore_bucket(&mut self, mut bucket: Vec<u32>) {
        if self.ring.is_empty() {
            return;
        }
        bucket.clear();
        let slot = &mut self.ring[self.ring_head];
        if slot.is_empty() {
            *slot = bucket;
        }
    }

    /// Member `idx` made its slow write at this tick (its last block is now its own).
    pub fn wrote_slow(&mut self, idx: u32) {
        let written = self.members[idx as usize].computed_at(self.tick) + 1;
        let next = self.tick + 1 + self.ticks_to_slow(written, false);
        self.schedule_slow(idx, next);
    }

    /// Member `idx` leaves (preempted before this tick's write, or finished after it).
    pub fn remove(&mut self, idx: u32) {
        let m = &mut self.members[idx as usize];
        debug_assert!(m.alive, "member {idx} removed twice");
        m.alive = false;
        self.alive -= 1;
        let computed = m.computed_at(self.tick);
        self.computed_sum -= u64::from(computed);
        self.of_seq[m.seq as usize] = NONE;
        if self.window > 0 {
            let context = computed + 1;
            self.window_sum -= u64::from(context.min(self.window));
            if context < self.window {
                self.below_window -= 1; // its entry in `window_reached` is skipped when it comes up
            }
        }
    }

    /// The members joined since the last step (dead ones included: skip them); the list is
    /// emptied.
    pub fn take_fresh(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.fresh)
    }

    /// The step just taken ended (its tokens landed) at `us`.
    pub fn set_step_end(&mut self, us: u64) {
        self.step_end_us = us;
    }
    pub fn step_end_us(&self) -> u64 {
        self.step_end_us
    }

    /// Every live member wrote this tick's token: the next tick begins.
    pub fn advance(&mut self) {
        self.computed_sum += self.alive as u64;
        self.tick += 1;
        if self.window > 0 {
            self.window_sum += self.below_window;
            while let Some(&Reverse((t, idx))) = self.window_reached.peek() {
                if t > self.tick {
                    break;
                }
                self.window_reached.pop();
                if self.members[idx as usize].alive {
                    self.below_window -= 1;
                }
            }
        }
        self.ring_head += 1;
        if self.ring_head >= self.ring.len() {
            self.ring_head = 0;
        }
    }

    /// The next live member whose token of the step just taken (the tick before this one)
    /// finished it, in running order; None when there is none left.
    pub fn next_finished(&mut self) -> Option<u32> {
        while let Some(&Reverse((t, idx))) = self.finishes.peek() {
            if t >= self.tick {
                return None;
            }
            self.finishes.pop();
            debug_assert!(t + 1 == self.tick || !self.members[idx as usize].alive, "a finish was skipped");
            if self.members[idx as usize].alive {
                return Some(idx);
            }
        }
        None
    }
}
