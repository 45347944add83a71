//! `ModelConfig`: the shape of a Llama-family model, whatever file it came from.

use super::features::DecoderFeatures;
use super::generation_config::SamplingDefaults;
use crate::attention::shape::AttnShape;
use crate::attention::LayerAttention;
use crate::error::{EngineError, Result};

#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub architecture: String,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f32,
    /// GGUF Llama weights are permuted for rotation of adjacent pairs; Hugging Face ones rotate halves.
    pub rope_interleaved: bool,
    /// Frequency scaling of RoPE for long contexts.
    pub rope_scaling: Option<RopeScaling>,
    /// Longest context the model serves (after any RoPE scaling).
    pub context_length: usize,
    /// q, k and v projections carry biases (Qwen2).
    pub attention_bias: bool,
    /// q and k are RMS-normalised per head before RoPE (Qwen3).
    pub qk_norm: bool,
    /// Each token attends to at most this many most recent positions (Mistral).
    pub sliding_window: Option<usize>,
    pub bos_token_id: Option<u32>,
    /// Every token id that ends generation.
    pub eos_token_ids: Vec<u32>,
    /// Sampling values from generation_config.json, for callers that leave a field unset.
    pub sampling_defaults: SamplingDefaults,
    /// How the family's decoder differs from Llama's.
    pub features: DecoderFeatures,
}

/// RoPE scaling variants, as Hugging Face configs spell them in `rope_scaling`.
#[derive(Debug, Clone, PartialEq)]
pub enum RopeScaling {
    /// Positions divided by `factor`.
    Linear { factor: f32 },
    /// NTK-aware base change, fixed at the extended length (as vLLM does).
    Dynamic { factor: f32 },
    /// Llama 3.1's per-frequency scaling.
    Llama3 {
        factor: f32,
        low_freq_factor: f32,
        high_freq_factor: f32,
        original_max_position_embeddings: usize,
    },
    /// YaRN (Qwen2.5 long context, DeepSeek distills): frequencies blended between
    /// interpolation and extrapolation by wavelength, cos/sin scaled by `attention_factor`.
    Yarn {
        factor: f32,
        original_max_position_embeddings: usize,
        beta_fast: f32,
        beta_slow: f32,
        attention_factor: f32,
        /// The correction range's ends rounded to whole dimensions (transformers' default;
        /// gpt-oss sets `truncate: false`; llama.cpp always rounds).
        truncate: bool,
    },
    /// Per-frequency divisors, as llama.cpp's converter bakes Llama 3.1's scaling into a GGUF
    /// file (`rope_freqs`).
    FrequencyDivisors { divisors: Vec<f32> },
    /// Phi-3's LongRoPE: one divisor per frequency, the long ones when the served context
    /// exceeds the original (as llama.cpp decides), cos/sin scaled by `attention_factor`.
    LongRope {
        short_factor: Vec<f32>,
        long_factor: Vec<f32>,
        original_max_position_embeddings: usize,
        attention_factor: f32,
    },
}

impl RopeScaling {
    /// The context-extension factor, for the checks of `ModelConfig::validate`.
    fn factor(&self) -> f32 {
        match self {
            Self::Linear { factor } | Self::Dynamic { factor } => *factor,
            Self::Llama3 { factor, .. } | Self::Yarn { factor, .. } => *factor,
            Self::LongRope { .. } | Self::FrequencyDivisors { .. } => 1.0,
        }
    }
}

impl ModelConfig {
    /// A model that is never loaded, for the mock executor: SmolLM2-135M's shape (30 layers,
    /// 9 query heads, 3 KV heads of 64 dimensions), so the KV cache is sized as for that model,
    /// with the given vocabulary, EOS ids and context length.
    pub fn mock(vocab_size: usize, eos_token_ids: Vec<u32>, context_length: usize) -> Self {
        Self {
            architecture: "mock".into(),
            vocab_size,
            hidden_size: 576,
            intermediate_size: 1536,
            num_layers: 30,
            num_heads: 9,
            num_kv_heads: 3,
            head_dim: 64,
            rms_norm_eps: 1e-5,
            rope_theta: 100_000.0,
            rope_interleaved: false,
            rope_scaling: None,
            context_length,
            attention_bias: false,
            qk_norm: false,
            sliding_window: None,
            bos_token_id: None,
            eos_token_ids,
            sampling_defaults: SamplingDefaults::default(),
            features: DecoderFeatures::default(),
        }
    }

