//! What can go wrong building the metrics: bad buckets, an unknown namespace, a series
//! Prometheus refuses.

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("{flag}: no buckets given; list at least one upper bound, in seconds")]
    EmptyBuckets { flag: &'static str },
    #[error("{flag}: bucket {value} is not a finite number (+Inf is always added)")]
    NonFiniteBucket { flag: &'static str, value: f64 },
    #[error("{flag}: buckets must be strictly increasing, but {previous} is followed by {next}")]
    UnorderedBuckets {
        flag: &'static str,
        previous: f64,
        next: f64,
    },
    #[error("bucket {text:?} is not a number of seconds (expected e.g. 0.05,0.1,0.5,1)")]
    UnparsableBucket { text: String },
    #[error("unknown metrics namespace {0:?}: expected \"pagoda\" or \"vllm\"")]
    UnknownNamespace(String),
    #[error("building a metric: {0}")]
    Prometheus(#[from] prometheus::Error),
}
