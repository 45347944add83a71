//! Llama (1–3.x, and the fine-tunes and distills built on it): SwiGLU, RMS norm, GQA, RoPE with
//! any of the scalings of `hf_config.rs`, tied or untied head. GGUF `llama` also carries
//! Mistral's dense models.

use super::shared::{refuse_if_true, swiglu};
use super::spec::{FamilySpec, FamilyTraits};
use crate::error::{EngineError, Result};
use crate::models::features::{DecoderFeatures, MoeSpec};
use crate::models::gguf::GgufFile;
use crate::models::hf_config::HfConfig;

pub static FAMILY: FamilySpec = FamilySpec {
    name: "llama",
    hf_architectures: &["LlamaForCausalLM"],
    gguf_architectures: &["llama"],
    from_hf,
    from_gguf,
    hf_tensor_name: |_| None,
    gguf_rope_interleaved: true,
    gguf_tensor_name: None,
    hf_stacked_experts: None,
};

fn from_hf(config: &HfConfig, _context_length: usize) -> std::result::Result<FamilyTraits, String> {
    refuse_if_true(config, "mlp_bias", "biases on the MLP projections")?;
    Ok(FamilyTraits {
        attention_bias: config.bool_field("attention_bias")?.unwrap_or(false),
        features: swiglu(config)?,
        ..FamilyTraits::default()
    })
}

fn from_gguf(file: &GgufFile, _num_layers: usize) -> Result<FamilyTraits> {
    // Mixtral's GGUF files are `llama` ones with experts.
    let moe = match file.arch_usize("expert_count")?.filter(|&n| n > 0) {
        Some(num_experts) => Some(MoeSpec {
            num_experts,
            num_experts_per_tok: file.arch_usize("expert_used_count")?.filter(|&k| k > 0).ok_or_else(|| {
                EngineError::model_load_at(file.path(), "metadata `llama.expert_used_count` is missing")
            })?,
            expert_intermediate_size: file
                .arch_usize("expert_feed_forward_length")?
                .or(file.arch_usize("feed_forward_length")?)
                .unwrap_or(0),
            norm_topk_prob: true,
            shared_expert_intermediate_size: None,
            biased: false,
        }),
        None => None,
    };
    Ok(FamilyTraits {
        attention_bias: file.has_tensor("blk.0.attn_q.bias"),
        sliding_window: file.arch_usize("attention.sliding_window")?,
        features: DecoderFeatures {
            moe,
            ..DecoderFeatures::default()
        },
        ..FamilyTraits::default()
    })
}
