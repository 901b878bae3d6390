//! The KV cache groups of a hybrid model and their managers, named as vLLM's
//! `single_type_kv_cache_manager.py` names them: which tokens each kind of layer skips, and the
//! most blocks admission reserves for one request in its group. `groups.rs` runs them in the
//! paged allocator.

use super::block_table::{BlockTable, SeqTables};
use crate::engine::model_arch::LayerAttention;

/// vLLM's null block: what a table holds in place of a block freed behind the window.
pub const NULL_BLOCK: u32 = 0;

/// The manager of one KV cache group, named as vLLM names its `SingleTypeKVCacheManager`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SingleTypeManager {
    FullAttention,
    SlidingWindow { sliding_window: u32 },
    ChunkedLocalAttention { attention_chunk_size: u32 },
}

impl SingleTypeManager {
    pub fn of(attention: LayerAttention) -> SingleTypeManager {
        match attention {
            LayerAttention::Full => SingleTypeManager::FullAttention,
            LayerAttention::SlidingWindow(w) => SingleTypeManager::SlidingWindow { sliding_window: w.max(1) },
            LayerAttention::Chunked(c) => SingleTypeManager::ChunkedLocalAttention { attention_chunk_size: c.max(1) },
        }
    }

    /// Tokens before the attention window of the next token, once `num_computed_tokens` are
    /// computed (`get_num_skipped_tokens`).
    pub fn get_num_skipped_tokens(self, num_computed_tokens: u32) -> u32 {
        match self {
            SingleTypeManager::FullAttention => 0,
            SingleTypeManager::SlidingWindow { sliding_window } => {
                (num_computed_tokens + 1).saturating_sub(sliding_window)
            }
            SingleTypeManager::ChunkedLocalAttention { attention_chunk_size } => {
                num_computed_tokens / attention_chunk_size * attention_chunk_size
            }
        }
    }

    /// The most blocks admission reserves for one request (`max_admission_blocks_per_request`,
    /// what startup sizing counts too): a window's `W − 1` tokens plus the tokens in flight (one
    /// step's `max_num_batched_tokens`) and one block for a window that starts mid-block; a chunk
    /// plus the tokens in flight. None for full attention, which keeps every block.
    pub fn max_admission_blocks_per_request(
        self,
        block_size: u32,
        max_in_flight_tokens: u32,
        max_model_len: u32,
    ) -> Option<u32> {
        let bs = block_size.max(1);
        match self {
            SingleTypeManager::FullAttention => None,
            SingleTypeManager::SlidingWindow { sliding_window } => {
                Some((sliding_window - 1 + max_in_flight_tokens).min(max_model_len).div_ceil(bs) + 1)
            }
            SingleTypeManager::ChunkedLocalAttention { attention_chunk_size } => {
                Some((attention_chunk_size + max_in_flight_tokens).min(max_model_len).div_ceil(bs))
            }
        }
    }
}

/// The KV cache groups of a hybrid model: each group's manager, and the block tables of every
/// group but the first (group 0's are the allocator's own tables).
#[derive(Clone, Debug)]
pub struct KvCacheGroups {
    pub managers: Vec<SingleTypeManager>,
    pub(super) tables: Vec<SeqTables>,
    pub(super) max_in_flight_tokens: u32,
    pub(super) max_model_len: u32,
    /// Per block: freed by `remove_skipped_blocks` and not handed out since (the map draws it).
    pub(super) behind_window: Vec<bool>,
}

impl KvCacheGroups {
    pub fn new(kinds: &[LayerAttention], num_blocks: u32, max_in_flight_tokens: u32, max_model_len: u32) -> Self {
        KvCacheGroups {
            managers: kinds.iter().map(|&a| SingleTypeManager::of(a)).collect(),
            tables: vec![SeqTables::default(); kinds.len().saturating_sub(1)],
            max_in_flight_tokens,
            max_model_len,
            behind_window: vec![false; num_blocks as usize],
        }
    }

    pub fn len(&self) -> usize {
        self.managers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.managers.is_empty()
    }
}

/// Leading null blocks of a table, found from `end` backwards as vLLM's `_remove_blocks_in_range`
/// stops at the first null (nulls are always a head).
pub(super) fn first_held(blocks: &[u32], end: usize) -> usize {
    let mut i = end.min(blocks.len());
    while i > 0 && blocks[i - 1] != NULL_BLOCK {
        i -= 1;
    }
    i
}

/// Tokens a table's held blocks hold: all its tokens but those of its leading nulls.
pub(super) fn held_tokens(t: &BlockTable, block_size: u32) -> u32 {
    let nulls = t.blocks.iter().take_while(|&&b| b == NULL_BLOCK).count() as u32;
    t.num_tokens.saturating_sub(nulls * block_size)
}
