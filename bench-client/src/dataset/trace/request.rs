//! What every trace format is read into, and the replay's options.

use std::path::PathBuf;

/// One request of a trace, as the file gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRequest {
    /// When it arrived, in seconds on the trace's own clock (any origin).
    pub timestamp_s: f64,
    pub input_tokens: usize,
    pub output_tokens: usize,
    /// The prompt's blocks (Mooncake): equal ids are equal token blocks. Empty: a unique prompt.
    pub hash_ids: Vec<u64>,
}

/// A trace file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    Mooncake,
    BurstGpt,
    Azure,
}

impl TraceFormat {
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::BurstGpt => "burstgpt",
            TraceFormat::Azure => "azure",
        }
    }
}

/// What a parser read: the requests (in file order, a model filter applied) and how many data
/// records the file had.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedTrace {
    pub requests: Vec<TraceRequest>,
    pub num_records: usize,
}

/// A line a parser rejects: its 1-based number and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub message: String,
}

impl LineError {
    pub(super) fn new(line: usize, message: impl Into<String>) -> Self {
        Self {
            line,
            message: message.into(),
        }
    }
}

/// The `--dataset-name trace` options.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceConfig {
    pub path: PathBuf,
    pub format: TraceFormat,
    /// Prompt tokens per hash id (Mooncake: 512).
    pub block_size: usize,
    /// Arrival times are `(timestamp − first timestamp) × time_scale`: 0.5 replays twice as fast.
    pub time_scale: f64,
    /// No request at or after this many seconds of the replay.
    pub duration_s: Option<f64>,
    /// At most this many requests (the first ones).
    pub max_requests: Option<usize>,
    /// BurstGPT: only this model's rows (case-insensitive).
    pub model: Option<String>,
}

impl TraceConfig {
    /// The defaults for `path` in `format`: Mooncake's block size, real time, no cut.
    pub fn new(path: PathBuf, format: TraceFormat) -> Self {
        Self {
            path,
            format,
            block_size: 512,
            time_scale: 1.0,
            duration_s: None,
            max_requests: None,
            model: None,
        }
    }
}
