//! The command line of `pagoda-generate`: flags, their parsers, and what they turn into
//! (engine configuration, sampling parameters).

use anyhow::{bail, Context};
use clap::{ArgGroup, Parser};
use pagoda_engine::models::generation_config::{SamplingDefaults, UnsetSampling};
use pagoda_engine::{EngineArgs, EngineError, SamplingParams};

/// Generate text from a prompt with a GGUF model or a Hugging Face model directory.
///
/// By default the prompt is a user message rendered with the model's chat template; the answer is
/// streamed to stdout and a summary line (tokens, TTFT, tok/s, finish reason) goes to stderr.
/// Engine logs go to stderr at info level (RUST_LOG overrides; --quiet silences them).
#[derive(Debug, Parser)]
#[command(name = "pagoda-generate", version)]
#[command(group(ArgGroup::new("input").required(true).args(["prompt_arg", "prompt"])))]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) engine: EngineArgs,

    /// The prompt (or pass it with --prompt).
    #[arg(value_name = "PROMPT")]
    pub(crate) prompt_arg: Option<String>,

    /// The prompt, instead of the positional argument.
    #[arg(long, value_name = "TEXT")]
    pub(crate) prompt: Option<String>,

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

    /// Keep generating past the model's end-of-sequence tokens (until --max-tokens).
    #[arg(long)]
    pub(crate) ignore_eos: bool,

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_flags_are_the_engines() {
        use clap::Parser;
        let args = Args::try_parse_from([
            "pagoda-generate",
            "--no-enable-prefix-caching",
            "--kv-cache-memory",
            "256MiB",
            "--device",
            "cpu",
            "hi",
        ])
        .expect("valid flags");
        let config = args.engine.engine_config().expect("valid");
        assert!(!config.enable_prefix_caching);
        assert_eq!(config.kv_cache_memory_bytes, Some(256 << 20));
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
