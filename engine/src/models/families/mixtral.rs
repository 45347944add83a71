//! Mixtral (`MixtralForCausalLM`): Mistral's attention with a mixture-of-experts MLP on every
//! layer (softmax router, top-k renormalised). Its GGUF files are `llama` ones with
//! `llama.expert_count`, read by the Llama family.

use super::moe_shared::required;
use super::shared::{activation, split_layer_name, window_below};
use super::spec::{FamilySpec, FamilyTraits};
use crate::error::Result;
use crate::models::features::{Activation, DecoderFeatures, MoeSpec};
use crate::models::gguf::GgufFile;
use crate::models::hf_config::HfConfig;

pub static FAMILY: FamilySpec = FamilySpec {
    name: "mixtral",
    hf_architectures: &["MixtralForCausalLM"],
    gguf_architectures: &[],
    from_hf,
    from_gguf,
    hf_tensor_name,
    gguf_rope_interleaved: true,
    gguf_tensor_name: None,
    hf_stacked_experts: None,
};

/// `block_sparse_moe.gate` (router), `block_sparse_moe.experts.{e}.w1/w3/w2` (gate, up, down).
fn hf_tensor_name(gguf_name: &str) -> Option<String> {
    let (layer, module, suffix) = split_layer_name(gguf_name)?;
    let hf_module = if module == "ffn_gate_inp" {
        "block_sparse_moe.gate".to_string()
    } else {
        let (stacked, expert) = module.split_once('.')?;
        let w = match stacked {
            "ffn_gate_exps" => "w1",
            "ffn_up_exps" => "w3",
            "ffn_down_exps" => "w2",
            _ => return None,
        };
        format!("block_sparse_moe.experts.{}.{w}", expert.parse::<usize>().ok()?)
    };
    Some(format!("model.layers.{layer}.{hf_module}.{suffix}"))
}

fn from_hf(config: &HfConfig, context_length: usize) -> std::result::Result<FamilyTraits, String> {
    Ok(FamilyTraits {
        sliding_window: window_below(config, context_length)?,
        features: DecoderFeatures {
            activation: activation(config, &[Activation::Silu], Activation::Silu)?,
            moe: Some(MoeSpec {
                num_experts: required(config, "num_local_experts")?,
                num_experts_per_tok: required(config, "num_experts_per_tok")?,
                expert_intermediate_size: config.intermediate_size,
                norm_topk_prob: true,
                shared_expert_intermediate_size: None,
                biased: false,
            }),
            ..DecoderFeatures::default()
        },
        ..FamilyTraits::default()
    })
}

fn from_gguf(_file: &GgufFile, _num_layers: usize) -> Result<FamilyTraits> {
    Ok(FamilyTraits::default())
}
