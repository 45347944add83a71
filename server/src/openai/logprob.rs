//! One token's log-probability as the API writes it (chat and completions alike).

use pagoda_text::tokenizer::TextTokenizer;

/// A token's log-probability, with its text and the most likely alternatives.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprob {
    pub token: String,
    /// `None` for an echoed prompt's first token, which nothing predicts.
    pub logprob: Option<f32>,
    pub top: Vec<(String, f32)>,
    /// Where the token's text starts in the choice's text (the echoed prompt's included), in
    /// characters.
    pub text_offset: usize,
}

/// A token's own text, as logprobs show it (special tokens included; a part of a multi-byte
/// character shows as U+FFFD).
pub fn token_text(tokenizer: &TextTokenizer, id: u32) -> String {
    tokenizer.decode(&[id], false).unwrap_or_default()
}
