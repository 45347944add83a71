//! Prometheus metrics for `GET /metrics`, under vLLM's names, labels and default buckets: with
//! `--metrics-namespace vllm` the engine series are exactly vLLM's (`vllm:…`), so existing
//! dashboards, alerts and autoscalers work unchanged; by default they are `pagoda:…`, plus a
//! few pagoda-only series, and the `vllm:` series inference routers read (`router.rs`). Every
//! series is listed in `docs/metrics.md`.
//!
//! Where each series is recorded (once):
//! - per finished engine sequence, [`Metrics::record_finished`]: TTFT, end-to-end, queue,
//!   inference, prefill and decode time, time per output token, prompt/generation lengths,
//!   finished requests by reason;
//! - per generated token after the first, [`Metrics::record_inter_token_latency`];
//! - per parent HTTP request, [`Metrics::record_request_params`] and
//!   [`Metrics::record_max_num_generation_tokens`];
//! - per HTTP request, [`Metrics::record_http`];
//! - per structured-output request, [`Metrics::record_structured_request`]; per grammar
//!   compiled, [`Metrics::record_grammar_compile`]; per grammar mask, the observer
//!   [`Metrics::grammar_mask_observer`] hands the grammar compiler;
//! - at scrape time, from `EngineHandle::stats()`: running/waiting gauges, KV-cache usage, and
//!   the counters the engine already keeps (tokens, preemptions, prefix-cache queries and hits).

#[cfg(test)]
mod bucket_tests;
mod buckets;
mod builder;
mod config;
mod engine_collector;
mod error;
mod exposition;
mod http;
mod lora;
mod names;
mod recorder;
mod request;
mod router;
#[cfg(test)]
mod router_tests;
#[cfg(test)]
mod scrape_tests;
mod spec_decode;
mod structured;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

pub use buckets::{parse_buckets, validate_buckets, HistogramBuckets};
pub use config::MetricsConfig;
pub use error::MetricsError;
pub use exposition::CONTENT_TYPE;
pub use http::{status_group, EXCLUDED_HANDLERS, UNMATCHED_HANDLER};
pub use names::MetricsNamespace;
pub use recorder::{Metrics, ENGINE_STALLED, ENGINE_STALLS_TOTAL};
pub use request::FinishedSequence;
pub use structured::{
    GRAMMAR_COMPILE_SECONDS, GRAMMAR_MASK_SECONDS, STRUCTURED_OUTPUT_REQUESTS_TOTAL,
};
