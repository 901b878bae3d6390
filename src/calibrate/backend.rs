//! Block-pool backends: where the bytes of a paged KV pool live. The engine's allocators decide
//! *which* block holds which tokens; a `BlockPoolBackend` holds the K/V bytes themselves, writes
//! new tokens into their blocks and gathers every running sequence's K/V through its block table,
//! as a paged-attention kernel does. Three backends share this trait:
//!
//! - [`SimulatedPool`] (here): counts bytes and moves none; it remembers which write filled each
//!   token slot, so it can say what any gather *should* read (the reference the others are
//!   checked against).
//! - the host-memory pool (`calibrate::host`): one real allocation in RAM.
//! - the CUDA pool (`calibrate::cuda`, `gpu` feature): one allocation on the device, read by
//!   kernels compiled at run time.
//!
//! ## Geometry and layout
//! A pool models the KV cache of **one layer** (attention runs layer by layer, so the run lengths
//! a kernel sees are those of one layer). A token slot holds `planes` runs of `plane_bytes` each:
//! one plane per KV head for K and one for V (`planes = 2 × kv_heads`, `plane_bytes = head_dim ×
//! dtype bytes`). Within a block, planes are head-major, as in vLLM's cache layout:
//! word `k` of plane `p` of slot `o` of block `b` is at word index
//! `((b × planes + p) × block_size + o) × plane_words + k`. A paged read of one plane therefore
//! touches runs of `block_size × plane_bytes` bytes; a contiguous read touches one run per
//! sequence and plane.
//!
//! ## Contents and checksum
//! `write_tokens(block, offset, n, seed)` fills slot `offset + i` (i < n) with the words
//! `kv_word(seed, i, k)` for `k` in `0..token_words`; word `k` lives in plane `k / plane_words`.
//! Never-written slots hold zeros. A gather's checksum is
//! `Σ_seq Σ_{t < tokens[seq]} (2t + 1) × Σ_k word_k(seq, t)` in wrapping u64 arithmetic, where `t`
//! is the token's logical position in its sequence: it does not depend on the order of reads,
//! but it does on which bytes sit at which logical position.

use crate::engine::alloc::splitmix64;

/// Shape of a block pool (one layer's KV cache).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolGeometry {
    pub num_blocks: u32,
    /// Tokens per block.
    pub block_size: u32,
    /// Runs per token slot (2 × KV heads: K and V of each head).
    pub planes: u32,
    /// Bytes of one plane of one token (head_dim × dtype bytes); a multiple of 8.
    pub plane_bytes: u32,
}

impl PoolGeometry {
    pub fn plane_words(&self) -> usize {
        self.plane_bytes as usize / 8
    }
    pub fn token_words(&self) -> usize {
        self.plane_words() * self.planes as usize
    }
    /// K and V of one token in this layer.
    pub fn token_bytes(&self) -> u64 {
        u64::from(self.plane_bytes) * u64::from(self.planes)
    }
    pub fn block_bytes(&self) -> u64 {
        self.token_bytes() * u64::from(self.block_size)
    }
    pub fn pool_bytes(&self) -> u64 {
        self.block_bytes() * u64::from(self.num_blocks)
    }
    /// Word index of word `k` of plane `p` of slot `offset` of `block`.
    pub fn word_index(&self, block: u32, plane: u32, offset: u32, k: usize) -> usize {
        let run = (block as usize * self.planes as usize + plane as usize) * self.block_size as usize;
        (run + offset as usize) * self.plane_words() + k
    }

    /// Checks the shape a backend can hold; the message names the offending quantity.
    pub fn validate(&self) -> Result<(), String> {
        if self.num_blocks == 0 || self.block_size == 0 || self.planes == 0 {
            return Err(format!("empty pool geometry {self:?}"));
        }
        if self.plane_bytes == 0 || self.plane_bytes % 8 != 0 {
            return Err(format!("plane_bytes {} must be a positive multiple of 8", self.plane_bytes));
        }
        Ok(())
    }

