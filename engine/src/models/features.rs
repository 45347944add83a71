//! `DecoderFeatures`: how a family's decoder differs from Llama's, as values the shared layers
//! read. The family files (`families/`) fill them in from a config.json or a GGUF header; the
//! decoder (`decoder.rs`) never asks which family it runs.

use crate::attention::LayerAttention;

/// The MLP's gating activation.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Activation {
    /// SwiGLU: `silu(gate) · up` (Llama, Qwen, Mistral, Phi-3, Granite).
    #[default]
    Silu,
    /// GeGLU with the tanh approximation: `gelu_tanh(gate) · up` (Gemma).
    GeluTanh,
    /// gpt-oss's SwiGLU: `(up + 1) · gate · σ(alpha · gate)`, the gate clamped above at
    /// `limit` and up to `±limit` (`swiglu_alpha`, `swiglu_limit`).
    ClampedSwiglu { alpha: f32, limit: f32 },
}

impl Activation {
    /// The activation a config.json names (`hidden_act` / `hidden_activation`).
    pub fn from_hf_name(name: &str) -> Option<Self> {
        match name {
            "silu" | "swish" => Some(Self::Silu),
            "gelu_pytorch_tanh" | "gelu_tanh" | "gelu_new" => Some(Self::GeluTanh),
            _ => None,
        }
    }

    pub const HF_NAMES: &'static str = "silu, swish, gelu_pytorch_tanh, gelu_tanh, gelu_new";
}

/// A mixture-of-experts MLP (every layer).
#[derive(Debug, Clone, PartialEq)]
pub struct MoeSpec {
    pub num_experts: usize,
    /// Experts per token (top-k).
    pub num_experts_per_tok: usize,
    pub expert_intermediate_size: usize,
    /// Renormalise the top-k probabilities to sum to 1 (Mixtral, Qwen3-MoE).
    pub norm_topk_prob: bool,
    /// Qwen2-MoE: a shared expert of this width, gated by a sigmoid.
    pub shared_expert_intermediate_size: Option<usize>,
    /// gpt-oss: the router and every expert projection carry biases.
    pub biased: bool,
}

/// Family-specific arithmetic of a decoder. `Default` is Llama's.
#[derive(Debug, Clone, PartialEq)]
pub struct DecoderFeatures {
    pub activation: Activation,
    /// Added to every RMS norm weight at load: 1 for Gemma's `x · (1 + w)` norms in Hugging
    /// Face checkpoints (llama.cpp's converter already adds it to GGUF files).
    pub norm_weight_offset: f32,
    /// Multiplies the token embeddings (Gemma: √hidden_size; Granite: `embedding_multiplier`).
    pub embedding_scale: Option<f32>,
    /// Multiplies each residual branch before it is added (Granite: `residual_multiplier`).
    pub residual_scale: Option<f32>,
    /// Gemma 2/3: norms after the attention and after the MLP as well as before them.
    pub sandwich_norms: bool,
    /// The scale of attention scores; `None` is 1/√head_dim.
    pub attention_scale: Option<f32>,
    /// Gemma 2: attention scores softcapped before the softmax.
    pub attn_logit_softcap: Option<f32>,
    /// Gemma 2: output logits softcapped.
    pub final_logit_softcap: Option<f32>,
    /// Divides the output logits (Granite: `logits_scaling`).
    pub logit_divisor: Option<f32>,
    /// Which layers use the config's `sliding_window`; `None`: every layer.
    pub sliding_layers: Option<Vec<bool>>,
    /// Gemma 3: the sliding layers' own RoPE base (and no scaling).
    pub local_rope_theta: Option<f32>,
    /// Every layer's MLP is a mixture of experts.
    pub moe: Option<MoeSpec>,
    /// gpt-oss: a learned sink logit per query head in every attention softmax
    /// (`blk.N.attn_sinks`).
    pub attention_sinks: bool,
    /// The attention's output projection has a bias (gpt-oss), besides any on q/k/v.
    pub attention_output_bias: bool,
    /// The checkpoint's modules are `qkv_proj` and `gate_up_proj` (Phi-3) instead of
    /// q/k/v and gate/up: the names LoRA adapters trained on it target.
    pub fused_projections: bool,
}

impl Default for DecoderFeatures {
    fn default() -> Self {
        Self {
            activation: Activation::Silu,
            norm_weight_offset: 0.0,
            embedding_scale: None,
            residual_scale: None,
            sandwich_norms: false,
            attention_scale: None,
            attn_logit_softcap: None,
            final_logit_softcap: None,
            logit_divisor: None,
            sliding_layers: None,
            local_rope_theta: None,
            moe: None,
            attention_sinks: false,
            attention_output_bias: false,
            fused_projections: false,
        }
    }
}

impl DecoderFeatures {
    /// Whether layer `layer` is a sliding-window layer (when the model has a window at all).
    pub fn is_sliding(&self, layer: usize) -> bool {
        self.sliding_layers
            .as_ref()
            .is_none_or(|layers| layers.get(layer).copied().unwrap_or(false))
    }

    /// Layer `layer`'s attention: the family's scale and softcap, the window if it slides.
    pub fn layer_attention(
        &self,
        layer: usize,
        head_dim: usize,
        sliding_window: Option<usize>,
    ) -> LayerAttention {
        let standard = LayerAttention::standard(head_dim);
        LayerAttention {
            scale: self.attention_scale.unwrap_or(standard.scale),
            window: sliding_window.filter(|_| self.is_sliding(layer)),
            softcap: self.attn_logit_softcap,
            sinks: None,
        }
    }

    /// Layer types in the repeating pattern of Gemma 2 (`period` 2) and 3 (6): every
    /// `period`-th layer is global, the others slide.
    pub fn periodic_sliding_layers(num_layers: usize, period: usize) -> Vec<bool> {
        (0..num_layers)
            .map(|layer| (layer + 1) % period.max(1) != 0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemma_patterns_and_per_layer_attention() {
        assert_eq!(
            DecoderFeatures::periodic_sliding_layers(4, 2),
            vec![true, false, true, false]
        );
        let gemma3 = DecoderFeatures::periodic_sliding_layers(12, 6);
        assert_eq!(gemma3.iter().filter(|s| !**s).count(), 2);
        assert!(!gemma3[5] && !gemma3[11] && gemma3[0] && gemma3[6]);
        let features = DecoderFeatures {
            sliding_layers: Some(vec![true, false]),
            attention_scale: Some(0.5),
            attn_logit_softcap: Some(50.0),
            ..DecoderFeatures::default()
        };
        let sliding = features.layer_attention(0, 64, Some(8));
        assert_eq!((sliding.scale, sliding.window, sliding.softcap), (0.5, Some(8), Some(50.0)));
        assert_eq!(features.layer_attention(1, 64, Some(8)).window, None);
        let llama = DecoderFeatures::default();
        assert_eq!(llama.layer_attention(3, 64, Some(8)).window, Some(8));
        assert_eq!(llama.layer_attention(3, 64, None), LayerAttention::standard(64));
    }

    #[test]
    fn activations_by_their_config_names() {
        assert_eq!(Activation::from_hf_name("silu"), Some(Activation::Silu));
        assert_eq!(
            Activation::from_hf_name("gelu_pytorch_tanh"),
            Some(Activation::GeluTanh)
        );
        assert_eq!(Activation::from_hf_name("relu2"), None);
    }
}
