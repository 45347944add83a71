//! The engine flags of the offline commands (`latency`, `throughput`), named and defaulted like
//! `pagoda-server`'s, and the engine they start in this process.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use pagoda_engine::{start_engine, EngineConfig, EngineHandle};
use pagoda_server::cli_values::parse_bytes;

/// Model and engine settings.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// Model: a GGUF file or Hugging Face directory. [default: the default model
    /// (SmolLM2-135M-Instruct), fetched on first use]
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// Most sequences in one batch.
    #[arg(long, default_value_t = 256)]
    pub max_num_seqs: usize,
    /// Most tokens computed in one engine step (the prefill chunk budget).
    #[arg(long, default_value_t = 2048)]
    pub max_num_batched_tokens: usize,
    /// KV-cache budget in bytes (KiB, MiB and GiB suffixes accepted).
    #[arg(long, value_name = "BYTES", default_value = "1GiB", value_parser = parse_bytes)]
    pub kv_cache_memory: usize,
    /// Longest sequence (prompt + output) in tokens. [default: the model's context length]
    #[arg(long, value_name = "N")]
    pub max_model_len: Option<usize>,
    /// Seed of the random prompts (and of the engine).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl EngineArgs {
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            max_num_seqs: self.max_num_seqs,
            max_num_batched_tokens: self.max_num_batched_tokens,
            kv_cache_memory_bytes: self.kv_cache_memory,
            max_model_len: self.max_model_len,
            seed: self.seed,
            ..EngineConfig::default()
        }
    }

    /// `--model`, else the default model (fetched when missing).
    pub fn model_path(&self) -> anyhow::Result<PathBuf> {
        pagoda_server::default_model::resolve_model_path(self.model.as_deref())
    }
}

/// An engine running in this process; shut down when dropped.
#[derive(Debug)]
pub struct InProcessEngine {
    pub handle: EngineHandle,
}

impl InProcessEngine {
    /// Loads `model_path` and starts the engine (blocking: call it off the async threads).
    pub fn start(args: &EngineArgs, model_path: &Path) -> anyhow::Result<Self> {
        let handle = start_engine(args.engine_config(), model_path)
            .with_context(|| format!("cannot start the engine on {}", model_path.display()))?;
        Ok(Self { handle })
    }
}

impl Drop for InProcessEngine {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}

/// Starts the engine on a blocking thread (loading weights takes a while).
pub async fn start_in_background(
    args: &EngineArgs,
    model_path: &Path,
) -> anyhow::Result<InProcessEngine> {
    let (args, path) = (args.clone(), model_path.to_path_buf());
    tokio::task::spawn_blocking(move || InProcessEngine::start(&args, &path)).await?
}
