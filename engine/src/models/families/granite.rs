//! IBM Granite 3.x (`GraniteForCausalLM`): Llama's layers with four multipliers — on the
//! embeddings, on the attention scores (instead of 1/√head_dim), on each residual branch, and a
//! divisor of the output logits.

use super::shared::{activation, refuse_if_true};
use super::spec::{FamilySpec, FamilyTraits};
use crate::error::{EngineError, Result};
use crate::models::features::{Activation, DecoderFeatures};
use crate::models::gguf::GgufFile;
use crate::models::hf_config::HfConfig;

pub static FAMILY: FamilySpec = FamilySpec {
    name: "granite",
    hf_architectures: &["GraniteForCausalLM"],
    gguf_architectures: &["granite"],
    from_hf,
    from_gguf,
    hf_tensor_name: |_| None,
    gguf_rope_interleaved: true,
    gguf_tensor_name: None,
    hf_stacked_experts: None,
};

fn from_hf(config: &HfConfig, _context_length: usize) -> std::result::Result<FamilyTraits, String> {
    refuse_if_true(config, "mlp_bias", "biases on the MLP projections")?;
    let multiplier = |name: &str| -> std::result::Result<Option<f32>, String> {
        match config.f32_field(name)? {
            Some(v) if !(v.is_finite() && v > 0.0) => Err(format!("`{name}` {v} must be positive")),
            other => Ok(other),
        }
    };
    Ok(FamilyTraits {
        attention_bias: config.bool_field("attention_bias")?.unwrap_or(false),
        features: DecoderFeatures {
            activation: activation(config, &[Activation::Silu], Activation::Silu)?,
            embedding_scale: multiplier("embedding_multiplier")?,
            attention_scale: multiplier("attention_multiplier")?,
            residual_scale: multiplier("residual_multiplier")?,
            logit_divisor: multiplier("logits_scaling")?,
            ..DecoderFeatures::default()
        },
        ..FamilyTraits::default()
    })
}

fn from_gguf(file: &GgufFile, _num_layers: usize) -> Result<FamilyTraits> {
    let scale = |key: &str| -> Result<Option<f32>> {
        match file.arch_f32(key)? {
            Some(v) if !(v.is_finite() && v > 0.0) => Err(EngineError::model_load_at(
                file.path(),
                format!("metadata `granite.{key}` {v} must be positive"),
            )),
            other => Ok(other),
        }
    };
    Ok(FamilyTraits {
        attention_bias: file.has_tensor("blk.0.attn_q.bias"),
        features: DecoderFeatures {
            embedding_scale: scale("embedding_scale")?,
            attention_scale: scale("attention.scale")?,
            residual_scale: scale("residual_scale")?,
            logit_divisor: scale("logit_scale")?,
            ..DecoderFeatures::default()
        },
        ..FamilyTraits::default()
    })
}
