//! Statistics: the pure functions that turn raw [`RequestRecord`]s into what a report shows and
//! what `--save-result` writes. Nothing here reads a clock, the environment or a file, so every
//! number can be recomputed from a saved detailed file (and is, by `merge`).
//!
//! - [`summarize`] reduces records to a [`BenchSummary`] (latency metrics, throughputs, peaks,
//!   goodput, errors by kind, send integrity, the steady-state window);
//! - [`vllm_result_json`] writes it with `vllm bench serve`'s keys plus ours under `"pagoda"`;
//! - [`merge`] combines the records of several client processes into one run;
//! - [`DEFINITIONS`] says how each number is computed (also docs/bench-metrics.md).
//!
//! [`RequestRecord`]: crate::record::RequestRecord

mod definitions;
mod goodput;
mod integrity;
mod itl;
mod merge;
mod metadata;
mod metric;
mod options;
mod percentile;
mod steady_state;
mod summary;
mod timeline;
mod vllm_json;

#[cfg(test)]
mod test_records;

pub use definitions::DEFINITIONS;
pub use goodput::{meets_slos, parse_goodput, GoodputSummary, Slo};
pub use integrity::{IntegrityThresholds, LagStats, SendIntegrity};
pub use itl::{chunk_gaps_s, per_token_itls_s, tokens_per_chunk};
pub use merge::{merge, MergedRecords};
pub use metadata::{parse_metadata, MachineInfo, RampUp, RunMetadata};
pub use metric::Metric;
pub use options::{parse_percentile_metrics, parse_percentiles, SteadyStateWindow, SummaryOptions};
pub use percentile::{median, percentile, MetricStats, PercentileValue};
pub use steady_state::{steady_state_window, WindowSummary, MIN_WINDOW_FRACTION};
pub use summary::{
    error_label, summarize, BenchSummary, ErrorCount, MetricSummary, TokenCountSources,
};
pub use timeline::{max_output_tokens_per_s, output_tokens_per_second, peak_concurrency};
pub use vllm_json::{
    percentile_key, vllm_result_json, PAGODA_KEY, PAGODA_SCHEMA_VERSION, VLLM_DETAILED_KEYS,
    VLLM_RAMP_UP_KEYS, VLLM_RESULT_KEYS, VLLM_SETUP_KEYS, VLLM_UNFILLED_KEYS,
};

/// What the statistics functions reject: bad command-line specs and inconsistent merges.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    #[error("invalid percentile {0:?}: expected a number in [0, 100]")]
    InvalidPercentile(String),
    #[error("unknown metric {0:?}: expected one of {names}", names = Metric::names_list())]
    UnknownMetric(String),
    #[error("invalid goodput SLO {spec:?}: {reason}")]
    InvalidSlo { spec: String, reason: String },
    #[error("invalid --metadata {0:?}: expected KEY=VALUE")]
    InvalidMetadata(String),
    #[error("nothing to merge: no record sets were given")]
    NoParts,
    #[error("invalid start time {0} (seconds since the Unix epoch): must be finite")]
    InvalidStart(f64),
    #[error("record {index} of client {client_id} appears twice (the same file merged twice?)")]
    DuplicateRecord { client_id: usize, index: usize },
    #[error("could not build the result JSON: {0}")]
    Json(#[from] serde_json::Error),
}
