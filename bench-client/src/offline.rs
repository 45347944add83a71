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
//! the engine itself computes on its own thread.

pub mod latency;
pub mod throughput;

pub use latency::{run_latency, LatencyArgs, LatencyReport, LATENCY_PERCENTILES};
pub use throughput::{random_requests, run_throughput, ThroughputReport};

use pagoda_engine::{
    EngineError, EngineHandle, EngineRequest, RequestId, RequestStream, SamplingParams,
    StopConditions, TokenEvent, Usage,
};
use rand::Rng;

#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{0} ended without a final event")]
    StreamEnded(RequestId),
    #[error("invalid argument: {0}")]
    InvalidArgs(String),
}

/// `len` random token ids in `0..vocab_size`.
pub fn random_prompt(rng: &mut impl Rng, len: usize, vocab_size: usize) -> Vec<u32> {
    let vocab_size = vocab_size.clamp(1, u32::MAX as usize) as u32;
    (0..len).map(|_| rng.random_range(0..vocab_size)).collect()
}

/// Submits every `(prompt_ids, output_len)` at once, then waits for all of them; returns each
/// request's usage in order. An error drops the other streams, which aborts their requests.
pub async fn run_batch(
    handle: &EngineHandle,
    requests: Vec<(Vec<u32>, usize)>,
) -> Result<Vec<Usage>, OfflineError> {
    let mut streams = Vec::with_capacity(requests.len());
    for (prompt, output_len) in requests {
        let stop = StopConditions {
            max_tokens: Some(output_len),
            ignore_eos: true,
            ..StopConditions::default()
        };
        let request = EngineRequest::new(
            handle.next_request_id(),
            prompt,
            SamplingParams::greedy(),
            stop,
        );
        streams.push(handle.submit(handle.validate(request)?)?);
    }
    let mut usages = Vec::with_capacity(streams.len());
    for stream in streams {
        usages.push(finish(stream).await?);
    }
    Ok(usages)
}

async fn finish(mut stream: RequestStream) -> Result<Usage, OfflineError> {
    while let Some(event) = stream.next().await {
        match event {
            TokenEvent::Token(_) => {}
            TokenEvent::Finished { usage, .. } => return Ok(usage),
            TokenEvent::Error(error) => return Err(error.into()),
        }
    }
    Err(OfflineError::StreamEnded(stream.id()))
}

/// The `pct`-th percentile of ascending `sorted` values, interpolated linearly between closest
/// ranks (numpy's default, which vLLM's reports use); `NaN` when empty.
pub fn percentile(sorted: &[f64], pct: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (pct / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (below, above) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[below] + (sorted[above] - sorted[below]) * (rank - below as f64)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod test_support {
    use pagoda_engine::testing::TinyLlamaSpec;
    use pagoda_engine::{start_engine, EngineConfig, EngineHandle};

    /// A tiny random model's engine; the model file lives as long as this value.
    pub struct TinyEngine {
        _dir: tempfile::TempDir,
        pub handle: EngineHandle,
    }

    impl Drop for TinyEngine {
        fn drop(&mut self) {
            self.handle.shutdown();
        }
    }

    pub fn tiny_engine() -> TinyEngine {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tiny.gguf");
        TinyLlamaSpec::default().write_gguf(&path).unwrap();
        let config = EngineConfig {
            max_model_len: Some(256),
            kv_cache_memory_bytes: 16 << 20,
            ..EngineConfig::default()
        };
        let handle = start_engine(config, &path).unwrap();
        TinyEngine { _dir: dir, handle }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let values = [1.0, 2.0, 3.0, 4.0, 10.0];
        // numpy.percentile([1, 2, 3, 4, 10], [0, 10, 50, 75, 90, 99, 100])
        let expected = [
            (0.0, 1.0),
            (10.0, 1.4),
            (50.0, 3.0),
            (75.0, 4.0),
            (90.0, 7.6),
            (99.0, 9.76),
            (100.0, 10.0),
        ];
        for (pct, value) in expected {
            assert!((percentile(&values, pct) - value).abs() < 1e-12, "p{pct}");
        }
        assert_eq!(percentile(&[5.0], 99.0), 5.0);
        assert!(percentile(&[], 50.0).is_nan());
    }

    #[test]
    fn random_prompts_have_exact_lengths_within_the_vocabulary() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let prompt = random_prompt(&mut rng, 100, 7);
        assert_eq!(prompt.len(), 100);
        assert!(prompt.iter().all(|&id| id < 7));
    }

    #[tokio::test]
    async fn a_batch_generates_exactly_output_len_tokens() {
        let engine = test_support::tiny_engine();
        let requests = vec![(vec![5, 6, 7], 4), (vec![9; 20], 7)];
        let usages = run_batch(&engine.handle, requests).await.unwrap();
        let counts: Vec<(usize, usize)> = usages
            .iter()
            .map(|u| (u.prompt_tokens, u.completion_tokens))
            .collect();
        assert_eq!(counts, vec![(3, 4), (20, 7)]);
    }

    #[tokio::test]
    async fn a_rejected_request_is_an_engine_error() {
        let engine = test_support::tiny_engine();
        let too_long = vec![(vec![1; 250], 100)];
        assert!(matches!(
            run_batch(&engine.handle, too_long).await,
            Err(OfflineError::Engine(_))
        ));
    }
}
