//! The host twin of the GPU sampling kernel (`pagoda-cuda-kernels`' sample.cu): the same
//! sorting-free algorithm in Rust, so that what the kernel computes is specified and tested on
//! every machine, and the GPU tests compare the kernel with it.
//!
//! On the softmax weights `w = exp((logit - max) / temperature)` (the most likely token weighs
//! exactly 1), each filter is a threshold found by bisection over the bit patterns of positive
//! floats (monotone in the value), so it is exactly one of the row's weights:
//! top-k: the largest `t` with `#{w ≥ t} ≥ k`; top-p: the largest `t` with `Σ{w ≥ t} ≥ top_p ×`
//! the mass top-k left; min-p: `t = min_p`. Kept: `w ≥` every threshold and `w > 0` — the same
//! set as the host pipeline (`filters.rs`) except that tokens tied at a threshold are all kept.
//! The draw walks the kept tokens in vocabulary order to `uniform × kept mass`.

use super::device::RowFilters;

/// Below this exponent the host pipeline's exponential is 0 and the token drops out.
const MIN_EXPONENT: f32 = -87.3;

fn weight_of(logit: f32, max_logit: f32, inv_temperature: f32) -> f32 {
    if logit.is_nan() || logit == f32::NEG_INFINITY {
        return 0.0;
    }
    let exponent = (logit - max_logit) * inv_temperature;
    if exponent < MIN_EXPONENT {
        0.0
    } else {
        exponent.exp()
    }
}

fn count_at_least(weights: &[f32], threshold: f32) -> f64 {
    weights.iter().filter(|&&w| w >= threshold).count() as f64
}

/// Sums in f64: the twin is the exact reference the kernel's f32 tree sums approach (a
/// sequential f32 sum over a 49k-entry row drifts by ~1e-4 of the mass, enough to move draws).
fn mass_at_least(weights: &[f32], threshold: f32) -> f64 {
    weights
        .iter()
        .filter(|&&w| w >= threshold)
        .map(|&w| f64::from(w))
        .sum()
}

/// The largest positive float `t` in `[low, 1]` with `at_least(t) ≥ goal` (true at `low`).
fn largest_threshold(low: f32, goal: f64, at_least: impl Fn(f32) -> f64) -> f32 {
    let (mut lo, mut hi) = (low.to_bits(), 1f32.to_bits());
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if at_least(f32::from_bits(mid)) >= goal {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    f32::from_bits(lo)
}

/// The row's weights and the threshold every kept token reaches; `Err(token)` when the row is
/// decided without a draw (a `+inf` logit; or nothing possible: token 0).
fn weights_and_threshold(logits: &[f32], filters: &RowFilters) -> Result<(Vec<f32>, f32), u32> {
    let max_logit = logits
        .iter()
        .fold(f32::NEG_INFINITY, |max, &x| if x > max { x } else { max });
    if max_logit == f32::INFINITY {
        return Err(logits.iter().position(|&x| x == f32::INFINITY).unwrap_or(0) as u32);
    }
    if max_logit == f32::NEG_INFINITY {
        return Err(0);
    }
    let weights: Vec<f32> = logits
        .iter()
        .map(|&x| weight_of(x, max_logit, filters.inv_temperature))
        .collect();
    let mut threshold = f32::from_bits(1);
    if filters.top_k > 0 {
        let goal = filters.top_k as f64;
        if count_at_least(&weights, threshold) > goal {
            threshold = largest_threshold(threshold, goal, |t| count_at_least(&weights, t));
        }
    }
    if filters.top_p < 1.0 {
        let goal = f64::from(filters.top_p) * mass_at_least(&weights, threshold);
        threshold = largest_threshold(threshold, goal, |t| mass_at_least(&weights, t));
    }
    if filters.min_p > 0.0 {
        threshold = threshold.max(filters.min_p);
    }
    Ok((weights, threshold))
}

/// The tokens the filters keep, in vocabulary order (one token when the row needs no draw).
pub fn kept_tokens(logits: &[f32], filters: &RowFilters) -> Vec<u32> {
    match weights_and_threshold(logits, filters) {
        Err(token) => vec![token],
        Ok((weights, threshold)) => (0..weights.len() as u32)
            .filter(|&i| weights[i as usize] >= threshold)
            .collect(),
    }
}

/// One token of the row: the first kept token, in vocabulary order, whose cumulative weight
/// passes `uniform` (in [0, 1)) of the kept mass (the last kept one if rounding passes them all).
pub fn sample_by_thresholds(logits: &[f32], filters: &RowFilters, uniform: f32) -> u32 {
    let (weights, threshold) = match weights_and_threshold(logits, filters) {
        Err(token) => return token,
        Ok(found) => found,
    };
    let target = f64::from(uniform) * mass_at_least(&weights, threshold);
    let mut cumulative = 0.0f64;
    let mut last_kept = 0;
    for (token, &w) in weights.iter().enumerate() {
        if w < threshold {
            continue;
        }
        last_kept = token as u32;
        cumulative += f64::from(w);
        if cumulative > target {
            return token as u32;
        }
    }
    last_kept
}

#[cfg(test)]
#[path = "thresholds_tests.rs"]
mod tests;
