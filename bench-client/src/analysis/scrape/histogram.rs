//! Cumulative Prometheus histograms: the difference of two scrapes, and quantiles computed the
//! way Prometheus' `histogram_quantile` computes them.

use serde::{Deserialize, Serialize};

/// A cumulative histogram: `(upper bound, observations ≤ bound)`, by increasing bound, the last
/// bound `+Inf`.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub buckets: Vec<(f64, f64)>,
    pub sum: f64,
    pub count: f64,
}

/// What a report shows of a histogram (seconds for the latency histograms).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HistogramSummary {
    /// Observations in the window.
    pub count: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
}

impl Histogram {
    /// The observations made between `before` and `self` (a later scrape of the same series),
    /// bucket by bucket. A counter that went down means the server restarted in between: then
    /// `self` alone is the best estimate, as Prometheus' `increase()` assumes. Buckets are
    /// matched by bound; a bound `before` lacks counts from 0.
    pub fn since(&self, before: &Histogram) -> Histogram {
        if self.count < before.count {
            return self.clone();
        }
        let earlier = |bound: f64| {
            before
                .buckets
                .iter()
                .find(|(b, _)| *b == bound)
                .map_or(0.0, |(_, count)| *count)
        };
        let buckets: Vec<(f64, f64)> = self
            .buckets
            .iter()
            .map(|&(bound, count)| (bound, (count - earlier(bound)).max(0.0)))
            .collect();
        if self
            .buckets
            .iter()
            .any(|&(bound, count)| count < earlier(bound))
        {
            return self.clone();
        }
        Histogram {
            buckets,
            sum: self.sum - before.sum,
            count: self.count - before.count,
        }
    }

    /// The `q`-quantile (0 ≤ q ≤ 1) as Prometheus' `histogram_quantile` computes it: find the
    /// bucket holding rank `q × total`, and interpolate linearly between its lower and upper
    /// bounds (observations assumed spread evenly inside a bucket). The first bucket's lower
    /// bound is 0 (when its upper bound is positive); a rank in the `+Inf` bucket returns the
    /// highest finite bound. `None` without observations, without a `+Inf` bucket, or with
    /// fewer than two buckets (Prometheus' NaN).
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let buckets = monotonic(&self.buckets);
        let last = buckets.last()?;
        if buckets.len() < 2 || last.0 != f64::INFINITY || !(0.0..=1.0).contains(&q) {
            return None;
        }
        let total = last.1;
        if total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let b = buckets[..buckets.len() - 1]
            .iter()
            .position(|&(_, count)| count >= rank)
            .unwrap_or(buckets.len() - 1);
        if b == buckets.len() - 1 {
            return Some(buckets[buckets.len() - 2].0);
        }
        let (upper, count) = buckets[b];
        if b == 0 && upper <= 0.0 {
            return Some(upper);
        }
        let (lower, below) = if b == 0 { (0.0, 0.0) } else { buckets[b - 1] };
        let in_bucket = count - below;
        if in_bucket <= 0.0 {
            return Some(lower);
        }
        Some(lower + (upper - lower) * ((rank - below) / in_bucket))
    }

    /// `sum / count`; `None` without observations.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }

    /// Count, mean and the usual quantiles; `None` without observations.
    pub fn summary(&self) -> Option<HistogramSummary> {
        let total = self.buckets.last().map_or(0.0, |(_, count)| *count);
        if total <= 0.0 {
            return None;
        }
        Some(HistogramSummary {
            count: total,
            mean: self.mean().unwrap_or(f64::NAN),
            p50: self.quantile(0.50)?,
            p90: self.quantile(0.90)?,
            p95: self.quantile(0.95)?,
            p99: self.quantile(0.99)?,
        })
    }
}

/// Cumulative counts made non-decreasing (a scrape racing with observations can see a higher
/// bucket behind a lower one; Prometheus' `ensureMonotonic` does the same).
fn monotonic(buckets: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut highest = 0.0_f64;
    buckets
        .iter()
        .map(|&(bound, count)| {
            highest = highest.max(count);
            (bound, highest)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const INF: f64 = f64::INFINITY;

    fn histogram(buckets: &[(f64, f64)]) -> Histogram {
        Histogram {
            buckets: buckets.to_vec(),
            sum: 0.0,
            count: buckets.last().map_or(0.0, |b| b.1),
        }
    }

    #[test]
    fn interpolates_within_the_bucket_like_prometheus() {
        // 10 observations in (0, 0.1], 30 in (0.1, 0.5], 10 in (0.5, 1], none above.
        let h = histogram(&[(0.1, 10.0), (0.5, 40.0), (1.0, 50.0), (INF, 50.0)]);
        // rank 25 is the 15th of 30 in (0.1, 0.5]: 0.1 + 0.4 × 15/30.
        assert!((h.quantile(0.5).expect("q") - 0.3).abs() < 1e-12);
        // rank 5 in the first bucket, lower bound 0: 0.1 × 5/10.
        assert!((h.quantile(0.1).expect("q") - 0.05).abs() < 1e-12);
        // rank 49.5: 0.5 + 0.5 × 9.5/10.
        assert!((h.quantile(0.99).expect("q") - 0.975).abs() < 1e-12);
        assert_eq!(h.quantile(1.0), Some(1.0));
    }

    #[test]
    fn ranks_in_the_inf_bucket_return_the_highest_finite_bound() {
        let h = histogram(&[(0.1, 1.0), (1.0, 2.0), (INF, 10.0)]);
        assert_eq!(h.quantile(0.5), Some(1.0));
    }

    #[test]
    fn degenerate_histograms_have_no_quantile() {
        assert_eq!(histogram(&[(0.1, 0.0), (INF, 0.0)]).quantile(0.5), None);
        assert_eq!(histogram(&[(INF, 5.0)]).quantile(0.5), None);
        assert_eq!(histogram(&[(0.1, 1.0), (1.0, 5.0)]).quantile(0.5), None);
        assert_eq!(histogram(&[]).summary(), None);
        // A non-positive first bound is returned as is.
        assert_eq!(
            histogram(&[(-1.0, 5.0), (INF, 5.0)]).quantile(0.5),
            Some(-1.0)
        );
    }

    #[test]
    fn non_monotonic_buckets_are_fixed_first() {
        let h = histogram(&[(0.1, 4.0), (0.5, 3.0), (1.0, 8.0), (INF, 8.0)]);
        // Read as (0.1, 4), (0.5, 4), (1, 8): rank 6 lies in (0.5, 1].
        assert!((h.quantile(0.75).expect("q") - 0.75).abs() < 1e-12);
    }

    #[test]
    fn difference_of_two_scrapes() {
        let before = Histogram {
            buckets: vec![(0.1, 5.0), (1.0, 8.0), (INF, 10.0)],
            sum: 4.0,
            count: 10.0,
        };
        let after = Histogram {
            buckets: vec![(0.1, 5.0), (1.0, 18.0), (INF, 20.0)],
            sum: 10.0,
            count: 20.0,
        };
        let window = after.since(&before);
        assert_eq!(window.buckets, [(0.1, 0.0), (1.0, 10.0), (INF, 10.0)]);
        assert_eq!((window.sum, window.count), (6.0, 10.0));
        assert_eq!(window.mean(), Some(0.6));
        // All ten in (0.1, 1]: the median interpolates to the middle of it.
        assert!((window.quantile(0.5).expect("q") - 0.55).abs() < 1e-12);
        let summary = window.summary().expect("observations");
        assert_eq!(summary.count, 10.0);
        // A restart (counts went down): the later scrape alone.
        assert_eq!(before.since(&after), before);
    }
}
