//! Builds engine series with their namespace and constant labels (`model_name`, `engine="0"`).

use prometheus::core::Collector;
use prometheus::{Gauge, Histogram, HistogramOpts, IntCounter, IntCounterVec, Opts, Registry};

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

    /// A histogram registered in `registry`.
    pub fn histogram(
        &self,
        registry: &Registry,
        base: &str,
        help: &str,
        buckets: &[f64],
    ) -> Result<Histogram, MetricsError> {
        let opts = HistogramOpts::from(self.opts(base, help)).buckets(buckets.to_vec());
        register(registry, Histogram::with_opts(opts)?)
    }

    /// A counter with variable labels, registered in `registry`.
    pub fn counter_vec(
        &self,
        registry: &Registry,
        base: &str,
        help: &str,
        labels: &[&str],
    ) -> Result<IntCounterVec, MetricsError> {
        register(registry, IntCounterVec::new(self.opts(base, help), labels)?)
    }

    /// A gauge for a collector to own (not registered on its own).
    pub fn gauge(&self, base: &str, help: &str) -> Result<Gauge, MetricsError> {
        Ok(Gauge::with_opts(self.opts(base, help))?)
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
