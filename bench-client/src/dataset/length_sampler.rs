//! How a synthetic dataset draws each request's lengths around the requested mean: uniformly in
//! a band (vLLM's `--random-range-ratio`) or from a normal distribution (guidellm's
//! `prompt_tokens_stdev`, AIPerf's `--synthetic-input-tokens-stddev`), truncated below at 1.

use std::ops::RangeInclusive;

use rand::Rng;
use rand_distr::{Distribution, Normal};

use super::error::DatasetError;

/// The most normal draws tried before settling on 1 token. With a mean of at least 1 a draw
/// rounds to at least 1 with probability ≥ ½, so this bound is never met in practice.
const MAX_NORMAL_DRAWS: usize = 64;

/// Draws one length per request.
#[derive(Debug, Clone)]
pub enum LengthSampler {
    /// Uniform over the band (a single value for a ratio of 0).
    Uniform(RangeInclusive<usize>),
    /// Normal with the mean and standard deviation, rounded, redrawn while below 1.
    Normal(Normal<f64>),
}

impl LengthSampler {
    /// `mean` tokens spread by `range_ratio` (uniform) or `stddev` (normal); at most one of
    /// them may be non-zero. `flag` names the length in errors (e.g. `--random-input-len`).
    pub fn new(
        flag: &str,
        mean: usize,
        range_ratio: f64,
        stddev: f64,
    ) -> Result<Self, DatasetError> {
        let invalid = |msg: String| Err(DatasetError::InvalidConfig(msg));
        if mean == 0 {
            return invalid(format!("{flag} must be at least 1"));
        }
        if !(range_ratio.is_finite() && (0.0..1.0).contains(&range_ratio)) {
            return invalid(format!(
                "--random-range-ratio {range_ratio} must be in [0, 1)"
            ));
        }
        if !(stddev.is_finite() && stddev >= 0.0) {
            return invalid(format!(
                "{flag}-stddev {stddev} must be a finite number ≥ 0"
            ));
        }
        if stddev == 0.0 {
            return Ok(Self::Uniform(length_range(mean, range_ratio)));
        }
        if range_ratio > 0.0 {
            return invalid(format!(
                "{flag}-stddev and --random-range-ratio both spread the lengths: give one"
            ));
        }
        match Normal::new(mean as f64, stddev) {
            Ok(normal) => Ok(Self::Normal(normal)),
            Err(error) => invalid(format!("{flag}-stddev {stddev}: {error}")),
        }
    }

    /// One length, at least 1.
    pub fn sample(&self, rng: &mut impl Rng) -> usize {
        match self {
            Self::Uniform(range) => rng.random_range(range.clone()),
            Self::Normal(normal) => (0..MAX_NORMAL_DRAWS)
                .map(|_| normal.sample(rng).round())
                .find(|&len| len >= 1.0)
                .map_or(1, |len| len as usize),
        }
    }
}

/// The lengths `len` with ratio `r` draws from: `[⌊len·(1−r)⌋, ⌈len·(1+r)⌉]`, at least 1 (vLLM's
/// bounds, without its float artefacts: `100·1.1` is `110.00000000000001`, whose ceiling is 111).
pub fn length_range(len: usize, range_ratio: f64) -> RangeInclusive<usize> {
    const EPSILON: f64 = 1e-9;
    let low = (len as f64 * (1.0 - range_ratio) + EPSILON).floor() as usize;
    let high = (len as f64 * (1.0 + range_ratio) - EPSILON).ceil() as usize;
    low.max(1)..=high.max(1)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn draws(sampler: &LengthSampler, count: usize) -> Vec<usize> {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        (0..count).map(|_| sampler.sample(&mut rng)).collect()
    }

    fn mean_and_stddev(values: &[usize]) -> (f64, f64) {
        let count = values.len() as f64;
        let mean = values.iter().sum::<usize>() as f64 / count;
        let variance = values
            .iter()
            .map(|&v| (v as f64 - mean).powi(2))
            .sum::<f64>()
            / (count - 1.0);
        (mean, variance.sqrt())
    }

    #[test]
    fn length_range_matches_vllm_bounds() {
        assert_eq!(length_range(100, 0.1), 90..=110);
        assert_eq!(length_range(100, 0.0), 100..=100);
        assert_eq!(length_range(10, 0.25), 7..=13);
        assert_eq!(length_range(1, 0.9), 1..=2);
    }

    #[test]
    fn uniform_draws_stay_in_the_band_and_cover_it() {
        let sampler = LengthSampler::new("--random-input-len", 100, 0.1, 0.0).unwrap();
        let values = draws(&sampler, 2_000);
        assert!(values.iter().all(|v| (90..=110).contains(v)));
        let distinct: std::collections::BTreeSet<_> = values.iter().collect();
        assert_eq!(distinct.len(), 21, "every length of the band is drawn");
    }

    #[test]
    fn normal_draws_have_the_requested_mean_and_spread() {
        let sampler = LengthSampler::new("--random-input-len", 500, 0.0, 100.0).unwrap();
        let values = draws(&sampler, 20_000);
        let (mean, stddev) = mean_and_stddev(&values);
        // Standard error of the mean: 100/√20000 ≈ 0.7 tokens.
        assert!((mean - 500.0).abs() < 4.0, "mean {mean}");
        assert!((stddev - 100.0).abs() < 3.0, "stddev {stddev}");
        let within_one_sigma = values.iter().filter(|&&v| (400..=600).contains(&v)).count();
        let fraction = within_one_sigma as f64 / values.len() as f64;
        assert!((fraction - 0.683).abs() < 0.02, "within 1σ: {fraction}");
    }

    #[test]
    fn normal_draws_never_fall_below_one_token() {
        let sampler = LengthSampler::new("--random-output-len", 3, 0.0, 50.0).unwrap();
        let values = draws(&sampler, 5_000);
        assert!(values.iter().all(|&v| v >= 1));
        assert!(values.iter().any(|&v| v > 40), "the upper tail is kept");
    }

    #[test]
    fn rejects_invalid_spreads() {
        for (mean, ratio, stddev, needle) in [
            (0, 0.0, 0.0, "at least 1"),
            (10, 1.0, 0.0, "[0, 1)"),
            (10, -0.1, 0.0, "[0, 1)"),
            (10, 0.0, -1.0, "≥ 0"),
            (10, 0.0, f64::NAN, "≥ 0"),
            (10, 0.2, 5.0, "give one"),
        ] {
            let error = LengthSampler::new("--random-input-len", mean, ratio, stddev).unwrap_err();
            assert!(error.to_string().contains(needle), "{error}");
        }
    }
}
