//! [`summarize`]: every statistic of a run, from its records.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::goodput::{meets_slos, GoodputSummary};
use super::integrity::{check_send_integrity, SendIntegrity};
use super::metric::Metric;
use super::metric_summary::{metric_summaries, MetricSummary};
use super::options::{SteadyStateWindow, SummaryOptions};
use super::per_model::{per_model, ModelSummary};
use super::per_turn::{per_turn, TurnSummary};
use super::percentile::MetricStats;
use super::slices::{time_slices, TimeSlices};
use super::steady_state::{steady_state_window, summarize_window, WindowSummary};
use super::timeline::{
    max_concurrent_requests_per_second, max_output_tokens_per_s, peak_concurrency, per_second,
    run_end_s, run_start_s,
};
use crate::record::{ErrorKind, RequestRecord, TokenCountSource};

/// Failed requests of one kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorCount {
    pub kind: ErrorKind,
    /// `connection`, `http_503`, `stream`, `timeout`.
    pub label: String,
    pub count: usize,
}

/// Where the token counts of the successful requests came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCountSources {
    /// Counted by the server (`usage`).
    pub num_server_usage: usize,
    /// Counted by the client's tokenizer (the server sent no usage).
    pub num_tokenizer: usize,
}

/// Every statistic of a run. Times in seconds from the run's start, latencies in ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchSummary {
    /// The earliest target or actual send.
    pub start_s: f64,
    /// Last end − `start_s`: what every whole-run throughput divides by.
    pub duration_s: f64,
    pub num_requests: usize,
    pub num_completed: usize,
    pub num_failed: usize,
    pub errors_by_kind: Vec<ErrorCount>,
    /// Prompt tokens of the successful requests.
    pub total_input_tokens: usize,
    /// Output tokens of the successful requests.
    pub total_output_tokens: usize,
    pub token_count_sources: TokenCountSources,
    pub request_throughput: f64,
    pub input_throughput: f64,
    pub output_throughput: f64,
    pub total_token_throughput: f64,
    /// Most output tokens received in one 1-second bucket.
    pub max_output_tokens_per_s: f64,
    /// Most requests in flight at once.
    pub max_concurrent_requests: usize,
    /// vLLM's `max_concurrent_requests`: most successful requests active during one 1-second
    /// bucket (what the vLLM-compatible key of a saved result holds).
    pub max_concurrent_requests_per_second: usize,
    /// `--metric-percentiles`, as asked.
    pub percentiles: Vec<f64>,
    /// `--percentile-metrics`, as asked: what the report and vLLM's keys show.
    pub percentile_metrics: Vec<Metric>,
    /// Every metric, in [`Metric::ALL`]'s order, with every requested percentile.
    pub metrics: Vec<MetricSummary>,
    /// `None` without `--goodput`.
    pub goodput: Option<GoodputSummary>,
    pub integrity: SendIntegrity,
    pub steady_state: Option<WindowSummary>,
    /// Per model name the requests sent (the LoRA adapters of `--lora-modules`), by name; empty
    /// in results saved before the model was recorded.
    #[serde(default)]
    pub per_model: BTreeMap<String, ModelSummary>,
    /// The run in slices of `--slice-duration` seconds; `None` without the flag. Saved flat, as
    /// `pagoda.slices` ([`super::slices_json`]), not inside the summary.
    #[serde(skip)]
    pub slices: Option<TimeSlices>,
    /// Per turn index of a conversation run, in order; empty otherwise. Written to the result
    /// as `pagoda.turns`, not here.
    #[serde(skip)]
    pub per_turn: Vec<TurnSummary>,
}

impl BenchSummary {
    pub fn metric(&self, metric: Metric) -> Option<&MetricStats> {
        self.metrics
            .iter()
            .find(|m| m.metric == metric)
            .and_then(|m| m.stats.as_ref())
    }
}

