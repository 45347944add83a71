//! [`MetricsConfig`]: what the metrics take from the command line.

use super::buckets::HistogramBuckets;
use super::names::MetricsNamespace;

/// Everything the metrics need to know, from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsConfig {
    pub namespace: MetricsNamespace,
    /// The served model name: the `model_name` label of every engine series.
    pub model_name: String,
    /// Upper end of the token-count buckets (1, 2, 5, 10, … ≤ max_model_len).
    pub max_model_len: usize,
    pub buckets: HistogramBuckets,
}
