//! [`ClientError`]: what building a client and the probes can fail with.

/// Errors of building a client and of the probes (a request's own failures are recorded in its
/// [`RequestRecord`](crate::record::RequestRecord), never returned).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid header {name:?}: {reason}")]
    InvalidHeader { name: String, reason: String },
    #[error("HTTP client: {0}")]
    Http(#[from] reqwest::Error),
    #[error("{url} answered {status}: {message}")]
    Status {
        url: String,
        status: u16,
        message: String,
    },
    #[error("{url} answered something unexpected: {message}")]
    BadResponse { url: String, message: String },
    #[error("the server at {url} was not ready after {waited_s:.1} s (last: {last_error})")]
    NotReady {
        url: String,
        waited_s: f64,
        last_error: String,
    },
}
