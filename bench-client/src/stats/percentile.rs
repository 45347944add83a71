//! Percentiles, median, mean and standard deviation, computed exactly as numpy computes them for
//! `vllm bench serve` (`np.percentile` with its default method, `np.median`, `np.mean`,
//! `np.std`), so that the same samples give the same numbers in both tools.
//!
//! [`percentile`] is the crate's one percentile: the serve statistics, the alignment report, the
//! probes, the offline `latency` report and the client's own lateness
//! ([`crate::runner::LagSummary`]) all call it, and an empty input is `None` everywhere (the
//! summary's `null`; vLLM's keys and the lateness summary write 0 for it).

use serde::{Deserialize, Serialize};

/// The `p`-th percentile (`0 ≤ p ≤ 100`) of `sorted` (ascending), or `None` when it is empty or
/// `p` is outside `[0, 100]` or NaN.
///
/// numpy's default, `method="linear"` (Hyndman & Fan's method 7): the virtual index is
/// `h = (n − 1) · p/100`; the result interpolates linearly between the closest ranks
/// `sorted[⌊h⌋]` and `sorted[⌊h⌋ + 1]`. numpy's own arithmetic is kept to the bit: `q = p / 100`,
/// and the interpolation is `a + (b − a)·g` for `g < 0.5` but `b − (b − a)·(1 − g)` for
/// `g ≥ 0.5` (`numpy/lib/_function_base_impl.py`, `_lerp`).
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let last = sorted.len() - 1;
    let virtual_index = last as f64 * (p / 100.0);
    if virtual_index >= last as f64 {
        return sorted.last().copied();
    }
    let below = virtual_index.floor();
    let gamma = virtual_index - below;
    let lower = below as usize;
    let (a, b) = (sorted[lower], sorted[lower + 1]);
    let diff = b - a;
    Some(if gamma >= 0.5 {
        b - diff * (1.0 - gamma)
    } else {
        a + diff * gamma
    })
}

/// The median of `sorted` (ascending) as `np.median`: the middle value, or the mean of the two
/// middle values for an even count. `None` when empty.
pub fn median(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// One requested percentile and its value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PercentileValue {
    pub percentile: f64,
    pub value_ms: f64,
}

/// The distribution of one metric's samples, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricStats {
    pub num_samples: usize,
    pub mean_ms: f64,
    pub median_ms: f64,
    /// Population standard deviation (`ddof = 0`, as `np.std`).
    pub std_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// One entry per requested percentile, in the order requested.
    pub percentiles_ms: Vec<PercentileValue>,
}

impl MetricStats {
    /// Statistics of `samples_s` (seconds, any order); `None` when there are none. Sums run over
    /// the sorted samples, so the result depends only on the multiset of samples, never on the
    /// order records arrived in (which is what makes `merge` exact).
    pub fn from_samples_s(samples_s: &[f64], percentiles: &[f64]) -> Option<MetricStats> {
        let mut sorted_ms: Vec<f64> = samples_s.iter().map(|s| s * 1000.0).collect();
        sorted_ms.sort_by(f64::total_cmp);
        let n = sorted_ms.len() as f64;
        let mean_ms = sorted_ms.iter().sum::<f64>() / n;
        let variance = sorted_ms.iter().map(|x| (x - mean_ms).powi(2)).sum::<f64>() / n;
        let percentiles_ms = percentiles
            .iter()
            .filter_map(|&p| {
                let value_ms = percentile(&sorted_ms, p)?;
                Some(PercentileValue {
                    percentile: p,
                    value_ms,
                })
            })
            .collect();
        Some(MetricStats {
            num_samples: sorted_ms.len(),
            mean_ms,
            median_ms: median(&sorted_ms)?,
            std_ms: variance.sqrt(),
            min_ms: *sorted_ms.first()?,
            max_ms: *sorted_ms.last()?,
            percentiles_ms,
        })
    }

    /// The value of percentile `p`, when it was requested.
    pub fn percentile_ms(&self, p: f64) -> Option<f64> {
        self.percentiles_ms
            .iter()
            .find(|v| v.percentile == p)
            .map(|v| v.value_ms)
    }
}

/// A percentile as vLLM writes it in labels and keys: `99`, `99.9`. The number is written as
/// Python's `str(int(p)) if int(p) == p else str(p)` (identical for any percentile given with at
/// most a few decimals; Python would write 0.00001 as `1e-05`).
pub fn format_percentile(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{}", p as i64)
    } else {
        format!("{p}")
    }
}

