//! What the CPU attention kernels share: the cache view, a tile of one sequence's query tokens
//! and its key range, per-thread scratch buffers, and how cache rows are read as f32.

use super::kv_element::{KvElement, X86Features};
use super::layer::LayerAttention;
use super::shape::AttnShape;

/// One layer's cache, read-only: `[num_blocks, block_size, num_kv_heads, head_dim]`.
#[derive(Debug, Clone, Copy)]
pub struct CacheView<'a, T> {
    pub keys: &'a [T],
    pub values: &'a [T],
    pub shape: AttnShape,
}

/// Consecutive query tokens of one sequence.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tile {
    pub seq: usize,
    /// Position of the tile's first token in its sequence.
    pub first_position: usize,
    pub num_tokens: usize,
    /// Key partitions attended in parallel (`cpu_split`); 1 for the whole span at once.
    pub num_partitions: usize,
}

/// One tile's inputs: its queries and the slots of positions `first_key_position..`.
#[derive(Clone, Copy)]
pub(super) struct TileView<'a> {
    pub q: &'a [f32],
    pub slots: &'a [usize],
    pub first_key_position: usize,
    pub first_position: usize,
    pub layer: &'a LayerAttention,
    /// Whether this view's softmax counts the layer's sinks: a whole span's does, and of a
    /// span cut into key partitions only the first one's, so that the merge counts them once.
    pub with_sinks: bool,
}

impl TileView<'_> {
    /// The sink logit query head `head`'s softmax counts here, if any.
    #[inline(always)]
    pub fn sink(&self, head: usize) -> Option<f32> {
        if self.with_sinks {
            self.layer.sink(head)
        } else {
            None
        }
    }

    /// Key range of the tile's token `i`, relative to the tile's first key: `lo..=hi` (`hi`
    /// may lie past the tile's keys when they are a partition of its span).
    #[inline(always)]
    pub fn key_range(&self, i: usize) -> (usize, usize) {
        let position = self.first_position + i;
        (
            self.layer
                .first_attended(position)
                .saturating_sub(self.first_key_position),
            position - self.first_key_position,
        )
    }
}

/// A worker thread's buffers, reused across its tiles.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    pub scores: Vec<f32>,
    /// One key or value row read from an f32 cache before its copy.
    pub row: Vec<f32>,
    /// Contiguous f32 copies: a KV head's keys and values over the tile's span, its group's
    /// queries and their outputs.
    pub keys: Vec<f32>,
    pub values: Vec<f32>,
    pub queries: Vec<f32>,
    pub outputs: Vec<f32>,
    /// The log-sum-exp of each query row's scores, `[num_tokens, num_heads]`: what merges key
    /// partitions.
    pub lse: Vec<f32>,
}

/// How rows of the cache are read as f32: portable code, or with the x86 features detected.
pub(super) trait RowLoader: Copy {
    fn load<'a, T: KvElement>(self, src: &'a [T], scratch: &'a mut [f32]) -> &'a [f32];
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Portable;

impl RowLoader for Portable {
    #[inline(always)]
    fn load<'a, T: KvElement>(self, src: &'a [T], scratch: &'a mut [f32]) -> &'a [f32] {
        T::load(src, scratch)
    }
}

impl RowLoader for X86Features {
    #[inline(always)]
    fn load<'a, T: KvElement>(self, src: &'a [T], scratch: &'a mut [f32]) -> &'a [f32] {
        T::load_x86(src, scratch, self)
    }
}
