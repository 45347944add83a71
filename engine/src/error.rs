//! The engine's one error type, and `ErrorSource`, the library error behind a load failure.

use crate::constraint::ConstraintError;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

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
    /// The model file is missing, corrupt or of an unsupported kind. `message` names the file and
    /// what is wrong with it; `source`, when a library reported the failure, is that library's
    /// error (its words are not repeated in `message`: print the chain, e.g. anyhow's `{:#}`).
    #[error("model load failed: {message}")]
    ModelLoad {
        message: String,
        #[source]
        source: Option<ErrorSource>,
    },
    /// A LoRA adapter cannot be loaded or used; the message names the directory and the field
    /// or tensor at fault.
    #[error("invalid LoRA adapter: {0}")]
    Adapter(String),
    /// The configuration is inconsistent.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A forward pass failed; the requests in that step are ended with this error.
    #[error("model execution failed: {0}")]
    Execution(String),
    /// A structured output's grammar could not go on (it refused the sampled token or allowed
    /// none): the request ends with this error rather than with output that breaks it.
    #[error("structured output failed: {0}")]
    Constraint(ConstraintError),
    /// The engine thread has stopped.
    #[error("engine is shut down")]
    ShutDown,
}

impl EngineError {
    /// A load failure told in words alone.
    pub fn model_load(message: impl Into<String>) -> Self {
        EngineError::ModelLoad {
            message: message.into(),
            source: None,
        }
    }

    /// A load failure that `source` reported: `message` says what failed to load (a file, a
    /// tensor) and the chain says why.
    pub fn model_load_from(
        message: impl fmt::Display,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        EngineError::ModelLoad {
            message: message.to_string(),
            source: Some(ErrorSource::new(source)),
        }
    }

    /// A load failure of the file at `path`, told in words.
    pub fn model_load_at(path: &Path, message: impl fmt::Display) -> Self {
        Self::model_load(format!("{}: {message}", path.display()))
    }

    /// A load failure that `source` reported about `what` in the file at `path`.
    pub fn model_load_at_from(
        path: &Path,
        what: impl fmt::Display,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::model_load_from(format_args!("{}: {what}", path.display()), source)
    }

    /// This error as a failure to load the model at `path`: a `ModelLoad` error that names the
    /// path (added in front when the message does not name it already); any other error becomes
    /// the source of one.
    pub fn loading(self, path: &Path) -> Self {
        let shown = path.display().to_string();
        match self {
            EngineError::ModelLoad { message, source } if !message.contains(&shown) => {
                EngineError::ModelLoad {
                    message: format!("{shown}: {message}"),
                    source,
                }
            }
            error @ EngineError::ModelLoad { .. } => error,
            other => EngineError::model_load_from(shown, other),
        }
    }
}

/// The library error (candle, I/O, JSON) behind an `EngineError`, shared so that the error stays
/// `Clone`: one error may end the streams of many requests. It shows as the error it holds, and
/// two are equal when they read the same (library errors rarely compare).
#[derive(Debug, Clone)]
pub struct ErrorSource(Arc<dyn std::error::Error + Send + Sync>);

impl ErrorSource {
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Arc::new(error))
    }

    /// The error held.
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl fmt::Display for ErrorSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ErrorSource {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for ErrorSource {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.to_string() == other.to_string()
    }
}

/// Candle errors outside loading come from a forward pass (load paths map theirs to
/// `ModelLoad` with `EngineError::model_load_from`).
impl From<candle_core::Error> for EngineError {
    fn from(e: candle_core::Error) -> Self {
        EngineError::Execution(e.to_string())
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    fn io_error() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "file ends early")
    }

    #[test]
    fn a_load_error_keeps_its_source_and_stays_cloneable() {
        let error = EngineError::model_load_from("model.gguf: cannot read the header", io_error());
        assert_eq!(
            error.to_string(),
            "model load failed: model.gguf: cannot read the header"
        );
        let source = error.source().expect("a source");
        assert_eq!(source.to_string(), "file ends early");
        let copy = error.clone();
        assert_eq!(copy, error);
        assert_ne!(
            copy,
            EngineError::model_load("model.gguf: cannot read the header")
        );
    }

    #[test]
    fn loading_names_the_path_once_and_wraps_other_errors() {
        let path = Path::new("/models/tiny.gguf");
        let named = EngineError::model_load("/models/tiny.gguf: truncated").loading(path);
        assert_eq!(
            named,
            EngineError::model_load("/models/tiny.gguf: truncated")
        );
        let unnamed = EngineError::model_load("`blk.0.attn_q.weight`: bad shape").loading(path);
        assert_eq!(
            unnamed,
            EngineError::model_load("/models/tiny.gguf: `blk.0.attn_q.weight`: bad shape")
        );
        let other = EngineError::Config("bad".into()).loading(path);
        assert!(
            matches!(&other, EngineError::ModelLoad { message, .. } if message.contains("/models/tiny.gguf"))
        );
        let source = other.source().expect("the original error");
        assert_eq!(source.to_string(), "invalid configuration: bad");
    }
}
