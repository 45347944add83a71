//! LoRA series, read at scrape time: vLLM's `lora_requests_info` (which adapters the running and
//! waiting requests use, and `--max-loras`, as labels of a gauge whose value is the scrape's Unix
//! time, as vLLM sets it; under `pagoda` also as `vllm:` for routers), under `pagoda`
//! `lora_adapter_loaded{adapter}` = 1 for each adapter held loaded, and always vLLM's residency
//! series that llm-d's LoRA affinity reads: `vllm:lora_adapter_loaded{adapter_name,level,pinned}`
//! and `vllm:num_{gpu,cpu}_loaded_lora_adapters`.

use std::sync::Arc;
use std::time::SystemTime;

use crate::unix_time::unix_s;

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
    /// `lora_requests_info` in the namespace, and under `pagoda` also as `vllm:` for routers.
    info_opts: Vec<Opts>,
    /// `pagoda:lora_adapter_loaded{adapter}` (under `pagoda` only).
    loaded_opts: Option<Opts>,
    /// vLLM's residency series: `lora_adapter_loaded{adapter_name,level,pinned}` and the
    /// number loaded on this server's tier (`num_gpu_…` on a GPU, `num_cpu_…` on the CPU).
    residency: Residency,
    descs: Vec<Desc>,
}

#[derive(Debug, Clone)]
struct Residency {
    loaded_opts: Opts,
    /// (on this tier, on the other: always 0).
    count_opts: (Opts, Opts),
    level: &'static str,
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
        let pagoda = series.namespace.exports_pagoda_extras();
        let vllm = SeriesBuilder {
            namespace: MetricsNamespace::Vllm,
            model_name: series.model_name,
        };
        // vLLM's gauge carries only its three labels; ours keeps `engine` and `model_name`.
        let info = "Running stats on lora requests.";
        let mut info_opts = vec![match pagoda {
            true => series.opts(LORA_REQUESTS_INFO, info),
            false => vllm.bare_opts(LORA_REQUESTS_INFO, info),
        }];
        if pagoda {
            info_opts.push(vllm.bare_opts(LORA_REQUESTS_INFO, info));
        }
        let loaded_opts = pagoda.then(|| {
            series.opts(
                LORA_ADAPTER_LOADED,
                "1 for each LoRA adapter held loaded (the adapter label names it).",
            )
        });
        let residency = Residency::new(&vllm, engine.info().device.is_cuda());
        let mut descs = Vec::new();
        let all_opts = info_opts.iter().chain(&loaded_opts).chain([
            &residency.loaded_opts,
            &residency.count_opts.0,
            &residency.count_opts.1,
        ]);
        for opts in all_opts {
            descs.extend(Gauge::with_opts(opts.clone())?.desc().into_iter().cloned());
        }
        Ok(Self {
            engine,
            registry,
            max_loras,
            info_opts,
            loaded_opts,
            residency,
            descs,
        })
    }

    fn info_families(&self) -> Vec<MetricFamily> {
        let stats = self.engine.stats();
        let now_s = unix_s(SystemTime::now());
        let mut families = Vec::new();
        for opts in &self.info_opts {
            let opts = opts
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
            if let Ok(gauge) = Gauge::with_opts(opts) {
                gauge.set(now_s);
                families.extend(gauge.collect());
            }
        }
        families
    }
}

impl Residency {
    fn new(vllm: &SeriesBuilder<'_>, on_gpu: bool) -> Self {
        let loaded_opts = vllm.bare_opts(
            LORA_ADAPTER_LOADED,
            "1 for each LoRA adapter held loaded, by where it is held (level) and whether it is pinned.",
        );
        let gpu = vllm.opts(
            NUM_GPU_LOADED_LORA_ADAPTERS,
            "LoRA adapters held loaded in GPU memory.",
        );
        let cpu = vllm.opts(
            NUM_CPU_LOADED_LORA_ADAPTERS,
            "LoRA adapters held loaded in CPU memory.",
        );
        Self {
            loaded_opts,
            count_opts: if on_gpu { (gpu, cpu) } else { (cpu, gpu) },
            level: if on_gpu { "gpu" } else { "cpu" },
        }
    }

    fn families(&self, names: &[String]) -> Vec<MetricFamily> {
        let loaded = names.iter().map(|name| {
            self.loaded_opts
                .clone()
                .const_label(LABEL_ADAPTER_NAME, name.as_str())
                .const_label(LABEL_LEVEL, self.level)
                .const_label(LABEL_PINNED, "false")
        });
        let mut families = gauges_of(loaded);
        for (opts, count) in [(&self.count_opts.0, names.len()), (&self.count_opts.1, 0)] {
            if let Ok(gauge) = Gauge::with_opts(opts.clone()) {
                gauge.set(count as f64);
                families.extend(gauge.collect());
            }
        }
        families
    }
}

/// One family of gauges set to 1, one per set of options (all of one name).
fn gauges_of(all_opts: impl Iterator<Item = Opts>) -> Vec<MetricFamily> {
    let mut family: Option<MetricFamily> = None;
    for opts in all_opts {
        let Ok(gauge) = Gauge::with_opts(opts) else {
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

impl Collector for LoraCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let names = self.registry.loaded_names();
        let mut families = self.info_families();
        if let Some(opts) = &self.loaded_opts {
            let loaded = names
                .iter()
                .map(|name| opts.clone().const_label(LABEL_ADAPTER, name.as_str()));
            families.extend(gauges_of(loaded));
        }
        families.extend(self.residency.families(&names));
        families
    }
}
