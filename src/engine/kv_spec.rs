//! The KV cache's layout as vLLM v1's hybrid allocator builds it at startup
//! (`vllm/v1/core/kv_cache_utils.py`: `_get_kv_cache_groups_uniform_page_size`,
//! `get_max_concurrency_for_kv_cache_config`, `_report_kv_cache_config`).
//!
//! Layers of one kind (full attention, a sliding window, chunked local attention) form groups
//! of `group_size` layers, where `group_size` is the layer count of the rarest kind (or of the
//! commonest, when it has fewer than 1.5 times as many: the rarer kinds are then padded); each
//! kind takes `ceil(count ÷ group_size)` groups. Every group shares one pool of blocks, and a block
//! holds `block_size` tokens of `group_size` layers, so:
//!
//! ```text
//! bytes per block   = group_size × block_size × KV bytes per token per layer
//! num_gpu_blocks    = available KV ÷ bytes per block
//! GPU KV cache size = num_gpu_blocks ÷ groups × block_size           (tokens)
//! blocks per request = Σ over groups of: full cdiv(L, bs); sliding window W
//!                      cdiv(min(W − 1 + T, L), bs) + 1; chunked C cdiv(min(C + T, L), bs)
//! max concurrency   = num_gpu_blocks ÷ blocks per request
//! ```
//!
//! (L = `max_model_len`, T = `max_num_batched_tokens`.) A model with one kind of layer is one
//! group of all its layers, which is the plain formula of `memory_budget.rs`. The paged v1
//! allocator runs these groups (`alloc/paged/groups.rs`, `docs/MODELS.md`).

use serde::Serialize;

use super::model_arch::LayerAttention;

/// The layers of one kind and how many groups they take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LayerKind {
    pub attention: LayerAttention,
    pub layers: u32,
    pub groups: u32,
}

/// vLLM's KV cache groups for a model's layers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KvLayout {
    /// Kinds in a fixed order: full attention first, then windows from the smallest.
    pub kinds: Vec<LayerKind>,
    pub group_size: u32,
    pub groups: u32,
}

impl KvLayout {
    /// The layout of `layers` layers that all attend to everything.
    pub fn full(layers: u32) -> KvLayout {
        KvLayout {
            kinds: vec![LayerKind { attention: LayerAttention::Full, layers, groups: 1 }],
            group_size: layers.max(1),
            groups: 1,
        }
    }

    /// Groups the layers by kind as vLLM's hybrid allocator does.
    pub fn of(layer_attention: &[LayerAttention]) -> KvLayout {
        let mut counts: Vec<(LayerAttention, u32)> = Vec::new();
        for &a in layer_attention {
            match counts.iter_mut().find(|(k, _)| *k == a) {
                Some((_, n)) => *n += 1,
                None => counts.push((a, 1)),
            }
        }
        counts.sort();
        if counts.len() <= 1 {
            return KvLayout::full(layer_attention.len() as u32)
                .with_kind(counts.first().map_or(LayerAttention::Full, |c| c.0));
        }
        let fewest = counts.iter().map(|c| c.1).min().unwrap_or(1).max(1);
        let most = counts.iter().map(|c| c.1).max().unwrap_or(1);
        // Kinds of nearly equal counts share the larger count, the smaller kinds padded
        // (`if max_num_layers < min_num_layers * 1.5: group_size = max_num_layers`).
        let group_size = if 2 * most < 3 * fewest { most } else { fewest };
        let kinds: Vec<LayerKind> = counts
            .into_iter()
            .map(|(attention, layers)| LayerKind { attention, layers, groups: layers.div_ceil(group_size) })
            .collect();
        let groups = kinds.iter().map(|k| k.groups).sum();
        KvLayout { kinds, group_size, groups }
    }

    fn with_kind(mut self, attention: LayerAttention) -> KvLayout {
        self.kinds[0].attention = attention;
        self
    }

    pub fn is_hybrid(&self) -> bool {
        self.groups > 1
    }

