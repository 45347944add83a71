//! [`percentile`] as numpy (and so vLLM's latency report) computes it.

/// The `pct`-th percentile of ascending `sorted` values, interpolated linearly between closest
/// ranks (numpy's default, which vLLM's reports use); `NaN` when empty.
pub fn percentile(sorted: &[f64], pct: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (pct / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (below, above) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[below] + (sorted[above] - sorted[below]) * (rank - below as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let values = [1.0, 2.0, 3.0, 4.0, 10.0];
        // numpy.percentile([1, 2, 3, 4, 10], [0, 10, 50, 75, 90, 99, 100])
        let expected = [
            (0.0, 1.0),
            (10.0, 1.4),
            (50.0, 3.0),
            (75.0, 4.0),
            (90.0, 7.6),
            (99.0, 9.76),
            (100.0, 10.0),
        ];
        for (pct, value) in expected {
            assert!((percentile(&values, pct) - value).abs() < 1e-12, "p{pct}");
        }
        assert_eq!(percentile(&[5.0], 99.0), 5.0);
        assert!(percentile(&[], 50.0).is_nan());
    }
}
