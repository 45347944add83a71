//! Structured-output series (pagoda's own, in both namespaces: vLLM has no such series): requests
//! by kind, grammar compile time, and the time each grammar mask takes.

use prometheus::{Histogram, HistogramOpts, IntCounterVec, Opts, Registry};

use super::builder::register;
use super::error::MetricsError;

/// Structured-output requests, by `kind` (`json_schema`, `json_object`, `regex`, `choice`,
/// `grammar`, `tool_call`).
pub const STRUCTURED_OUTPUT_REQUESTS_TOTAL: &str = "pagoda_structured_output_requests_total";
/// Seconds to compile a grammar (cache misses only).
pub const GRAMMAR_COMPILE_SECONDS: &str = "pagoda_grammar_compile_seconds";
/// Seconds to compute one sequence's mask of allowed tokens for one step.
pub const GRAMMAR_MASK_SECONDS: &str = "pagoda_grammar_mask_seconds";
pub const LABEL_KIND: &str = "kind";

const COMPILE_BUCKETS_S: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];
const MASK_BUCKETS_S: [f64; 12] = [
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1,
];

#[derive(Debug, Clone)]
pub(super) struct StructuredMetrics {
    pub requests: IntCounterVec,
    pub compile_s: Histogram,
    pub mask_s: Histogram,
}

impl StructuredMetrics {
    pub fn register(registry: &Registry) -> Result<Self, MetricsError> {
        let requests = IntCounterVec::new(
            Opts::new(
                STRUCTURED_OUTPUT_REQUESTS_TOTAL,
                "Requests whose output is constrained, by kind of constraint.",
            ),
            &[LABEL_KIND],
        )?;
        let histogram = |name: &str, help: &str, buckets: &[f64]| {
            Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets.to_vec()))
        };
        Ok(Self {
            requests: register(registry, requests)?,
            compile_s: register(
                registry,
                histogram(
                    GRAMMAR_COMPILE_SECONDS,
                    "Time to compile a structured-output grammar (cache misses).",
                    &COMPILE_BUCKETS_S,
                )?,
            )?,
            mask_s: register(
                registry,
                histogram(
                    GRAMMAR_MASK_SECONDS,
                    "Time to compute one sequence's mask of allowed tokens for one step.",
                    &MASK_BUCKETS_S,
                )?,
            )?,
        })
    }
}
