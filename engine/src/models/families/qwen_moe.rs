//! Qwen2-MoE (`Qwen2MoeForCausalLM`: q/k/v biases, a shared expert behind a sigmoid gate, top-k
//! probabilities as they are unless `norm_topk_prob`) and Qwen3-MoE (`Qwen3MoeForCausalLM`:
//! q/k norms, no shared expert, `norm_topk_prob`).

use super::moe_shared::{qwen_moe_tensor_name, require_experts_on_every_layer, required};
use super::shared::{activation, refuse_qwen_window};
use super::spec::{FamilySpec, FamilyTraits};
use crate::error::{EngineError, Result};
use crate::models::features::{Activation, DecoderFeatures, MoeSpec};
use crate::models::gguf::GgufFile;
use crate::models::hf_config::HfConfig;

pub static QWEN2_MOE: FamilySpec = FamilySpec {
    name: "qwen2moe",
    hf_architectures: &["Qwen2MoeForCausalLM"],
    gguf_architectures: &["qwen2moe"],
    from_hf: qwen2_from_hf,
    from_gguf: qwen2_from_gguf,
    hf_tensor_name: qwen_moe_tensor_name,
    gguf_rope_interleaved: false,
    gguf_tensor_name: None,
    hf_stacked_experts: None,
};

pub static QWEN3_MOE: FamilySpec = FamilySpec {
    name: "qwen3moe",
    hf_architectures: &["Qwen3MoeForCausalLM"],
    gguf_architectures: &["qwen3moe"],
    from_hf: qwen3_from_hf,
    from_gguf: qwen3_from_gguf,
    hf_tensor_name: qwen_moe_tensor_name,
    gguf_rope_interleaved: false,
    gguf_tensor_name: None,
    hf_stacked_experts: None,
};

/// The experts of a Qwen-MoE config.json (`shared`: Qwen2-MoE's shared expert).
fn hf_moe(config: &HfConfig, shared: bool) -> std::result::Result<MoeSpec, String> {
    require_experts_on_every_layer(config)?;
    refuse_qwen_window(config)?;
    Ok(MoeSpec {
        // `num_experts` in the released checkpoints; transformers 5 writes `num_local_experts`.
        num_experts: match config.usize_field("num_experts")? {
            Some(_) => required(config, "num_experts")?,
            None => required(config, "num_local_experts")?,
        },
        num_experts_per_tok: required(config, "num_experts_per_tok")?,
        expert_intermediate_size: required(config, "moe_intermediate_size")?,
        norm_topk_prob: config.bool_field("norm_topk_prob")?.unwrap_or(false),
        shared_expert_intermediate_size: if shared {
            Some(required(config, "shared_expert_intermediate_size")?)
        } else {
            None
        },
        biased: false,
    })
}

fn qwen2_from_hf(config: &HfConfig, _context: usize) -> std::result::Result<FamilyTraits, String> {
    Ok(FamilyTraits {
        attention_bias: true,
        features: DecoderFeatures {
            activation: activation(config, &[Activation::Silu], Activation::Silu)?,
            moe: Some(hf_moe(config, true)?),
            ..DecoderFeatures::default()
        },
        ..FamilyTraits::default()
    })
}

fn qwen3_from_hf(config: &HfConfig, _context: usize) -> std::result::Result<FamilyTraits, String> {
    Ok(FamilyTraits {
        attention_bias: config.bool_field("attention_bias")?.unwrap_or(false),
        qk_norm: true,
        features: DecoderFeatures {
            activation: activation(config, &[Activation::Silu], Activation::Silu)?,
            moe: Some(hf_moe(config, false)?),
            ..DecoderFeatures::default()
        },
        ..FamilyTraits::default()
    })
}

/// The experts of a Qwen-MoE GGUF header; llama.cpp renormalises Qwen3-MoE's top-k weights and
/// not Qwen2-MoE's.
fn gguf_moe(file: &GgufFile, shared: bool, norm_topk_prob: bool) -> Result<MoeSpec> {
    let required = |key: &str| {
        file.arch_usize(key)?.filter(|&v| v > 0).ok_or_else(|| {
            EngineError::model_load_at(file.path(), format!("metadata `{key}` is missing or zero"))
        })
    };
    Ok(MoeSpec {
        num_experts: required("expert_count")?,
        num_experts_per_tok: required("expert_used_count")?,
        expert_intermediate_size: required("expert_feed_forward_length")?,
        norm_topk_prob,
        shared_expert_intermediate_size: if shared {
            Some(required("expert_shared_feed_forward_length")?)
        } else {
            None
        },
        biased: false,
    })
}

fn qwen2_from_gguf(file: &GgufFile, _num_layers: usize) -> Result<FamilyTraits> {
    Ok(FamilyTraits {
        attention_bias: file.has_tensor("blk.0.attn_q.bias"),
        features: DecoderFeatures {
            moe: Some(gguf_moe(file, true, false)?),
            ..DecoderFeatures::default()
        },
        ..FamilyTraits::default()
    })
}

fn qwen3_from_gguf(file: &GgufFile, _num_layers: usize) -> Result<FamilyTraits> {
    Ok(FamilyTraits {
        attention_bias: file.has_tensor("blk.0.attn_q.bias"),
        qk_norm: true,
        features: DecoderFeatures {
            moe: Some(gguf_moe(file, false, true)?),
            ..DecoderFeatures::default()
        },
        ..FamilyTraits::default()
    })
}
