//! `pagoda-bench latency`: how long one batch takes, end to end, with the engine in this process
//! (like `vllm bench latency`; see [`super::latency`]).

use std::path::PathBuf;

use clap::Args;

use pagoda_engine::EngineArgs;

use super::engine::start_in_background;
use super::latency::{run_latency, LatencyArgs, LatencyReport};
use crate::cli::sweep_output::write_json;

/// Time batches of random prompts end to end with the engine in process (no server, no HTTP).
#[derive(Debug, Clone, Args)]
pub struct LatencyCmdArgs {
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Prompt tokens of every request (random ids over the model's vocabulary).
    #[arg(long, default_value_t = 32)]
    pub input_len: usize,
    /// Tokens every request generates (EOS ignored).
    #[arg(long, default_value_t = 128)]
    pub output_len: usize,
    /// Requests submitted together in each iteration.
    #[arg(long, default_value_t = 8)]
    pub batch_size: usize,
    /// Measured iterations.
    #[arg(long, default_value_t = 30)]
    pub num_iters: usize,
    /// Iterations run first and not measured.
    #[arg(long, default_value_t = 10)]
    pub num_iters_warmup: usize,
    /// Save vLLM's latency JSON (`avg_latency`, `latencies`, `percentiles`, in seconds) here.
    #[arg(long, value_name = "PATH")]
    pub output_json: Option<PathBuf>,
}

impl LatencyCmdArgs {
    fn latency_args(&self) -> LatencyArgs {
        LatencyArgs {
            input_len: self.input_len,
            output_len: self.output_len,
            batch_size: self.batch_size,
            num_iters: self.num_iters,
            num_iters_warmup: self.num_iters_warmup,
            seed: self.engine.seed,
        }
    }
}

/// `latency`: starts the engine, runs the iterations, prints vLLM's lines, saves the JSON.
pub async fn execute(args: LatencyCmdArgs) -> anyhow::Result<LatencyReport> {
    let model_path = args.engine.model_path()?;
    let engine = start_in_background(&args.engine, &model_path).await?;
    eprintln!(
        "latency: {} iterations (+{} warm-up) of {} requests, {} prompt + {} output tokens each, on {}",
        args.num_iters,
        args.num_iters_warmup,
        args.batch_size,
        args.input_len,
        args.output_len,
        model_path.display()
    );
    let report = run_latency(&engine.handle, &args.latency_args()).await?;
    print!("{}", report.to_text());
    if let Some(path) = &args.output_json {
        write_json(path, &report.to_json())?;
        eprintln!("latency results saved to {}", path.display());
    }
    Ok(report)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: LatencyCmdArgs,
    }

    #[test]
    fn defaults_are_vllms() {
        let args = Wrapper::parse_from(["x"]).args;
        assert_eq!(args.latency_args(), LatencyArgs::default());
        let config = args
            .engine
            .engine_config_on(pagoda_engine::DeviceSpec::Cpu)
            .expect("valid");
        // No budget given: the engine sizes the CPU cache to the limits at start (at most 1 GiB).
        assert_eq!(config.kv_cache_memory_bytes, None);
        assert_eq!(args.engine.max_num_seqs, 256);
        assert!(Wrapper::try_parse_from(["x", "--kv-cache-memory", "lots"]).is_err());
    }

    #[tokio::test]
    async fn latency_runs_on_a_tiny_model() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("tiny.gguf");
        pagoda_engine::testing::TinyLlamaSpec::default()
            .write_gguf(&model)
            .unwrap();
        let output = dir.path().join("latency.json");
        let args = Wrapper::parse_from([
            "x",
            "--model",
            model.to_str().unwrap(),
            "--kv-cache-memory",
            "16MiB",
            "--max-model-len",
            "256",
            "--input-len",
            "8",
            "--output-len",
            "4",
            "--batch-size",
            "2",
            "--num-iters",
            "3",
            "--num-iters-warmup",
            "1",
            "--output-json",
            output.to_str().unwrap(),
        ])
        .args;
        let report = execute(args).await.unwrap();
        assert_eq!(report.latencies_s.len(), 3);
        let saved: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
        assert_eq!(saved["latencies"].as_array().unwrap().len(), 3);
        assert!(saved["avg_latency"].as_f64().unwrap() > 0.0);
        assert!(saved["percentiles"]["99"].is_number());
    }
}
