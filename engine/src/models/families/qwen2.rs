//! Qwen2 and Qwen2.5 (and their distills): Llama's layers with biases on q, k and v. Qwen2's
//! per-layer sliding window (`use_sliding_window`) is refused; every released checkpoint has it
//! off.

use super::shared::{refuse_qwen_window, swiglu};
use super::spec::{FamilySpec, FamilyTraits};
use crate::error::Result;
use crate::models::gguf::GgufFile;
use crate::models::hf_config::HfConfig;

pub static FAMILY: FamilySpec = FamilySpec {
    name: "qwen2",
    hf_architectures: &["Qwen2ForCausalLM"],
    gguf_architectures: &["qwen2"],
    from_hf,
    from_gguf,
    hf_tensor_name: |_| None,
    gguf_rope_interleaved: false,
    gguf_tensor_name: None,
    hf_stacked_experts: None,
};

fn from_hf(config: &HfConfig, _context_length: usize) -> std::result::Result<FamilyTraits, String> {
    refuse_qwen_window(config)?;
    Ok(FamilyTraits {
        attention_bias: true,
        features: swiglu(config)?,
        ..FamilyTraits::default()
    })
}

fn from_gguf(file: &GgufFile, _num_layers: usize) -> Result<FamilyTraits> {
    Ok(FamilyTraits {
        attention_bias: file.has_tensor("blk.0.attn_q.bias"),
        ..FamilyTraits::default()
    })
}
