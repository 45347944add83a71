//! Gemma 2: GeGLU (gelu-tanh), `(1 + w)` RMS norms before and after both the attention and the
//! MLP, embeddings scaled by √hidden_size, sliding-window and global layers alternating (even
//! layers slide), attention scaled by `query_pre_attn_scalar`^-½, attention and final logits
//! softcapped.

use super::shared::{activation, layer_types, split_layer_name};
use super::spec::{FamilySpec, FamilyTraits};
use crate::error::Result;
use crate::models::features::{Activation, DecoderFeatures};
use crate::models::gguf::GgufFile;
use crate::models::hf_config::HfConfig;

pub static FAMILY: FamilySpec = FamilySpec {
    name: "gemma2",
    hf_architectures: &["Gemma2ForCausalLM"],
    gguf_architectures: &["gemma2"],
    from_hf,
    from_gguf,
    hf_tensor_name: gemma_tensor_name,
    gguf_rope_interleaved: false,
    gguf_tensor_name: None,
    hf_stacked_experts: None,
};

/// Gemma 2 and 3 name their four layer norms by position; llama.cpp calls the one before the
/// MLP `ffn_norm` as for Llama, whose Hugging Face name differs.
pub fn gemma_tensor_name(gguf_name: &str) -> Option<String> {
    let (layer, module, suffix) = split_layer_name(gguf_name)?;
    let hf_module = match module {
        "post_attention_norm" => "post_attention_layernorm",
        "ffn_norm" => "pre_feedforward_layernorm",
        "post_ffw_norm" => "post_feedforward_layernorm",
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{hf_module}.{suffix}"))
}

/// The features Gemma 2 and 3 share, from config.json.
pub fn gemma_hf_features(config: &HfConfig) -> std::result::Result<DecoderFeatures, String> {
    let head_dim = config
        .head_dim
        .unwrap_or(config.hidden_size / config.num_attention_heads.max(1));
    let scalar = config
        .f32_field("query_pre_attn_scalar")?
        .unwrap_or(head_dim as f32);
    if !(scalar.is_finite() && scalar > 0.0) {
        return Err(format!("`query_pre_attn_scalar` {scalar} must be positive"));
    }
    Ok(DecoderFeatures {
        activation: activation(config, &[Activation::GeluTanh], Activation::GeluTanh)?,
        norm_weight_offset: 1.0,
        embedding_scale: Some((config.hidden_size as f32).sqrt()),
        sandwich_norms: true,
        attention_scale: Some(1.0 / scalar.sqrt()),
        attn_logit_softcap: positive(config.f32_field("attn_logit_softcapping")?),
        final_logit_softcap: positive(config.f32_field("final_logit_softcapping")?),
        ..DecoderFeatures::default()
    })
}

/// The features Gemma 2 and 3 share, from a GGUF header: llama.cpp's converter has already
/// added 1 to the norms, and llama.cpp scales attention by 1/√head_dim except for the 27B
/// models, whose `query_pre_attn_scalar` is hidden_size / num_heads (GGUF keeps no scalar).
pub fn gemma_gguf_features(
    file: &GgufFile,
    num_layers: usize,
    layers_of_27b: usize,
) -> Result<DecoderFeatures> {
    let hidden = file.arch_usize("embedding_length")?.unwrap_or(0);
    let heads = file.arch_usize("attention.head_count")?.unwrap_or(1).max(1);
    let head_dim = file.arch_usize("attention.key_length")?.unwrap_or(hidden / heads);
    let scalar = if num_layers == layers_of_27b {
        hidden / heads
    } else {
        head_dim
    };
    Ok(DecoderFeatures {
        activation: Activation::GeluTanh,
        embedding_scale: Some((hidden as f32).sqrt()),
        sandwich_norms: true,
        attention_scale: Some(1.0 / (scalar as f32).sqrt()),
        attn_logit_softcap: positive(file.arch_f32("attn_logit_softcapping")?),
        final_logit_softcap: positive(file.arch_f32("final_logit_softcapping")?),
        ..DecoderFeatures::default()
    })
}

fn positive(value: Option<f32>) -> Option<f32> {
    value.filter(|v| *v > 0.0)
}

fn from_hf(config: &HfConfig, _context_length: usize) -> std::result::Result<FamilyTraits, String> {
    let sliding = layer_types(config)?.unwrap_or_else(|| {
        DecoderFeatures::periodic_sliding_layers(config.num_hidden_layers, 2)
    });
    Ok(FamilyTraits {
        sliding_window: config.usize_field("sliding_window")?,
        features: DecoderFeatures {
            sliding_layers: Some(sliding),
            ..gemma_hf_features(config)?
        },
        ..FamilyTraits::default()
    })
}

fn from_gguf(file: &GgufFile, num_layers: usize) -> Result<FamilyTraits> {
    Ok(FamilyTraits {
        sliding_window: file.arch_usize("attention.sliding_window")?,
        features: DecoderFeatures {
            sliding_layers: Some(DecoderFeatures::periodic_sliding_layers(num_layers, 2)),
            ..gemma_gguf_features(file, num_layers, 46)?
        },
        ..FamilyTraits::default()
    })
}