    /// Layer `layer`'s attention settings: scale, window (if the layer slides), softcap.
    pub fn layer_attention(&self, layer: usize) -> LayerAttention {
        self.features
            .layer_attention(layer, self.head_dim, self.sliding_window)
    }

    pub fn attn_shape(&self) -> AttnShape {
        AttnShape {
            num_heads: self.num_heads,
            num_kv_heads: self.num_kv_heads,
            head_dim: self.head_dim,
        }
    }

    /// Bytes one token's keys and values take across all layers, stored in `dtype`.
    pub fn kv_bytes_per_token(&self, dtype: candle_core::DType) -> usize {
        self.attn_shape().kv_bytes_per_token(self.num_layers, dtype)
    }

    /// Rejects shapes the layers cannot run, with the offending values named.
    pub fn validate(&self) -> Result<()> {
        let fail = |m: String| Err(EngineError::model_load(m));
        for (name, value) in [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_layers", self.num_layers),
            ("num_heads", self.num_heads),
            ("num_kv_heads", self.num_kv_heads),
            ("head_dim", self.head_dim),
            ("context_length", self.context_length),
        ] {
            if value == 0 {
                return fail(format!("{name} must be positive"));
            }
        }
        if !self.num_heads.is_multiple_of(self.num_kv_heads) {
            return fail(format!(
                "num_heads {} is not a multiple of num_kv_heads {}",
                self.num_heads, self.num_kv_heads
            ));
        }
        if !self.head_dim.is_multiple_of(2) {
            return fail(format!("head_dim {} must be even for RoPE", self.head_dim));
        }
        if !(self.rope_theta.is_finite() && self.rope_theta > 0.0) {
            return fail(format!("rope_theta {} must be positive", self.rope_theta));
        }
        if self.sliding_window == Some(0) {
            return fail("sliding_window must be positive".into());
        }
        if let Some(scaling) = &self.rope_scaling {
            let factor = scaling.factor();
            if let RopeScaling::LongRope {
                short_factor,
                long_factor,
                ..
            } = scaling
            {
                let half = self.head_dim / 2;
                if short_factor.len() != half || long_factor.len() != half {
                    return fail(format!(
                        "rope_scaling short_factor and long_factor need head_dim / 2 = {half} values (got {} and {})",
                        short_factor.len(),
                        long_factor.len()
                    ));
                }
            }
            if !(factor.is_finite() && factor >= 1.0) {
                return fail(format!(
                    "rope_scaling factor {factor} must be a number >= 1"
                ));
            }
        }
        if let Some(RopeScaling::FrequencyDivisors { divisors }) = &self.rope_scaling {
            if divisors.len() != self.head_dim / 2
                || !divisors.iter().all(|d| d.is_finite() && *d > 0.0)
            {
                return fail(format!(
                    "rope_freqs needs head_dim / 2 = {} positive values",
                    self.head_dim / 2
                ));
            }
        }
        if let Some(sliding) = &self.features.sliding_layers {
            if sliding.len() != self.num_layers {
                return fail(format!(
                    "{} layer types for {} layers",
                    sliding.len(),
                    self.num_layers
                ));
            }
        }
        if let Some(&bad) = self
            .eos_token_ids
            .iter()
            .find(|&&id| id as usize >= self.vocab_size)
        {
            return fail(format!(
                "eos token id {bad} is outside the vocabulary of {}",
                self.vocab_size
            ));
        }
        Ok(())
    }
}
