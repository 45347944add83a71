//! The command line of `pagoda-generate`: flags, their parsers, and what they turn into
//! (engine configuration, sampling parameters).

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{ArgGroup, Parser};
use pagoda_engine::config::ModelDType;
use pagoda_engine::models::generation_config::{SamplingDefaults, UnsetSampling};
use pagoda_engine::models::WeightFormat;
use pagoda_engine::{EngineConfig, EngineError, SamplingParams};
use pagoda_server::cli_values::{parse_bytes, parse_dtype, parse_weight_format};

/// Where `scripts/fetch-default-model.sh` puts the default model, relative to the repository root.
pub(crate) const DEFAULT_MODEL: &str = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

/// Generate text from a prompt with a GGUF model or a Hugging Face model directory, on CPU.
///
/// By default the prompt is a user message rendered with the model's chat template; the answer is
/// streamed to stdout and a summary line (tokens, TTFT, tok/s, finish reason) goes to stderr.
/// Engine logs go to stderr at info level (RUST_LOG overrides; --quiet silences them).
#[derive(Debug, Parser)]
#[command(name = "pagoda-generate", version)]
#[command(group(ArgGroup::new("input").required(true).args(["prompt_arg", "prompt"])))]
pub(crate) struct Args {
    /// The prompt (or pass it with --prompt).
    #[arg(value_name = "PROMPT")]
    pub(crate) prompt_arg: Option<String>,

    /// The prompt, instead of the positional argument.
    #[arg(long, value_name = "TEXT")]
    pub(crate) prompt: Option<String>,

    /// GGUF model file or Hugging Face model directory (relative paths are taken from the current
    /// directory).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_MODEL)]
    pub(crate) model: PathBuf,

    /// A system message placed before the prompt. [default: none]
    #[arg(long, value_name = "TEXT", conflicts_with = "raw")]
    pub(crate) system: Option<String>,

    /// Use the prompt as-is, without the chat template.
    #[arg(long)]
    pub(crate) raw: bool,

    /// Most tokens to generate.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub(crate) max_tokens: usize,

    /// Sampling temperature; 0 = greedy (always the most likely token).
    /// [default: the model's generation_config.json, else 0]
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    pub(crate) temperature: Option<f32>,

    /// Nucleus sampling: keep the most likely tokens up to this total probability; 1 = off.
    /// [default: the model's generation_config.json, else 1]
    #[arg(long, value_name = "P", allow_negative_numbers = true)]
    pub(crate) top_p: Option<f32>,

    /// Keep only the K most likely tokens; 0 = off. [default: the model's generation_config.json,
    /// else 0]
    #[arg(long, value_name = "K")]
    pub(crate) top_k: Option<usize>,

    /// Drop tokens less likely than this fraction of the top token's probability; 0 = off.
    /// [default: the model's generation_config.json, else 0]
    #[arg(long, value_name = "P", allow_negative_numbers = true)]
    pub(crate) min_p: Option<f32>,

    /// Penalise tokens already in the prompt or output (> 1 discourages repeats); 1 = off.
    /// [default: the model's generation_config.json, else 1]
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub(crate) repetition_penalty: Option<f32>,

    /// Seed for sampling, for reproducible output. [default: drawn from the engine's seed]
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,

    /// Keep generating past the model's end-of-sequence tokens (until --max-tokens).
    #[arg(long)]
    pub(crate) ignore_eos: bool,

    /// How projection weights are held in memory: f32 (dequantized, exact), int8 (8-bit weights,
    /// f32 activations) or native (the file's own quantization). [default: the engine's]
    #[arg(long, value_name = "FORMAT", default_value = WeightFormat::default().as_str(), value_parser = parse_weight_format)]
    pub(crate) weight_format: WeightFormat,

    /// Compute dtype: auto, float32, float16 or bfloat16 (vLLM's names). The CPU path computes in
    /// float32 whatever the checkpoint's dtype; float16/bfloat16 are accepted with a warning.
    #[arg(long, value_name = "DTYPE", default_value = "auto", value_parser = parse_dtype)]
    pub(crate) dtype: ModelDType,

    /// KV-cache budget in bytes; KiB, MiB and GiB suffixes are accepted (e.g. 512MiB).
    #[arg(long, value_name = "BYTES", default_value = "1GiB", value_parser = parse_bytes)]
    pub(crate) kv_cache_memory: usize,

    /// Longest sequence (prompt + output) in tokens. [default: the model's context length]
    #[arg(long, value_name = "N")]
    pub(crate) max_model_len: Option<usize>,

