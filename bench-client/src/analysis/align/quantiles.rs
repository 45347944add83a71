//! p50 and p99 of a set of samples, as the alignment reports them.

use crate::stats::percentile;

/// p50, p99 and the number of samples, seconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Quantiles {
    pub num_samples: usize,
    pub p50_s: Option<f64>,
    pub p99_s: Option<f64>,
}

impl Quantiles {
    pub fn of(mut samples_s: Vec<f64>) -> Self {
        samples_s.sort_by(f64::total_cmp);
        Self {
            num_samples: samples_s.len(),
            p50_s: percentile(&samples_s, 50.0),
            p99_s: percentile(&samples_s, 99.0),
        }
    }
}
