//! The architecture registry: every family the engine serves, keyed by the names a Hugging Face
//! `config.json` (`architectures[0]`) and a GGUF header (`general.architecture`) give it. Each
//! family is one file that turns its config fields into `FamilyTraits` — the values the shared
//! layers (`decoder.rs`, `self_attention.rs`, `layers.rs`) read — and names the tensors whose
//! Hugging Face names differ from Llama's. Adding a family that reuses existing layers touches
//! its file, `FAMILIES` and docs/models.md.

mod gemma2;
mod gemma3;
mod gpt_oss;
mod granite;
mod llama;
mod mistral;
mod mixtral;
mod moe_shared;
mod phi3;
mod qwen2;
mod qwen3;
mod qwen_moe;
mod shared;
mod spec;

#[cfg(feature = "testing")]
pub use shared::llama_tensor_name;

pub use spec::{FamilySpec, OutputPart, StackedExperts};

/// Every family, in docs/models.md's order.
pub const FAMILIES: &[&FamilySpec] = &[
    &llama::FAMILY,
    &mistral::FAMILY,
    &qwen2::FAMILY,
    &qwen3::FAMILY,
    &gemma2::FAMILY,
    &gemma3::FAMILY,
    &phi3::FAMILY,
    &granite::FAMILY,
    &mixtral::FAMILY,
    &qwen_moe::QWEN2_MOE,
    &qwen_moe::QWEN3_MOE,
    &gpt_oss::FAMILY,
];

pub fn by_hf_architecture(name: &str) -> Option<&'static FamilySpec> {
    FAMILIES
        .iter()
        .copied()
        .find(|f| f.hf_architectures.contains(&name))
}

pub fn by_gguf_architecture(name: &str) -> Option<&'static FamilySpec> {
    FAMILIES
        .iter()
        .copied()
        .find(|f| f.gguf_architectures.contains(&name))
}

/// Every `architectures[0]` we serve.
pub fn hf_architectures() -> Vec<&'static str> {
    FAMILIES.iter().flat_map(|f| f.hf_architectures).copied().collect()
}

/// Every `general.architecture` we serve.
pub fn gguf_architectures() -> Vec<&'static str> {
    FAMILIES.iter().flat_map(|f| f.gguf_architectures).copied().collect()
}

/// Where `family`'s Hugging Face checkpoints stack the experts' weight `gguf_name`, if they do.
pub fn hf_stacked_experts(family: &FamilySpec, gguf_name: &str) -> Option<StackedExperts> {
    family.hf_stacked_experts.and_then(|stacked| stacked(gguf_name))
}

/// The Hugging Face name of a weight of `family` given its GGUF name.
pub fn hf_tensor_name(family: &FamilySpec, gguf_name: &str) -> Option<String> {
    (family.hf_tensor_name)(gguf_name).or_else(|| shared::llama_tensor_name(gguf_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_architecture_name_belongs_to_one_family() {
        let hf = hf_architectures();
        let gguf = gguf_architectures();
        for names in [&hf, &gguf] {
            let mut sorted = names.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), names.len(), "{names:?}");
        }
        assert_eq!(by_hf_architecture("Gemma2ForCausalLM").map(|f| f.name), Some("gemma2"));
        assert_eq!(by_gguf_architecture("phi3").map(|f| f.name), Some("phi3"));
        assert!(by_hf_architecture("RwkvForCausalLM").is_none());
    }

    #[test]
    fn family_tensor_names_override_llamas() {
        let gemma2 = by_hf_architecture("Gemma2ForCausalLM").expect("gemma2");
        assert_eq!(
            hf_tensor_name(gemma2, "blk.3.post_attention_norm.weight").as_deref(),
            Some("model.layers.3.post_attention_layernorm.weight")
        );
        assert_eq!(
            hf_tensor_name(gemma2, "blk.3.ffn_norm.weight").as_deref(),
            Some("model.layers.3.pre_feedforward_layernorm.weight")
        );
        let llama = by_hf_architecture("LlamaForCausalLM").expect("llama");
        assert_eq!(
            hf_tensor_name(llama, "blk.3.ffn_norm.weight").as_deref(),
            Some("model.layers.3.post_attention_layernorm.weight")
        );
        let phi3 = by_hf_architecture("Phi3ForCausalLM").expect("phi3");
        assert_eq!(
            hf_tensor_name(phi3, "blk.0.attn_qkv.weight").as_deref(),
            Some("model.layers.0.self_attn.qkv_proj.weight")
        );
    }
}
