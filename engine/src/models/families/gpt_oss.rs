//! gpt-oss (`GptOssForCausalLM`, GGUF `gpt-oss`): a mixture of experts whose router and experts
//! carry biases, routed by a softmax over each token's top-k router logits, experts with a
//! clamped SwiGLU (`swiglu_alpha`, `swiglu_limit`); attention with biases on all four
//! projections, a learned sink logit per head, and sliding-window layers alternating with global
//! ones; YaRN RoPE without rounding its correction range (`truncate: false`). Hugging Face
//! checkpoints stack the experts (`mlp.experts.gate_up_proj`, gate and up interleaved), in
//! bf16/f32 or, as released, in MXFP4 (`*_blocks`, `*_scales`: dequantized at load).

use super::moe_shared::required;
use super::shared::{layer_types, split_layer_name};
use super::spec::{FamilySpec, FamilyTraits, OutputPart, StackedExperts};
use crate::error::{EngineError, Result};
use crate::models::features::{Activation, DecoderFeatures, MoeSpec};
use crate::models::gguf::GgufFile;
use crate::models::hf_config::HfConfig;

pub static FAMILY: FamilySpec = FamilySpec {
    name: "gpt_oss",
    hf_architectures: &["GptOssForCausalLM"],
    gguf_architectures: &["gpt-oss"],
    from_hf,
    from_gguf,
    hf_tensor_name,
    gguf_rope_interleaved: false,
    gguf_tensor_name: Some(gguf_tensor_name),
    hf_stacked_experts: Some(hf_stacked_experts),
};

/// transformers' and llama.cpp's clamped-SwiGLU constants when a config names none.
const DEFAULT_SWIGLU_ALPHA: f32 = 1.702;
const DEFAULT_SWIGLU_LIMIT: f32 = 7.0;

/// `mlp.router` (with its bias) and `self_attn.sinks`; the rest are Llama's names.
fn hf_tensor_name(gguf_name: &str) -> Option<String> {
    let (layer, module, suffix) = split_layer_name(gguf_name)?;
    let hf = match (module, suffix) {
        ("ffn_gate_inp", _) => format!("mlp.router.{suffix}"),
        ("attn_sinks", "weight") => "self_attn.sinks".to_string(),
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{hf}"))
}

/// llama.cpp names the MLP's norm after transformers' `post_attention_layernorm`.
fn gguf_tensor_name(name: &str) -> Option<String> {
    let (layer, module, suffix) = split_layer_name(name)?;
    (module == "ffn_norm").then(|| format!("blk.{layer}.post_attention_norm.{suffix}"))
}

/// `mlp.experts.gate_up_proj` (`[experts, hidden, 2·inter]`, gate at even outputs, up at odd),
/// `mlp.experts.down_proj`, and their `_bias` tensors.
fn hf_stacked_experts(gguf_name: &str) -> Option<StackedExperts> {
    let (layer, module, suffix) = split_layer_name(gguf_name)?;
    let (tensor, part) = match module {
        "ffn_gate_exps" => ("gate_up_proj", OutputPart::Even),
        "ffn_up_exps" => ("gate_up_proj", OutputPart::Odd),
        "ffn_down_exps" => ("down_proj", OutputPart::All),
        _ => return None,
    };
    let tail = match suffix {
        "weight" => "",
        "bias" => "_bias",
        _ => return None,
    };
    Some(StackedExperts {
        hf_name: format!("model.layers.{layer}.mlp.experts.{tensor}{tail}"),
        part,
    })
}

fn features(moe: MoeSpec, sliding_layers: Vec<bool>, activation: Activation) -> DecoderFeatures {
    DecoderFeatures {
        activation,
        sliding_layers: Some(sliding_layers),
        attention_sinks: true,
        attention_output_bias: true,
        moe: Some(moe),
        ..DecoderFeatures::default()
    }
}

fn from_hf(config: &HfConfig, _context_length: usize) -> std::result::Result<FamilyTraits, String> {
    if config.bool_field("attention_bias")? == Some(false) {
        return Err("`attention_bias: false` is not supported for gpt-oss (its checkpoints have biases)".into());
    }
    let sliding = layer_types(config)?.unwrap_or_else(|| {
        DecoderFeatures::periodic_sliding_layers(config.num_hidden_layers, 2)
    });
    let moe = MoeSpec {
        num_experts: required(config, "num_local_experts")?,
        num_experts_per_tok: required(config, "num_experts_per_tok")?,
        expert_intermediate_size: config.intermediate_size,
        // A softmax over the top-k logits: the full softmax's top-k, renormalised.
        norm_topk_prob: true,
        shared_expert_intermediate_size: None,
        biased: true,
    };
    let activation = Activation::ClampedSwiglu {
        alpha: config.f32_field("swiglu_alpha")?.unwrap_or(DEFAULT_SWIGLU_ALPHA),
        limit: config.f32_field("swiglu_limit")?.unwrap_or(DEFAULT_SWIGLU_LIMIT),
    };
    Ok(FamilyTraits {
        attention_bias: true,
        sliding_window: config.usize_field("sliding_window")?,
        features: features(moe, sliding, activation),
        ..FamilyTraits::default()
    })
}

/// llama.cpp's gpt-oss: every even layer slides, the constants are fixed.
fn from_gguf(file: &GgufFile, num_layers: usize) -> Result<FamilyTraits> {
    let required = |key: &str| {
        file.arch_usize(key)?.filter(|&v| v > 0).ok_or_else(|| {
            EngineError::model_load_at(file.path(), format!("metadata `{key}` is missing or zero"))
        })
    };
    let moe = MoeSpec {
        num_experts: required("expert_count")?,
        num_experts_per_tok: required("expert_used_count")?,
        expert_intermediate_size: required("expert_feed_forward_length")?,
        norm_topk_prob: true,
        shared_expert_intermediate_size: None,
        biased: true,
    };
    let activation = Activation::ClampedSwiglu {
        alpha: DEFAULT_SWIGLU_ALPHA,
        limit: DEFAULT_SWIGLU_LIMIT,
    };
    Ok(FamilyTraits {
        attention_bias: true,
        sliding_window: file.arch_usize("attention.sliding_window")?,
        features: features(
            moe,
            DecoderFeatures::periodic_sliding_layers(num_layers, 2),
            activation,
        ),
        ..FamilyTraits::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_the_stacked_and_renamed_tensors() {
        assert_eq!(
            hf_stacked_experts("blk.3.ffn_up_exps.bias"),
            Some(StackedExperts {
                hf_name: "model.layers.3.mlp.experts.gate_up_proj_bias".into(),
                part: OutputPart::Odd,
            })
        );
        assert_eq!(
            hf_stacked_experts("blk.0.ffn_down_exps.weight").map(|s| s.hf_name),
            Some("model.layers.0.mlp.experts.down_proj".into())
        );
        assert_eq!(hf_stacked_experts("blk.0.attn_q.weight"), None);
        assert_eq!(
            hf_tensor_name("blk.1.attn_sinks.weight").as_deref(),
            Some("model.layers.1.self_attn.sinks")
        );
        assert_eq!(
            hf_tensor_name("blk.1.ffn_gate_inp.bias").as_deref(),
            Some("model.layers.1.mlp.router.bias")
        );
        assert_eq!(
            gguf_tensor_name("blk.2.ffn_norm.weight").as_deref(),
            Some("blk.2.post_attention_norm.weight")
        );
        assert_eq!(gguf_tensor_name("blk.2.attn_norm.weight"), None);
    }
}