    /// Checks that every table names blocks of this pool and covers its sequence's tokens.
    pub fn check_batch(&self, tables: &[&[u32]], tokens: &[u32]) -> Result<(), String> {
        if tables.len() != tokens.len() {
            return Err(format!("{} tables but {} token counts", tables.len(), tokens.len()));
        }
        for (s, (table, &n)) in tables.iter().zip(tokens).enumerate() {
            if u64::from(n) > table.len() as u64 * u64::from(self.block_size) {
                return Err(format!("sequence {s}: {n} tokens do not fit its {} blocks", table.len()));
            }
            if let Some(b) = table.iter().find(|&&b| b >= self.num_blocks) {
                return Err(format!("sequence {s}: block {b} is outside the pool of {}", self.num_blocks));
            }
        }
        Ok(())
    }
}

/// What one gather read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GatherResult {
    pub tokens: u64,
    pub bytes: u64,
    /// Contiguous runs read (sequence × plane × block for a paged read).
    pub runs: u64,
    /// The checksum of the bytes read (see the module docs); None when the backend moves no bytes.
    pub checksum: Option<u64>,
    /// Device-measured duration of the read, when the backend times it itself (CUDA events).
    pub device_ns: Option<u64>,
}

/// A pool of KV blocks that can be written and gathered through block tables.
pub trait BlockPoolBackend {
    fn geometry(&self) -> PoolGeometry;
    /// What the pool is, for reports ("simulated", "host memory", "cuda: NVIDIA H200").
    fn label(&self) -> String;
    /// Writes `n_tokens` new tokens into `block` from slot `offset_tokens` (contents from `seed`).
    fn write_tokens(&mut self, block: u32, offset_tokens: u32, n_tokens: u32, seed: u64);
    /// Reads each sequence's first `tokens[s]` tokens through its block table `tables[s]`.
    fn gather(&mut self, tables: &[&[u32]], tokens: &[u32]) -> GatherResult;
    /// Copies the same tokens into a contiguous layout (one run per sequence and plane), untimed.
    fn stage_contiguous(&mut self, tables: &[&[u32]], tokens: &[u32]);
    /// Reads the staged copy contiguously: the same bytes as `gather`, without the indirection.
    fn gather_contiguous(&mut self) -> GatherResult;
    /// Streams the whole pool once in address order (a plain sum): the pool's raw read bandwidth.
    fn read_pool(&mut self) -> GatherResult;
    /// Keeps a device busy for a moment before a measurement (clocks ramp down while the host
    /// replays the trace). In-memory pools need nothing.
    fn warm(&mut self) {}
    /// The first failure of a device-backed pool since the last call (its results since then are
    /// meaningless). In-memory pools never fail.
    fn take_error(&mut self) -> Option<String> {
        None
    }
}

/// Word `k` of the token written as the `index`-th token of a write with `seed`.
pub fn kv_word(seed: u64, index: u32, k: u32) -> u64 {
    splitmix64(seed.wrapping_add((u64::from(index) << 32) | u64::from(k)))
}

/// Weight of logical token `t` in a gather checksum.
pub fn token_weight(t: u32) -> u64 {
    2 * u64::from(t) + 1
}

/// Folds a run of consecutive tokens of one plane into `acc`: `run` holds whole planes of
/// `plane_words` words, the first at logical position `first_token`.
#[inline]
pub fn fold_run(mut acc: u64, run: &[u64], first_token: u32, plane_words: usize) -> u64 {
    for (i, plane) in run.chunks_exact(plane_words).enumerate() {
        let sum = plane.iter().fold(0u64, |a, &w| a.wrapping_add(w));
        acc = acc.wrapping_add(sum.wrapping_mul(token_weight(first_token + i as u32)));
    }
    acc
}

/// The pool the lab uses: counts bytes and moves none. With `track_contents` it keeps, per token
/// slot, the sum of the words the last write put there, and so computes the checksum a real pool
/// must produce (the calibration's independent reference).
#[derive(Clone, Debug)]
pub struct SimulatedPool {
    geometry: PoolGeometry,
    /// Per slot (block × block_size + offset): the wrapping sum of its token's words (0: never
    /// written, as a zeroed pool reads).
    contents: Option<Vec<u64>>,
    staged: Vec<(Vec<u32>, u32)>,
    pub bytes_written: u64,
    pub bytes_read: u64,
}

impl SimulatedPool {
    pub fn new(geometry: PoolGeometry, track_contents: bool) -> Self {
        let slots = geometry.num_blocks as usize * geometry.block_size as usize;
        SimulatedPool {
            geometry,
            contents: track_contents.then(|| vec![0; slots]),
            staged: Vec::new(),
            bytes_written: 0,
            bytes_read: 0,
        }
    }

