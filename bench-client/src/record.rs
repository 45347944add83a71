//! What one request of a benchmark run leaves behind: the raw record every statistic is computed
//! from, saved with `--save-detailed` and combined across processes by `merge`.
//!
//! Times are seconds relative to the run's start (`t = 0` when the first request was due), taken
//! from one monotonic clock per process.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Seconds since the Unix epoch, now: the wall clock that run starts, scrapes and result files
/// are stamped with (the one helper for it in the client).
pub fn unix_now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Where the token counts of a record come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenCountSource {
    /// The server's `usage` (`stream_options.include_usage`).
    ServerUsage,
    /// The server gave no usage: counted with the tokenizer.
    Tokenizer,
}

/// Why a request failed, grouped for the report.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The connection could not be made or broke.
    Connection,
    /// An HTTP status other than 200 (the status is kept).
    Http(u16),
    /// The stream ended before a `finish_reason` or `[DONE]`, carried an error event, or could
    /// not be parsed.
    Stream,
    /// The client's own per-request timeout.
    Timeout,
    /// The client cancelled it on purpose (`--request-cancellation-rate`): not a failure of the
    /// server.
    Cancelled,
}

/// One request, as sent and as received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Position in the workload (stable across runs with the same seed).
    pub index: usize,
    /// Which client process sent it (for `merge`); 0 for a single process.
    #[serde(default)]
    pub client_id: usize,
    /// The `model` the request named: the run's model, or its LoRA adapter with
    /// `--lora-modules`. `None` in records saved before the model was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `(conversation_id, turn_index)` for a turn of a closed-loop conversation (`--multi-turn`,
    /// `--dataset-name conversation`); `None` for an independent request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<(usize, usize)>,
    /// When the schedule said to send it.
    pub target_send_s: f64,
    /// When it was actually sent (the HTTP request started).
    pub actual_send_s: f64,
    /// First content token received; `None` when none arrived.
    pub first_token_s: Option<f64>,
    /// Arrival time of every content-bearing chunk (the first included), in order.
    pub chunk_times_s: Vec<f64>,
    /// When the response ended (or failed).
    pub end_s: f64,
    /// Prompt tokens (server usage, else the workload's own count).
    pub input_tokens: usize,
    /// Generated tokens (server usage, else counted with the tokenizer).
    pub output_tokens: usize,
    pub token_count_source: TokenCountSource,
    /// Output tokens the workload asked for.
    pub expected_output_tokens: usize,
    pub error: Option<ErrorKind>,
    /// The error's text, for the detailed file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Times it was sent again: 1 when its pooled keep-alive connection turned out closed before
    /// any of the response arrived and it went out once more on a fresh connection; else 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub num_retries: u32,
    /// The generated text (reasoning included), kept only when the run saves it (`vllm bench
    /// serve`'s `generated_texts`, with `--save-detailed`): one string per request, never
    /// per-token copies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated_text: Option<String>,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

impl RequestRecord {
    pub fn is_success(&self) -> bool {
        self.error.is_none()
    }

    /// How late the request was sent, in seconds (never negative).
    pub fn send_lag_s(&self) -> f64 {
        (self.actual_send_s - self.target_send_s).max(0.0)
    }

    /// Time to first token, from the actual send.
    pub fn ttft_s(&self) -> Option<f64> {
        self.first_token_s.map(|t| t - self.actual_send_s)
    }

    /// End-to-end latency, from the actual send.
    pub fn e2el_s(&self) -> f64 {
        self.end_s - self.actual_send_s
    }
}
