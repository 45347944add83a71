//! Starting an engine: check the configuration against the model's shape, size the KV cache,
//! build the step executor, spawn the engine thread.

use std::path::Path;

use candle_core::{DType, Device};

use crate::attention::{CpuKvCache, PagedKvCache};
use crate::config::{EngineConfig, KvCacheDType};
use crate::core::EngineCore;
use crate::error::{EngineError, Result};
use crate::handle::{EngineHandle, EngineInfo};
use crate::kv::cache_size::{kv_cache_size, CacheSize, SizingLimits};
use crate::lora::load::LoraLoadOptions;
use crate::models::{load_model_with, CausalLm, ModelConfig};
use crate::runner::draft::DraftModel;
use crate::runner::{ModelRunner, StepExecutor};
use crate::spec_decode::draft_model::{check_draft_model, load_draft_model};
use crate::spec_decode::SpeculativeMethod;

/// Loads a model file and starts an engine on it, on `config.device`.
pub fn start_engine(config: EngineConfig, model_path: &Path) -> Result<EngineHandle> {
    config.validate()?;
    let device = config.device.open()?;
    if !device.is_cpu() {
        return start_on_gpu(config, model_path, device);
    }
    let format = config.weight_format;
    tracing::info!(
        weight_format = format.as_str(),
        resolved = format.resolved().as_str(),
        "CPU weights: --weight-format {} holds them as {} on this CPU",
        format.as_str(),
        format.resolved().as_str()
    );
    let model = load_model_with(model_path, &config.load_options(Device::Cpu))?;
    start_engine_with_model(config, model)
}

#[cfg(feature = "cuda")]
fn start_on_gpu(config: EngineConfig, model_path: &Path, device: Device) -> Result<EngineHandle> {
    let loaded = crate::gpu::load_sized_for_gpu(config, model_path, device)?;
    start_engine_with_models(loaded.config, loaded.model, loaded.draft)
}

#[cfg(not(feature = "cuda"))]
fn start_on_gpu(_: EngineConfig, _: &Path, device: Device) -> Result<EngineHandle> {
    Err(EngineError::Config(format!(
        "{device:?}: this build has no CUDA backend"
    )))
}

/// Starts an engine thread on an already loaded model (loading the draft model the
/// configuration names, if any, on the same device), with a KV cache on the model's device
/// (in `config.kv_cache_dtype` on the CPU, the compute dtype on a GPU), sized by
/// `config.kv_cache_memory_bytes`.
pub fn start_engine_with_model(
    config: EngineConfig,
    model: Box<dyn CausalLm>,
) -> Result<EngineHandle> {
    let options = config.load_options(model.device().clone());
    let draft = load_draft_model(config.speculative.as_ref(), &options)?;
    start_engine_with_models(config, model, draft)
}

/// `start_engine_with_model` with speculative decoding's draft model already loaded (`None`
/// unless `config` speculates with one), on the target's device. Both caches have the same
/// blocks and share `kv_cache_memory_bytes`.
pub fn start_engine_with_models(
    config: EngineConfig,
    model: Box<dyn CausalLm>,
    draft: Option<Box<dyn CausalLm>>,
) -> Result<EngineHandle> {
    let model_config = model.config().clone();
    let kv_dtype = kv_cache_dtype_on(&config, model.device(), model.dtype())?;
    let lora = config.lora.map(|limits| LoraLoadOptions {
        max_rank: limits.max_lora_rank,
        device: model.device().clone(),
        dtype: model.dtype(),
    });
    let draft_config = draft.as_ref().map(|d| d.config().clone());
    let models = Models {
        target: model_config,
        draft: draft_config,
    };
    let handle = start_with_executor_sized(config, models, kv_dtype, |info| {
        let kv_cache = new_kv_cache(
            model.device(),
            kv_dtype,
            &info.model,
            info.block_size,
            info.num_kv_blocks,
        )?;
        let mut runner = ModelRunner::new(model, kv_cache, info.block_size);
        if let Some(draft) = draft {
            let kv_cache = new_kv_cache(
                draft.device(),
                kv_dtype,
                draft.config(),
                info.block_size,
                info.num_kv_blocks,
            )?;
            runner = runner.with_draft(DraftModel::new(draft, kv_cache, info.block_size));
        }
        Ok(Box::new(runner))
    })?;
    Ok(match lora {
        Some(options) => handle.with_lora(options),
        None => handle,
    })
}

