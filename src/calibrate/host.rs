//! The host-memory block pool: one real allocation of `num_blocks × block_size × token_bytes`
//! bytes in RAM, written and gathered on the calling thread. It moves real bytes through real
//! caches, so a paged gather pays for its short, scattered runs the way memory hardware makes it
//! pay; the calibration times it with the wall clock (the pool itself does not time anything).

use crate::calibrate::backend::{fold_run, kv_word, BlockPoolBackend, GatherResult, PoolGeometry};

pub struct HostPool {
    geometry: PoolGeometry,
    words: Vec<u64>,
    /// Contiguous copy of the last staged batch: per sequence, per plane, its tokens in order.
    staging: Vec<u64>,
    /// Words skipped at the front of `staging` so that the copy starts on a 64-byte line, as
    /// the pool does.
    staging_pad: usize,
    staged_tokens: Vec<u32>,
}

impl HostPool {
    /// Allocates the pool (zeroed). Fails when the geometry is invalid or the memory is not there.
    pub fn new(geometry: PoolGeometry) -> Result<Self, String> {
        geometry.validate()?;
        let words =
            usize::try_from(geometry.pool_bytes() / 8).map_err(|_| "pool too large for this machine".to_string())?;
        let mut v = Vec::new();
        v.try_reserve_exact(words)
            .map_err(|_| format!("cannot allocate a {} MiB host pool", geometry.pool_bytes() >> 20))?;
        v.resize(words, 0);
        Ok(HostPool { geometry, words: v, staging: Vec::new(), staging_pad: 0, staged_tokens: Vec::new() })
    }

    /// Where the staged contiguous copy starts within a 64-byte line (0: on a line, as the pool).
    pub fn staged_line_offset_bytes(&self) -> usize {
        (self.staging.as_ptr() as usize + self.staging_pad * 8) % 64
    }
}

impl BlockPoolBackend for HostPool {
    fn geometry(&self) -> PoolGeometry {
        self.geometry
    }

    fn label(&self) -> String {
        "host memory".into()
    }

    fn write_tokens(&mut self, block: u32, offset_tokens: u32, n_tokens: u32, seed: u64) {
        let g = self.geometry;
        assert!(block < g.num_blocks && offset_tokens + n_tokens <= g.block_size, "write outside block {block}");
        let pw = g.plane_words();
        for p in 0..g.planes {
            for i in 0..n_tokens {
                let at = g.word_index(block, p, offset_tokens + i, 0);
                let k0 = p * pw as u32;
                for (k, w) in self.words[at..at + pw].iter_mut().enumerate() {
                    *w = kv_word(seed, i, k0 + k as u32);
                }
            }
        }
    }

    fn gather(&mut self, tables: &[&[u32]], tokens: &[u32]) -> GatherResult {
        let g = self.geometry;
        assert_eq!(g.check_batch(tables, tokens), Ok(()), "gather over an invalid batch");
        let (bs, pw) = (g.block_size, g.plane_words());
        let mut acc = 0u64;
        let mut r = GatherResult::default();
        for (table, &n) in tables.iter().zip(tokens) {
            r.tokens += u64::from(n);
            let nblocks = n.div_ceil(bs) as usize;
            for p in 0..g.planes {
                for (j, &b) in table[..nblocks].iter().enumerate() {
                    let t0 = j as u32 * bs;
                    let len = (n - t0).min(bs) as usize;
                    let at = g.word_index(b, p, 0, 0);
                    acc = fold_run(acc, &self.words[at..at + len * pw], t0, pw);
                }
                r.runs += nblocks as u64;
            }
        }
        r.bytes = r.tokens * g.token_bytes();
        r.checksum = Some(acc);
        r
    }

    fn stage_contiguous(&mut self, tables: &[&[u32]], tokens: &[u32]) {
        let g = self.geometry;
        assert_eq!(g.check_batch(tables, tokens), Ok(()), "staging an invalid batch");
        let (bs, pw) = (g.block_size, g.plane_words());
        let total: u64 = tokens.iter().map(|&n| u64::from(n)).sum();
        self.staging.clear();
        self.staging.reserve(total as usize * g.token_words() + 8);
        self.staging_pad = (64 - self.staging.as_ptr() as usize % 64) % 64 / 8;
        self.staging.resize(self.staging_pad, 0);
        for (table, &n) in tables.iter().zip(tokens) {
            for p in 0..g.planes {
                for (j, &b) in table[..n.div_ceil(bs) as usize].iter().enumerate() {
                    let len = (n - j as u32 * bs).min(bs) as usize;
                    let at = g.word_index(b, p, 0, 0);
                    self.staging.extend_from_slice(&self.words[at..at + len * pw]);
                }
            }
        }
        self.staged_tokens = tokens.to_vec();
    }

    fn gather_contiguous(&mut self) -> GatherResult {
        let g = self.geometry;
        let pw = g.plane_words();
        let mut acc = 0u64;
        let mut r = GatherResult::default();
        let mut at = self.staging_pad;
        for &n in &self.staged_tokens {
            r.tokens += u64::from(n);
            let len = n as usize * pw;
            for _ in 0..g.planes {
                acc = fold_run(acc, &self.staging[at..at + len], 0, pw);
                at += len;
                r.runs += u64::from(n > 0);
            }
        }
        r.bytes = r.tokens * g.token_bytes();
        r.checksum = Some(acc);
        r
    }

    fn read_pool(&mut self) -> GatherResult {
        let sum = sum_words(&self.words);
        GatherResult { bytes: self.geometry.pool_bytes(), runs: 1, checksum: Some(sum), ..GatherResult::default() }
    }
}

/// A plain streaming sum with independent lanes (what the memory system can deliver).
fn sum_words(words: &[u64]) -> u64 {
    let mut lanes = [0u64; 8];
    let mut chunks = words.chunks_exact(8);
    for c in &mut chunks {
        for (l, &w) in lanes.iter_mut().zip(c) {
            *l = l.wrapping_add(w);
        }
    }
    let tail = chunks.remainder().iter().fold(0u64, |a, &w| a.wrapping_add(w));
    lanes.iter().fold(tail, |a, &l| a.wrapping_add(l))
}
