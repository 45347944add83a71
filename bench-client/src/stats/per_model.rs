//! [`ModelSummary`]: a run's statistics per model name its requests sent, so that the LoRA
//! adapters `--lora-modules` spreads the requests over are compared within one run.
//!
//! Throughputs divide by the whole run's duration (the adapters share the run), so the models'
//! request and output throughputs add up to the run's. Latencies are over each model's
//! successful requests, as the run's are. Records without a model (saved before the model was
//! recorded) are left out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::metric::Metric;
use super::metric_summary::{summaries_of, MetricSummary};
use super::percentile::MetricStats;
use super::timeline::per_second;
use crate::record::RequestRecord;

/// The latency metrics of each model's summary, in this order.
pub const PER_MODEL_METRICS: [Metric; 4] = [
    Metric::Ttft,
    Metric::Tpot,
    Metric::ItlPerChunk,
    Metric::E2el,
];

/// Always among each model's percentiles, whatever `--metric-percentiles` says (the report's
/// per-model table shows it).
pub const PER_MODEL_PERCENTILE: f64 = 99.0;

/// The requests of one model name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSummary {
    pub num_completed: usize,
    pub num_failed: usize,
    /// Output tokens of its successful requests.
    pub total_output_tokens: usize,
    /// Its successful requests per second of the whole run.
    pub request_throughput: f64,
    /// Its output tokens per second of the whole run.
    pub output_throughput: f64,
    /// [`PER_MODEL_METRICS`], each with the run's percentiles and p99.
    pub metrics: Vec<MetricSummary>,
}

impl ModelSummary {
    pub fn metric(&self, metric: Metric) -> Option<&MetricStats> {
        self.metrics
            .iter()
            .find(|m| m.metric == metric)
            .and_then(|m| m.stats.as_ref())
    }
}

/// One [`ModelSummary`] per model name among `records`, by name; `duration_s` is the run's.
pub(super) fn per_model(
    records: &[RequestRecord],
    duration_s: f64,
    percentiles: &[f64],
) -> BTreeMap<String, ModelSummary> {
    let mut by_model: BTreeMap<&str, Vec<&RequestRecord>> = BTreeMap::new();
    for record in records {
        if let Some(model) = &record.model {
            by_model.entry(model).or_default().push(record);
        }
    }
    let percentiles = with_p99(percentiles);
    by_model
        .into_iter()
        .map(|(model, records)| {
            let summary = summarize_model(&records, duration_s, &percentiles);
            (model.to_string(), summary)
        })
        .collect()
}

fn summarize_model(
    records: &[&RequestRecord],
    duration_s: f64,
    percentiles: &[f64],
) -> ModelSummary {
    let successful = || records.iter().filter(|r| r.is_success());
    let num_completed = successful().count();
    let total_output_tokens = successful().map(|r| r.output_tokens).sum();
    ModelSummary {
        num_completed,
        num_failed: records.len() - num_completed,
        total_output_tokens,
        request_throughput: per_second(num_completed, duration_s),
        output_throughput: per_second(total_output_tokens, duration_s),
        metrics: summaries_of(&PER_MODEL_METRICS, records.iter().copied(), percentiles),
    }
}

/// `percentiles` with [`PER_MODEL_PERCENTILE`] added at the end when it is not among them.
fn with_p99(percentiles: &[f64]) -> Vec<f64> {
    let mut all = percentiles.to_vec();
    if !all.contains(&PER_MODEL_PERCENTILE) {
        all.push(PER_MODEL_PERCENTILE);
    }
    all
}

#[cfg(test)]
#[path = "per_model_tests.rs"]
mod tests;
