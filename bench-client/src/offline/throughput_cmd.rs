//! `pagoda-bench throughput`: every request submitted at once to the engine in this process,
//! tokens per second over the whole run (like `vllm bench throughput`; see
//! [`super::throughput`]).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};
use pagoda_text::prompt_side::PromptSide;

use pagoda_engine::EngineArgs;

use super::engine::start_in_background;
use super::throughput::{random_requests, run_throughput, ThroughputReport};
use crate::cli::sweep_output::write_json;
use crate::dataset::{build_workload, DatasetConfig};

/// Where the prompts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OfflineDataset {
    /// Random token ids of exactly --input-len tokens (no tokenizer needed).
    Random,
    /// A ShareGPT JSON file (--dataset-path).
    Sharegpt,
    /// A JSONL file with one prompt or message list per line (--dataset-path).
    Custom,
}

/// Submit every request at once to the engine in process and measure tokens per second.
#[derive(Debug, Clone, Args)]
pub struct ThroughputCmdArgs {
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Number of requests (a dataset with fewer is cycled).
    #[arg(long, default_value_t = 1000)]
    pub num_prompts: usize,
    /// random: prompt tokens of every request.
    #[arg(long, default_value_t = 1024)]
    pub input_len: usize,
    /// Tokens every request generates (EOS ignored). [default: 128 for random; each request's
    /// own for sharegpt and custom]
    #[arg(long)]
    pub output_len: Option<usize>,
    /// Prompt source. sharegpt and custom prompts are tokenized (as plain text, the turns of a
    /// conversation joined by newlines, BOS added as the tokenizer does) by the model's
    /// tokenizer; requests longer than --max-model-len are left out.
    #[arg(long, value_enum, default_value = "random")]
    pub dataset_name: OfflineDataset,
    /// The sharegpt or custom file.
    #[arg(long, value_name = "PATH", required_if_eq_any = [("dataset_name", "sharegpt"), ("dataset_name", "custom")])]
    pub dataset_path: Option<PathBuf>,
    /// Save the throughput JSON (vLLM's keys plus token totals) here.
    #[arg(long, value_name = "PATH")]
    pub output_json: Option<PathBuf>,
}

/// Output tokens of a random request when --output-len is not given.
pub const DEFAULT_RANDOM_OUTPUT_LEN: usize = 128;

/// `throughput`: starts the engine, builds the requests, runs them, prints vLLM's line, saves.
pub async fn execute(args: ThroughputCmdArgs) -> anyhow::Result<ThroughputReport> {
    let model_path = args.engine.model_path()?;
    let engine = start_in_background(&args.engine, &model_path).await?;
    let info = engine.handle.info();
    let (vocab_size, max_model_len) = (info.model.vocab_size, info.max_model_len);
    let requests = match args.dataset_name {
        OfflineDataset::Random => random_requests(
            args.num_prompts,
            args.input_len,
            args.output_len.unwrap_or(DEFAULT_RANDOM_OUTPUT_LEN),
            vocab_size,
            args.engine.seed,
        ),
        OfflineDataset::Sharegpt | OfflineDataset::Custom => {
            let (args, path) = (args.clone(), model_path.clone());
            tokio::task::spawn_blocking(move || dataset_requests(&args, &path, max_model_len))
                .await??
        }
    };
    eprintln!(
        "throughput: {} requests submitted at once to {}",
        requests.len(),
        model_path.display()
    );
    let report = run_throughput(&engine.handle, requests).await?;
    print!("{}", report.to_text());
    if let Some(path) = &args.output_json {
        write_json(path, &report.to_json())?;
        eprintln!("throughput results saved to {}", path.display());
    }
    Ok(report)
}

