//! `pagoda-generate`: a small command-line way to generate from a prompt with any supported model
//! (for people and tests). Streams text to stdout and a one-line summary to stderr, or prints one
//! JSON object with `--json`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::{ArgGroup, Parser};
use pagoda_engine::config::ModelDType;
use pagoda_engine::models::generation_config::{SamplingDefaults, UnsetSampling};
use pagoda_engine::models::WeightFormat;
use pagoda_engine::{EngineConfig, EngineError, SamplingParams, StopConditions};
use pagoda_server::generate::{Generation, TextGenerator};
use pagoda_server::template::ChatMessage;
use serde::Serialize;
use tracing_subscriber::EnvFilter;

/// Where `scripts/fetch-default-model.sh` puts the default model, relative to the repository root.
const DEFAULT_MODEL: &str = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

/// Generate text from a prompt with a GGUF model or a Hugging Face model directory, on CPU.
///
/// By default the prompt is a user message rendered with the model's chat template; the answer is
/// streamed to stdout and a summary line (tokens, TTFT, tok/s, finish reason) goes to stderr.
/// Engine logs go to stderr at info level (RUST_LOG overrides; --quiet silences them).
#[derive(Debug, Parser)]
#[command(name = "pagoda-generate", version)]
#[command(group(ArgGroup::new("input").required(true).args(["prompt_arg", "prompt"])))]
struct Args {
    /// The prompt (or pass it with --prompt).
    #[arg(value_name = "PROMPT")]
    prompt_arg: Option<String>,

    /// The prompt, instead of the positional argument.
    #[arg(long, value_name = "TEXT")]
    prompt: Option<String>,

    /// GGUF model file or Hugging Face model directory (relative paths are taken from the current
    /// directory).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_MODEL)]
    model: PathBuf,

    /// A system message placed before the prompt. [default: none]
    #[arg(long, value_name = "TEXT", conflicts_with = "raw")]
    system: Option<String>,

    /// Use the prompt as-is, without the chat template.
    #[arg(long)]
    raw: bool,

    /// Most tokens to generate.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_tokens: usize,

    /// Sampling temperature; 0 = greedy (always the most likely token).
    /// [default: the model's generation_config.json, else 0]
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    temperature: Option<f32>,

    /// Nucleus sampling: keep the most likely tokens up to this total probability; 1 = off.
    /// [default: the model's generation_config.json, else 1]
    #[arg(long, value_name = "P", allow_negative_numbers = true)]
    top_p: Option<f32>,

    /// Keep only the K most likely tokens; 0 = off. [default: the model's generation_config.json,
    /// else 0]
    #[arg(long, value_name = "K")]
    top_k: Option<usize>,

    /// Drop tokens less likely than this fraction of the top token's probability; 0 = off.
    /// [default: the model's generation_config.json, else 0]
    #[arg(long, value_name = "P", allow_negative_numbers = true)]
    min_p: Option<f32>,

    /// Penalise tokens already in the prompt or output (> 1 discourages repeats); 1 = off.
    /// [default: the model's generation_config.json, else 1]
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    repetition_penalty: Option<f32>,

    /// Seed for sampling, for reproducible output. [default: drawn from the engine's seed]
    #[arg(long, value_name = "N")]
    seed: Option<u64>,

    /// Keep generating past the model's end-of-sequence tokens (until --max-tokens).
    #[arg(long)]
    ignore_eos: bool,

    /// How projection weights are held in memory: f32 (dequantized, exact), int8 (8-bit weights,
    /// f32 activations) or native (the file's own quantization). [default: the engine's]
    #[arg(long, value_name = "FORMAT", default_value = WeightFormat::default().as_str(), value_parser = parse_weight_format)]
    weight_format: WeightFormat,

    /// Compute dtype: auto, float32, float16 or bfloat16 (vLLM's names). The CPU path computes in
    /// float32 whatever the checkpoint's dtype; float16/bfloat16 are accepted with a warning.
    #[arg(long, value_name = "DTYPE", default_value = "auto", value_parser = parse_dtype)]
    dtype: ModelDType,

    /// KV-cache budget in bytes; KiB, MiB and GiB suffixes are accepted (e.g. 512MiB).
    #[arg(long, value_name = "BYTES", default_value = "1GiB", value_parser = parse_bytes)]
    kv_cache_memory: usize,