/// What the KV cache stores on `device`: on the CPU, `config.kv_cache_dtype` (`auto`: f16); on
/// a GPU, the model's compute dtype, which an explicit choice must equal (`validate` has
/// checked it against an explicit `--dtype`).
fn kv_cache_dtype_on(config: &EngineConfig, device: &Device, compute: DType) -> Result<DType> {
    if device.is_cpu() {
        return Ok(config.kv_cache_dtype.resolve_for_cpu());
    }
    match config.kv_cache_dtype.explicit_dtype() {
        Some(wanted) if wanted != compute => Err(EngineError::Config(format!(
            "--kv-cache-dtype {} is not supported on CUDA with a model computing in {compute:?}: \
             the GPU cache stores the compute dtype; use --kv-cache-dtype auto",
            config.kv_cache_dtype.as_str()
        ))),
        _ => Ok(compute),
    }
}

/// The paged KV cache of a model's device, storing `dtype`.
fn new_kv_cache(
    device: &Device,
    dtype: DType,
    model: &ModelConfig,
    block_size: usize,
    num_blocks: usize,
) -> Result<Box<dyn PagedKvCache>> {
    if device.is_cpu() {
        let shape = model.attn_shape();
        let cache =
            CpuKvCache::with_dtype(model.num_layers, shape, block_size, num_blocks, dtype)?;
        return Ok(Box::new(cache));
    }
    gpu_kv_cache(device, dtype, model, block_size, num_blocks)
}

#[cfg(feature = "cuda")]
fn gpu_kv_cache(
    device: &Device,
    dtype: DType,
    model: &ModelConfig,
    block_size: usize,
    num_blocks: usize,
) -> Result<Box<dyn PagedKvCache>> {
    let cache = crate::attention::cuda::CudaKvCache::new(
        device,
        dtype,
        model.num_layers,
        model.attn_shape(),
        block_size,
        num_blocks,
    )?;
    Ok(Box::new(cache))
}

#[cfg(not(feature = "cuda"))]
fn gpu_kv_cache(
    device: &Device,
    _: DType,
    _: &ModelConfig,
    _: usize,
    _: usize,
) -> Result<Box<dyn PagedKvCache>> {
    Err(EngineError::Config(format!(
        "{device:?}: this build has no CUDA backend"
    )))
}

/// Starts an engine thread whose steps run on the executor that `build_executor` makes. The KV
/// cache is sized for `model` as for a real model on the CPU (`EngineInfo::num_kv_blocks`, in
/// `config.kv_cache_dtype`), and the scheduler, limits and admission checks are those of a real
/// engine.
pub fn start_engine_with_executor(
    config: EngineConfig,
    model: ModelConfig,
    build_executor: impl FnOnce(&EngineInfo) -> Result<Box<dyn StepExecutor>>,
) -> Result<EngineHandle> {
    let kv_dtype = config.kv_cache_dtype.resolve_for_cpu();
    let models = Models {
        target: model,
        draft: None,
    };
    start_with_executor_sized(config, models, kv_dtype, build_executor)
}

/// The shapes of the models an engine runs: the target, and speculative decoding's draft.
struct Models {
    target: ModelConfig,
    draft: Option<ModelConfig>,
}

fn start_with_executor_sized(
    config: EngineConfig,
    models: Models,
    kv_dtype: DType,
    build_executor: impl FnOnce(&EngineInfo) -> Result<Box<dyn StepExecutor>>,
) -> Result<EngineHandle> {
    let (info, size) = engine_info(&config, models, kv_dtype)?;
    let executor = build_executor(&info)?;
    let (core, limits, stats, commands_tx) = EngineCore::build(&config, &info, executor);
    log_kv_cache(&info, size);
    log_speculation(&info);
    let thread = std::thread::Builder::new()
        .name("pagoda-engine".into())
        .spawn(move || run_in_thread_pool(core))
        .map_err(|e| EngineError::Config(format!("cannot spawn the engine thread: {e}")))?;
    Ok(EngineHandle::new(commands_tx, stats, info, limits, thread))
}