/// vLLM's key for percentile `p` of `metric`: `p99_ttft_ms`, `p99.9_ttft_ms`; shared by every
/// JSON we write.
pub fn percentile_key(p: f64, metric_name: &str) -> String {
    format!("p{}_{metric_name}_ms", format_percentile(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_named_as_vllm_names_them() {
        assert_eq!(format_percentile(99.0), "99");
        assert_eq!(format_percentile(99.9), "99.9");
        assert_eq!(percentile_key(50.0, "ttft"), "p50_ttft_ms");
        assert_eq!(percentile_key(99.99, "itl"), "p99.99_itl_ms");
    }

    fn one_to(n: usize) -> Vec<f64> {
        (1..=n).map(|i| i as f64).collect()
    }

    /// Expected values printed by numpy 2.4.6: `np.percentile(x, p)` with the default method.
    #[test]
    fn matches_numpy_linear() {
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0), Some(2.5));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 25.0), Some(1.75));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 90.0), Some(3.7));
        let hundred = one_to(100);
        // np.percentile(np.arange(1, 101), 99) == 99.01 exactly as printed (repr 99.01).
        assert_eq!(percentile(&hundred, 99.0), Some(99.01));
        assert_eq!(percentile(&hundred, 99.9), Some(99.90100000000001));
        assert_eq!(percentile(&hundred, 50.0), Some(50.5));
        assert_eq!(percentile(&hundred, 90.0), Some(90.10000000000001));
        let irregular = [0.013, 0.021, 0.5, 0.0071, 3.25, 0.04];
        let mut sorted = irregular.to_vec();
        sorted.sort_by(f64::total_cmp);
        // np.percentile([0.013, 0.021, 0.5, 0.0071, 3.25, 0.04], [10, 33.3, 75, 99])
        assert_eq!(percentile(&sorted, 10.0), Some(0.01005));
        assert_eq!(percentile(&sorted, 33.3), Some(0.01832));
        assert_eq!(percentile(&sorted, 75.0), Some(0.385));
        assert_eq!(percentile(&sorted, 99.0), Some(3.1125000000000007));
    }

    fn assert_percentiles(sorted: &[f64], expected: &[(f64, f64)]) {
        for &(p, value) in expected {
            assert_eq!(percentile(sorted, p), Some(value), "p{p}");
        }
    }

    /// The one percentile of bench-client (serve statistics, alignment, probes, the offline
    /// `latency` report) against numpy 2.4.6, to the bit: the plain `a + (b − a)·g` lerp that
    /// `latency` used to have gives 7.6, not numpy's 7.6000000000000005, for the first p90.
    #[test]
    fn matches_numpy_to_the_bit() {
        // np.percentile([1, 2, 3, 4, 10], [0, 10, 50, 75, 90, 99, 100], method="linear")
        let values = [1.0, 2.0, 3.0, 4.0, 10.0];
        let expected = [
            (0.0, 1.0),
            (10.0, 1.4),
            (50.0, 3.0),
            (75.0, 4.0),
            (90.0, 7.6000000000000005),
            (99.0, 9.76),
            (100.0, 10.0),
        ];
        assert_percentiles(&values, &expected);
        // np.percentile([0.25, 0.0125, 7.5, 0.3, 1.75, 0.05, 0.9, 2.2],
        //               [1, 12.5, 50, 66.6, 95, 99.9], method="linear")
        let mut sorted = vec![0.25, 0.0125, 7.5, 0.3, 1.75, 0.05, 0.9, 2.2];
        sorted.sort_by(f64::total_cmp);
        let expected = [
            (1.0, 0.015125000000000001),
            (12.5, 0.045312500000000006),
            (50.0, 0.6),
            (66.6, 1.4626999999999992),
            (95.0, 5.644999999999997),
            (99.9, 7.462900000000002),
        ];
        assert_percentiles(&sorted, &expected);
    }

    #[test]
    fn edges() {
        let hundred = one_to(100);
        assert_eq!(percentile(&hundred, 0.0), Some(1.0));
        assert_eq!(percentile(&hundred, 100.0), Some(100.0));
        assert_eq!(percentile(&[7.5], 0.0), Some(7.5));
        assert_eq!(percentile(&[7.5], 99.9), Some(7.5));
        assert_eq!(percentile(&[7.5], 100.0), Some(7.5));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&hundred, 100.5), None);
        assert_eq!(percentile(&hundred, -1.0), None);
        assert_eq!(percentile(&hundred, f64::NAN), None);
    }

    #[test]
    fn median_as_numpy() {
        assert_eq!(median(&[1.0, 2.0, 3.0, 4.0]), Some(2.5));
        assert_eq!(median(&[1.0, 2.0, 10.0]), Some(2.0));
        assert_eq!(median(&[4.0]), Some(4.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn stats_in_ms_with_population_std() {
        let stats = MetricStats::from_samples_s(&[0.004, 0.001, 0.003, 0.002], &[50.0, 99.0]);
        let stats = stats.expect("four samples");
        assert_eq!(stats.num_samples, 4);
        assert!((stats.mean_ms - 2.5).abs() < 1e-12);
        assert!((stats.median_ms - 2.5).abs() < 1e-12);
        // np.std([1, 2, 3, 4]) == 1.118033988749895
        assert!((stats.std_ms - 1.118033988749895).abs() < 1e-12);
        assert_eq!((stats.min_ms, stats.max_ms), (1.0, 4.0));
        assert!((stats.percentile_ms(99.0).expect("asked") - 3.97).abs() < 1e-12);
        assert_eq!(stats.percentile_ms(90.0), None);
        assert_eq!(MetricStats::from_samples_s(&[], &[50.0]), None);
    }

    #[test]
    fn stats_ignore_sample_order() {
        let samples = [0.3, 0.1, 0.7, 0.2, 0.9, 0.15, 0.05];
        let mut reversed = samples;
        reversed.reverse();
        assert_eq!(
            MetricStats::from_samples_s(&samples, &[99.0]),
            MetricStats::from_samples_s(&reversed, &[99.0])
        );
    }
}
