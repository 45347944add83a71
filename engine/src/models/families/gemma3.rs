//! Gemma 3 (text: `Gemma3ForCausalLM`): Gemma 2's layers without softcaps (by default), with a
//! per-head `(1 + w)` q/k norm, five sliding-window layers to every global one, and the sliding
//! layers' own RoPE base (`rope_local_base_freq`, no scaling; the global layers take
//! `rope_theta` and `rope_scaling`).

use super::gemma2::{gemma_gguf_features, gemma_hf_features, gemma_tensor_name};
use super::shared::layer_types;
use super::spec::{FamilySpec, FamilyTraits};
use crate::error::Result;
use crate::models::features::DecoderFeatures;
use crate::models::gguf::GgufFile;
use crate::models::hf_config::HfConfig;

pub static FAMILY: FamilySpec = FamilySpec {
    name: "gemma3",
    hf_architectures: &["Gemma3ForCausalLM"],
    gguf_architectures: &["gemma3"],
    from_hf,
    from_gguf,
    hf_tensor_name: gemma_tensor_name,
    gguf_rope_interleaved: false,
    gguf_tensor_name: None,
    hf_stacked_experts: None,
};

/// Gemma 3's local RoPE base when a config gives none (transformers' and llama.cpp's default).
const DEFAULT_LOCAL_ROPE_THETA: f32 = 10_000.0;

/// The sliding layers' RoPE base: `rope_local_base_freq`, or transformers 5's
/// `rope_parameters.sliding_attention.rope_theta`.
fn local_rope_theta(config: &HfConfig) -> std::result::Result<f32, String> {
    if let Some(theta) = config.f32_field("rope_local_base_freq")? {
        return Ok(theta);
    }
    let nested = config
        .field("rope_parameters")
        .and_then(|p| p.get("sliding_attention"))
        .and_then(|p| p.get("rope_theta"))
        .and_then(|t| t.as_f64());
    Ok(nested.map_or(DEFAULT_LOCAL_ROPE_THETA, |t| t as f32))
}

fn from_hf(config: &HfConfig, _context_length: usize) -> std::result::Result<FamilyTraits, String> {
    let period = config
        .usize_field("sliding_window_pattern")?
        .or(config.usize_field("_sliding_window_pattern")?)
        .unwrap_or(6);
    let sliding = layer_types(config)?.unwrap_or_else(|| {
        DecoderFeatures::periodic_sliding_layers(config.num_hidden_layers, period)
    });
    Ok(FamilyTraits {
        qk_norm: true,
        sliding_window: config.usize_field("sliding_window")?,
        features: DecoderFeatures {
            sliding_layers: Some(sliding),
            local_rope_theta: Some(local_rope_theta(config)?),
            ..gemma_hf_features(config)?
        },
        ..FamilyTraits::default()
    })
}

fn from_gguf(file: &GgufFile, num_layers: usize) -> Result<FamilyTraits> {
    Ok(FamilyTraits {
        qk_norm: true,
        sliding_window: file.arch_usize("attention.sliding_window")?,
        features: DecoderFeatures {
            sliding_layers: Some(DecoderFeatures::periodic_sliding_layers(num_layers, 6)),
            local_rope_theta: Some(DEFAULT_LOCAL_ROPE_THETA),
            ..gemma_gguf_features(file, num_layers, 62)?
        },
        ..FamilyTraits::default()
    })
}
