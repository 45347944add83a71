//! [`DatasetError`]: what can go wrong building a workload from a dataset.

use pagoda_text::tokenizer::TokenizerError;

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("cannot read {path}: {message}")]
    Io { path: String, message: String },
    /// A ShareGPT file's problem; `entry` names it (`entry 3 (id "abc")`).
    #[error("{path}: {entry}: {message}")]
    ShareGpt {
        path: String,
        entry: String,
        message: String,
    },
    #[error("{path}:{line}: {message}")]
    Jsonl {
        path: String,
        line: usize,
        message: String,
    },
    /// A trace file's line (1-based, the header included) that cannot be replayed.
    #[error("{path}:{line}: {message}")]
    TraceLine {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Empty { path: String, message: String },
    #[error("invalid dataset option: {0}")]
    InvalidConfig(String),
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("could not build a random text of exactly {num_tokens} tokens")]
    ExactLength { num_tokens: usize },
}

impl From<TokenizerError> for DatasetError {
    fn from(e: TokenizerError) -> Self {
        DatasetError::Tokenizer(e.to_string())
    }
}
