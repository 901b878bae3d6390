//! The contiguous allocator: one slab per sequence, reserved whole at admission, placed first-fit
//! (or best-fit) over the holes between slabs; a freed slab's hole merges with its neighbours.
//!
//! A slab is sized before anyone knows how long the answer will be, which is where the three
//! wastes of the PagedAttention paper come from: reservation, internal and external fragmentation.

use std::collections::BTreeMap;

use super::ids::{RequestId, SeqId};

/// How a hole is chosen for a new slab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    FirstFit,
    BestFit,
}

/// One reservation: `[start, start + len)` in token slots, of which the first `live` hold KV.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slab {
    pub request: RequestId,
    pub start: u32,
    pub len: u32,
    pub live: u32,
}

#[derive(Clone, Debug)]
pub struct ContiguousAllocator {
    capacity: u32,
    fit: Fit,
    /// Free regions, start → length; never adjacent (they are merged).
    holes: BTreeMap<u32, u32>,
    slabs: Vec<Option<Slab>>,
    free_tokens: u32,
    live_tokens: u64,
    /// Bumped whenever a slab is placed or freed (what admission depends on).
    epoch: u64,
}

impl ContiguousAllocator {
    pub fn new(capacity_tokens: u32, fit: Fit) -> Self {
        let mut holes = BTreeMap::new();
        if capacity_tokens > 0 {
            holes.insert(0, capacity_tokens);
        }
        ContiguousAllocator {
            capacity: capacity_tokens,
            fit,
            holes,
            slabs: Vec::new(),
            free_tokens: capacity_tokens,
            live_tokens: 0,
            epoch: 0,
        }
    }

    pub fn capacity_tokens(&self) -> u32 {
        self.capacity
    }
    pub fn free_tokens(&self) -> u32 {
        self.free_tokens
    }
    pub fn live_tokens(&self) -> u64 {
        self.live_tokens
    }
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
    pub fn largest_hole(&self) -> u32 {
        self.holes.values().copied().max().unwrap_or(0)
    }
    pub fn num_holes(&self) -> usize {
        self.holes.len()
    }
    pub fn slab(&self, seq: SeqId) -> Option<&Slab> {
        self.slabs.get(seq as usize).and_then(Option::as_ref)
    }
    pub fn slabs(&self) -> impl Iterator<Item = &Slab> {
        self.slabs.iter().flatten()
    }

    fn find_hole(&self, len: u32) -> Option<u32> {
        match self.fit {
            Fit::FirstFit => self.holes.iter().find(|(_, &l)| l >= len).map(|(&s, _)| s),
            Fit::BestFit => self.holes.iter().filter(|(_, &l)| l >= len).min_by_key(|(&s, &l)| (l, s)).map(|(&s, _)| s),
        }
    }

    /// Reserves one slab of `len` tokens for each sequence, all or none.
    pub fn reserve_all(&mut self, request: RequestId, seqs: &[SeqId], len: u32) -> bool {
        for (i, &seq) in seqs.iter().enumerate() {
            if !self.reserve(request, seq, len) {
                for &done in &seqs[..i] {
                    self.free(done);
                }
                return false;
            }
        }
        true
    }

    fn reserve(&mut self, request: RequestId, seq: SeqId, len: u32) -> bool {
        assert!(self.slab(seq).is_none(), "seq {seq} already holds a slab");
        let Some(start) = self.find_hole(len.max(1)) else { return false };
        let hole_len = self.holes.remove(&start).expect("hole exists");
        if hole_len > len {
            self.holes.insert(start + len, hole_len - len);
        }
        let idx = seq as usize;
        if self.slabs.len() <= idx {
            self.slabs.resize(idx + 1, None);
        }
        self.slabs[idx] = Some(Slab { request, start, len, live: 0 });
        self.free_tokens -= len;
        self.epoch += 1;
        true
    }

    /// Writes `n` more tokens into the slab; false if the slab is full (cannot happen when the
    /// reservation covers prompt + max_tokens).
    pub fn write(&mut self, seq: SeqId, n: u32) -> bool {
        let slab = self.slabs[seq as usize].as_mut().expect("write to a seq without a slab");
        if slab.live + n > slab.len {
            return false;
        }
        slab.live += n;
        self.live_tokens += u64::from(n);
        true
    }

    /// Event-driven stepping: `tokens` decode tokens were written into their slabs without
    /// updating the slabs yet; only the live count moves now. [`ContiguousAllocator::catch_up`]
    /// writes them down.
    pub fn count_deferred_writes(&mut self, tokens: u64) {
        self.live_tokens += tokens;
    }

    /// Writes down the deferred writes of `seq`: its slab holds `live` tokens.
    pub fn catch_up(&mut self, seq: SeqId, live: u32) {
        let slab = self.slabs[seq as usize].as_mut().expect("catch_up on a seq without a slab");
        debug_assert!(live >= slab.live && live <= slab.len, "catch_up past the slab");
        slab.live = live;
    }

    /// Gives `child` the same number of live tokens as `parent` (a sample copies the prompt).
    pub fn copy_live(&mut self, parent: SeqId, child: SeqId) {
        let live = self.slab(parent).expect("parent slab").live;
        let slab = self.slabs[child as usize].as_mut().expect("child slab");
        self.live_tokens += u64::from(live) - u64::from(slab.live);
        slab.live = live;
    }

    pub fn free(&mut self, seq: SeqId) {
        let Some(slab) = self.slabs.get_mut(seq as usize).and_then(Option::take) else { return };
        self.free_tokens += slab.len;
        self.live_tokens -= u64::from(slab.live);
        self.epoch += 1;
        let (mut start, mut len) = (slab.start, slab.len);
        if let Some((&prev_start, &prev_len)) = self.holes.range(..start).next_back() {
            if prev_start + prev_len == start {
                self.holes.remove(&prev_start);
                start = prev_start;
                len += prev_len;
            }
        }
        if let Some(&next_len) = self.holes.get(&(start + len)) {
            self.holes.remove(&(start + len));
            len += next_len;
        }
        self.holes.insert(start, len);
    }

    /// Slabs and holes tile the pool exactly, holes never touch, live ≤ len, counters agree.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut regions: Vec<(u32, u32, bool)> = self.holes.iter().map(|(&s, &l)| (s, l, true)).collect();
        regions.extend(self.slabs().map(|s| (s.start, s.len, false)));
        regions.sort_unstable();
        let mut at = 0u32;
        let mut prev_hole = false;
        let mut live = 0u64;
        for &(start, len, is_hole) in &regions {
            if start != at {
                return Err(format!("region at {start} but previous ended at {at}: overlap or gap"));
            }
            if is_hole && prev_hole {
                return Err(format!("adjacent holes at {start} were not merged"));
            }
            prev_hole = is_hole;
            at = start + len;
        }
        if at != self.capacity {
            return Err(format!("regions end at {at}, capacity is {}", self.capacity));
        }
        for s in self.slabs() {
            if s.live > s.len {
                return Err(format!("slab of request {} holds {} live > {} reserved", s.request, s.live, s.len));
            }
            live += u64::from(s.live);
        }
        let free: u32 = self.holes.values().sum();
        if free != self.free_tokens || live != self.live_tokens {
            return Err("free or live token counters disagree with the slabs".into());
        }
        Ok(())
    }
}
