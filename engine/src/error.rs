//! The engine's one error type.

/// Everything that can go wrong inside the engine, with enough words to act on.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum EngineError {
    /// The request is malformed; `field` names the offending input.
    #[error("invalid `{field}`: {message}")]
    InvalidRequest {
        field: &'static str,
        message: String,
    },
    /// The request is well-formed but can never be served with this configuration.
    #[error("request too large: {0}")]
    RequestTooLarge(String),
    /// A request id already in use.
    #[error("duplicate request id {0}")]
    DuplicateRequest(u64),
    /// The model file is missing, corrupt or of an unsupported kind.
    #[error("model load failed: {0}")]
    ModelLoad(String),
    /// The configuration is inconsistent.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A forward pass failed; the requests in that step are ended with this error.
    #[error("model execution failed: {0}")]
    Execution(String),
    /// The engine thread has stopped.
    #[error("engine is shut down")]
    ShutDown,
}

impl From<candle_core::Error> for EngineError {
    fn from(e: candle_core::Error) -> Self {
        EngineError::Execution(e.to_string())
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
