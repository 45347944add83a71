//! LoRA series, read at scrape time: vLLM's `lora_requests_info` (which adapters the running and
//! waiting requests use, and `--max-loras`, as labels of a gauge whose value is the scrape's Unix
//! time, as vLLM sets it) and, under `pagoda`, `lora_adapter_loaded{adapter}` = 1 for each
//! adapter held loaded.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use pagoda_engine::EngineHandle;
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Gauge, Opts};

use super::builder::SeriesBuilder;
use super::error::MetricsError;
use super::names::*;
use crate::lora::LoraRegistry;

pub(super) struct LoraCollector {
    engine: EngineHandle,
    registry: Arc<LoraRegistry>,
    max_loras: usize,
    info_opts: Opts,
    loaded_opts: Option<Opts>,
    descs: Vec<Desc>,
}

impl std::fmt::Debug for LoraCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoraCollector")
            .field("max_loras", &self.max_loras)
            .finish()
    }
}

impl LoraCollector {
    pub fn new(
        engine: EngineHandle,
        registry: Arc<LoraRegistry>,
        max_loras: usize,
        series: SeriesBuilder<'_>,
    ) -> Result<Self, MetricsError> {
        let mut info_opts = series.opts(LORA_REQUESTS_INFO, "Running stats on lora requests.");
        if !series.namespace.exports_pagoda_extras() {
            // vLLM's gauge carries only its three labels (no `engine`, no `model_name`).
            info_opts.const_labels.clear();
        }
        let loaded_opts = series.namespace.exports_pagoda_extras().then(|| {
            series.opts(
                LORA_ADAPTER_LOADED,
                "1 for each LoRA adapter held loaded (the adapter label names it).",
            )
        });
        let mut descs = Gauge::with_opts(info_opts.clone())?
            .desc()
            .into_iter()
            .cloned()
            .collect::<Vec<_>>();
        if let Some(opts) = &loaded_opts {
            descs.extend(Gauge::with_opts(opts.clone())?.desc().into_iter().cloned());
        }
        Ok(Self {
            engine,
            registry,
            max_loras,
            info_opts,
            loaded_opts,
            descs,
        })
    }

    fn info_gauge(&self) -> Option<Gauge> {
        let stats = self.engine.stats();
        let opts = self
            .info_opts
            .clone()
            .const_label(
                LABEL_RUNNING_LORA_ADAPTERS,
                stats.running_lora_adapters.join(","),
            )
            .const_label(
                LABEL_WAITING_LORA_ADAPTERS,
                stats.waiting_lora_adapters.join(","),
            )
            .const_label(LABEL_MAX_LORA, self.max_loras.to_string());
        let gauge = Gauge::with_opts(opts).ok()?;
        let now_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        gauge.set(now_s);
        Some(gauge)
    }

    fn loaded_families(&self, opts: &Opts) -> Vec<MetricFamily> {
        let mut family: Option<MetricFamily> = None;
        for name in self.registry.loaded_names() {
            let Ok(gauge) = Gauge::with_opts(opts.clone().const_label(LABEL_ADAPTER, name)) else {
                continue;
            };
            gauge.set(1.0);
            for mut collected in gauge.collect() {
                match &mut family {
                    Some(family) => family.mut_metric().extend(collected.take_metric()),
                    None => family = Some(collected),
                }
            }
        }
        family.into_iter().collect()
    }
}

impl Collector for LoraCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let mut families = self.info_gauge().map(|g| g.collect()).unwrap_or_default();
        if let Some(opts) = &self.loaded_opts {
            families.extend(self.loaded_families(opts));
        }
        families
    }
}
