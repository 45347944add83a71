//! Model families and their loaders. Models take `&self`; the KV cache and attention metadata are
//! arguments, so no paging logic lives in a model file.

pub mod config;
pub mod dummy;
pub mod generation_config;
pub mod gguf;
pub mod hf;
pub mod hf_config;
pub mod int8;
pub mod layers;
pub mod linear;
pub mod llama;
pub mod load;
pub mod rotary;
pub mod self_attention;
pub mod weights;

use std::path::Path;

use candle_core::{Device, Tensor};

pub use config::{ModelConfig, RopeScaling};
pub use load::{load_model_with, LoadFormat, LoadOptions};
pub use weights::WeightFormat;

use crate::attention::{AttnMetadata, PagedKvCache};
use crate::error::Result;

/// One step's token-level inputs, as tensors on the model's device.
#[derive(Debug)]
pub struct ModelInput {
    /// `[num_tokens]` u32.
    pub token_ids: Tensor,
    /// `[num_tokens]` u32 positions.
    pub positions: Tensor,
    /// `[num_sampled]` u32: which token rows produce logits.
    pub logits_indices: Tensor,
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

/// `general.architecture` values of GGUF files we can run.
pub const SUPPORTED_GGUF_ARCHITECTURES: &[&str] = &["llama"];

/// Loads any supported model (a GGUF file, or a Hugging Face directory) for the CPU, or onto
/// `device` in f32; `load_model_with` chooses the dtype and load format.
pub fn load_model(
    path: &Path,
    device: &Device,
    weight_format: WeightFormat,
) -> Result<Box<dyn CausalLm>> {
    let options = LoadOptions {
        device: device.clone(),
        dtype: crate::config::ModelDType::F32,
        ..LoadOptions::cpu(weight_format)
    };
    load_model_with(path, &options)
}
