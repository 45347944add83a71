//! Engine-level series, read from `EngineHandle::stats()` at scrape time: the scheduler gauges,
//! KV-cache usage, and the counters that mirror the engine's own totals. The engine counts; this
//! collector only copies, so each of these is recorded in one place. Beside the namespace's own
//! set, a second collector exports, under the default `pagoda` namespace, the `vllm:` series
//! that inference routers read ([`EngineCollector::router_series`]), and both export vLLM's
//! deprecated aliases that AIBrix and production-stack still read.

use std::sync::Mutex;

use pagoda_engine::step_tokens::{StepTokenCounts, STEP_TOKENS_BOUNDS};
use pagoda_engine::{EngineHandle, EngineStats};
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Gauge, Histogram, IntCounter};

use super::builder::{catch_up, scrape_guard, SeriesBuilder};
use super::error::MetricsError;
use super::names::*;

/// Reads a gauge's value from a stats snapshot.
type ReadGauge = fn(&EngineStats) -> f64;
/// Reads the engine total a counter mirrors.
type ReadTotal = fn(&EngineStats) -> u64;
/// A series: base name, help, and how to read it.
type GaugeSpec = (&'static str, &'static str, ReadGauge);
type CounterSpec = (&'static str, &'static str, ReadTotal);

const GAUGES: [GaugeSpec; 3] = [
    (
        NUM_REQUESTS_RUNNING,
        "Number of requests in model execution batches.",
        |s| s.num_running as f64,
    ),
    (
        NUM_REQUESTS_WAITING,
        "Number of requests waiting to be processed.",
        |s| s.num_waiting as f64,
    ),
    (
        KV_CACHE_USAGE_PERC,
        "KV-cache usage. 1 means 100 percent usage.",
        EngineStats::kv_cache_usage,
    ),
];

const COUNTERS: [CounterSpec; 6] = [
    (
        NUM_PREEMPTIONS,
        "Cumulative number of preemption from the engine.",
        |s| s.num_preemptions_total,
    ),
    (PROMPT_TOKENS, "Number of prefill tokens processed.", |s| {
        s.num_prompt_tokens_total
    }),
    (
        GENERATION_TOKENS,
        "Number of generation tokens processed.",
        |s| s.num_generation_tokens_total,
    ),
    (
        PREFIX_CACHE_QUERIES,
        "Prefix cache queries, in terms of number of queried tokens.",
        |s| s.prefix_cache_queries_tokens_total,
    ),
    (
        PREFIX_CACHE_HITS,
        "Prefix cache hits, in terms of number of cached tokens.",
        |s| s.prefix_cache_hits_tokens_total,
    ),
    (
        PROMPT_TOKENS_CACHED,
        "Number of cached prompt tokens (local + external).",
        |s| s.prefix_cache_hits_tokens_total,
    ),
];

/// Exported under `pagoda` only: vLLM has no such series.
const PAGODA_GAUGES: [GaugeSpec; 5] = [
    (
        NUM_KV_BLOCKS,
        "KV-cache blocks in the pool (its capacity).",
        |s| s.num_kv_blocks_total as f64,
    ),
    (
        NUM_KV_BLOCKS_USED,
        "KV-cache blocks held by requests.",
        |s| s.num_kv_blocks_used as f64,
    ),
    (
        NUM_CACHED_KV_BLOCKS,
        "Blocks registered in the prefix cache, in use or free (free ones are evictable).",
        |s| s.num_cached_kv_blocks as f64,
    ),
    (
        ITL_TARGET,
        "Step time aimed at while requests decode (--itl-target-ms); 0 when none applies.",
        |s| s.itl_target_seconds.unwrap_or(0.0),
    ),
    (
        PREFILL_TOKEN_COST,
        "Learned cost of one prefill token in a step with decodes; 0 until learned.",
        |s| s.prefill_token_cost_seconds.unwrap_or(0.0),
    ),
];

const PAGODA_COUNTERS: [CounterSpec; 5] = [
    (
        PREFIX_CACHE_EVICTIONS,
        "Cached prefix blocks dropped to make room.",
        |s| s.num_prefix_cache_evictions_total,
    ),
    (
        COMPUTED_TOKENS,
        "Tokens run through the model: prefill chunks, decodes, recomputation after preemption.",
        |s| s.num_computed_tokens_total,
    ),
    (ENGINE_STEPS, "Engine steps (model forward passes).", |s| {
        s.num_steps_total
    }),
    (
        KV_EVENT_BATCHES,
        "KV-cache event batches made for the publisher (--kv-events-config), one per step with changes.",
        |s| s.num_kv_event_batches_total,
    ),
    (
        KV_EVENT_BATCHES_DROPPED,
        "Of those, batches lost because the publisher's queue (max_queue_size) was full.",
        |s| s.num_kv_event_batches_dropped_total,
    ),
];

/// vLLM's deprecated names of KV usage and prefix-cache counters (vLLM V0 and early V1), which
/// AIBrix's and production-stack's routers read; always exported under `vllm:`.
const ALIAS_GAUGES: [GaugeSpec; 1] = [(
    GPU_CACHE_USAGE_PERC,
    "KV-cache usage. 1 means 100 percent usage (deprecated alias of kv_cache_usage_perc).",
    EngineStats::kv_cache_usage,
)];
const ALIAS_COUNTERS: [CounterSpec; 2] = [
    (
        GPU_PREFIX_CACHE_QUERIES,
        "Prefix cache queries, in tokens (deprecated alias of prefix_cache_queries).",
        |s| s.prefix_cache_queries_tokens_total,
    ),
    (
        GPU_PREFIX_CACHE_HITS,
        "Prefix cache hits, in tokens (deprecated alias of prefix_cache_hits).",
        |s| s.prefix_cache_hits_tokens_total,
    ),
];

