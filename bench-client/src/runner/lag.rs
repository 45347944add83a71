//! Lateness distributions the runner reports about itself.

use serde::{Deserialize, Serialize};

/// Percentiles of a set of delays, in seconds (nearest rank, unlike the numpy-linear
/// [`crate::stats::percentile`] of the statistics: each is a delay some request really had; all 0
/// when empty).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LagSummary {
    pub count: usize,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl LagSummary {
    /// Summarises `samples` (negative values count as 0: early is on time).
    pub fn of(samples: &[f64]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        let mut sorted: Vec<f64> = samples.iter().map(|s| s.max(0.0)).collect();
        sorted.sort_by(f64::total_cmp);
        let rank = |q: f64| {
            let index = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
            sorted[index]
        };
        Self {
            count: sorted.len(),
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
            p50: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
            p999: rank(0.999),
            max: sorted[sorted.len() - 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<f64> = (1..=1000).map(f64::from).collect();
        let summary = LagSummary::of(&samples);
        assert_eq!(summary.count, 1000);
        assert_eq!(summary.p50, 500.0);
        assert_eq!(summary.p90, 900.0);
        assert_eq!(summary.p99, 990.0);
        assert_eq!(summary.p999, 999.0);
        assert_eq!(summary.max, 1000.0);
        assert!((summary.mean - 500.5).abs() < 1e-9);
    }

    #[test]
    fn empty_and_negative() {
        assert_eq!(LagSummary::of(&[]), LagSummary::default());
        let summary = LagSummary::of(&[-1.0, 2.0]);
        assert_eq!(summary.p50, 0.0);
        assert_eq!(summary.max, 2.0);
    }
}
