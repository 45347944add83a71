//! The host twin of the GPU sampling kernel (`pagoda-cuda-kernels`' sample.cu): the same
//! sorting-free algorithm in Rust, so that what the kernel computes is specified and tested on
//! every machine, and the GPU tests compare the kernel with it.
//!
//! On the softmax weights `w = exp((logit - max) / temperature)` (the most likely token weighs
//! exactly 1), each filter is a threshold found by a search over the bit patterns of positive
//! floats (monotone in the value; several pivots per pass over the row), so it is exactly one of the row's weights:
//! top-k: the largest `t` with `#{w ≥ t} ≥ k`; top-p: the largest `t` with `Σ{w ≥ t} ≥ top_p ×`
//! the mass top-k left; min-p: `t = min_p`. Kept: `w ≥` every threshold and `w > 0` — the same
//! set as the host pipeline (`filters.rs`) except that tokens tied at a threshold are all kept.
//! The draw walks the kept tokens in vocabulary order to `uniform × kept mass`.

use super::device::RowFilters;
use crate::constraint::TokenMask;

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

/// Pivots per pass of the threshold search: each pass over the row evaluates `at_least` at this
/// many points and keeps one of the `PIVOTS_PER_PASS + 1` sub-ranges, so the ~2^30 bit patterns of
/// (0, 1] take ~10 passes instead of bisection's ~30 (the kernel's cost is its passes over the row).
pub(crate) const PIVOTS_PER_PASS: u32 = 7;

/// The `PIVOTS_PER_PASS` pivots of `[lo, hi]` (`lo < hi`): `lo + ⌈span × j / (PIVOTS_PER_PASS + 1)⌉`,
/// non-decreasing, each in `(lo, hi]`.
pub(crate) fn pivots(lo: u32, hi: u32) -> [u32; PIVOTS_PER_PASS as usize] {
    let span = u64::from(hi - lo);
    let parts = u64::from(PIVOTS_PER_PASS + 1);
    std::array::from_fn(|j| lo + (span * (j as u64 + 1)).div_ceil(parts) as u32)
}

/// What one pass over the row measures: `at_least` at each of the pass's pivots.
type Pass<'a> = dyn FnMut(&[f32; PIVOTS_PER_PASS as usize]) -> [f64; PIVOTS_PER_PASS as usize] + 'a;

/// The largest positive float `t` in `[low, 1]` with `at_least(t) ≥ goal` (true at `low`), by a
/// search over the bit patterns of positive floats (monotone in the value): each call of `pass`
/// (one pass over the row in the kernel) measures `at_least` at `PIVOTS_PER_PASS` points. With
/// `at_least` non-increasing, the same `t` as a bisection.
fn largest_threshold(low: f32, goal: f64, pass: &mut Pass<'_>) -> f32 {
    let (mut lo, mut hi) = (low.to_bits(), 1f32.to_bits());
    while lo < hi {
        let points = pivots(lo, hi);
        let measured = pass(&points.map(f32::from_bits));
        let (mut next_lo, mut next_hi) = (lo, hi);
        for (point, at_least) in points.into_iter().zip(measured) {
            if at_least >= goal {
                next_lo = point;
            } else {
                next_hi = point - 1;
                break;
            }
        }
        (lo, hi) = (next_lo, next_hi);
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
            threshold = largest_threshold(threshold, goal, &mut |points| {
                points.map(|t| count_at_least(&weights, t))
            });
        }
    }
    if filters.top_p < 1.0 {
        let goal = f64::from(filters.top_p) * mass_at_least(&weights, threshold);
        threshold = largest_threshold(threshold, goal, &mut |points| {
            points.map(|t| mass_at_least(&weights, t))
        });
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

/// `logits` as a grammar's `mask` leaves them: `-inf` outside it (`None`: as they are).
fn masked<'a>(logits: &'a [f32], mask: Option<&TokenMask>) -> std::borrow::Cow<'a, [f32]> {
    match mask {
        None => std::borrow::Cow::Borrowed(logits),
        Some(mask) => {
            let mut values = logits.to_vec();
            mask.apply_to(&mut values);
            std::borrow::Cow::Owned(values)
        }
    }
}

/// [`sample_by_thresholds`] for a row that follows a grammar's `mask` (the kernel's masked
/// rows): a token outside the mask reads as `-inf`, and when nothing the mask allows is possible
/// the token is the first one it allows (token 0 when it allows none), as the host pipeline's
/// fallback gives.
pub fn sample_allowed_by_thresholds(
    logits: &[f32],
    mask: Option<&TokenMask>,
    filters: &RowFilters,
    uniform: f32,
) -> u32 {
    let values = masked(logits, mask);
    if let Some(mask) = mask {
        if !values.iter().any(|&x| x > f32::NEG_INFINITY) {
            return (0..logits.len() as u32).find(|&t| mask.allows(t)).unwrap_or(0);
        }
    }
    sample_by_thresholds(&values, filters, uniform)
}

/// The masked argmax kernel's token: the best token `mask` allows (ties to the lowest id, NaN
/// as `-inf`, the first allowed one when none is possible; token 0 when it allows none).
pub fn argmax_allowed(logits: &[f32], mask: &TokenMask) -> u32 {
    mask.best_allowed(logits).unwrap_or(0)
}

#[cfg(test)]
#[path = "thresholds_tests.rs"]
mod tests;
