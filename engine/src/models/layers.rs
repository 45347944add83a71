//! The layers every family shares: RMS norm and the gated MLP (RoPE: `rotary.rs`).

use candle_core::Tensor;

use super::config::ModelConfig;
use super::features::Activation;
use super::fused::FusedOps;
use super::grouped_matmul::QuantizedWeights;
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

    /// A norm of `cfg`'s model: its epsilon, and its weight offset (Gemma's `1 + w`) applied once.
    pub fn load_for(
        weights: &dyn WeightSource,
        cfg: &ModelConfig,
        name: &str,
        size: usize,
    ) -> Result<Self> {
        let mut norm = Self::load(weights, name, size, cfg.rms_norm_eps)?;
        let offset = cfg.features.norm_weight_offset;
        if offset != 0.0 {
            norm.weight = (norm.weight + offset as f64)?;
        }
        Ok(norm)
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

/// The gated feed-forward block: `down(act(gate(x)) * up(x))`, SwiGLU or GeGLU.
#[derive(Debug, Clone)]
pub struct GatedMlp {
    /// Gate and up projections fused: the first `intermediate` outputs are the gate.
    gate_up: Linear,
    down: Linear,
    intermediate: usize,
    activation: Activation,
}

impl GatedMlp {
    /// Loads `{prefix}.ffn_{gate,up,down}`; a checkpoint without `ffn_gate` stores gate and up
    /// fused in `ffn_up` (Phi-3's `gate_up_proj`, gate first), loaded as it is.
    pub fn load(
        weights: &dyn WeightSource,
        prefix: &str,
        (hidden, intermediate): (usize, usize),
        activation: Activation,
    ) -> Result<Self> {
        Self::load_named(weights, (prefix, ""), (hidden, intermediate), activation)
    }

    /// As `load`, with `suffix` after each projection's name (`_shexp`: a shared expert).
    pub fn load_named(
        weights: &dyn WeightSource,
        (prefix, suffix): (&str, &str),
        (hidden, intermediate): (usize, usize),
        activation: Activation,
    ) -> Result<Self> {
        let up_name = format!("{prefix}.ffn_up{suffix}.weight");
        let gate_name = format!("{prefix}.ffn_gate{suffix}.weight");
        let gate_up = if weights.contains(&gate_name) {
            let gate = weights.linear(&gate_name, intermediate, hidden)?;
            let up = weights.linear(&up_name, intermediate, hidden)?;
            Linear::fuse(vec![gate, up])?
        } else {
            weights.linear(&up_name, 2 * intermediate, hidden)?
        };
        Ok(Self {
            gate_up,
            down: weights.linear(&format!("{prefix}.ffn_down{suffix}.weight"), hidden, intermediate)?,
            intermediate,
            activation,
        })
    }

    /// An MLP of separate gate, up and down projections (an expert).
    pub fn from_parts(
        (gate, up, down): (Linear, Linear, Linear),
        intermediate: usize,
        activation: Activation,
    ) -> Result<Self> {
        Ok(Self {
            gate_up: Linear::fuse(vec![gate, up])?,
            down,
            intermediate,
            activation,
        })
    }

    /// The gate/up and down weights when both are CPU-quantized (experts run grouped then).
    pub fn quantized_parts(&self) -> Option<(QuantizedWeights<'_>, QuantizedWeights<'_>)> {
        Some((QuantizedWeights::of(&self.gate_up)?, QuantizedWeights::of(&self.down)?))
    }

    pub fn intermediate(&self) -> usize {
        self.intermediate
    }

    /// The MLP without adapters.
    pub fn forward_base(&self, x: &Tensor, fused: &FusedOps) -> Result<Tensor> {
        let hidden = self.activate(&self.gate_up.forward(x)?, fused)?;
        self.down.forward(&hidden)
    }

    /// The activation of gate/up outputs (`[num_tokens, 2 · intermediate]`, the gate first).
    pub fn activate(&self, gate_up: &Tensor, fused: &FusedOps) -> Result<Tensor> {
        match self.activation {
            Activation::Silu => fused.silu_mul(gate_up, self.intermediate),
            Activation::GeluTanh => fused.gelu_tanh_mul(gate_up, self.intermediate),
            Activation::ClampedSwiglu { alpha, limit } => {
                clamped_swiglu(gate_up, self.intermediate, alpha, limit)
            }
        }
    }

    /// The MLP with a bias on its gate/up outputs (`[2 · intermediate]`, the gate's first) and
    /// on its down outputs, as gpt-oss's experts have.
    pub fn forward_biased(
        &self,
        x: &Tensor,
        (gate_up_bias, down_bias): (&Tensor, &Tensor),
        fused: &FusedOps,
    ) -> Result<Tensor> {
        let gate_up = self.gate_up.forward(x)?.broadcast_add(gate_up_bias)?;
        let hidden = self.activate(&gate_up, fused)?;
        Ok(self.down.forward(&hidden)?.broadcast_add(down_bias)?)
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
        let hidden = self.activate(&gate_up, fused)?;
        let down = self.down.forward(&hidden)?;
        lora.apply(layer, FusedProjection::Down, &hidden, down)
    }
}

/// gpt-oss's `(up + 1) · gate · σ(alpha · gate)` of `gate_up` (`[num_tokens, 2 · width]`, the
/// gate first), with the gate clamped to at most `limit` and up to `[-limit, limit]`.
fn clamped_swiglu(gate_up: &Tensor, width: usize, alpha: f32, limit: f32) -> Result<Tensor> {
    let gate = gate_up.narrow(1, 0, width)?.minimum(limit as f64)?;
    let up = gate_up.narrow(1, width, width)?.clamp(-limit as f64, limit as f64)?;
    let glu = (&gate * candle_nn::ops::sigmoid(&(&gate * alpha as f64)?)?)?;
    Ok(((up + 1.0)? * glu)?)
}

