//! [`Metrics`], the server's handle on its registry: registers every series once and records
//! into them from the request path, the HTTP middleware and the watchdog.

use std::sync::Arc;
use std::time::Duration;

use pagoda_engine::EngineHandle;
use prometheus::{IntCounter, IntGauge, Registry};

use super::builder::{self, SeriesBuilder};
use super::config::MetricsConfig;
use super::engine_collector::EngineCollector;
use super::error::MetricsError;
use super::exposition;
use super::http::HttpMetrics;
use super::lora::LoraCollector;
use super::request::{FinishedSequence, RequestMetrics};
use super::router;
use super::spec_decode::SpecDecodeCollector;
use super::structured::StructuredMetrics;
use crate::lora::LoraRegistry;

/// The server's metrics. Cheap to clone; every clone records into the same registry, with its
/// own `model_name` for the request series (the served model's, or an adapter's: `for_model`).
#[derive(Debug, Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
    model_name: Arc<str>,
}

#[derive(Debug)]
struct Inner {
    registry: Registry,
    namespace: super::names::MetricsNamespace,
    request: RequestMetrics,
    http: HttpMetrics,
    structured: StructuredMetrics,
    engine_stalled: IntGauge,
    engine_stalls: IntCounter,
}

/// 1 while the progress watchdog sees a stalled engine (both namespaces: not an engine series).
pub const ENGINE_STALLED: &str = "pagoda_engine_stalled";
/// Times the watchdog found the engine stalled.
pub const ENGINE_STALLS_TOTAL: &str = "pagoda_engine_stalls_total";

impl Metrics {
    /// Validates the buckets and registers every series in a registry of its own.
    pub fn new(config: MetricsConfig, engine: EngineHandle) -> Result<Self, MetricsError> {
        config.buckets.validate()?;
        let registry = Registry::new();
        let request = RequestMetrics::register(&registry, &config)?;
        let http = HttpMetrics::register(&registry)?;
        let structured = StructuredMetrics::register(&registry)?;
        let series = SeriesBuilder {
            namespace: config.namespace,
            model_name: &config.model_name,
        };
        registry.register(Box::new(EngineCollector::new(engine.clone(), series)?))?;
        if let Some(speculative) = &engine.info().speculative {
            let collector = SpecDecodeCollector::new(
                engine.clone(),
                series,
                speculative.num_speculative_tokens,
            )?;
            registry.register(Box::new(collector))?;
        }
        router::register_router_series(&registry, &engine, config.namespace, &config.model_name)?;
        let engine_stalled = builder::register(
            &registry,
            IntGauge::new(
                ENGINE_STALLED,
                "1 while requests wait or run and no engine step has completed for \
                 --engine-stall-timeout seconds (/health answers 503 meanwhile).",
            )?,
        )?;
        let engine_stalls = builder::register(
            &registry,
            IntCounter::new(
                ENGINE_STALLS_TOTAL,
                "Times the engine was found stalled by the progress watchdog.",
            )?,
        )?;
        Ok(Self {
            model_name: Arc::from(config.model_name.as_str()),
            inner: Arc::new(Inner {
                registry,
                namespace: config.namespace,
                request,
                http,
                structured,
                engine_stalled,
                engine_stalls,
            }),
        })
    }

    /// The watchdog's verdict changed: stalled (counted once per stall) or progressing again.
    pub fn record_engine_stalled(&self, stalled: bool) {
        self.inner.engine_stalled.set(i64::from(stalled));
        if stalled {
            self.inner.engine_stalls.inc();
        }
    }

    /// Per generated token after the first: the gap between consecutive tokens of one sequence.
    pub fn record_inter_token_latency(&self, gap: Duration) {
        self.inner
            .request
            .record_inter_token_latency(&self.model_name, gap.as_secs_f64());
    }

    /// Once per finished engine sequence (every choice of an n>1 request is one sequence),
    /// whatever the reason, aborts included.
    pub fn record_finished(&self, finished: &FinishedSequence) {
        self.inner
            .request
            .record_finished(&self.model_name, finished);
    }

    /// These metrics with the request series labelled `model_name = model` (a LoRA adapter's
    /// name; the served name gives the same series as `self`).
    pub fn for_model(&self, model: &str) -> Metrics {
        if *self.model_name == *model {
            return self.clone();
        }
        Metrics {
            inner: Arc::clone(&self.inner),
            model_name: Arc::from(model),
        }
    }

    /// Adds the LoRA series (`lora_requests_info`, `lora_adapter_loaded`), read from the engine
    /// and the adapter registry at scrape time.
    pub fn register_lora(
        &self,
        engine: EngineHandle,
        registry: Arc<LoraRegistry>,
        max_loras: usize,
    ) -> Result<(), MetricsError> {
        let series = SeriesBuilder {
            namespace: self.inner.namespace,
            model_name: &self.model_name,
        };
        let collector = LoraCollector::new(engine, registry, max_loras, series)?;
        self.inner.registry.register(Box::new(collector))?;
        Ok(())
    }

    /// Creates the request series of an adapter (at zero) when it is registered.
    pub fn register_model(&self, model: &str) {
        self.inner.request.create_model_series(model);
    }

    /// Once per engine sequence that failed instead of finishing (engine error, undecodable
    /// output, engine gone): `request_success_total{finished_reason="error"}`. Streamed requests
    /// fail after their 200 header, so this is the only place their failure shows.
    pub fn record_failed(&self) {
        self.inner.request.record_failed(&self.model_name);
    }

    /// Once per parent HTTP generation request: its `n` and resolved `max_tokens`.
    pub fn record_request_params(&self, n: usize, max_tokens: usize) {
        self.inner
            .request
            .record_request_params(&self.model_name, n, max_tokens);
    }

    /// Once per parent HTTP generation request, when its last choice has finished: the largest
    /// `completion_tokens` among its choices (vLLM's `request_max_num_generation_tokens`).
    pub fn record_max_num_generation_tokens(&self, max_num_generation_tokens: usize) {
        self.inner
            .request
            .record_max_num_generation_tokens(&self.model_name, max_num_generation_tokens);
    }

    /// Once per HTTP response. `handler` is the matched route template (or
    /// [`UNMATCHED_HANDLER`](super::http::UNMATCHED_HANDLER)); requests to [`EXCLUDED_HANDLERS`](super::http::EXCLUDED_HANDLERS) are not recorded.
    pub fn record_http(&self, handler: &str, method: &str, status: u16, duration: Duration) {
        self.inner
            .http
            .record(handler, method, status, duration.as_secs_f64());
    }

    /// Once per structured-output request (tool calls forced by a grammar count as `tool_call`).
    pub fn record_structured_request(&self, kind: &str) {
        self.inner
            .structured
            .requests
            .with_label_values(&[kind])
            .inc();
    }

    /// Once per grammar compiled (not for cache hits).
    pub fn record_grammar_compile(&self, duration: Duration) {
        self.inner
            .structured
            .compile_s
            .observe(duration.as_secs_f64());
    }

    /// What a grammar compiler calls after computing each mask (from the engine's threads).
    pub fn grammar_mask_observer(&self) -> pagoda_structured::MaskObserver {
        let histogram = self.inner.structured.mask_s.clone();
        std::sync::Arc::new(move |duration: Duration| histogram.observe(duration.as_secs_f64()))
    }

    /// The text exposition ([`CONTENT_TYPE`](super::exposition::CONTENT_TYPE)), engine gauges/counters read from
    /// `engine.stats()` now.
    pub fn render(&self) -> String {
        exposition::encode(&self.inner.registry.gather())
    }
}
