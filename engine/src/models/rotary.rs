//! Rotary position embeddings, with the scaling variants of long-context models.

use candle_core::{DType, Device, Tensor};

use super::config::{ModelConfig, RopeScaling};
use crate::error::{EngineError, Result};

/// Precomputed cos/sin tables, one row per position.
#[derive(Debug, Clone)]
pub struct RotaryEmbedding {
    cos: Tensor,
    sin: Tensor,
    interleaved: bool,
}

/// The rotation frequency of each pair of dimensions, scaling applied.
pub fn inverse_frequencies(head_dim: usize, theta: f32, scaling: Option<RopeScaling>) -> Vec<f32> {
    let base = match scaling {
        // NTK-aware: a larger base, fixed at the extended length factor × original.
        Some(RopeScaling::Dynamic { factor }) => {
            theta
                * (factor * factor - (factor - 1.0)).powf(head_dim as f32 / (head_dim as f32 - 2.0))
        }
        _ => theta,
    };
    let plain = (0..head_dim / 2).map(|i| 1.0 / base.powf(2.0 * i as f32 / head_dim as f32));
    match scaling {
        Some(RopeScaling::Linear { factor }) => plain.map(|f| f / factor).collect(),
        Some(RopeScaling::Llama3 {
            factor,
            low_freq_factor,
            high_freq_factor,
            original_max_position_embeddings,
        }) => {
            let original = original_max_position_embeddings as f32;
            let low_freq_wavelen = original / low_freq_factor;
            let high_freq_wavelen = original / high_freq_factor;
            plain
                .map(|f| {
                    let wavelen = 2.0 * std::f32::consts::PI / f;
                    if wavelen < high_freq_wavelen {
                        f
                    } else if wavelen > low_freq_wavelen {
                        f / factor
                    } else {
                        let smooth = (original / wavelen - low_freq_factor)
                            / (high_freq_factor - low_freq_factor);
                        (1.0 - smooth) * f / factor + smooth * f
                    }
                })
                .collect()
        }
        _ => plain.collect(),
    }
}

impl RotaryEmbedding {
    /// Tables for every position of the context, in the compute dtype `dtype`.
    pub fn new(config: &ModelConfig, device: &Device, dtype: DType) -> Result<Self> {
        let (cos, sin) = Self::tables(config, device, dtype)
            .map_err(|e| EngineError::model_load_from("cannot build the RoPE tables", e))?;
        Ok(Self {
            cos,
            sin,
            interleaved: config.rope_interleaved,
        })
    }

    fn tables(
        config: &ModelConfig,
        device: &Device,
        dtype: DType,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        let head_dim = config.head_dim;
        let max_positions = config.context_length;
        let inv_freq = inverse_frequencies(head_dim, config.rope_theta, config.rope_scaling);
        let inv_freq = Tensor::from_vec(inv_freq, (1, head_dim / 2), device)?;
        let positions = Tensor::arange(0u32, max_positions as u32, device)?
            .to_dtype(DType::F32)?
            .reshape((max_positions, 1))?;
        let angles = positions.broadcast_mul(&inv_freq)?;
        Ok((
            angles.cos()?.to_dtype(dtype)?,
            angles.sin()?.to_dtype(dtype)?,
        ))
    }

    /// The cos/sin rows of a step's positions, gathered once for every layer of the step.
    pub fn for_positions(&self, positions: &Tensor) -> Result<StepRotary> {
        let num_tokens = positions.dim(0)?;
        let half = self.cos.dim(1)?;
        let gather = |table: &Tensor| -> Result<Tensor> {
            Ok(table
                .index_select(positions, 0)?
                .reshape((num_tokens, 1, half))?)
        };
        Ok(StepRotary {
            cos: gather(&self.cos)?,
            sin: gather(&self.sin)?,
            interleaved: self.interleaved,
        })
    }

    /// Rotates `x` (`[num_tokens, num_heads * head_dim]`), each token at its own position (the
    /// model gathers a step's rows once, `for_positions`; tests rotate one tensor).
    #[cfg(any(test, feature = "testing"))]
    pub fn apply(&self, x: &Tensor, positions: &Tensor, num_heads: usize) -> Result<Tensor> {
        self.for_positions(positions)?.apply(x, num_heads)
    }
}

/// One step's rotation: a cos and a sin row per token (`[num_tokens, 1, head_dim / 2]`).
#[derive(Debug, Clone)]
pub struct StepRotary {
    cos: Tensor,
    sin: Tensor,
    interleaved: bool,
}

impl StepRotary {
    /// Rotates `x` (`[num_tokens, num_heads * head_dim]`), each token at its step position.
    pub fn apply(&self, x: &Tensor, num_heads: usize) -> Result<Tensor> {
        rotate_heads(x, num_heads, (&self.cos, &self.sin), self.interleaved)
    }

    /// The cos and sin rows (`[num_tokens, 1, head_dim / 2]`).
    #[cfg(feature = "cuda")]
    pub fn tables(&self) -> (&Tensor, &Tensor) {
        (&self.cos, &self.sin)
    }

    /// Pairs (2i, 2i+1) instead of (i, i + head_dim / 2).
    #[cfg(feature = "cuda")]
    pub fn interleaved(&self) -> bool {
        self.interleaved
    }
}

/// Rotates `x` (`[num_tokens, num_heads * head_dim]`) with candle's RoPE kernels, each token with
/// its `cos`/`sin` row (`[num_tokens, 1, head_dim / 2]`).
pub fn rotate_heads(
    x: &Tensor,
    num_heads: usize,
    (cos, sin): (&Tensor, &Tensor),
    interleaved: bool,
) -> Result<Tensor> {
    let (num_tokens, width) = x.dims2()?;
    let head_dim = width / num_heads;
    let x = x
        .reshape((num_tokens, num_heads, 1, head_dim))?
        .contiguous()?;
    let rotated = if interleaved {
        candle_nn::rotary_emb::rope_i(&x, cos, sin)?
    } else {
        candle_nn::rotary_emb::rope(&x, cos, sin)?
    };
    Ok(rotated.reshape((num_tokens, width))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama3_scaling_keeps_high_frequencies_and_divides_low_ones() {
        let plain = inverse_frequencies(128, 500_000.0, None);
        let scaling = RopeScaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 8192,
        };
        let scaled = inverse_frequencies(128, 500_000.0, Some(scaling));
        assert_eq!(scaled[0], plain[0], "the highest frequency is untouched");
        assert!(
            (scaled[63] - plain[63] / 8.0).abs() < 1e-12,
            "the lowest is divided by the factor"
        );
        assert!(scaled
            .iter()
            .zip(&plain)
            .all(|(s, p)| s <= p && *s >= p / 8.0 - 1e-12));
    }

    #[test]
    fn linear_and_dynamic_scaling() {
        let plain = inverse_frequencies(64, 10_000.0, None);
        let linear = inverse_frequencies(64, 10_000.0, Some(RopeScaling::Linear { factor: 4.0 }));
        assert!(linear
            .iter()
            .zip(&plain)
            .all(|(l, p)| (l - p / 4.0).abs() < 1e-9));
        let dynamic = inverse_frequencies(64, 10_000.0, Some(RopeScaling::Dynamic { factor: 2.0 }));
        assert_eq!(
            dynamic[0], 1.0,
            "the first pair always turns once per position"
        );
        assert!(
            dynamic[1..].iter().zip(&plain[1..]).all(|(d, p)| d < p),
            "a larger base slows every other pair"
        );
    }
}
