//! Phi-3, Phi-3.5 and Phi-4 (`Phi3ForCausalLM`): Llama's layers from fused checkpoints — one
//! `qkv_proj` and one `gate_up_proj` per layer, used as they are — with LongRoPE on the long
//! context models and, on Phi-3-mini-4k, a sliding window on every layer.

use super::shared::{split_layer_name, swiglu, window_below};
use super::spec::{FamilySpec, FamilyTraits};
use crate::error::Result;
use crate::models::features::DecoderFeatures;
use crate::models::gguf::GgufFile;
use crate::models::hf_config::HfConfig;

pub static FAMILY: FamilySpec = FamilySpec {
    name: "phi3",
    hf_architectures: &["Phi3ForCausalLM"],
    gguf_architectures: &["phi3"],
    from_hf,
    from_gguf,
    hf_tensor_name,
    gguf_rope_interleaved: false,
    gguf_tensor_name: None,
    hf_stacked_experts: None,
};

/// The fused projections: GGUF `attn_qkv` and `ffn_up` (gate then up, as Phi-3 stores them).
fn hf_tensor_name(gguf_name: &str) -> Option<String> {
    let (layer, module, suffix) = split_layer_name(gguf_name)?;
    let hf_module = match module {
        "attn_qkv" => "self_attn.qkv_proj",
        "ffn_up" => "mlp.gate_up_proj",
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{hf_module}.{suffix}"))
}

fn from_hf(config: &HfConfig, context_length: usize) -> std::result::Result<FamilyTraits, String> {
    if let Some(factor) = config.f32_field("partial_rotary_factor")? {
        if factor != 1.0 {
            return Err(format!(
                "`partial_rotary_factor` {factor} (RoPE on part of each head) is not supported"
            ));
        }
    }
    Ok(FamilyTraits {
        sliding_window: window_below(config, context_length)?,
        features: DecoderFeatures {
            fused_projections: true,
            ..swiglu(config)?
        },
        ..FamilyTraits::default()
    })
}

fn from_gguf(file: &GgufFile, _num_layers: usize) -> Result<FamilyTraits> {
    let context = file.arch_usize("context_length")?.unwrap_or(usize::MAX);
    Ok(FamilyTraits {
        sliding_window: file
            .arch_usize("attention.sliding_window")?
            .filter(|&w| w > 0 && w < context),
        features: DecoderFeatures {
            fused_projections: true,
            ..DecoderFeatures::default()
        },
        ..FamilyTraits::default()
    })
}
