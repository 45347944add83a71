//! Qwen3 (dense): Llama's layers with a per-head RMS norm of q and k before RoPE and an explicit
//! `head_dim`.

use super::shared::{activation, refuse_if_true};
use super::spec::{FamilySpec, FamilyTraits};
use crate::error::Result;
use crate::models::features::{Activation, DecoderFeatures};
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
};

fn from_hf(config: &HfConfig, _context_length: usize) -> std::result::Result<FamilyTraits, String> {
    refuse_if_true(
        config,
        "use_sliding_window",
        "Qwen3's sliding window on the layers past max_window_layers",
    )?;
    Ok(FamilyTraits {
        attention_bias: config.bool_field("attention_bias")?.unwrap_or(false),
        qk_norm: true,
        features: DecoderFeatures {
            activation: activation(config, &[Activation::Silu], Activation::Silu)?,
            ..DecoderFeatures::default()
        },
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
