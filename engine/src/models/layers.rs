//! The layers every Llama-family model shares: RMS norm, rotary embeddings, the gated MLP.

use candle_core::{DType, Device, Tensor};

use super::linear::Linear;

use super::weights::WeightSource;
use crate::error::Result;

/// Root-mean-square normalisation with a learned scale.
#[derive(Debug, Clone)]
pub struct RmsNorm {
    weight: Tensor,
    eps: f32,
}

impl RmsNorm {
    pub fn load(weights: &dyn WeightSource, name: &str, size: usize, eps: f64) -> Result<Self> {
        Ok(Self {
            weight: weights.vector(name, size)?,
            eps: eps as f32,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(candle_nn::ops::rms_norm(x, &self.weight, self.eps)?)
    }
}

/// Precomputed cos/sin tables for rotary position embeddings.
#[derive(Debug, Clone)]
pub struct RotaryEmbedding {
    cos: Tensor,
    sin: Tensor,
    interleaved: bool,
}

impl RotaryEmbedding {
    pub fn new(
        head_dim: usize,
        max_positions: usize,
        theta: f32,
        interleaved: bool,
        device: &Device,
    ) -> Result<Self> {
        let inv_freq: Vec<f32> = (0..head_dim / 2)
            .map(|i| 1.0 / theta.powf(2.0 * i as f32 / head_dim as f32))
            .collect();
        let inv_freq = Tensor::from_vec(inv_freq, (1, head_dim / 2), device)?;
        let positions = Tensor::arange(0u32, max_positions as u32, device)?
            .to_dtype(DType::F32)?
            .reshape((max_positions, 1))?;
        let angles = positions.broadcast_mul(&inv_freq)?;
        Ok(Self {
            cos: angles.cos()?,
            sin: angles.sin()?,
            interleaved,
        })
    }

    /// Rotates `x` (`[num_tokens, num_heads * head_dim]`), each token at its own position.
    pub fn apply(&self, x: &Tensor, positions: &Tensor, num_heads: usize) -> Result<Tensor> {
        let (num_tokens, width) = x.dims2()?;
        let head_dim = width / num_heads;
        // Each token is its own "batch" entry with its own cos/sin row.
        let cos = self
            .cos
            .index_select(positions, 0)?
            .reshape((num_tokens, 1, head_dim / 2))?;
        let sin = self
            .sin
            .index_select(positions, 0)?
            .reshape((num_tokens, 1, head_dim / 2))?;
        let x = x.reshape((num_tokens, num_heads, 1, head_dim))?;
        let rotated = if self.interleaved {
            candle_nn::rotary_emb::rope_i(&x.contiguous()?, &cos, &sin)?
        } else {
            candle_nn::rotary_emb::rope(&x.contiguous()?, &cos, &sin)?
        };
        Ok(rotated.reshape((num_tokens, width))?)
    }
}

/// The SwiGLU feed-forward block: `down(silu(gate(x)) * up(x))`.
#[derive(Debug, Clone)]
pub struct GatedMlp {
    /// Gate and up projections fused: the first `intermediate` outputs are the gate.
    gate_up: Linear,
    down: Linear,
    intermediate: usize,
}

impl GatedMlp {
    pub fn load(
        weights: &dyn WeightSource,
        prefix: &str,
        hidden: usize,
        intermediate: usize,
    ) -> Result<Self> {
        let gate = weights.linear(&format!("{prefix}.ffn_gate.weight"), intermediate, hidden)?;
        let up = weights.linear(&format!("{prefix}.ffn_up.weight"), intermediate, hidden)?;
        Ok(Self {
            gate_up: Linear::fuse(vec![gate, up])?,
            down: weights.linear(&format!("{prefix}.ffn_down.weight"), hidden, intermediate)?,
            intermediate,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let gate_up = self.gate_up.forward(x)?;
        let gate = candle_nn::ops::silu(&gate_up.narrow(1, 0, self.intermediate)?)?;
        let up = gate_up.narrow(1, self.intermediate, self.intermediate)?;
        self.down.forward(&(gate * up)?)
    }
}
