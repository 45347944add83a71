//! `PagedKvCache`: what a backend's paged KV cache and attention kernel offer a model.

use candle_core::Tensor;

use super::layer::LayerAttention;
use super::metadata::AttnMetadata;
use crate::error::Result;

/// A paged KV cache with its attention kernel. Backends (CPU, CUDA) implement it; models only
/// call `attend`, so no paging logic lives in a model.
pub trait PagedKvCache: Send + std::fmt::Debug {
    /// Called once per step before the first layer's `attend`, with the same metadata every
    /// layer gets: a backend prepares what all layers share (the GPU uploads its tables).
    fn begin_step(&mut self, _meta: &AttnMetadata) -> Result<()> {
        Ok(())
    }

    /// Writes `k`, `v` (`[num_tokens, num_kv_heads * head_dim]`) into the slots of `meta`, then
    /// returns attention over the cached context for `q` (`[num_tokens, num_heads * head_dim]`),
    /// with the scale, window and softcap of layer `layer` (`settings`).
    fn attend(
        &mut self,
        layer: usize,
        qkv: (&Tensor, &Tensor, &Tensor),
        meta: &AttnMetadata,
        settings: &LayerAttention,
    ) -> Result<Tensor>;

    /// Number of blocks per layer.
    #[cfg(feature = "testing")]
    fn num_blocks(&self) -> usize;
}
