//! Paged attention: new keys/values go into their cache slots, then every query token attends to
//! its sequence's context through the block table. The CPU path here is also the test oracle.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod metadata;
#[cfg(test)]
mod reference;

use candle_core::Tensor;

pub use cpu::CpuKvCache;
pub use metadata::AttnMetadata;

use crate::error::Result;

/// Head geometry of one attention layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttnShape {
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
}

impl AttnShape {
    /// Query heads per KV head (grouped-query attention).
    pub fn group_size(&self) -> usize {
        self.num_heads / self.num_kv_heads
    }
}

/// A paged KV cache with its attention kernel. Backends (CPU, CUDA) implement it; models only
/// call `attend`, so no paging logic lives in a model.
pub trait PagedKvCache: Send + std::fmt::Debug {
    /// Called once per step before the first layer's `attend`, with the same metadata every
    /// layer gets: a backend prepares what all layers share (the GPU uploads its tables).
    fn begin_step(&mut self, _meta: &AttnMetadata) -> Result<()> {
        Ok(())
    }

    /// Writes `k`, `v` (`[num_tokens, num_kv_heads * head_dim]`) into the slots of `meta`, then
    /// returns attention over the cached context for `q` (`[num_tokens, num_heads * head_dim]`).
    fn attend(
        &mut self,
        layer: usize,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        meta: &AttnMetadata,
    ) -> Result<Tensor>;

    /// Number of blocks per layer.
    fn num_blocks(&self) -> usize;
}
