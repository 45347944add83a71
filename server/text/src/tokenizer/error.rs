//! Everything that can go wrong while building or using a tokenizer, in one enum.

use crate::tokenizer_spec::TokenizerSpecError;

/// Everything that can go wrong while building or using a tokenizer.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// The model file could not be read or its tokenizer metadata is malformed.
    #[error(transparent)]
    Model(#[from] TokenizerSpecError),
    /// A file next to the model (tokenizer.json, tokenizer_config.json) could not be read.
    #[error("cannot read {path}: {message}")]
    File { path: String, message: String },
    /// The tokenizer kind is one Pagoda cannot rebuild.
    #[error("unsupported tokenizer: {0}")]
    Unsupported(String),
    /// The tokenizer description is inconsistent.
    #[error("invalid tokenizer: {0}")]
    InvalidSpec(String),
    /// The `tokenizers` library failed (bad regex, unknown id, ...).
    #[error("tokenizer error: {0}")]
    Library(#[from] tokenizers::Error),
}

pub type Result<T, E = TokenizerError> = std::result::Result<T, E>;
