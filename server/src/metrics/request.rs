//! Request-level series: latency and size histograms observed once per finished sequence, the
//! inter-token gaps, the request parameters, and finished sequences by reason.

use std::time::Instant;

use pagoda_engine::{FinishReason, RequestTimings, Usage};
use prometheus::{HistogramVec, IntCounterVec, Registry};

use super::buckets::{
    build_1_2_5_buckets, REQUEST_NUM_PREEMPTIONS_BUCKETS, REQUEST_PARAMS_N_BUCKETS,
};
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
const NUM_PREEMPTIONS_PER_REQUEST: Spec = (
    REQUEST_NUM_PREEMPTIONS,
    "Histogram of the number of times a request was preempted.",
);
const PARAMS_MAX_TOKENS: Spec = (
    REQUEST_PARAMS_MAX_TOKENS,
    "Histogram of the max_tokens request parameter.",
);

/// The `finished_reason` of a sequence that failed (vLLM's `FinishReason.ERROR`): the engine
/// reported an error, its output could not be decoded, or the engine went away.
pub(super) const FINISHED_REASON_ERROR: &str = "error";

/// Every finish reason, so that each `finished_reason` series exists (at 0) from the start
/// (and `error`, which is not an engine finish reason).
const FINISH_REASONS: [FinishReason; 4] = [
    FinishReason::Stop {
        stop_token_id: None,
    },
    FinishReason::Length,
    FinishReason::Abort,
    FinishReason::Repetition,
];

/// Every series is labelled with the request's `model_name`: the served model's name, or the
/// LoRA adapter's the request selected.
#[derive(Debug)]
pub(super) struct RequestMetrics {
    ttft: HistogramVec,
    inter_token_latency: HistogramVec,
    time_per_output_token: HistogramVec,
    e2e: HistogramVec,
    queue: HistogramVec,
    inference: HistogramVec,
    prefill: HistogramVec,
    decode: HistogramVec,
    prompt_tokens: HistogramVec,
    generation_tokens: HistogramVec,
    prefill_kv_computed_tokens: HistogramVec,
    max_num_generation_tokens: HistogramVec,
    params_n: HistogramVec,
    params_max_tokens: HistogramVec,
    num_preemptions: HistogramVec,
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
        let hist = |(base, help): Spec, bounds: &[f64]| {
            series.histogram_by_model(registry, base, help, bounds)
        };
        let success = series.counter_vec_by_model(
            registry,
            REQUEST_SUCCESS,
            "Count of successfully processed requests.",
            &[LABEL_FINISHED_REASON],
        )?;
        let metrics = Self {
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
            num_preemptions: hist(
                NUM_PREEMPTIONS_PER_REQUEST,
                &REQUEST_NUM_PREEMPTIONS_BUCKETS,
            )?,
            success,
        };
        metrics.create_model_series(&config.model_name);
        Ok(metrics)
    }

    /// Creates every `finished_reason` series of `model` (at zero), so that rates and ratios
    /// over them exist before the first request of that model finishes.
    pub fn create_model_series(&self, model: &str) {
        for reason in FINISH_REASONS {
            self.success.with_label_values(&[model, reason.as_str()]);
        }
        self.success
            .with_label_values(&[model, FINISHED_REASON_ERROR]);
    }

    pub fn record_inter_token_latency(&self, model: &str, gap_s: f64) {
        self.inter_token_latency
            .with_label_values(&[model])
            .observe(gap_s);
    }

    pub fn record_finished(&self, model: &str, finished: &FinishedSequence) {
        let usage = &finished.usage;
        let intervals = RequestIntervals::new(&finished.timings, usage.completion_tokens);
        self.success
            .with_label_values(&[model, finished.reason.as_str()])
            .inc();
        let observe = |histogram: &HistogramVec, value: f64| {
            histogram.with_label_values(&[model]).observe(value);
        };
        observe(&self.e2e, intervals.e2e_s);
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
                observe(histogram, value);
            }
        }
        observe(&self.prompt_tokens, usage.prompt_tokens as f64);
        observe(&self.generation_tokens, usage.completion_tokens as f64);
        let computed = usage.prompt_tokens.saturating_sub(usage.num_cached_tokens);
        observe(&self.prefill_kv_computed_tokens, computed as f64);
        observe(
            &self.num_preemptions,
            f64::from(finished.timings.num_preemptions),
        );
    }

    /// A sequence that failed: only counted, as its timings end in an error, not a finish.
    pub fn record_failed(&self, model: &str) {
        self.success
            .with_label_values(&[model, FINISHED_REASON_ERROR])
            .inc();
    }

    pub fn record_request_params(&self, model: &str, n: usize, max_tokens: usize) {
        self.params_n.with_label_values(&[model]).observe(n as f64);
        self.params_max_tokens
            .with_label_values(&[model])
            .observe(max_tokens as f64);
    }

    pub fn record_max_num_generation_tokens(&self, model: &str, max_num_generation_tokens: usize) {
        self.max_num_generation_tokens
            .with_label_values(&[model])
            .observe(max_num_generation_tokens as f64);
    }
}