/// Reduces a run's records to its statistics. Pure and independent of the records' order
/// (every floating-point sum runs over sorted values), so merged records give exactly the
/// statistics of the whole. Failed requests count in `num_failed`, `errors_by_kind`, the
/// send-integrity check and the requests in flight, never in latencies, tokens or throughputs.
pub fn summarize(records: &[RequestRecord], options: &SummaryOptions) -> BenchSummary {
    let start_s = run_start_s(records).unwrap_or(0.0);
    let duration_s = run_end_s(records).map_or(0.0, |end_s| end_s - start_s);
    let successful = || records.iter().filter(|r| r.is_success());
    let num_completed = successful().count();
    let total_input_tokens = successful().map(|r| r.input_tokens).sum();
    let total_output_tokens = successful().map(|r| r.output_tokens).sum();
    let total_tokens = total_input_tokens + total_output_tokens;
    BenchSummary {
        start_s,
        duration_s,
        num_requests: records.len(),
        num_completed,
        num_failed: records.len() - num_completed,
        errors_by_kind: errors_by_kind(records),
        total_input_tokens,
        total_output_tokens,
        token_count_sources: token_count_sources(records),
        request_throughput: per_second(num_completed, duration_s),
        input_throughput: per_second(total_input_tokens, duration_s),
        output_throughput: per_second(total_output_tokens, duration_s),
        total_token_throughput: per_second(total_tokens, duration_s),
        max_output_tokens_per_s: max_output_tokens_per_s(records, start_s),
        max_concurrent_requests: peak_concurrency(records),
        max_concurrent_requests_per_second: max_concurrent_requests_per_second(records),
        percentiles: options.percentiles.clone(),
        percentile_metrics: options.percentile_metrics.clone(),
        metrics: metric_summaries(records.iter(), &options.percentiles),
        goodput: goodput(records, options, duration_s),
        integrity: check_send_integrity(records, options),
        steady_state: steady_state(records, options),
        per_model: per_model(records, duration_s, &options.percentiles),
        slices: options
            .slice_duration_s
            .and_then(|slice_s| time_slices(records, slice_s, options)),
        per_turn: per_turn(records),
    }
}

fn goodput(
    records: &[RequestRecord],
    options: &SummaryOptions,
    duration_s: f64,
) -> Option<GoodputSummary> {
    if options.goodput.is_empty() {
        return None;
    }
    let num_good = records
        .iter()
        .filter(|r| meets_slos(r, &options.goodput))
        .count();
    Some(GoodputSummary {
        slos: options.goodput.clone(),
        num_good,
        request_goodput: per_second(num_good, duration_s),
    })
}

fn steady_state(records: &[RequestRecord], options: &SummaryOptions) -> Option<WindowSummary> {
    let window = match options.steady_state {
        SteadyStateWindow::Off => None,
        SteadyStateWindow::Auto => steady_state_window(records),
        SteadyStateWindow::Fixed { start_s, end_s } => Some((start_s, end_s)),
    };
    window.map(|window| summarize_window(records, window, options))
}

/// The label of an error kind: `connection`, `http_503`, `stream`, `timeout`.
pub fn error_label(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::Connection => "connection".into(),
        ErrorKind::Http(status) => format!("http_{status}"),
        ErrorKind::Stream => "stream".into(),
        ErrorKind::Timeout => "timeout".into(),
        ErrorKind::Cancelled => "cancelled".into(),
    }
}

/// Failed requests grouped by kind, in label order.
fn errors_by_kind(records: &[RequestRecord]) -> Vec<ErrorCount> {
    let mut counts: BTreeMap<String, ErrorCount> = BTreeMap::new();
    for kind in records.iter().filter_map(|r| r.error.as_ref()) {
        let label = error_label(kind);
        counts
            .entry(label.clone())
            .or_insert(ErrorCount {
                kind: kind.clone(),
                label,
                count: 0,
            })
            .count += 1;
    }
    counts.into_values().collect()
}

fn token_count_sources(records: &[RequestRecord]) -> TokenCountSources {
    let mut sources = TokenCountSources::default();
    for record in records.iter().filter(|r| r.is_success()) {
        match record.token_count_source {
            TokenCountSource::ServerUsage => sources.num_server_usage += 1,
            TokenCountSource::Tokenizer => sources.num_tokenizer += 1,
        }
    }
    sources
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
