//! `EngineConfig`: what an engine is started with — the scheduler's and KV cache's limits, the
//! device, and how the model is loaded and computed. `validate` checks what does not depend on
//! the model; `resolve_max_model_len` checks the rest once the model is known.

pub mod itl_target;

pub use itl_target::ItlTarget;

use crate::device::DeviceSpec;
use crate::error::EngineError;
pub use crate::kv_cache_dtype::{KvCacheDType, KV_CACHE_DTYPES};
pub use crate::models::dtype::ModelDType;
use crate::models::load::{LoadFormat, LoadOptions};
use crate::models::weight_format::WeightFormat;
use crate::request::DEFAULT_MAX_LOGPROBS;
use crate::spec_decode::SpeculativeConfig;

/// The most a KV cache takes when no budget is given (`kv_cache_memory_bytes: None` on the
/// CPU): 1 GiB, unless one sequence of `max_model_len` tokens needs more (see `kv::cache_size`).
pub const DEFAULT_KV_CACHE_MEMORY_BYTES: usize = 1 << 30;

/// How an engine runs: its limits, device and model loading. Build with `Default` and override,
/// then `validate`.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineConfig {
    /// Tokens per KV block.
    pub block_size: usize,
    /// Most sequences in one step's batch.
    pub max_num_seqs: usize,
    /// Most tokens (prefill + decode) computed in one step.
    pub max_num_batched_tokens: usize,
    /// Longest sequence (prompt + output) served; `None` = the model's context length.
    pub max_model_len: Option<usize>,
    /// Bytes the KV cache may use (on CPU: host memory). `None`: on the CPU, what
    /// `max_num_seqs` sequences of `max_model_len` tokens can use, at most
    /// `DEFAULT_KV_CACHE_MEMORY_BYTES`; on a GPU, sized by `gpu_memory_utilization`.
    pub kv_cache_memory_bytes: Option<usize>,
    /// What the KV cache stores keys and values in (`auto`: f16 on the CPU, the compute dtype
    /// on a GPU).
    pub kv_cache_dtype: KvCacheDType,
    /// Split long prompts across steps, mixed with other requests' decodes.
    pub enable_chunked_prefill: bool,
    /// While sequences decode, how long a step may take: prefill chunks are cut to fit it (with
    /// chunked prefill only).
    pub itl_target: ItlTarget,
    /// Reuse the KV blocks of previously computed prefixes.
    pub enable_prefix_caching: bool,
    /// Seed for requests that bring none (their seeds are drawn from this).
    pub seed: u64,
    /// How weights are held on CPU (see `WeightFormat`).
    pub weight_format: WeightFormat,
    /// The dtype to compute in.
    pub dtype: ModelDType,
    /// Where the engine runs.
    pub device: DeviceSpec,
    /// Where the weights come from (`Dummy`: random, for benchmarks).
    pub load_format: LoadFormat,
    /// On a GPU: size the KV cache to fill this fraction of the GPU's memory, after measuring
    /// the model and a worst-case step (`None`: `kv_cache_memory_bytes` sizes it).
    pub gpu_memory_utilization: Option<f64>,
    /// LoRA adapters may be loaded and used (`None`: they are refused).
    pub lora: Option<LoraLimits>,
    /// The most alternatives a request's `top_logprobs` / `prompt_logprobs` may ask for (`None`:
    /// the whole vocabulary).
    pub max_logprobs: Option<usize>,
    /// Speculative decoding (`--speculative-config`; `None`: off).
    pub speculative: Option<SpeculativeConfig>,
}

/// The limits on LoRA adapters (`--max-loras`, `--max-lora-rank`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoraLimits {
    /// Most distinct adapters in one step's batch.
    pub max_loras: usize,
    /// Highest adapter rank loaded.
    pub max_lora_rank: usize,
}

/// Highest `--max-lora-rank` accepted (vLLM's largest).
pub const MAX_LORA_RANK_LIMIT: usize = 512;

impl Default for LoraLimits {
    /// vLLM's defaults: one adapter per batch, rank up to 16.
    fn default() -> Self {
        Self {
            max_loras: 1,
            max_lora_rank: 16,
        }
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            block_size: 16,
            max_num_seqs: 256,
            max_num_batched_tokens: 2048,
            max_model_len: None,
            kv_cache_memory_bytes: None,
            kv_cache_dtype: KvCacheDType::Auto,
            enable_chunked_prefill: true,
            itl_target: ItlTarget::Auto,
            enable_prefix_caching: true,
            seed: 0,
            weight_format: WeightFormat::default(),
            dtype: ModelDType::default(),
            device: DeviceSpec::Cpu,
            load_format: LoadFormat::Auto,
            gpu_memory_utilization: None,
            lora: None,
            max_logprobs: Some(DEFAULT_MAX_LOGPROBS),
            speculative: None,
        }
    }
}

