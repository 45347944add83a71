//! Request-level series: latency and size histograms observed once per finished sequence, the
//! inter-token gaps, the request parameters, and finished sequences by reason.

use std::time::Instant;

use pagoda_engine::{FinishReason, RequestTimings, Usage};
use prometheus::{Histogram, IntCounterVec, Registry};

use super::buckets::{build_1_2_5_buckets, REQUEST_PARAMS_N_BUCKETS};
use super::builder::SeriesBuilder;
use super::config::MetricsConfig;
use super::error::MetricsError;
use super::names::*;

/// What the engine's final event says about one finished sequence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FinishedSequence {
    pub reason: FinishReason,
    pub usage: Usage,
    pub timings: RequestTimings,
}

/// The intervals of one finished sequence, in seconds, as vLLM defines them. `None` where the
/// sequence never reached the phase (aborted while queued, or before its first token).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(super) struct RequestIntervals {
    /// finished − queued.
    pub e2e_s: f64,
    /// first_scheduled − queued.
    pub queue_s: Option<f64>,
    /// first_token − queued.
    pub ttft_s: Option<f64>,
    /// first_token − first_scheduled.
    pub prefill_s: Option<f64>,
    /// finished − first_token.
    pub decode_s: Option<f64>,
    /// finished − first_scheduled.
    pub inference_s: Option<f64>,
    /// decode / (completion_tokens − 1), only with more than one token.
    pub time_per_output_token_s: Option<f64>,
}

fn seconds_between(from: Instant, to: Instant) -> f64 {
    to.saturating_duration_since(from).as_secs_f64()
}

impl RequestIntervals {
    pub fn new(timings: &RequestTimings, completion_tokens: usize) -> Self {
        let scheduled = timings.first_scheduled;
        let first_token = timings.first_token;
        let decode_s = first_token.map(|t| seconds_between(t, timings.finished));
        Self {
            e2e_s: seconds_between(timings.queued, timings.finished),
            queue_s: scheduled.map(|s| seconds_between(timings.queued, s)),
            ttft_s: first_token.map(|t| seconds_between(timings.queued, t)),
            prefill_s: scheduled
                .zip(first_token)
                .map(|(s, t)| seconds_between(s, t)),
            decode_s,
            inference_s: scheduled.map(|s| seconds_between(s, timings.finished)),
            time_per_output_token_s: decode_s
                .filter(|_| completion_tokens > 1)
                .map(|d| d / (completion_tokens - 1) as f64),
        }
    }
}

/// A histogram's base name and help text (vLLM's).
type Spec = (&'static str, &'static str);

const TTFT: Spec = (
    TIME_TO_FIRST_TOKEN,
    "Histogram of time to first token in seconds.",
);
const ITL: Spec = (
    INTER_TOKEN_LATENCY,
    "Histogram of inter-token latency in seconds.",
);
const TPOT: Spec = (
    REQUEST_TIME_PER_OUTPUT_TOKEN,
    "Histogram of time_per_output_token_seconds per request.",
);
const E2E: Spec = (
    E2E_REQUEST_LATENCY,
    "Histogram of e2e request latency in seconds.",
);
const QUEUE: Spec = (
    REQUEST_QUEUE_TIME,
    "Histogram of time spent in WAITING phase for request.",
);
const INFERENCE: Spec = (
    REQUEST_INFERENCE_TIME,
    "Histogram of time spent in RUNNING phase for request.",
);
const PREFILL: Spec = (
    REQUEST_PREFILL_TIME,
    "Histogram of time spent in PREFILL phase for request.",
);
const DECODE: Spec = (
    REQUEST_DECODE_TIME,
    "Histogram of time spent in DECODE phase for request.",
);
const PROMPT_LEN: Spec = (REQUEST_PROMPT_TOKENS, "Number of prefill tokens processed.");
const GENERATION_LEN: Spec = (
    REQUEST_GENERATION_TOKENS,
    "Number of generation tokens processed.",
);
const PREFILL_KV_COMPUTED: Spec = (
    REQUEST_PREFILL_KV_COMPUTED_TOKENS,
    "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
);
const MAX_NUM_GENERATION: Spec = (
    REQUEST_MAX_NUM_GENERATION_TOKENS,
    "Histogram of maximum number of requested generation tokens.",
);
const PARAMS_N: Spec = (REQUEST_PARAMS_N, "Histogram of the n request parameter.");
const PARAMS_MAX_TOKENS: Spec = (
    REQUEST_PARAMS_MAX_TOKENS,
    "Histogram of the max_tokens request parameter.",
);

/// The `finished_reason` of a sequence that failed (vLLM's `FinishReason.ERROR`): the engine
/// reported an error, its output could not be decoded, or the engine went away.
pub(super) const FINISHED_REASON_ERROR: &str = "error";

