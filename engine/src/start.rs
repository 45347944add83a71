//! Starting an engine: check the configuration against the model's shape, size the KV cache,
//! build the step executor, spawn the engine thread.

use std::path::Path;

use candle_core::Device;

use crate::attention::CpuKvCache;
use crate::config::EngineConfig;
use crate::core::EngineCore;
use crate::error::{EngineError, Result};
use crate::handle::{EngineHandle, EngineInfo};
use crate::models::{load_model, CausalLm, ModelConfig};
use crate::runner::{ModelRunner, StepExecutor};

/// Loads a model file and starts an engine on it (CPU).
pub fn start_engine(config: EngineConfig, model_path: &Path) -> Result<EngineHandle> {
    config.dtype.resolve_for_cpu();
    let model = load_model(model_path, &Device::Cpu, config.weight_format)?;
    start_engine_with_model(config, model)
}

/// Starts an engine thread on an already loaded model.
pub fn start_engine_with_model(
    config: EngineConfig,
    model: Box<dyn CausalLm>,
) -> Result<EngineHandle> {
    let model_config = model.config().clone();
    start_engine_with_executor(config, model_config, |info| {
        let cfg = &info.model;
        let kv_cache = CpuKvCache::new(
            cfg.num_layers,
            cfg.attn_shape(),
            info.block_size,
            info.num_kv_blocks,
        );
        let runner = ModelRunner::new(model, Box::new(kv_cache), info.block_size);
        Ok(Box::new(runner))
    })
}

/// Starts an engine thread whose steps run on the executor that `build_executor` makes. The KV
/// cache is sized for `model` as for a real model (`EngineInfo::num_kv_blocks`), and the
/// scheduler, limits and admission checks are those of a real engine.
pub fn start_engine_with_executor(
    config: EngineConfig,
    model: ModelConfig,
    build_executor: impl FnOnce(&EngineInfo) -> Result<Box<dyn StepExecutor>>,
) -> Result<EngineHandle> {
    let info = engine_info(&config, model)?;
    let executor = build_executor(&info)?;
    let (core, limits, stats, commands_tx) = EngineCore::build(&config, &info, executor);
    tracing::info!(
        kv_capacity_tokens = info.kv_capacity_tokens,
        num_kv_blocks = info.num_kv_blocks,
        max_model_len = info.max_model_len,
        "KV cache holds {} tokens: maximum concurrency at max_model_len {} is {:.2}",
        info.kv_capacity_tokens,
        info.max_model_len,
        info.max_concurrency_at_max_model_len
    );
    let thread = std::thread::Builder::new()
        .name("pagoda-engine".into())
        .spawn(move || run_in_thread_pool(core))
        .map_err(|e| EngineError::Config(format!("cannot spawn the engine thread: {e}")))?;
    Ok(EngineHandle::new(commands_tx, stats, info, limits, thread))
}

/// Checks the configuration against the model's shape, resolves `max_model_len` and sizes the
/// KV cache.
pub fn engine_info(config: &EngineConfig, model: ModelConfig) -> Result<EngineInfo> {
    config.validate()?;
    model.validate()?;
    let max_model_len = config.resolve_max_model_len(model.context_length)?;
    let num_kv_blocks = num_kv_blocks(config, &model);
    let kv_capacity_tokens = num_kv_blocks * config.block_size;
    if kv_capacity_tokens < max_model_len {
        return Err(EngineError::Config(format!(
            "the KV cache ({} bytes) holds {kv_capacity_tokens} tokens, fewer than max_model_len {max_model_len}; \
             raise kv_cache_memory or lower max_model_len",
            config.kv_cache_memory_bytes
        )));
    }
    Ok(EngineInfo {
        max_model_len,
        block_size: config.block_size,
        num_kv_blocks,
        kv_capacity_tokens,
        max_concurrency_at_max_model_len: kv_capacity_tokens as f64 / max_model_len as f64,
        model,
    })
}

/// Sizes the KV cache from the memory budget: whole blocks of all layers' keys and values.
fn num_kv_blocks(config: &EngineConfig, model: &ModelConfig) -> usize {
    let bytes_per_block =
        CpuKvCache::bytes_per_token(model.num_layers, model.attn_shape()) * config.block_size;
    config.kv_cache_memory_bytes / bytes_per_block
}

/// Runs the engine loop on a worker of its own rayon pool, so that the parallel kernels it calls
/// start on the current thread instead of being handed to other threads and waited for.
fn run_in_thread_pool(core: EngineCore) {
    match rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("pagoda-worker-{i}"))
        .build()
    {
        Ok(pool) => pool.install(move || core.run()),
        Err(error) => {
            tracing::warn!(%error, "no dedicated thread pool; using the global one");
            core.run();
        }
    }
}