/// The dataset's prompts as token ids of the model's tokenizer, with their output lengths;
/// requests that cannot fit `max_model_len` (or generate nothing) are left out, and counted.
fn dataset_requests(
    args: &ThroughputCmdArgs,
    model_path: &Path,
    max_model_len: usize,
) -> anyhow::Result<Vec<(Vec<u32>, usize)>> {
    let path = args
        .dataset_path
        .clone()
        .context("--dataset-path is required for this dataset")?;
    let config = match args.dataset_name {
        OfflineDataset::Custom => DatasetConfig::CustomJsonl {
            path,
            output_tokens: args.output_len,
        },
        _ => DatasetConfig::ShareGpt {
            path,
            output_tokens: args.output_len,
        },
    };
    let side = PromptSide::load(model_path)
        .with_context(|| format!("cannot load a tokenizer from {}", model_path.display()))?;
    let specs = build_workload(&config, args.num_prompts, &side.tokenizer, args.engine.seed)?;
    let mut requests = Vec::with_capacity(specs.len());
    for spec in &specs {
        let ids = side.tokenizer.encode(&spec.prompt.as_text(), true)?;
        if !ids.is_empty()
            && spec.output_tokens > 0
            && ids.len() + spec.output_tokens <= max_model_len
        {
            requests.push((ids, spec.output_tokens));
        }
    }
    let num_left_out = specs.len() - requests.len();
    if num_left_out > 0 {
        eprintln!(
            "note: {num_left_out} of {} requests left out: empty, or longer than max_model_len {max_model_len}",
            specs.len()
        );
    }
    Ok(requests)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: ThroughputCmdArgs,
    }

    #[test]
    fn datasets_need_a_path() {
        let args = Wrapper::parse_from(["x"]).args;
        assert_eq!(
            (args.num_prompts, args.input_len, args.output_len),
            (1000, 1024, None)
        );
        assert_eq!(args.dataset_name, OfflineDataset::Random);
        assert!(Wrapper::try_parse_from(["x", "--dataset-name", "sharegpt"]).is_err());
        assert!(Wrapper::try_parse_from([
            "x",
            "--dataset-name",
            "custom",
            "--dataset-path",
            "a.jsonl"
        ])
        .is_ok());
    }

    #[test]
    fn dataset_prompts_become_token_ids_that_fit() {
        use crate::dataset::test_support::{data_path, model_path};
        let sample = data_path("sharegpt_sample.json");
        let args = Wrapper::parse_from([
            "x",
            "--dataset-name",
            "sharegpt",
            "--dataset-path",
            sample.to_str().unwrap(),
            "--num-prompts",
            "4",
            "--output-len",
            "5",
        ])
        .args;
        let requests = dataset_requests(&args, &model_path(), 4096).unwrap();
        assert_eq!(requests.len(), 4);
        assert!(requests.iter().all(|(ids, len)| ids.len() > 5 && *len == 5));
        // Nothing fits a context of 8 tokens.
        assert!(dataset_requests(&args, &model_path(), 8)
            .unwrap()
            .is_empty());
    }

    #[tokio::test]
    async fn throughput_runs_on_a_tiny_model() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("tiny.gguf");
        pagoda_engine::testing::TinyLlamaSpec::default()
            .write_gguf(&model)
            .unwrap();
        let output = dir.path().join("throughput.json");
        let args = Wrapper::parse_from([
            "x",
            "--model",
            model.to_str().unwrap(),
            "--kv-cache-memory",
            "16MiB",
            "--max-model-len",
            "256",
            "--num-prompts",
            "5",
            "--input-len",
            "12",
            "--output-len",
            "3",
            "--output-json",
            output.to_str().unwrap(),
        ])
        .args;
        let report = execute(args).await.unwrap();
        assert_eq!(report.num_requests, 5);
        assert_eq!(
            (report.num_prompt_tokens, report.num_output_tokens),
            (60, 15)
        );
        let saved: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
        assert_eq!(saved["total_num_tokens"], 75);
        assert!(saved["tokens_per_second"].as_f64().unwrap() > 0.0);
    }
}
