//! `pagoda-generate`: a small command-line way to generate from a prompt with any supported model
//! (for people and tests). Streams text to stdout and a one-line summary to stderr, or prints one
//! JSON object with `--json`.

mod args;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};
use args::{sampling_params, with_model_defaults, Args};
use clap::Parser;
use pagoda_engine::args::default_model::{find_default_model, DEFAULT_MODEL_FILE};
use pagoda_engine::{SamplingParams, StopConditions};
use pagoda_server::generate::{Generation, TextGenerator};
use pagoda_text::template::ChatMessage;
use serde::Serialize;
use tracing_subscriber::EnvFilter;

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
    pagoda_engine::cpu_threads::use_one_cpu_pool();
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
    let model = model_path(args)?;
    let config = args.engine.engine_config()?;
    let started = Instant::now();
    let generator = TextGenerator::load(&model, config)
        .with_context(|| format!("cannot load {}", model.display()))?;
    tracing::info!(
        "loaded {} in {:.1} s",
        model.display(),
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

/// `--model`, else a copy of the default model already on disk: this command never downloads.
fn model_path(args: &Args) -> anyhow::Result<PathBuf> {
    let Some(path) = args.engine.explicit_model() else {
        return find_default_model().with_context(|| {
            format!(
                "default model missing: {DEFAULT_MODEL_FILE} is not in $PAGODA_MODEL_DIR, ./models \
                 (relative to {}) or ~/.cache/pagoda/models; run scripts/fetch-default-model.sh \
                 from the repository root, or pass --model PATH",
                std::env::current_dir().map_or_else(|_| "?".into(), |d| d.display().to_string())
            )
        });
    };
    if path.is_file() || path.join("config.json").is_file() {
        return Ok(path.to_path_buf());
    }
    bail!(
        "model {} not found; pass --model PATH to a .gguf file or a Hugging Face model directory \
         (scripts/fetch-default-model.sh fetches the default model)",
        path.display()
    )
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
