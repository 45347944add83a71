//! `FamilySpec`, what the registry holds of each family, and `FamilyTraits`, what a family's
//! config says beyond the shape every family shares.

use crate::error::Result;
use crate::models::features::DecoderFeatures;
use crate::models::gguf::GgufFile;
use crate::models::hf_config::HfConfig;

/// What a family's config says beyond the shape every family shares.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FamilyTraits {
    /// q, k and v projections carry biases.
    pub attention_bias: bool,
    /// q and k are RMS-normalised per head before RoPE.
    pub qk_norm: bool,
    /// The window of the sliding layers (`features.sliding_layers` says which).
    pub sliding_window: Option<usize>,
    pub features: DecoderFeatures,
}

/// One family: its names and how its configs are read.
#[derive(Debug)]
pub struct FamilySpec {
    /// Our name for it (docs/models.md's table).
    pub name: &'static str,
    pub hf_architectures: &'static [&'static str],
    pub gguf_architectures: &'static [&'static str],
    /// From config.json, given the served context length; the error names the field.
    pub from_hf: fn(&HfConfig, usize) -> std::result::Result<FamilyTraits, String>,
    /// From a GGUF header's `<arch>.*` keys, given the number of layers.
    pub from_gguf: fn(&GgufFile, usize) -> Result<FamilyTraits>,
    /// The Hugging Face name of a weight the layers ask for by its GGUF name, where it differs
    /// from Llama's (`None`: Llama's name).
    pub hf_tensor_name: fn(&str) -> Option<String>,
    /// llama.cpp's converter permutes q/k for adjacent-pair rotation in these GGUF files.
    pub gguf_rope_interleaved: bool,
    /// The name in this family's GGUF files of a weight the layers ask for by Llama's GGUF name,
    /// where llama.cpp names it otherwise (`None`: every name is Llama's).
    pub gguf_tensor_name: Option<fn(&str) -> Option<String>>,
    /// Where a Hugging Face checkpoint keeps the experts' weights stacked in one tensor per
    /// projection (gpt-oss), given the stacked GGUF name the layers ask for
    /// (`blk.N.ffn_{gate,up,down}_exps.{weight,bias}`); `None`: one tensor per expert.
    pub hf_stacked_experts: Option<fn(&str) -> Option<StackedExperts>>,
}

/// One stacked expert tensor of a Hugging Face checkpoint: `[num_experts, in, out]` weights (or
/// `[num_experts, out]` biases), of which the layers want the `part` along the outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct StackedExperts {
    pub hf_name: String,
    pub part: OutputPart,
}

/// Which outputs of a stacked tensor a projection takes (gpt-oss interleaves gate and up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputPart {
    All,
    Even,
    Odd,
}

