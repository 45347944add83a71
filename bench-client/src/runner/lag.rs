//! Lateness distributions the runner reports about itself.

use serde::{Deserialize, Serialize};

use crate::stats::percentile;

/// Percentiles of a set of delays, in seconds, by the crate's one percentile (numpy's linear
/// method, [`percentile`]); all 0 when empty (`count` says so).
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
        let rank = |p: f64| percentile(&sorted, p).unwrap_or_default();
        Self {
            count: sorted.len(),
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
            p50: rank(50.0),
            p90: rank(90.0),
            p99: rank(99.0),
            p999: rank(99.9),
            max: sorted[sorted.len() - 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_numpys_linear_ones() {
        let samples: Vec<f64> = (1..=1000).map(f64::from).collect();
        let summary = LagSummary::of(&samples);
        assert_eq!(summary.count, 1000);
        // np.percentile(np.arange(1, 1001), [50, 90, 99, 99.9])
        let close = |got: f64, want: f64| (got - want).abs() < 1e-9;
        assert!(close(summary.p50, 500.5), "{summary:?}");
        assert!(close(summary.p90, 900.1), "{summary:?}");
        assert!(close(summary.p99, 990.01), "{summary:?}");
        assert!(close(summary.p999, 999.001), "{summary:?}");
        assert_eq!(summary.max, 1000.0);
        assert!((summary.mean - 500.5).abs() < 1e-9);
    }

    #[test]
    fn empty_and_negative() {
        assert_eq!(LagSummary::of(&[]), LagSummary::default());
        let summary = LagSummary::of(&[-1.0, 2.0]);
        assert_eq!(summary.p50, 1.0, "the early one counts as 0");
        assert_eq!(summary.max, 2.0);
    }
}