#[derive(Debug)]
pub(super) struct EngineCollector {
    engine: EngineHandle,
    gauges: Vec<(Gauge, ReadGauge)>,
    counters: Vec<(IntCounter, ReadTotal)>,
    /// vLLM's `iteration_tokens_total`: its name, help and labels; the engine's counts replace
    /// its (empty) values at each scrape. `None` in the router collector.
    step_tokens: Option<Histogram>,
    /// Serialises scrapes so that two concurrent ones cannot both add the same increment.
    sync: Mutex<()>,
}

impl EngineCollector {
    /// Every engine series of `series.namespace` (under `vllm`, with the deprecated aliases).
    pub fn new(engine: EngineHandle, series: SeriesBuilder<'_>) -> Result<Self, MetricsError> {
        let extras = series.namespace.exports_pagoda_extras();
        let gauges: Vec<GaugeSpec> = match extras {
            true => GAUGES.iter().chain(&PAGODA_GAUGES).copied().collect(),
            false => GAUGES.iter().chain(&ALIAS_GAUGES).copied().collect(),
        };
        let counters: Vec<CounterSpec> = match extras {
            true => COUNTERS.iter().chain(&PAGODA_COUNTERS).copied().collect(),
            false => COUNTERS.iter().chain(&ALIAS_COUNTERS).copied().collect(),
        };
        let bounds: Vec<f64> = STEP_TOKENS_BOUNDS.iter().map(|&b| b as f64).collect();
        let step_tokens = series.histogram(
            ITERATION_TOKENS,
            "Histogram of number of tokens per engine_step.",
            &bounds,
        )?;
        Self::with_series(engine, series, (&gauges, &counters), Some(step_tokens))
    }

    /// The `vllm:` series routers read, for a server whose own namespace is `pagoda`: the
    /// router gauges and the deprecated aliases, with vLLM's labels (`model_name`, `engine`).
    pub fn router_series(engine: EngineHandle, model_name: &str) -> Result<Self, MetricsError> {
        let series = SeriesBuilder {
            namespace: MetricsNamespace::Vllm,
            model_name,
        };
        // The endpoint picker's queue, running and KV-usage gauges: all of GAUGES.
        let gauges: Vec<GaugeSpec> = GAUGES.iter().chain(&ALIAS_GAUGES).copied().collect();
        Self::with_series(engine, series, (&gauges, &ALIAS_COUNTERS), None)
    }

    fn with_series(
        engine: EngineHandle,
        series: SeriesBuilder<'_>,
        (gauges, counters): (&[GaugeSpec], &[CounterSpec]),
        step_tokens: Option<Histogram>,
    ) -> Result<Self, MetricsError> {
        let gauges = gauges
            .iter()
            .map(|&(base, help, read)| Ok((series.gauge(base, help)?, read)))
            .collect::<Result<_, MetricsError>>()?;
        let counters = counters
            .iter()
            .map(|&(base, help, read)| Ok((series.counter(base, help)?, read)))
            .collect::<Result<_, MetricsError>>()?;
        Ok(Self {
            engine,
            gauges,
            counters,
            step_tokens,
            sync: Mutex::new(()),
        })
    }

    /// Copies a snapshot into the series. Counters only move forward: each advances by what the
    /// engine's total gained since the last scrape.
    fn update(&self, stats: &EngineStats) {
        for (gauge, read) in &self.gauges {
            gauge.set(read(stats));
        }
        for (counter, read) in &self.counters {
            catch_up(counter, read(stats));
        }
    }
}

impl Collector for EngineCollector {
    fn desc(&self) -> Vec<&Desc> {
        let gauges = self.gauges.iter().flat_map(|(g, _)| g.desc());
        let counters = self.counters.iter().flat_map(|(c, _)| c.desc());
        gauges
            .chain(counters)
            .chain(self.step_tokens.iter().flat_map(|h| h.desc()))
            .collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let stats = self.engine.stats();
        let _guard = scrape_guard(&self.sync);
        self.update(&stats);
        let gauges = self.gauges.iter().flat_map(|(g, _)| g.collect());
        let counters = self.counters.iter().flat_map(|(c, _)| c.collect());
        let mut step_tokens: Vec<MetricFamily> =
            self.step_tokens.iter().flat_map(|h| h.collect()).collect();
        for family in &mut step_tokens {
            fill_histogram(family, &stats.step_tokens);
        }
        gauges.chain(counters).chain(step_tokens).collect()
    }
}

/// Writes the engine's step counts into the (empty) histogram family of the same buckets.
fn fill_histogram(family: &mut MetricFamily, counts: &StepTokenCounts) {
    for metric in family.mut_metric().iter_mut() {
        let mut histogram = metric.get_histogram().clone();
        histogram.set_sample_count(counts.num_steps);
        histogram.set_sample_sum(counts.num_tokens as f64);
        let buckets = histogram
            .get_bucket()
            .iter()
            .zip(&counts.cumulative)
            .map(|(bucket, &count)| {
                let mut bucket = bucket.clone();
                bucket.set_cumulative_count(count);
                bucket
            })
            .collect();
        histogram.set_bucket(buckets);
        metric.set_histogram(histogram);
    }
}