    /// Longest sequence (prompt + output) in tokens. [default: the model's context length]
    #[arg(long, value_name = "N")]
    max_model_len: Option<usize>,

    /// Reuse the KV blocks of previously computed prefixes (on by default).
    #[arg(long, overrides_with = "no_enable_prefix_caching")]
    enable_prefix_caching: bool,

    /// Turn prefix caching off.
    #[arg(long, overrides_with = "enable_prefix_caching")]
    no_enable_prefix_caching: bool,

    /// Print one JSON object (text, finish_reason, usage, ttft_ms, total_ms, tokens_per_s)
    /// instead of streaming text.
    #[arg(long)]
    json: bool,

    /// No engine logs and no summary line on stderr (errors are still printed).
    #[arg(long)]
    quiet: bool,
}

/// What `--json` prints.
#[derive(Debug, Serialize)]
struct JsonOutput<'a> {
    text: &'a str,
    finish_reason: &'static str,
    usage: JsonUsage,
    ttft_ms: Option<f64>,
    total_ms: f64,
    tokens_per_s: f64,
}

#[derive(Debug, Serialize)]
struct JsonUsage {
    prompt_tokens: usize,
    completion_tokens: usize,
    total_tokens: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    init_logging(args.quiet);
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> anyhow::Result<()> {
    let sampling = sampling_params(args)?;
    if args.max_tokens == 0 {
        bail!("--max-tokens must be at least 1");
    }
    let stop = StopConditions {
        max_tokens: Some(args.max_tokens),
        ignore_eos: args.ignore_eos,
        ..StopConditions::default()
    };
    check_model_exists(&args.model)?;
    let started = Instant::now();
    let generator = TextGenerator::load(&args.model, engine_config(args))
        .with_context(|| format!("cannot load {}", args.model.display()))?;
    tracing::info!(
        "loaded {} in {:.1} s",
        args.model.display(),
        started.elapsed().as_secs_f64()
    );
    let defaults = generator.handle().info().model.sampling_defaults;
    let sampling = with_model_defaults(args, sampling, &defaults)?;
    let prompt_ids = prompt_ids(&generator, args)?;
    if args.json {
        let generation = generator.generate(prompt_ids, sampling, stop, |_| {})?;
        println!("{}", serde_json::to_string(&json_output(&generation))?);
    } else {
        let generation = stream_to_stdout(&generator, prompt_ids, sampling, stop)?;
        if !args.quiet {
            eprintln!("{}", summary(&generation));
        }
    }
    Ok(())
}

/// Sampling parameters from the flags, checked before the (slow) model load.
fn sampling_params(args: &Args) -> anyhow::Result<SamplingParams> {
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
fn with_model_defaults(
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

fn check_model_exists(path: &Path) -> anyhow::Result<()> {
    if path.is_file() || path.join("config.json").is_file() {
        return Ok(());
    }
    if path == Path::new(DEFAULT_MODEL) {
        bail!(
            "default model missing: {} not found (relative to {}); run scripts/fetch-default-model.sh \
             from the repository root, or pass --model PATH",
            path.display(),
            std::env::current_dir().map_or_else(|_| "?".into(), |d| d.display().to_string())
        );
    }
    bail!(
        "model {} not found; pass --model PATH to a .gguf file or a Hugging Face model directory \
         (scripts/fetch-default-model.sh fetches the default model)",
        path.display()
    )
}

fn engine_config(args: &Args) -> EngineConfig {
    EngineConfig {
        max_model_len: args.max_model_len,
        kv_cache_memory_bytes: args.kv_cache_memory,
        weight_format: args.weight_format,
        dtype: args.dtype,
        enable_prefix_caching: !args.no_enable_prefix_caching,
        ..EngineConfig::default()
    }
}

fn prompt_ids(generator: &TextGenerator, args: &Args) -> anyhow::Result<Vec<u32>> {
    let prompt = args
        .prompt
        .as_deref()
        .or(args.prompt_arg.as_deref())
        .context("a prompt is required")?;
    if args.raw {
        return Ok(generator.raw_prompt_ids(prompt)?);
    }
    let mut messages = Vec::new();
    if let Some(system) = &args.system {
        messages.push(ChatMessage::new("system", system.as_str()));
    }
    messages.push(ChatMessage::new("user", prompt));
    Ok(generator.chat_prompt_ids(&messages)?)
}

fn stream_to_stdout(
    generator: &TextGenerator,
    prompt_ids: Vec<u32>,
    sampling: SamplingParams,
    stop: StopConditions,
) -> anyhow::Result<Generation> {
    let mut out = std::io::stdout().lock();
    // A closed stdout (`| head`) must not panic mid-generation; the text is simply lost.
    let generation = generator.generate(prompt_ids, sampling, stop, |delta| {
        let _ = out.write_all(delta.as_bytes());
        let _ = out.flush();
    })?;
    if !generation.text.ends_with('\n') {
        let _ = writeln!(out);
    }
    Ok(generation)
}

fn summary(generation: &Generation) -> String {
    let ttft = generation.ttft.map_or_else(
        || "-".into(),
        |t| format!("{:.0} ms", t.as_secs_f64() * 1e3),
    );
    format!(
        "[{} prompt + {} generated tokens in {:.2} s, TTFT {ttft}, {:.1} tok/s, finish reason: {}]",
        generation.usage.prompt_tokens,
        generation.usage.completion_tokens,
        generation.total.as_secs_f64(),
        generation.tokens_per_s(),
        generation.finish_reason.as_str()
    )
}

fn json_output(generation: &Generation) -> JsonOutput<'_> {
    let usage = generation.usage;
    JsonOutput {
        text: &generation.text,
        finish_reason: generation.finish_reason.as_str(),
        usage: JsonUsage {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage.prompt_tokens + usage.completion_tokens,
        },
        ttft_ms: generation.ttft.map(|t| t.as_secs_f64() * 1e3),
        total_ms: generation.total.as_secs_f64() * 1e3,
        tokens_per_s: generation.tokens_per_s(),
    }
}

fn init_logging(quiet: bool) {
    let default_level = if quiet { "error" } else { "info" };
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// The `--weight-format` values, as `WeightFormat::parse` spells them.
const WEIGHT_FORMATS: &[&str] = &["f32", "int8", "native"];

fn parse_dtype(text: &str) -> Result<ModelDType, String> {
    ModelDType::parse(text).ok_or_else(|| {
        format!("unknown dtype {text:?}; expected auto, float32, float16 or bfloat16")
    })
}

fn parse_weight_format(text: &str) -> Result<WeightFormat, String> {
    WeightFormat::parse(text).ok_or_else(|| {
        format!(
            "unknown weight format {text:?} (one of: {})",
            WEIGHT_FORMATS.join(", ")
        )
    })
}

/// `1073741824`, `1024KiB`, `512MiB`, `1GiB` (also `K`/`M`/`G` and `KB`/`MB`/`GB`, all powers of 2).
fn parse_bytes(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: usize = digits.parse().map_err(|_| {
        format!("expected a number of bytes such as 1073741824 or 1GiB, got {text:?}")
    })?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        other => return Err(format!("unknown unit {other:?} (use KiB, MiB or GiB)")),
    };
    number
        .checked_mul(1 << shift)
        .filter(|&bytes| bytes > 0)
        .ok_or_else(|| format!("{text:?} must be more than 0 and fit in memory"))
}

#[cfg(test)]
mod tests {
    use pagoda_engine::config::DEFAULT_KV_CACHE_MEMORY_BYTES;

    use super::*;

    #[test]
    fn byte_sizes_parse_with_binary_units() {
        assert_eq!(parse_bytes("1GiB"), Ok(DEFAULT_KV_CACHE_MEMORY_BYTES));
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("2 k"), Ok(2048));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("1TiB").is_err());
        assert!(parse_bytes("lots").is_err());
    }

    #[test]
    fn every_documented_weight_format_parses() {
        for name in WEIGHT_FORMATS {
            assert!(parse_weight_format(name).is_ok(), "{name}");
        }
        assert!(WEIGHT_FORMATS.contains(&WeightFormat::default().as_str()));
        assert!(parse_weight_format("q4").is_err_and(|e| e.contains("f32, int8, native")));
    }

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
