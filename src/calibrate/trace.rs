//! The allocation trace the engine produces for a preset, replayed step by step against a real
//! block pool. After each `Simulation::step()` the running groups' live sequences are looked up
//! in the paged allocator; the growth of each block's filled slots is written into the pool and
//! the whole running batch (every sequence's block table and token count) is what a decode step's
//! attention would gather.

use crate::calibrate::backend::BlockPoolBackend;
use crate::engine::alloc::splitmix64;
use crate::engine::alloc::{KvCacheManager, RequestId};
use crate::engine::request::GroupStatus;
use crate::engine::workload::Arrival;
use crate::engine::{AllocatorConfig, SimConfig, Simulation};

/// One step of the trace: the running batch after the step.
#[derive(Clone, Debug, Default)]
pub struct StepBatch {
    pub step: u64,
    pub now_us: u64,
    pub tables: Vec<Vec<u32>>,
    pub tokens: Vec<u32>,
    /// Tokens written into the pool for this step.
    pub written_tokens: u64,
}

impl StepBatch {
    pub fn num_seqs(&self) -> usize {
        self.tokens.len()
    }
    pub fn total_tokens(&self) -> u64 {
        self.tokens.iter().map(|&n| u64::from(n)).sum()
    }
    pub fn table_slices(&self) -> Vec<&[u32]> {
        self.tables.iter().map(Vec::as_slice).collect()
    }
}

/// Steps a simulation with the paged allocator at one block size and mirrors its writes.
pub struct TraceReplayer {
    sim: Simulation,
    block_size: u32,
    /// Slots of each physical block already written by the replay.
    written: Vec<u32>,
    /// Request that referenced each block at the previous step (u32::MAX: none).
    prev_owner: Vec<RequestId>,
    touched: Vec<u32>,
    prev_touched: Vec<u32>,
    need: Vec<u32>,
    keep: Vec<bool>,
    cur_owner: Vec<RequestId>,
    pub total_written_tokens: u64,
}

const NONE: RequestId = RequestId::MAX;

/// The preset with its allocator switched to paged blocks of `block_size` tokens.
pub fn paged_config(base: &SimConfig, block_size: u32, duration_s: Option<f64>) -> SimConfig {
    let mut config = base.clone();
    let prefix_caching = matches!(base.allocator, AllocatorConfig::Paged { prefix_caching: true, .. });
    config.allocator = AllocatorConfig::Paged { block_size, prefix_caching };
    if let Some(d) = duration_s {
        config.duration_s = d;
        // A shorter replay keeps the bursts that start inside it, cut at its end.
        if let Arrival::Poisson { bursts, .. } = &mut config.workload.arrival {
            bursts.retain(|b| b.start_s < d);
            for b in bursts.iter_mut() {
                b.end_s = b.end_s.min(d);
            }
        }
    }
    config
}

impl TraceReplayer {
    pub fn new(config: SimConfig) -> Result<Self, String> {
        let AllocatorConfig::Paged { block_size, .. } = config.allocator else {
            return Err("the trace replay needs the paged allocator".into());
        };
        let sim = Simulation::new(config).map_err(|e| e.to_string())?;
        let num_blocks = match sim.kv() {
            KvCacheManager::Paged(p) => p.pool().num_blocks() as usize,
            KvCacheManager::Contiguous(_) => unreachable!("paged config"),
        };
        Ok(TraceReplayer {
            sim,
            block_size,
            written: vec![0; num_blocks],
            prev_owner: vec![NONE; num_blocks],
            touched: Vec::new(),
            prev_touched: Vec::new(),
            need: vec![0; num_blocks],
            keep: vec![false; num_blocks],
            cur_owner: vec![NONE; num_blocks],
            total_written_tokens: 0,
        })
    }

    pub fn num_blocks(&self) -> u32 {
        self.written.len() as u32
    }
    pub fn block_size(&self) -> u32 {
        self.block_size
    }
    pub fn sim(&self) -> &Simulation {
        &self.sim
    }

    /// Advances one engine step, writes its new tokens into `pool` and returns the running batch
    /// (None once the simulation is done). Idle steps return an empty batch.
    pub fn next_step(&mut self, pool: &mut dyn BlockPoolBackend) -> Option<StepBatch> {
        if !self.sim.step() {
            return None;
        }
        let mut batch = StepBatch { step: self.sim.steps(), now_us: self.sim.now_us(), ..StepBatch::default() };
        let KvCacheManager::Paged(p) = self.sim.kv() else { unreachable!("paged config") };
        let bs = self.block_size;
        for g in self.sim.groups().iter().filter(|g| g.status == GroupStatus::Running) {
            for seq in g.live_seqs() {
                let Some(t) = p.table(seq) else { continue };
                for (j, &b) in t.blocks.iter().enumerate() {
                    let fill = t.num_tokens.saturating_sub(j as u32 * bs).min(bs);
                    let i = b as usize;
                    if self.cur_owner[i] == NONE {
                        self.cur_owner[i] = t.request;
                        self.touched.push(b);
                    }
                    self.keep[i] |= self.prev_owner[i] == t.request;
                    self.need[i] = self.need[i].max(fill);
                }
                batch.tables.push(t.blocks.clone());
                batch.tokens.push(t.num_tokens);
            }
        }
        // Blocks that were not held by the same request at the previous step are new (or reused
        // after a free): their old contents do not count.
        for &b in &self.prev_touched {
            if self.cur_owner[b as usize] == NONE {
                self.prev_owner[b as usize] = NONE;
            }
        }
        for k in 0..self.touched.len() {
            let b = self.touched[k];
            let i = b as usize;
            if !self.keep[i] {
                self.written[i] = 0;
                self.prev_owner[i] = self.cur_owner[i];
            }
            let (from, to) = (self.written[i], self.need[i]);
            if to > from {
                let seed = splitmix64((batch.step << 32) ^ u64::from(b));
                pool.write_tokens(b, from, to - from, seed);
                batch.written_tokens += u64::from(to - from);
                self.written[i] = to;
            }
            self.need[i] = 0;
            self.keep[i] = false;
            self.cur_owner[i] = NONE;
        }
        core::mem::swap(&mut self.touched, &mut self.prev_touched);
        self.touched.clear();
        self.total_written_tokens += batch.written_tokens;
        Some(batch)
    }
}
