//! `CausalLm`: what every model family offers the runner, and `ModelInput`, one step's inputs.

use candle_core::{Device, Tensor};

use super::config::ModelConfig;
use crate::attention::{AttnMetadata, PagedKvCache};
use crate::error::Result;
use crate::lora::batch::LoraBatch;

/// One step's token-level inputs, as tensors on the model's device.
#[derive(Debug)]
pub struct ModelInput {
    /// `[num_tokens]` u32.
    pub token_ids: Tensor,
    /// `[num_tokens]` u32 positions.
    pub positions: Tensor,
    /// `[num_sampled]` u32: which token rows produce logits.
    pub logits_indices: Tensor,
    /// Which rows use which LoRA adapter (empty: the base model only).
    pub lora: LoraBatch,
}

/// A causal language model: token ids in, logits of the selected rows out.
pub trait CausalLm: Send + std::fmt::Debug {
    fn config(&self) -> &ModelConfig;
    fn device(&self) -> &Device;
    /// The dtype activations and the KV cache are computed in.
    fn dtype(&self) -> candle_core::DType {
        candle_core::DType::F32
    }
    /// Runs one step; returns `[num_sampled, vocab_size]` f32 logits.
    fn forward(
        &self,
        input: &ModelInput,
        meta: &AttnMetadata,
        kv_cache: &mut dyn PagedKvCache,
    ) -> Result<Tensor>;
}