/// Every finish reason, so that each `finished_reason` series exists (at 0) from the start
/// (and `error`, which is not an engine finish reason).
const FINISH_REASONS: [FinishReason; 3] = [
    FinishReason::Stop {
        stop_token_id: None,
    },
    FinishReason::Length,
    FinishReason::Abort,
];

#[derive(Debug)]
pub(super) struct RequestMetrics {
    ttft: Histogram,
    inter_token_latency: Histogram,
    time_per_output_token: Histogram,
    e2e: Histogram,
    queue: Histogram,
    inference: Histogram,
    prefill: Histogram,
    decode: Histogram,
    prompt_tokens: Histogram,
    generation_tokens: Histogram,
    prefill_kv_computed_tokens: Histogram,
    max_num_generation_tokens: Histogram,
    params_n: Histogram,
    params_max_tokens: Histogram,
    success: IntCounterVec,
}

impl RequestMetrics {
    pub fn register(registry: &Registry, config: &MetricsConfig) -> Result<Self, MetricsError> {
        let series = SeriesBuilder {
            namespace: config.namespace,
            model_name: &config.model_name,
        };
        let buckets = &config.buckets;
        let tokens = build_1_2_5_buckets(config.max_model_len);
        let hist =
            |(base, help): Spec, bounds: &[f64]| series.histogram(registry, base, help, bounds);
        let success = series.counter_vec(
            registry,
            REQUEST_SUCCESS,
            "Count of successfully processed requests.",
            &[LABEL_FINISHED_REASON],
        )?;
        for reason in FINISH_REASONS {
            success.with_label_values(&[reason.as_str()]);
        }
        success.with_label_values(&[FINISHED_REASON_ERROR]);
        Ok(Self {
            ttft: hist(TTFT, &buckets.ttft_s)?,
            inter_token_latency: hist(ITL, &buckets.itl_s)?,
            time_per_output_token: hist(TPOT, &buckets.itl_s)?,
            e2e: hist(E2E, &buckets.e2e_s)?,
            queue: hist(QUEUE, &buckets.e2e_s)?,
            inference: hist(INFERENCE, &buckets.e2e_s)?,
            prefill: hist(PREFILL, &buckets.e2e_s)?,
            decode: hist(DECODE, &buckets.e2e_s)?,
            prompt_tokens: hist(PROMPT_LEN, &tokens)?,
            generation_tokens: hist(GENERATION_LEN, &tokens)?,
            prefill_kv_computed_tokens: hist(PREFILL_KV_COMPUTED, &tokens)?,
            max_num_generation_tokens: hist(MAX_NUM_GENERATION, &tokens)?,
            params_n: hist(PARAMS_N, &REQUEST_PARAMS_N_BUCKETS)?,
            params_max_tokens: hist(PARAMS_MAX_TOKENS, &tokens)?,
            success,
        })
    }

    pub fn record_inter_token_latency(&self, gap_s: f64) {
        self.inter_token_latency.observe(gap_s);
    }

    pub fn record_finished(&self, finished: &FinishedSequence) {
        let usage = &finished.usage;
        let intervals = RequestIntervals::new(&finished.timings, usage.completion_tokens);
        self.success
            .with_label_values(&[finished.reason.as_str()])
            .inc();
        self.e2e.observe(intervals.e2e_s);
        let optional = [
            (&self.ttft, intervals.ttft_s),
            (&self.queue, intervals.queue_s),
            (&self.prefill, intervals.prefill_s),
            (&self.decode, intervals.decode_s),
            (&self.inference, intervals.inference_s),
            (
                &self.time_per_output_token,
                intervals.time_per_output_token_s,
            ),
        ];
        for (histogram, value) in optional {
            if let Some(value) = value {
                histogram.observe(value);
            }
        }
        self.prompt_tokens.observe(usage.prompt_tokens as f64);
        self.generation_tokens
            .observe(usage.completion_tokens as f64);
        let computed = usage.prompt_tokens.saturating_sub(usage.num_cached_tokens);
        self.prefill_kv_computed_tokens.observe(computed as f64);
    }

    /// A sequence that failed: only counted, as its timings end in an error, not a finish.
    pub fn record_failed(&self) {
        self.success
            .with_label_values(&[FINISHED_REASON_ERROR])
            .inc();
    }

    pub fn record_request_params(&self, n: usize, max_tokens: usize) {
        self.params_n.observe(n as f64);
        self.params_max_tokens.observe(max_tokens as f64);
    }

    pub fn record_max_num_generation_tokens(&self, max_num_generation_tokens: usize) {
        self.max_num_generation_tokens
            .observe(max_num_generation_tokens as f64);
    }
}
