//! Preparing an engine on an NVIDIA GPU (`cuda` feature): load the model in its compute dtype,
//! measure what the model and a worst-case step use, and size the paged KV cache from
//! `gpu_memory_utilization` (or take `kv_cache_memory_bytes`); `start` then runs the same engine
//! loop as the CPU with `attention::cuda::CudaKvCache`.

mod memory;
mod profile;
pub(crate) mod rows;

use std::path::Path;

use candle_core::Device;

pub use memory::MemoryProbe;
pub use profile::kv_cache_budget;
#[cfg(feature = "testing")]
pub use {memory::GpuMemory, profile::profile_plan};

use crate::config::EngineConfig;
use crate::error::{EngineError, Result};
use crate::models::{load_model_with, CausalLm};
use crate::spec_decode::draft_model::load_draft_model;

const GIB: f64 = (1u64 << 30) as f64;

/// What `load_sized_for_gpu` prepared: the configuration to start the engine with and the models.
#[derive(Debug)]
pub struct LoadedForGpu {
    /// Its `kv_cache_memory_bytes` set from `gpu_memory_utilization`, when given; the two
    /// models' caches share it.
    pub config: EngineConfig,
    pub model: Box<dyn CausalLm>,
    /// Speculative decoding's draft model, when the configuration names one.
    pub draft: Option<Box<dyn CausalLm>>,
}

/// Loads the model (and a draft model) onto `device` and sizes the KV cache.
pub fn load_sized_for_gpu(
    mut config: EngineConfig,
    model_path: &Path,
    device: Device,
) -> Result<LoadedForGpu> {
    let probe = MemoryProbe::new(&device)?;
    let at_start = probe.snapshot()?;
    if let Some(fraction) = config.gpu_memory_utilization {
        let requested = at_start.total_bytes as f64 * fraction;
        if (at_start.free_bytes as f64) < requested {
            return Err(EngineError::Config(format!(
                "gpu_memory_utilization {fraction} asks for {:.2} GiB of the GPU's {:.2} GiB, but only {:.2} GiB are free; \
                 lower --gpu-memory-utilization or free the GPU",
                requested / GIB,
                at_start.total_bytes as f64 / GIB,
                at_start.free_bytes as f64 / GIB
            )));
        }
    }
    probe.reset_peak()?;
    let options = config.load_options(device);
    let model = load_model_with(model_path, &options)?;
    // The draft's weights are counted with the target's; its step activations are smaller
    // than the profiled target step's and come at other times.
    let draft = load_draft_model(config.speculative.as_ref(), &options)?;
    let after_load = probe.snapshot()?;
    tracing::info!(
        dtype = ?model.dtype(),
        weights_gib = after_load.pool_used_bytes as f64 / GIB,
        "model loaded on the GPU"
    );
    if let Some(fraction) = config.gpu_memory_utilization {
        let (budget, model) = kv_cache_budget(&config, model, &probe, &at_start, fraction)?;
        tracing::info!(
            weights_gib = budget.weights_bytes as f64 / GIB,
            peak_step_gib = budget.peak_step_bytes as f64 / GIB,
            other_gib = budget.non_pool_bytes as f64 / GIB,
            kv_cache_gib = budget.kv_cache_bytes as f64 / GIB,
            "GPU memory: {:.0}% of {:.2} GiB = weights + peak step activations + CUDA/cuBLAS overhead + KV cache",
            fraction * 100.0,
            at_start.total_bytes as f64 / GIB
        );
        config.kv_cache_memory_bytes = Some(budget.kv_cache_bytes);
        return Ok(LoadedForGpu {
            config,
            model,
            draft,
        });
    }
    Ok(LoadedForGpu {
        config,
        model,
        draft,
    })
}
