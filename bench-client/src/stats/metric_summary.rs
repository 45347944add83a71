//! [`MetricSummary`]: one latency metric's statistics over a set of requests (the whole run, the
//! steady-state window, or one model's requests).

use serde::{Deserialize, Serialize};

use super::metric::Metric;
use super::percentile::MetricStats;
use crate::record::RequestRecord;

/// One metric's statistics (`None` without samples: e.g. TPOT when every response was one token).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricSummary {
    pub metric: Metric,
    pub stats: Option<MetricStats>,
}

/// Every metric's statistics over the successful requests among `records`.
pub(super) fn metric_summaries<'a>(
    records: impl Iterator<Item = &'a RequestRecord> + Clone,
    percentiles: &[f64],
) -> Vec<MetricSummary> {
    summaries_of(&Metric::ALL, records, percentiles)
}

/// The statistics of `metrics` (in that order) over the successful requests among `records`.
pub(super) fn summaries_of<'a>(
    metrics: &[Metric],
    records: impl Iterator<Item = &'a RequestRecord> + Clone,
    percentiles: &[f64],
) -> Vec<MetricSummary> {
    metrics
        .iter()
        .map(|&metric| MetricSummary {
            metric,
            stats: MetricStats::from_samples_s(&metric.samples_s(records.clone()), percentiles),
        })
        .collect()
}
