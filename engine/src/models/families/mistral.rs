//! Mistral: Llama's layers with a sliding window on every layer (Mistral 7B v0.1; later
//! releases set none). Its GGUF files are `llama` ones.

use super::shared::{swiglu, window_below};
use super::spec::{FamilySpec, FamilyTraits};
use crate::error::Result;
use crate::models::gguf::GgufFile;
use crate::models::hf_config::HfConfig;

pub static FAMILY: FamilySpec = FamilySpec {
    name: "mistral",
    hf_architectures: &["MistralForCausalLM"],
    gguf_architectures: &[],
    from_hf,
    from_gguf,
    hf_tensor_name: |_| None,
    gguf_rope_interleaved: true,
    gguf_tensor_name: None,
    hf_stacked_experts: None,
};

fn from_hf(config: &HfConfig, context_length: usize) -> std::result::Result<FamilyTraits, String> {
    Ok(FamilyTraits {
        sliding_window: window_below(config, context_length)?,
        features: swiglu(config)?,
        ..FamilyTraits::default()
    })
}

fn from_gguf(_file: &GgufFile, _num_layers: usize) -> Result<FamilyTraits> {
    Ok(FamilyTraits::default())
}
