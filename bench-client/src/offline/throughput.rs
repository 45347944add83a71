//! `throughput`: every request submitted at once, tokens per second over the whole run —
//! `vllm bench throughput` in process.
//!
//! Requests are `(prompt_ids, output_len)`: random ones from [`random_requests`], or a dataset's
//! prompts tokenized by the caller (the hook for datasets). The JSON has vLLM's keys
//! (`elapsed_time`, `num_requests`, `total_num_tokens`, `requests_per_second`,
//! `tokens_per_second`) plus the split into prompt and output tokens and `output_tokens_per_second`.
//! Unlike vLLM, which counts the lengths it asked for, the counts are the engine's `usage`.

use std::time::Instant;

use pagoda_engine::EngineHandle;
use rand::SeedableRng;
use serde_json::{json, Value};

use super::batch::{random_prompt, run_batch};
use super::error::OfflineError;

/// `num_prompts` random prompts of exactly `input_len` tokens, each asking for `output_len`.
pub fn random_requests(
    num_prompts: usize,
    input_len: usize,
    output_len: usize,
    vocab_size: usize,
    seed: u64,
) -> Vec<(Vec<u32>, usize)> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..num_prompts)
        .map(|_| (random_prompt(&mut rng, input_len, vocab_size), output_len))
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
pub struct ThroughputReport {
    pub elapsed_time_s: f64,
    pub num_requests: usize,
    pub num_prompt_tokens: usize,
    pub num_output_tokens: usize,
}

impl ThroughputReport {
    pub fn total_num_tokens(&self) -> usize {
        self.num_prompt_tokens + self.num_output_tokens
    }

    fn per_second(&self, count: usize) -> f64 {
        count as f64 / self.elapsed_time_s
    }

    /// vLLM's `--output-json` keys, plus prompt/output token totals and output tokens per second.
    pub fn to_json(&self) -> Value {
        json!({
            "elapsed_time": self.elapsed_time_s,
            "num_requests": self.num_requests,
            "total_num_tokens": self.total_num_tokens(),
            "requests_per_second": self.per_second(self.num_requests),
            "tokens_per_second": self.per_second(self.total_num_tokens()),
            "total_prompt_tokens": self.num_prompt_tokens,
            "total_output_tokens": self.num_output_tokens,
            "output_tokens_per_second": self.per_second(self.num_output_tokens),
        })
    }

    /// vLLM's terminal lines.
    pub fn to_text(&self) -> String {
        format!(
            "Throughput: {:.2} requests/s, {:.2} total tokens/s, {:.2} output tokens/s\n\
             Total num prompt tokens:  {}\n\
             Total num output tokens:  {}\n",
            self.per_second(self.num_requests),
            self.per_second(self.total_num_tokens()),
            self.per_second(self.num_output_tokens),
            self.num_prompt_tokens,
            self.num_output_tokens,
        )
    }
}

/// Submits all `requests` at once and times until the last one finishes.
pub async fn run_throughput(
    handle: &EngineHandle,
    requests: Vec<(Vec<u32>, usize)>,
) -> Result<ThroughputReport, OfflineError> {
    if requests.is_empty() {
        return Err(OfflineError::InvalidArgs("no requests to run".into()));
    }
    if let Some((_, output_len)) = requests
        .iter()
        .find(|(prompt, output_len)| prompt.is_empty() || *output_len == 0)
    {
        return Err(OfflineError::InvalidArgs(format!(
            "every request needs a prompt and output_len >= 1 (got output_len {output_len})"
        )));
    }
    let num_requests = requests.len();
    let started = Instant::now();
    let usages = run_batch(handle, requests).await?;
    let elapsed_time_s = started.elapsed().as_secs_f64();
    Ok(ThroughputReport {
        elapsed_time_s,
        num_requests,
        num_prompt_tokens: usages.iter().map(|u| u.prompt_tokens).sum(),
        num_output_tokens: usages.iter().map(|u| u.completion_tokens).sum(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::offline::test_support::tiny_engine;

    #[test]
    fn report_rates_by_hand() {
        let report = ThroughputReport {
            elapsed_time_s: 2.0,
            num_requests: 10,
            num_prompt_tokens: 1000,
            num_output_tokens: 500,
        };
        let json = report.to_json();
        assert_eq!(json["total_num_tokens"], 1500);
        assert_eq!(json["requests_per_second"], 5.0);
        assert_eq!(json["tokens_per_second"], 750.0);
        assert_eq!(json["output_tokens_per_second"], 250.0);
        assert!(report.to_text().starts_with(
            "Throughput: 5.00 requests/s, 750.00 total tokens/s, 250.00 output tokens/s"
        ));
    }

    #[test]
    fn random_requests_are_reproducible() {
        let requests = random_requests(3, 12, 5, 256, 9);
        assert_eq!(requests.len(), 3);
        assert!(requests
            .iter()
            .all(|(prompt, len)| prompt.len() == 12 && *len == 5));
        assert_eq!(requests, random_requests(3, 12, 5, 256, 9));
        assert_ne!(requests[0].0, requests[1].0);
    }

    #[tokio::test]
    async fn throughput_counts_every_token() {
        let engine = tiny_engine();
        let mut requests = random_requests(6, 10, 5, engine.handle.info().model.vocab_size, 1);
        // A dataset-style request of another shape.
        requests.push((vec![3; 30], 9));
        let report = run_throughput(&engine.handle, requests).await.unwrap();
        assert_eq!(report.num_requests, 7);
        assert_eq!(report.num_prompt_tokens, 6 * 10 + 30);
        assert_eq!(report.num_output_tokens, 6 * 5 + 9);
        let json = report.to_json();
        assert_eq!(json["total_num_tokens"], 90 + 39);
        assert!(json["tokens_per_second"].as_f64().unwrap() > 0.0);
    }

    #[tokio::test]
    async fn empty_requests_are_rejected() {
        let engine = tiny_engine();
        assert!(matches!(
            run_throughput(&engine.handle, Vec::new()).await,
            Err(OfflineError::InvalidArgs(_))
        ));
        let zero = vec![(vec![1, 2], 0)];
        assert!(matches!(
            run_throughput(&engine.handle, zero).await,
            Err(OfflineError::InvalidArgs(_))
        ));
    }
}