    /// Blocks one request of `max_model_len` tokens takes across every group.
    pub fn blocks_per_request(&self, max_model_len: u32, block_size: u32, max_num_batched_tokens: u32) -> u64 {
        let (len, bs, t) = (u64::from(max_model_len), u64::from(block_size.max(1)), u64::from(max_num_batched_tokens));
        self.kinds
            .iter()
            .map(|k| {
                let per_group = match k.attention {
                    LayerAttention::Full => len.div_ceil(bs),
                    LayerAttention::SlidingWindow(w) => (u64::from(w).saturating_sub(1) + t).min(len).div_ceil(bs) + 1,
                    LayerAttention::Chunked(c) => (u64::from(c) + t).min(len).div_ceil(bs),
                };
                per_group * u64::from(k.groups)
            })
            .sum()
    }

    /// Layer pages (one layer's `block_size` tokens) one request of `len` tokens needs, layer by
    /// layer, as `_check_enough_kv_cache_memory` sums the layers' `max_memory_usage_bytes`.
    pub fn layer_pages_per_request(&self, len: u32, block_size: u32, max_num_batched_tokens: u32) -> u64 {
        self.kinds
            .iter()
            .map(|k| {
                let one = KvLayout { kinds: vec![LayerKind { groups: 1, ..*k }], group_size: 1, groups: 1 };
                one.blocks_per_request(len, block_size, max_num_batched_tokens) * u64::from(k.layers)
            })
            .sum()
    }

    /// The tokens vLLM's "GPU KV cache size" line prints for `num_gpu_blocks`.
    pub fn kv_cache_tokens(&self, num_gpu_blocks: u64, block_size: u32) -> u64 {
        num_gpu_blocks / u64::from(self.groups.max(1)) * u64::from(block_size)
    }
}

/// The attention of each KV cache group, in vLLM's group order: kinds in the order the model's
/// layers first show them (gpt-oss's first layer slides, so its sliding group is group 0), each
/// kind's groups together (`_get_kv_cache_groups_uniform_page_size`).
pub fn kv_cache_group_kinds(layer_attention: &[LayerAttention]) -> Vec<LayerAttention> {
    let layout = KvLayout::of(layer_attention);
    let mut order: Vec<LayerAttention> = Vec::new();
    for &a in layer_attention {
        if !order.contains(&a) {
            order.push(a);
        }
    }
    order
        .into_iter()
        .flat_map(|a| {
            let groups = layout.kinds.iter().find(|k| k.attention == a).map_or(1, |k| k.groups);
            std::iter::repeat_n(a, groups as usize)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use LayerAttention::{Full, SlidingWindow};

    #[test]
    fn groups_follow_vllms_grouping_and_order() {
        // gemma-3-4b: layers 0-4 slide, layer 5 is global, six times over, and 4 more sliding.
        let gemma3: Vec<LayerAttention> =
            (0..34).map(|i| if i % 6 == 5 { Full } else { SlidingWindow(1024) }).collect();
        let layout = KvLayout::of(&gemma3);
        assert_eq!((layout.group_size, layout.groups), (5, 7));
        let kinds = kv_cache_group_kinds(&gemma3);
        assert_eq!(kinds.len(), 7);
        assert_eq!(kinds[..6], [SlidingWindow(1024); 6], "the kind of layer 0 comes first");
        assert_eq!(kinds[6], Full);
        // 10 global and 12 sliding layers: fewer than 1.5 times as many, so one group of 12 each
        // (the global kind padded with two layers), not 10 + 2 groups of 10.
        let near: Vec<LayerAttention> = (0..22).map(|i| if i < 10 { Full } else { SlidingWindow(512) }).collect();
        let layout = KvLayout::of(&near);
        assert_eq!((layout.group_size, layout.groups), (12, 2));
        assert_eq!(kv_cache_group_kinds(&near), [Full, SlidingWindow(512)]);
    }
}
