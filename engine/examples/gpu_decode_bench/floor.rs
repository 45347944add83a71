//! The statistics of `gpu_decode_bench`: the step times of one batch size, the bytes a decode
//! step must read from HBM, and each batch size's result line.

use pagoda_engine::models::ModelConfig;
use serde_json::{json, Value};

/// Bytes of every parameter a decode step reads: each layer's projections, biases and norms,
/// the final norm and the LM head (embedding rows looked up are left out).
pub fn weights_bytes(config: &ModelConfig, dtype_size: usize) -> usize {
    let (h, d) = (config.hidden_size, config.head_dim);
    let (q_dim, kv_dim) = (config.num_heads * d, config.num_kv_heads * d);
    let attention = h * (q_dim + 2 * kv_dim) + q_dim * h;
    let biases = if config.attention_bias {
        q_dim + 2 * kv_dim
    } else {
        0
    };
    let qk_norms = if config.qk_norm { 2 * d } else { 0 };
    let mlp = 3 * h * config.intermediate_size;
    let per_layer = attention + biases + qk_norms + mlp + 2 * h;
    let elements = config.num_layers * per_layer + h + config.vocab_size * h;
    elements * dtype_size
}

/// The timed steps of one batch size, in ms.
#[derive(Debug, Default)]
pub struct StepTimes {
    /// Logits rows copied to the host.
    pub logits_ms: Vec<f64>,
    /// The serving path: greedy tokens chosen on the GPU.
    pub greedy_ms: Vec<f64>,
    /// The serving path with temperature 0.8 and top-p 0.95 (sampled on the GPU).
    pub sampled_ms: Vec<f64>,
}

/// What a decode step must read from HBM, and how fast the GPU reads.
#[derive(Debug)]
pub struct Floor {
    pub weights_bytes: usize,
    pub kv_bytes_per_token: usize,
    pub bandwidth_gbps: f64,
}

impl Floor {
    /// The result line of batch size `batch` from its step times; the timed steps attend over
    /// `mean_keys` keys per sequence on average (the context grows by one per step).
    pub fn line(
        &self,
        batch: usize,
        context_len: usize,
        mean_keys: usize,
        times: &StepTimes,
    ) -> Value {
        let (mean, p50) = mean_and_median(&times.logits_ms);
        let (greedy_mean, greedy_p50) = mean_and_median(&times.greedy_ms);
        let (sampled_mean, sampled_p50) = mean_and_median(&times.sampled_ms);
        let kv = batch * mean_keys * self.kv_bytes_per_token;
        let bytes = (self.weights_bytes + kv) as f64;
        json!({
            "batch_size": batch,
            "context_len": context_len,
            "step_ms_mean": mean,
            "step_ms_p50": p50,
            "floor_ms": bytes / (self.bandwidth_gbps * 1e9) * 1e3,
            "weights_bytes": self.weights_bytes,
            "kv_bytes_read": kv,
            "bandwidth_gbps": bytes / (mean * 1e-3) / 1e9,
            "tokens_per_s": batch as f64 * 1000.0 / mean,
            "greedy_step_ms_mean": greedy_mean,
            "greedy_step_ms_p50": greedy_p50,
            "greedy_tokens_per_s": batch as f64 * 1000.0 / greedy_mean,
            "sampled_step_ms_mean": sampled_mean,
            "sampled_step_ms_p50": sampled_p50,
        })
    }
}

/// The mean and the median of `times` (not empty).
fn mean_and_median(times: &[f64]) -> (f64, f64) {
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    let median = if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    };
    (mean, median)
}