impl EngineConfig {
    /// Checks the values that do not depend on the model.
    pub fn validate(&self) -> Result<(), EngineError> {
        let fail = |m: String| Err(EngineError::Config(m));
        if self.block_size == 0 || !self.block_size.is_power_of_two() || self.block_size > 256 {
            return fail(format!(
                "block_size must be a power of two in 1..=256, got {}",
                self.block_size
            ));
        }
        if self.max_num_seqs == 0 {
            return fail("max_num_seqs must be at least 1".into());
        }
        if let Some(why) = self.weight_format.unsupported_here() {
            return fail(why);
        }
        if self.max_num_batched_tokens == 0 {
            return fail("max_num_batched_tokens must be at least 1".into());
        }
        if self.max_model_len == Some(0) {
            return fail("max_model_len must be at least 1".into());
        }
        if let ItlTarget::Fixed(target) = self.itl_target {
            if target.is_zero() || target > itl_target::MAX_ITL_TARGET {
                return fail(format!(
                    "itl_target must be in (0 s, 1 h] (Off for none), got {target:?}"
                ));
            }
        }
        if self.kv_cache_memory_bytes == Some(0) {
            return fail("kv_cache_memory must be more than 0 bytes".into());
        }
        if self.device.is_cuda() {
            self.kv_cache_dtype
                .check_for_gpu(self.dtype)
                .or_else(fail)?;
        }
        if let Some(lora) = self.lora {
            if lora.max_loras == 0 {
                return fail("max_loras must be at least 1".into());
            }
            if lora.max_lora_rank == 0 || lora.max_lora_rank > MAX_LORA_RANK_LIMIT {
                return fail(format!(
                    "max_lora_rank must be in 1..={MAX_LORA_RANK_LIMIT}, got {}",
                    lora.max_lora_rank
                ));
            }
        }
        if let Some(speculative) = &self.speculative {
            speculative.validate()?;
        }
        if let Some(fraction) = self.gpu_memory_utilization {
            if !self.device.is_cuda() {
                return fail("gpu_memory_utilization applies to CUDA devices only; size the CPU cache with kv_cache_memory".into());
            }
            if !(fraction > 0.0 && fraction <= 1.0) {
                return fail(format!(
                    "gpu_memory_utilization must be in (0, 1], got {fraction}"
                ));
            }
        }
        Ok(())
    }

    /// How the model is to be loaded onto `device`.
    pub(crate) fn load_options(&self, device: candle_core::Device) -> LoadOptions {
        LoadOptions {
            device,
            dtype: self.dtype,
            weight_format: self.weight_format,
            load_format: self.load_format,
            seed: self.seed,
        }
    }

    /// Resolves `max_model_len` against the model's context length and checks the step budget:
    /// without chunked prefill, one step must hold a whole prompt of `max_model_len` tokens.
    pub fn resolve_max_model_len(&self, model_context_len: usize) -> Result<usize, EngineError> {
        let max_model_len = self.max_model_len.unwrap_or(model_context_len);
        if max_model_len > model_context_len {
            return Err(EngineError::Config(format!(
                "max_model_len {max_model_len} exceeds the model's context length {model_context_len}"
            )));
        }
        if !self.enable_chunked_prefill && self.max_num_batched_tokens < max_model_len {
            return Err(EngineError::Config(format!(
                "without chunked prefill, max_num_batched_tokens ({}) must be at least max_model_len ({max_model_len})",
                self.max_num_batched_tokens
            )));
        }
        Ok(max_model_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        assert_eq!(EngineConfig::default().validate(), Ok(()));
    }

    #[test]
    fn rejects_bad_block_size() {
        let config = EngineConfig {
            block_size: 12,
            ..EngineConfig::default()
        };
        assert!(
            matches!(config.validate(), Err(EngineError::Config(m)) if m.contains("block_size"))
        );
    }

    #[test]
    fn a_gpu_refuses_a_kv_cache_dtype_other_than_its_compute_dtype() {
        let on_gpu = |kv_cache_dtype, dtype| EngineConfig {
            device: DeviceSpec::Cuda(0),
            kv_cache_dtype,
            dtype,
            ..EngineConfig::default()
        };
        assert_eq!(
            on_gpu(KvCacheDType::Auto, ModelDType::Auto).validate(),
            Ok(())
        );
        assert_eq!(
            on_gpu(KvCacheDType::F16, ModelDType::F16).validate(),
            Ok(())
        );
        for (kv, compute) in [
            (KvCacheDType::F16, ModelDType::Bf16),
            (KvCacheDType::F32, ModelDType::Auto),
            (KvCacheDType::Bf16, ModelDType::F32),
        ] {
            let error = on_gpu(kv, compute).validate().expect_err("refused");
            assert!(
                matches!(&error, EngineError::Config(m) if m.contains("--kv-cache-dtype") && m.contains("CUDA")),
                "{error}"
            );
        }
        let cpu = EngineConfig {
            kv_cache_dtype: KvCacheDType::Bf16,
            dtype: ModelDType::F16,
            ..EngineConfig::default()
        };
        assert_eq!(cpu.validate(), Ok(()));
    }

    #[test]
    fn max_model_len_defaults_to_model_and_is_capped() {
        let config = EngineConfig::default();
        assert_eq!(config.resolve_max_model_len(8192), Ok(8192));
        let too_long = EngineConfig {
            max_model_len: Some(9000),
            ..EngineConfig::default()
        };
        assert!(too_long.resolve_max_model_len(8192).is_err());
    }

    #[test]
    fn chunked_prefill_off_needs_a_budget_for_whole_prompts() {
        let config = EngineConfig {
            enable_chunked_prefill: false,
            max_num_batched_tokens: 512,
            ..EngineConfig::default()
        };
        assert!(config.resolve_max_model_len(2048).is_err());
        assert_eq!(config.resolve_max_model_len(512), Ok(512));
    }
}