/// Logs how the engine speculates, when it does.
fn log_speculation(info: &EngineInfo) {
    let Some(config) = &info.speculative else {
        return;
    };
    let k = config.num_speculative_tokens;
    if let Some(max_num_running) = config.disable_by_batch_size {
        tracing::info!(
            disable_by_batch_size = max_num_running,
            "speculative decoding: no proposals in steps with {max_num_running} or more running \
             requests"
        );
    }
    match &config.method {
        SpeculativeMethod::Ngram(ngram) => tracing::info!(
            num_speculative_tokens = k,
            prompt_lookup_min = ngram.prompt_lookup_min,
            prompt_lookup_max = ngram.prompt_lookup_max,
            "speculative decoding: prompt lookup (ngram) proposes up to {k} tokens per step"
        ),
        SpeculativeMethod::DraftModel(draft) => tracing::info!(
            num_speculative_tokens = k,
            draft_model = %draft.model.display(),
            "speculative decoding: the draft model proposes up to {k} tokens per step"
        ),
    }
}

/// Logs the KV cache's size, element type and why it has that size.
fn log_kv_cache(info: &EngineInfo, size: CacheSize) {
    tracing::info!(
        kv_cache_dtype = info.kv_cache_dtype.as_str(),
        kv_cache_bytes = size.bytes,
        kv_capacity_tokens = info.kv_capacity_tokens,
        num_kv_blocks = info.num_kv_blocks,
        max_model_len = info.max_model_len,
        "KV cache: {:.1} MiB of {} holds {} tokens ({}): maximum concurrency at max_model_len {} is {:.2}",
        size.bytes as f64 / (1u64 << 20) as f64,
        info.kv_cache_dtype.as_str(),
        info.kv_capacity_tokens,
        size.reason.describe(),
        info.max_model_len,
        info.max_concurrency_at_max_model_len
    );
}

/// Checks the configuration against the model's shape, resolves `max_model_len` and sizes the
/// KV cache for keys and values stored in `kv_dtype`.
fn engine_info(
    config: &EngineConfig,
    models: Models,
    kv_dtype: DType,
) -> Result<(EngineInfo, CacheSize)> {
    config.validate()?;
    let Models { target: model, draft } = models;
    model.validate()?;
    let max_model_len = config.resolve_max_model_len(model.context_length)?;
    let mut kv_bytes_per_token = model.kv_bytes_per_token(kv_dtype);
    let wants_draft = config
        .speculative
        .as_ref()
        .is_some_and(|s| s.method.draft_model().is_some());
    match &draft {
        Some(draft) => {
            check_draft_model(&model, draft, max_model_len)?;
            // The draft's cache has the same blocks: a token costs both models' bytes.
            kv_bytes_per_token += draft.kv_bytes_per_token(kv_dtype);
        }
        None if wants_draft => {
            return Err(EngineError::Config(
                "--speculative-config: method \"draft_model\" needs an engine that runs models (not --mock)".into(),
            ))
        }
        None => {}
    }
    let limits = SizingLimits {
        max_num_seqs: config.max_num_seqs,
        max_model_len,
        block_size: config.block_size,
        kv_bytes_per_token,
    };
    let size = kv_cache_size(config.kv_cache_memory_bytes, &limits);
    let num_kv_blocks = size.bytes / (kv_bytes_per_token * config.block_size);
    let kv_capacity_tokens = num_kv_blocks * config.block_size;
    if kv_capacity_tokens < max_model_len {
        return Err(EngineError::Config(format!(
            "the KV cache ({} bytes of {kv_dtype:?}) holds {kv_capacity_tokens} tokens, fewer than max_model_len {max_model_len}; \
             raise kv_cache_memory (on a GPU: gpu_memory_utilization) or lower max_model_len",
            size.bytes
        )));
    }
    let info = EngineInfo {
        max_model_len,
        block_size: config.block_size,
        num_kv_blocks,
        kv_capacity_tokens,
        max_concurrency_at_max_model_len: kv_capacity_tokens as f64 / max_model_len as f64,
        kv_cache_dtype: KvCacheDType::of_dtype(kv_dtype),
        enable_prefix_caching: config.enable_prefix_caching,
        device: config.device,
        speculative: config.speculative.clone(),
        max_logprobs: config
            .max_logprobs
            .map_or(model.vocab_size, |max| max.min(model.vocab_size)),
        model,
    };
    Ok((info, size))
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