    fn read(&mut self, tables: &[&[u32]], tokens: &[u32], runs_per_plane: impl Fn(&[u32], u32) -> u64) -> GatherResult {
        assert_eq!(self.geometry.check_batch(tables, tokens), Ok(()), "gather over an invalid batch");
        let g = self.geometry;
        let mut r = GatherResult::default();
        let mut acc = 0u64;
        for (table, &n) in tables.iter().zip(tokens) {
            r.tokens += u64::from(n);
            r.runs += runs_per_plane(table, n) * u64::from(g.planes);
            let Some(c) = self.contents.as_ref() else { continue };
            for t in 0..n {
                let slot =
                    table[(t / g.block_size) as usize] as usize * g.block_size as usize + (t % g.block_size) as usize;
                acc = acc.wrapping_add(c[slot].wrapping_mul(token_weight(t)));
            }
        }
        r.bytes = r.tokens * g.token_bytes();
        r.checksum = self.contents.is_some().then_some(acc);
        self.bytes_read += r.bytes;
        r
    }
}

impl BlockPoolBackend for SimulatedPool {
    fn geometry(&self) -> PoolGeometry {
        self.geometry
    }
    fn label(&self) -> String {
        "simulated".into()
    }
    fn write_tokens(&mut self, block: u32, offset_tokens: u32, n_tokens: u32, seed: u64) {
        let g = self.geometry;
        assert!(block < g.num_blocks && offset_tokens + n_tokens <= g.block_size, "write outside block {block}");
        self.bytes_written += u64::from(n_tokens) * g.token_bytes();
        if let Some(c) = self.contents.as_mut() {
            let base = block as usize * g.block_size as usize + offset_tokens as usize;
            let words = g.token_words() as u32;
            for i in 0..n_tokens {
                c[base + i as usize] = (0..words).fold(0u64, |a, k| a.wrapping_add(kv_word(seed, i, k)));
            }
        }
    }
    fn gather(&mut self, tables: &[&[u32]], tokens: &[u32]) -> GatherResult {
        let bs = self.geometry.block_size;
        self.read(tables, tokens, |_, n| u64::from(n.div_ceil(bs)))
    }
    fn stage_contiguous(&mut self, tables: &[&[u32]], tokens: &[u32]) {
        self.staged = tables.iter().zip(tokens).map(|(t, &n)| (t.to_vec(), n)).collect();
    }
    fn gather_contiguous(&mut self) -> GatherResult {
        let staged = core::mem::take(&mut self.staged);
        let tables: Vec<&[u32]> = staged.iter().map(|(t, _)| t.as_slice()).collect();
        let tokens: Vec<u32> = staged.iter().map(|&(_, n)| n).collect();
        let r = self.read(&tables, &tokens, |_, n| u64::from(n > 0));
        self.staged = staged;
        r
    }
    fn read_pool(&mut self) -> GatherResult {
        let bytes = self.geometry.pool_bytes();
        self.bytes_read += bytes;
        GatherResult { bytes, runs: 1, ..GatherResult::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry() -> PoolGeometry {
        PoolGeometry { num_blocks: 8, block_size: 4, planes: 2, plane_bytes: 16 }
    }

    #[test]
    fn paged_and_contiguous_reads_of_a_simulated_pool_agree() {
        let mut pool = SimulatedPool::new(geometry(), true);
        pool.write_tokens(5, 0, 4, 11);
        pool.write_tokens(2, 0, 3, 12);
        let tables: [&[u32]; 1] = [&[5, 2]];
        let paged = pool.gather(&tables, &[7]);
        pool.stage_contiguous(&tables, &[7]);
        let contiguous = pool.gather_contiguous();
        assert_eq!(paged.checksum, contiguous.checksum);
        assert_eq!((paged.runs, contiguous.runs), (4, 2));
        assert_eq!(paged.bytes, 7 * 32);
        let swapped: [&[u32]; 1] = [&[2, 5]];
        assert_ne!(pool.gather(&swapped, &[7]).checksum, paged.checksum, "block order must matter");
    }

    #[test]
    fn invalid_batches_are_named() {
        let g = geometry();
        assert!(g.check_batch(&[&[9]], &[1]).unwrap_err().contains("block 9"));
        assert!(g.check_batch(&[&[1]], &[5]).unwrap_err().contains("5 tokens"));
    }
}
