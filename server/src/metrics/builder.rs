//! Builds engine series with their namespace and constant labels (`model_name`, `engine="0"`).

use prometheus::core::Collector;
use prometheus::{
    Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, Opts, Registry,
};

use super::error::MetricsError;
use super::names::{MetricsNamespace, ENGINE_INDEX, LABEL_ENGINE, LABEL_MODEL_NAME};

#[derive(Debug, Clone, Copy)]
pub(super) struct SeriesBuilder<'a> {
    pub namespace: MetricsNamespace,
    pub model_name: &'a str,
}

impl SeriesBuilder<'_> {
    pub fn opts(&self, base: &str, help: &str) -> Opts {
        Opts::new(self.namespace.series(base), help)
            .const_label(LABEL_MODEL_NAME, self.model_name)
            .const_label(LABEL_ENGINE, ENGINE_INDEX)
    }

    /// Options with no constant label: vLLM's info and per-adapter gauges carry only their
    /// own labels (no `engine`, no `model_name`).
    pub fn bare_opts(&self, base: &str, help: &str) -> Opts {
        Opts::new(self.namespace.series(base), help)
    }

    /// Options with the `engine` constant label only: `model_name` is a variable label of the
    /// series built from them (request series, whose model may be an adapter).
    fn opts_by_model(&self, base: &str, help: &str) -> Opts {
        Opts::new(self.namespace.series(base), help).const_label(LABEL_ENGINE, ENGINE_INDEX)
    }

    /// A histogram by `model_name`, registered in `registry`, with the served model's series
    /// created (at zero) from the start.
    pub fn histogram_by_model(
        &self,
        registry: &Registry,
        base: &str,
        help: &str,
        buckets: &[f64],
    ) -> Result<HistogramVec, MetricsError> {
        let opts = HistogramOpts::from(self.opts_by_model(base, help)).buckets(buckets.to_vec());
        let vec = register(registry, HistogramVec::new(opts, &[LABEL_MODEL_NAME])?)?;
        vec.with_label_values(&[self.model_name]);
        Ok(vec)
    }

    /// A counter by `model_name` and `labels`, registered in `registry`.
    pub fn counter_vec_by_model(
        &self,
        registry: &Registry,
        base: &str,
        help: &str,
        labels: &[&str],
    ) -> Result<IntCounterVec, MetricsError> {
        let mut all = vec![LABEL_MODEL_NAME];
        all.extend_from_slice(labels);
        let opts = self.opts_by_model(base, help);
        register(registry, IntCounterVec::new(opts, &all)?)
    }

    /// A gauge for a collector to own (not registered on its own).
    pub fn gauge(&self, base: &str, help: &str) -> Result<Gauge, MetricsError> {
        Ok(Gauge::with_opts(self.opts(base, help))?)
    }

    /// A histogram for a collector to own (not registered on its own).
    pub fn histogram(
        &self,
        base: &str,
        help: &str,
        buckets: &[f64],
    ) -> Result<Histogram, MetricsError> {
        let opts = HistogramOpts::from(self.opts(base, help)).buckets(buckets.to_vec());
        Ok(Histogram::with_opts(opts)?)
    }

    /// A counter for a collector to own (not registered on its own).
    pub fn counter(&self, base: &str, help: &str) -> Result<IntCounter, MetricsError> {
        Ok(IntCounter::with_opts(self.opts(base, help))?)
    }
}

/// Registers a clone of `metric` (they share their values) and returns the original.
pub(super) fn register<M>(registry: &Registry, metric: M) -> Result<M, MetricsError>
where
    M: Collector + Clone + 'static,
{
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

/// Moves a counter that mirrors an engine total up to `total` (counters only move forward).
pub(super) fn catch_up(counter: &IntCounter, total: u64) {
    let exported = counter.get();
    if total > exported {
        counter.inc_by(total - exported);
    }
}

/// Serialises a collector's scrapes so that two concurrent ones cannot both add the same
/// increment (a poisoned lock still serialises).
pub(super) fn scrape_guard(sync: &std::sync::Mutex<()>) -> std::sync::MutexGuard<'_, ()> {
    sync.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