    /// Reuse the KV blocks of previously computed prefixes (on by default).
    #[arg(long, overrides_with = "no_enable_prefix_caching")]
    pub(crate) enable_prefix_caching: bool,

    /// Turn prefix caching off.
    #[arg(long, overrides_with = "enable_prefix_caching")]
    pub(crate) no_enable_prefix_caching: bool,

    /// Print one JSON object (text, finish_reason, usage, ttft_ms, total_ms, tokens_per_s)
    /// instead of streaming text.
    #[arg(long)]
    pub(crate) json: bool,

    /// No engine logs and no summary line on stderr (errors are still printed).
    #[arg(long)]
    pub(crate) quiet: bool,
}

/// Sampling parameters from the flags, checked before the (slow) model load.
pub(crate) fn sampling_params(args: &Args) -> anyhow::Result<SamplingParams> {
    let sampling = SamplingParams {
        temperature: args.temperature.unwrap_or(0.0),
        top_p: args.top_p.unwrap_or(1.0),
        top_k: args.top_k.unwrap_or(0),
        min_p: args.min_p.unwrap_or(0.0),
        repetition_penalty: args.repetition_penalty.unwrap_or(1.0),
        seed: args.seed,
        ..SamplingParams::default()
    };
    check_sampling(sampling)
}

/// The flags' sampling values, with the model's generation_config.json defaults for the rest.
pub(crate) fn with_model_defaults(
    args: &Args,
    mut sampling: SamplingParams,
    defaults: &SamplingDefaults,
) -> anyhow::Result<SamplingParams> {
    let unset = UnsetSampling {
        temperature: args.temperature.is_none(),
        top_p: args.top_p.is_none(),
        top_k: args.top_k.is_none(),
        min_p: args.min_p.is_none(),
        repetition_penalty: args.repetition_penalty.is_none(),
    };
    defaults.fill(&mut sampling, unset);
    check_sampling(sampling)
        .context("the model's generation_config.json has invalid sampling values")
}

fn check_sampling(sampling: SamplingParams) -> anyhow::Result<SamplingParams> {
    match sampling.validate() {
        Ok(()) => Ok(sampling),
        Err(EngineError::InvalidRequest { field, message }) => {
            bail!("invalid --{}: {message}", field.replace('_', "-"))
        }
        Err(other) => Err(other.into()),
    }
}

pub(crate) fn engine_config(args: &Args) -> EngineConfig {
    EngineConfig {
        max_model_len: args.max_model_len,
        kv_cache_memory_bytes: args.kv_cache_memory,
        weight_format: args.weight_format,
        dtype: args.dtype,
        enable_prefix_caching: !args.no_enable_prefix_caching,
        ..EngineConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_caching_is_on_unless_turned_off_last_flag_wins() {
        use clap::Parser;
        let config = |flags: &[&str]| {
            let argv = [&["pagoda-generate"], flags, &["hi"]].concat();
            engine_config(&Args::try_parse_from(argv).expect("valid flags")).enable_prefix_caching
        };
        assert!(config(&[]));
        assert!(!config(&["--no-enable-prefix-caching"]));
        assert!(config(&[
            "--no-enable-prefix-caching",
            "--enable-prefix-caching"
        ]));
        assert!(!config(&[
            "--enable-prefix-caching",
            "--no-enable-prefix-caching"
        ]));
    }

    #[test]
    fn model_defaults_fill_only_the_flags_left_unset() {
        use clap::Parser;
        let args =
            Args::try_parse_from(["pagoda-generate", "--top-k", "3", "hi"]).expect("valid flags");
        let defaults = SamplingDefaults {
            temperature: Some(0.6),
            top_k: Some(20),
            top_p: Some(0.9),
            ..Default::default()
        };
        let sampling =
            with_model_defaults(&args, sampling_params(&args).expect("valid"), &defaults)
                .expect("valid");
        assert_eq!(
            (sampling.temperature, sampling.top_k, sampling.top_p),
            (0.6, 3, 0.9)
        );
        let greedy = with_model_defaults(
            &args,
            sampling_params(&args).expect("valid"),
            &SamplingDefaults::default(),
        );
        assert_eq!(
            greedy.expect("valid").temperature,
            0.0,
            "no defaults: greedy"
        );
        let bad = SamplingDefaults {
            top_p: Some(7.0),
            ..Default::default()
        };
        assert!(with_model_defaults(&args, sampling_params(&args).expect("valid"), &bad).is_err());
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Args::command().debug_assert();
    }
}
