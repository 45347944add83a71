//! [`StatsError`]: what the statistics functions reject.

/// What the statistics functions reject: bad command-line specs and inconsistent merges.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    #[error("invalid percentile {0:?}: expected a number in [0, 100]")]
    InvalidPercentile(String),
    #[error("unknown metric {name:?}: expected one of {expected}")]
    UnknownMetric {
        name: String,
        /// Every metric's name, comma-separated.
        expected: String,
    },
    #[error("invalid goodput SLO {spec:?}: {reason}")]
    InvalidSlo { spec: String, reason: String },
    #[error("invalid --metadata {0:?}: expected KEY=VALUE")]
    InvalidMetadata(String),
    #[error("nothing to merge: no record sets were given")]
    NoParts,
    #[error("invalid start time {0} (seconds since the Unix epoch): must be finite")]
    InvalidStart(f64),
    #[error("record {index} of client {client_id} appears twice (the same file merged twice?)")]
    DuplicateRecord { client_id: usize, index: usize },
    #[error("could not build the result JSON: {0}")]
    Json(#[from] serde_json::Error),
}
