//! `latency`: how long one batch takes, end to end — `vllm bench latency` in process.
//!
//! Each iteration submits `batch_size` random prompts of exactly `input_len` tokens at once and
//! times until the last of them has generated `output_len` tokens. Warm-up iterations run first
//! and are not counted. The JSON has vLLM's keys: `avg_latency` and `latencies` in seconds, and
//! `percentiles` mapping "10", "25", "50", "75", "90", "99" to seconds.

use std::time::Instant;

use pagoda_engine::EngineHandle;
use rand::SeedableRng;
use serde_json::{json, Map, Value};

use super::batch::{random_prompt, run_batch};
use super::error::OfflineError;
use crate::stats::percentile;

/// The percentiles vLLM reports.
pub const LATENCY_PERCENTILES: [u32; 6] = [10, 25, 50, 75, 90, 99];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyArgs {
    pub input_len: usize,
    pub output_len: usize,
    pub batch_size: usize,
    pub num_iters: usize,
    pub num_iters_warmup: usize,
    /// Seeds the random prompts (fresh ones every iteration).
    pub seed: u64,
}

impl Default for LatencyArgs {
    /// vLLM's defaults.
    fn default() -> Self {
        Self {
            input_len: 32,
            output_len: 128,
            batch_size: 8,
            num_iters: 30,
            num_iters_warmup: 10,
            seed: 0,
        }
    }
}

impl LatencyArgs {
    fn validate(&self) -> Result<(), OfflineError> {
        let positive = [
            ("input_len", self.input_len),
            ("output_len", self.output_len),
            ("batch_size", self.batch_size),
            ("num_iters", self.num_iters),
        ];
        match positive.iter().find(|(_, value)| *value == 0) {
            Some((name, _)) => Err(OfflineError::InvalidArgs(format!(
                "{name} must be at least 1"
            ))),
            None => Ok(()),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LatencyReport {
    pub avg_latency_s: f64,
    /// One per measured iteration, in order.
    pub latencies_s: Vec<f64>,
    /// `(percentile, seconds)` for each of [`LATENCY_PERCENTILES`]: [`percentile`], so `None`
    /// (JSON `null`) when there are no latencies.
    pub percentiles_s: Vec<(u32, Option<f64>)>,
}

impl LatencyReport {
    pub fn from_latencies(latencies_s: Vec<f64>) -> Self {
        let mut sorted = latencies_s.clone();
        sorted.sort_by(f64::total_cmp);
        let avg_latency_s = sorted.iter().sum::<f64>() / sorted.len().max(1) as f64;
        let percentiles_s = LATENCY_PERCENTILES
            .iter()
            .map(|&p| (p, percentile(&sorted, f64::from(p))))
            .collect();
        Self {
            avg_latency_s,
            latencies_s,
            percentiles_s,
        }
    }

    /// vLLM's `--output-json` shape.
    pub fn to_json(&self) -> Value {
        let percentiles: Map<String, Value> = self
            .percentiles_s
            .iter()
            .map(|(p, s)| (p.to_string(), json!(s)))
            .collect();
        json!({
            "avg_latency": self.avg_latency_s,
            "latencies": self.latencies_s,
            "percentiles": percentiles,
        })
    }

    /// vLLM's terminal lines.
    pub fn to_text(&self) -> String {
        let mut out = format!("Avg latency: {} seconds\n", self.avg_latency_s);
        for (p, s) in &self.percentiles_s {
            match s {
                Some(s) => out.push_str(&format!("{p}% percentile latency: {s} seconds\n")),
                None => out.push_str(&format!("{p}% percentile latency: none\n")),
            }
        }
        out
    }
}

/// Runs the warm-up and measured iterations; see the module documentation.
pub async fn run_latency(
    handle: &EngineHandle,
    args: &LatencyArgs,
) -> Result<LatencyReport, OfflineError> {
    args.validate()?;
    let vocab_size = handle.info().model.vocab_size;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed);
    let mut latencies_s = Vec::with_capacity(args.num_iters);
    for iteration in 0..args.num_iters_warmup + args.num_iters {
        let batch = (0..args.batch_size)
            .map(|_| {
                (
                    random_prompt(&mut rng, args.input_len, vocab_size),
                    args.output_len,
                )
            })
            .collect();
        let started = Instant::now();
        run_batch(handle, batch).await?;
        if iteration >= args.num_iters_warmup {
            latencies_s.push(started.elapsed().as_secs_f64());
        }
    }
    Ok(LatencyReport::from_latencies(latencies_s))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::offline::test_support::tiny_engine;

    #[test]
    fn report_has_vllm_keys() {
        let report = LatencyReport::from_latencies(vec![0.4, 0.1, 0.2, 0.3]);
        assert!((report.avg_latency_s - 0.25).abs() < 1e-12);
        let json = report.to_json();
        assert_eq!(json["latencies"], json!([0.4, 0.1, 0.2, 0.3]));
        // numpy.percentile([0.1, 0.2, 0.3, 0.4], 50) = 0.25; 90 → 0.37.
        assert!((json["percentiles"]["50"].as_f64().unwrap() - 0.25).abs() < 1e-12);
        assert!((json["percentiles"]["90"].as_f64().unwrap() - 0.37).abs() < 1e-12);
        let keys: Vec<&String> = json["percentiles"].as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 6);
        assert!(report
            .to_text()
            .starts_with("Avg latency: 0.25 seconds\n10% percentile latency:"));
        let empty = LatencyReport::from_latencies(Vec::new()).to_json();
        assert_eq!(empty["percentiles"]["50"], Value::Null);
    }

    #[tokio::test]
    async fn latency_times_every_measured_iteration() {
        let engine = tiny_engine();
        let args = LatencyArgs {
            input_len: 16,
            output_len: 8,
            batch_size: 4,
            num_iters: 3,
            num_iters_warmup: 1,
            seed: 3,
        };
        let report = run_latency(&engine.handle, &args).await.unwrap();
        assert_eq!(report.latencies_s.len(), 3);
        assert!(report.latencies_s.iter().all(|&s| s > 0.0 && s < 30.0));
        let p10 = report.percentiles_s[0].1.unwrap();
        let p99 = report.percentiles_s[5].1.unwrap();
        assert!(p10 <= report.avg_latency_s && report.avg_latency_s <= p99);
        // 1 warm-up + 3 measured batches of 4 requests, 8 tokens each (stats trail the events).
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        while engine.handle.stats().num_generation_tokens_total < 4 * 4 * 8
            && Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(engine.handle.stats().num_generation_tokens_total, 4 * 4 * 8);
    }

    #[tokio::test]
    async fn zero_sized_arguments_are_rejected() {
        let engine = tiny_engine();
        let args = LatencyArgs {
            batch_size: 0,
            ..LatencyArgs::default()
        };
        let error = run_latency(&engine.handle, &args).await.unwrap_err();
        assert!(error.to_string().contains("batch_size"));
    }
}
