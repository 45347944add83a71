//! Model families and their loaders. Models take `&self`; the KV cache and attention metadata are
//! arguments, so no paging logic lives in a model file.

pub mod config;
pub mod generation_config;
pub mod gguf;
pub mod hf;
pub mod hf_config;
pub mod int8;
pub mod layers;
pub mod linear;
pub mod llama;
pub mod rotary;
pub mod self_attention;
pub mod tokenizer_spec;
pub mod weights;

use std::path::Path;

use candle_core::{Device, Tensor};

pub use config::{ModelConfig, RopeScaling};
pub use weights::WeightFormat;

use crate::attention::{AttnMetadata, PagedKvCache};
use crate::error::{EngineError, Result};

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

/// Loads any supported model: a GGUF file, or a Hugging Face directory.
pub fn load_model(
    path: &Path,
    device: &Device,
    weight_format: WeightFormat,
) -> Result<Box<dyn CausalLm>> {
    if !path.exists() {
        return Err(EngineError::ModelLoad(format!(
            "{} does not exist",
            path.display()
        )));
    }
    if path.is_dir() {
        let dir = hf::HfDirectory::open(path, weight_format)?;
        return Ok(Box::new(llama::Llama::load(
            dir.model_config()?,
            &dir,
            device,
        )?));
    }
    let is_gguf = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"));
    if !is_gguf {
        return Err(EngineError::ModelLoad(format!(
            "{}: expected a .gguf file or a Hugging Face model directory",
            path.display()
        )));
    }
    let file = gguf::GgufFile::open(path, device, weight_format)?;
    let architecture = file.architecture()?;
    if !SUPPORTED_GGUF_ARCHITECTURES.contains(&architecture.as_str()) {
        return Err(EngineError::ModelLoad(format!(
            "unsupported architecture `{architecture}` in {} (supported: {})",
            path.display(),
            SUPPORTED_GGUF_ARCHITECTURES.join(", ")
        )));
    }
    Ok(Box::new(llama::Llama::load(
        file.model_config()?,
        &file,
        device,
    )?))
}
