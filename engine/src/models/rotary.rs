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

/// The rotation frequency of each pair of dimensions, scaling applied; `context_length` is the
/// longest context served (LongRoPE picks its factors by it).
pub fn inverse_frequencies(
    head_dim: usize,
    theta: f32,
    scaling: Option<&RopeScaling>,
    context_length: usize,
) -> Vec<f32> {
    let base = match scaling {
        // NTK-aware: a larger base, fixed at the extended length factor × original.
        Some(&RopeScaling::Dynamic { factor }) => {
            theta
                * (factor * factor - (factor - 1.0)).powf(head_dim as f32 / (head_dim as f32 - 2.0))
        }
        _ => theta,
    };
    let plain = (0..head_dim / 2).map(|i| 1.0 / base.powf(2.0 * i as f32 / head_dim as f32));
    match scaling {
        Some(&RopeScaling::Linear { factor }) => plain.map(|f| f / factor).collect(),
        Some(&RopeScaling::Llama3 {
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
        Some(RopeScaling::Yarn {
            factor,
            original_max_position_embeddings,
            beta_fast,
            beta_slow,
            truncate,
            ..
        }) => {
            let ramp = yarn_ramp(
                head_dim,
                theta,
                *original_max_position_embeddings,
                (*beta_fast, *beta_slow, *truncate),
            );
            plain
                .zip(ramp)
                .map(|(f, extrapolated_share)| {
                    f / factor * (1.0 - extrapolated_share) + f * extrapolated_share
                })
                .collect()
        }
        Some(RopeScaling::LongRope {
            short_factor,
            long_factor,
            original_max_position_embeddings,
            ..
        }) => {
            let factors = if context_length > *original_max_position_embeddings {
                long_factor
            } else {
                short_factor
            };
            plain.zip(factors).map(|(f, divisor)| f / divisor).collect()
        }
        Some(RopeScaling::FrequencyDivisors { divisors }) => {
            plain.zip(divisors).map(|(f, divisor)| f / divisor).collect()
        }
        _ => plain.collect(),
    }
}

/// YaRN's share of each frequency kept as is (extrapolated): 1 for the fast-turning pairs
/// (more than `beta_fast` turns over the original context), 0 for the slow ones (fewer than
/// `beta_slow`), linear between, over dimension indices as transformers computes them (the
/// range's ends rounded outwards to whole dimensions when `truncate`).
fn yarn_ramp(
    head_dim: usize,
    theta: f32,
    original_max_position_embeddings: usize,
    (beta_fast, beta_slow, truncate): (f32, f32, bool),
) -> Vec<f32> {
    let dim = head_dim as f32;
    let correction_dim = |turns: f32| {
        let wavelength_ratio = original_max_position_embeddings as f32
            / (turns * 2.0 * std::f32::consts::PI);
        dim * wavelength_ratio.ln() / (2.0 * theta.ln())
    };
    let (low, high) = (correction_dim(beta_fast), correction_dim(beta_slow));
    let (low, high) = if truncate {
        (low.floor(), high.ceil())
    } else {
        (low, high)
    };
    let (low, mut high) = (low.max(0.0), high.min(dim - 1.0));
    if low == high {
        high += 0.001;
    }
    (0..head_dim / 2)
        .map(|i| 1.0 - ((i as f32 - low) / (high - low)).clamp(0.0, 1.0))
        .collect()
}

/// The factor cos and sin are multiplied by (YaRN's and LongRoPE's attention scaling).
fn attention_factor(scaling: Option<&RopeScaling>) -> f32 {
    match scaling {
        Some(RopeScaling::Yarn {
            attention_factor, ..
        })
        | Some(RopeScaling::LongRope {
            attention_factor, ..
        }) => *attention_factor,
        _ => 1.0,
    }
}

impl RotaryEmbedding {
    /// Tables for every position of the context, in the compute dtype `dtype`, for the layers
    /// that use the config's own RoPE base and scaling.
    pub fn new(config: &ModelConfig, device: &Device, dtype: DType) -> Result<Self> {
        Self::with_base(config, (config.rope_theta, config.rope_scaling.as_ref()), device, dtype)
    }

    /// Tables with another base and scaling (Gemma 3's sliding-window layers).
    pub fn with_base(
        config: &ModelConfig,
        (theta, scaling): (f32, Option<&RopeScaling>),
        device: &Device,
        dtype: DType,
    ) -> Result<Self> {
        let (cos, sin) = Self::tables(config, (theta, scaling), device, dtype)
            .map_err(|e| EngineError::model_load_from("cannot build the RoPE tables", e))?;
        Ok(Self {
            cos,
            sin,
            interleaved: config.rope_interleaved,
        })
    }

    fn tables(
        config: &ModelConfig,
        (theta, scaling): (f32, Option<&RopeScaling>),
        device: &Device,
        dtype: DType,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        let head_dim = config.head_dim;
        let max_positions = config.context_length;
        let inv_freq = inverse_frequencies(head_dim, theta, scaling, max_positions);
        let factor = attention_factor(scaling) as f64;
        let inv_freq = Tensor::from_vec(inv_freq, (1, head_dim / 2), device)?;
        let positions = Tensor::arange(0u32, max_positions as u32, device)?
            .to_dtype(DType::F32)?
            .reshape((max_positions, 1))?;
        let angles = positions.broadcast_mul(&inv_freq)?;
        Ok((
            (angles.cos()? * factor)?.to_dtype(dtype)?,
            (angles.sin()? * factor)?.to_dtype(dtype)?,
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
        let plain = inverse_frequencies(128, 500_000.0, None, 8192);
        let scaling = RopeScaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 8192,
        };
        let scaled = inverse_frequencies(128, 500_000.0, Some(&scaling), 8192);
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
        let plain = inverse_frequencies(64, 10_000.0, None, 4096);
        let linear = inverse_frequencies(64, 10_000.0, Some(&RopeScaling::Linear { factor: 4.0 }), 4096);
        assert!(linear
            .iter()
            .zip(&plain)
            .all(|(l, p)| (l - p / 4.0).abs() < 1e-9));
        let dynamic = inverse_frequencies(64, 10_000.0, Some(&RopeScaling::Dynamic { factor: 2.0 }), 4096);
        assert_eq!(
            dynamic[0], 1.0,
            "the first pair always turns once per position"
        );
        assert!(
            dynamic[1..].iter().zip(&plain[1..]).all(|(d, p)| d < p),
            "a larger base slows every other pair"
        );
    }

    #[test]
    fn yarn_keeps_fast_pairs_divides_slow_ones_and_longrope_picks_factors_by_context() {
        let plain = inverse_frequencies(64, 10_000.0, None, 128);
        let yarn = RopeScaling::Yarn {
            factor: 4.0,
            original_max_position_embeddings: 4096,
            beta_fast: 32.0,
            beta_slow: 1.0,
            attention_factor: 1.1386,
            truncate: true,
        };
        let scaled = inverse_frequencies(64, 10_000.0, Some(&yarn), 16_384);
        assert_eq!(scaled[0], plain[0], "the fastest pair is extrapolated");
        assert!((scaled[31] - plain[31] / 4.0).abs() < 1e-12, "the slowest is interpolated");
        assert!(scaled.iter().zip(&plain).all(|(s, p)| *s <= *p && *s >= p / 4.0 - 1e-12));
        // gpt-oss's `truncate: false`: the same ends, a ramp between that is not rounded to
        // whole dimensions, so the pairs inside it differ.
        let unrounded = RopeScaling::Yarn {
            factor: 4.0,
            original_max_position_embeddings: 4096,
            beta_fast: 32.0,
            beta_slow: 1.0,
            attention_factor: 1.1386,
            truncate: false,
        };
        let smooth = inverse_frequencies(64, 10_000.0, Some(&unrounded), 16_384);
        assert_eq!((smooth[0], smooth[31]), (scaled[0], scaled[31]));
        let differing = smooth.iter().zip(&scaled).filter(|(a, b)| a != b).count();
        assert!(differing > 0 && differing < 31, "{differing} pairs differ");
        let longrope = RopeScaling::LongRope {
            short_factor: vec![1.0; 32],
            long_factor: vec![2.0; 32],
            original_max_position_embeddings: 4096,
            attention_factor: 1.19,
        };
        let short = inverse_frequencies(64, 10_000.0, Some(&longrope), 4096);
        let long = inverse_frequencies(64, 10_000.0, Some(&longrope), 131_072);
        assert_eq!(short, plain);
        assert!(long.iter().zip(&plain).all(|(l, p)| (l - p / 2.0).abs() < 1e-12));
        assert_eq!(attention_factor(Some(&longrope)), 1.19);
        assert_eq!(attention_factor(None), 1.0);
    }
}
