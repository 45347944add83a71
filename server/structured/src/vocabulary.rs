//! The model's vocabulary as llguidance sees it: each token id's bytes in a token trie, special
//! tokens marked so no grammar can produce them by spelling them out, and the model's own
//! tokenizer for the few strings llguidance tokenizes itself.

use std::sync::Arc;

use pagoda_text::tokenizer::TextTokenizer;
use toktrie::{TokEnv, TokRxInfo, TokTrie, TokenId, TokenizerEnv};

use crate::error::StructuredError;

/// The trie over the model's tokens, with the model's tokenizer.
struct ModelTokEnv {
    trie: TokTrie,
    tokenizer: Arc<TextTokenizer>,
}

impl std::fmt::Debug for ModelTokEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelTokEnv")
            .field("vocab_size", &self.trie.vocab_size())
            .finish_non_exhaustive()
    }
}

impl TokenizerEnv for ModelTokEnv {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    /// llguidance tokenizes the bytes a grammar forces (and allows only their first token), so
    /// these must be the bytes' own tokens: valid UTF-8 through the model's tokenizer, and the
    /// rest — the start of a multi-byte character, as in `["👍", "👎"]`, whose forced prefix is
    /// 3 bytes of 4 — by the trie's greedy split, never as U+FFFD.
    fn tokenize_bytes(&self, bytes: &[u8]) -> Vec<TokenId> {
        self.trie.tokenize_with_greedy_fallback(bytes, |text| {
            self.tokenizer
                .encode_as_text(text, false)
                // Not expected for valid text; the trie's greedy split is always available.
                .unwrap_or_else(|_| self.trie.greedy_tokenize(text.as_bytes()))
        })
    }
}

/// Builds llguidance's view of the vocabulary. `vocab_size` is the width of the model's logits
/// (it may exceed the tokenizer's: padding ids get no bytes and are never allowed);
/// `eos_token_id` is the token a grammar may end with.
pub fn tok_env(
    tokenizer: Arc<TextTokenizer>,
    vocab_size: usize,
    eos_token_id: u32,
) -> Result<TokEnv, StructuredError> {
    let json = tokenizer
        .inner()
        .to_string(false)
        .map_err(|e| StructuredError::Vocabulary(format!("cannot serialize the tokenizer: {e}")))?;
    let json: serde_json::Value = serde_json::from_str(&json)
        .map_err(|e| StructuredError::Vocabulary(format!("tokenizer JSON: {e}")))?;
    let mut words = llguidance::token_bytes_from_tokenizer_json(&json)
        .map_err(|e| StructuredError::Vocabulary(format!("token bytes: {e}")))?;
    let vocab_size = vocab_size.max(words.len());
    words.resize(vocab_size, Vec::new());
    let mut info = TokRxInfo::new(vocab_size as u32, eos_token_id);
    info.tok_bos = tokenizer.bos_token_id();
    let trie = TokTrie::from(&info, &words);
    Ok(Arc::new(ModelTokEnv { trie, tokenizer }))
}
