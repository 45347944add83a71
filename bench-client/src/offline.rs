//! Offline benchmarks with the engine in this process (no HTTP, no tokenizer), like
//! `vllm bench latency` and `vllm bench throughput`: [`latency`] times whole batches,
//! [`throughput`] pushes every request in at once and counts tokens per second.
//!
//! Prompts are token ids. Random prompts are drawn over the model's vocabulary with exact lengths,
//! fresh for every batch (so the prefix cache never hits), and every request runs greedy with
//! `ignore_eos` and `max_tokens = output_len`, so it generates exactly `output_len` tokens unless
//! the model's context ends first. Token counts come from the engine's `usage`.
//!
//! The functions are async (`RequestStream::next().await`), so they run inside the CLI's runtime;
//! the engine itself computes on its own thread. `latency_cmd` and `throughput_cmd` are the
//! subcommands' flags, `engine` starts the engine from the engine flags.
//!
//! Everything that needs `pagoda-engine` is here, behind the `offline` feature (on by default):
//! `cargo build -p pagoda-bench --no-default-features` builds the client without the engine, and
//! without the `latency` and `throughput` subcommands (`serve` then needs `--tokenizer`: finding
//! or fetching the default model is the engine's).

mod batch;
pub mod engine;
mod error;
pub mod latency;
pub mod latency_cmd;
#[cfg(test)]
pub(crate) mod test_support;
pub mod throughput;
pub mod throughput_cmd;

pub use batch::{random_prompt, run_batch};
pub use error::OfflineError;
pub use latency::{run_latency, LatencyArgs, LatencyReport, LATENCY_PERCENTILES};
pub use throughput::{random_requests, run_throughput, ThroughputReport};
