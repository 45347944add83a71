//! Qwen3 (dense): Llama's layers with a per-head RMS norm of q and k before RoPE and an explicit
//! `head_dim`.

use super::shared::{refuse_qwen_window, swiglu};
use super::spec::{FamilySpec, FamilyTraits};
use crate::error::Result;
use crate::models::gguf::GgufFile;
use crate::models::hf_config::HfConfig;

pub static FAMILY: FamilySpec = FamilySpec {
    name: "qwen3",
    hf_architectures: &["Qwen3ForCausalLM"],
    gguf_architectures: &["qwen3"],
    from_hf,
    from_gguf,
    hf_tensor_name: |_| None,
    gguf_rope_interleaved: false,
    gguf_tensor_name: None,
    hf_stacked_experts: None,
};

fn from_hf(config: &HfConfig, _context_length: usize) -> std::result::Result<FamilyTraits, String> {
    refuse_qwen_window(config)?;
    Ok(FamilyTraits {
        attention_bias: config.bool_field("attention_bias")?.unwrap_or(false),
        qk_norm: true,
        features: swiglu(config)?,
        ..FamilyTraits::default()
    })
}

fn from_gguf(file: &GgufFile, _num_layers: usize) -> Result<FamilyTraits> {
    Ok(FamilyTraits {
        attention_bias: file.has_tensor("blk.0.attn_q.bias"),
        qk_norm: true,
        ..FamilyTraits::default()
    })
}
