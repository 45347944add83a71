//! [`OfflineError`]: what can go wrong running an offline benchmark.

use pagoda_engine::{EngineError, RequestId};

#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{0} ended without a final event")]
    StreamEnded(RequestId),
    #[error("invalid argument: {0}")]
    InvalidArgs(String),
}
