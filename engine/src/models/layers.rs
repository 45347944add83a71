//! The layers every Llama-family model shares: RMS norm and the gated MLP (RoPE: `rotary.rs`).

use candle_core::Tensor;

use super::fused::FusedOps;
use super::linear::Linear;

use super::weights::WeightSource;
use crate::error::Result;
use crate::lora::adapter::FusedProjection;
use crate::lora::batch::LoraBatch;

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

    /// `(x + residual, rms_norm(x + residual))`, in one kernel on a GPU.
    pub fn forward_after_add(
        &self,
        x: &Tensor,
        residual: &Tensor,
        fused: &FusedOps,
    ) -> Result<(Tensor, Tensor)> {
        fused.add_rms_norm(x, residual, (&self.weight, self.eps))
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

    /// `x` is layer `layer`'s normalised input; `lora` adds the step's adapters.
    pub fn forward(
        &self,
        layer: usize,
        x: &Tensor,
        lora: &LoraBatch,
        fused: &FusedOps,
    ) -> Result<Tensor> {
        let gate_up = self.gate_up.forward(x)?;
        let gate_up = lora.apply(layer, FusedProjection::GateUp, x, gate_up)?;
        let hidden = fused.silu_mul(&gate_up, self.intermediate)?;
        let down = self.down.forward(&hidden)?;
        lora.apply(layer, FusedProjection::Down, &hidden, down)
    }
}
