//! Why a structured-output request cannot be served. Every variant is the client's to fix (or to
//! retry) except `Vocabulary` and `Internal`.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StructuredError {
    /// The schema, regex or grammar is malformed, unsupported or unsatisfiable.
    #[error("{0}")]
    Invalid(String),
    /// The grammar text is over the size limit.
    #[error("the grammar is {num_bytes} bytes, over the limit of {max_bytes} bytes")]
    TooLarge { num_bytes: usize, max_bytes: usize },
    /// Compilation did not finish within the time limit.
    #[error("compiling the grammar took longer than the limit of {}s", limit.as_secs_f64())]
    Timeout { limit: Duration },
    /// The model's vocabulary could not be turned into a token trie (at start-up).
    #[error("structured outputs are unavailable for this tokenizer: {0}")]
    Vocabulary(String),
    /// The compiler failed unexpectedly (a panic inside the grammar engine).
    #[error("the grammar compiler failed: {0}")]
    Internal(String),
}
