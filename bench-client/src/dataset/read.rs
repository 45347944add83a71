//! What the file datasets share: reading the file, counting a prompt's tokens.

use std::path::Path;

use pagoda_text::tokenizer::TextTokenizer;

use super::error::DatasetError;

/// Prompt tokens of a prompt text: its own tokens, no chat template, no BOS.
pub(super) fn count_tokens(tokenizer: &TextTokenizer, text: &str) -> Result<usize, DatasetError> {
    Ok(tokenizer.encode(text, false)?.len())
}

pub(super) fn read_file(path: &Path) -> Result<String, DatasetError> {
    std::fs::read_to_string(path).map_err(|e| DatasetError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}
