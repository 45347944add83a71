//! Statistics: the pure functions that turn raw [`RequestRecord`]s into what a report shows and
//! what `--save-result` writes. Nothing here reads a clock, the environment or a file, so every
//! number can be recomputed from a saved detailed file (and is, by `merge`).
//!
//! - [`summarize`] reduces records to a [`BenchSummary`] (latency metrics, throughputs, peaks,
//!   goodput, errors by kind, send integrity, the steady-state window, the breakdown per model
//!   name, i.e. per LoRA adapter, per turn index of a conversation run, and the run in time
//!   slices with `--slice-duration`);
//! - [`vllm_result_json`] writes it with `vllm bench serve`'s keys plus ours under `"pagoda"`;
//! - [`merge`] combines the records of several client processes into one run;
//! - [`DEFINITIONS`] says how each number is computed (also docs/bench-metrics.md).
//!
//! [`RequestRecord`]: crate::record::RequestRecord

mod conversation_lag;
mod definitions;
mod error;
mod goodput;
mod integrity;
mod integrity_thresholds;
mod itl;
mod merge;
mod metadata;
mod metric;
mod metric_summary;
mod options;
mod per_model;
mod per_turn;
mod percentile;
mod slices;
mod slices_json;
mod slot_lag;
mod steady_state;
mod summary;
mod timeline;
mod vllm_json;

#[cfg(test)]
pub(crate) mod test_records;

pub use definitions::DEFINITIONS;
pub use error::StatsError;
pub use goodput::{meets_slos, parse_goodput, GoodputSummary, Slo};
pub use integrity::{LagStats, SendIntegrity};
pub use integrity_thresholds::IntegrityThresholds;
pub use itl::{chunk_gaps_s, per_token_itls_s, token_arrivals, tokens_per_chunk};
pub use merge::{merge, MergedRecords};
pub use metadata::{
    parse_metadata, LoraMeta, MachineInfo, RampUp, RunMetadata, StructuredOutputMeta,
};
pub use metric::Metric;
pub use metric_summary::MetricSummary;
pub use options::{parse_percentile_metrics, parse_percentiles, SteadyStateWindow, SummaryOptions};
pub use per_model::{ModelSummary, PER_MODEL_METRICS, PER_MODEL_PERCENTILE};
pub use per_turn::{TurnSummary, PER_TURN_PERCENTILE};
pub use percentile::{
    format_percentile, median, percentile, percentile_key, MetricStats, PercentileValue,
};
pub use slices::{time_slices, TimeSlices, MAX_NUM_SLICES};
pub use slices_json::slices_json;
pub use steady_state::{steady_state_window, WindowSummary, MIN_WINDOW_FRACTION};
pub use summary::{error_label, summarize, BenchSummary, ErrorCount, TokenCountSources};
pub use timeline::{
    concurrency_steps, max_output_tokens_per_s, output_tokens_per_second, peak_concurrency,
};
pub use vllm_json::{
    vllm_result_json, PAGODA_KEY, PAGODA_SCHEMA_VERSION, VLLM_DETAILED_KEYS, VLLM_PER_REQUEST_KEYS,
    VLLM_RAMP_UP_KEYS, VLLM_RESULT_KEYS, VLLM_SETUP_KEYS, VLLM_UNFILLED_KEYS,
};
