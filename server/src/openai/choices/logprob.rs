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

/// How log-probabilities name tokens: by their text, or as vLLM's `return_tokens_as_token_ids`
/// writes them, `token_id:{id}` (every token told apart, whatever its bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TokenNaming {
    #[default]
    Text,
    Id,
}

impl TokenNaming {
    pub fn of(tokens_as_ids: bool) -> Self {
        match tokens_as_ids {
            true => TokenNaming::Id,
            false => TokenNaming::Text,
        }
    }

    /// The name of token `id` in log-probabilities.
    pub fn name(self, tokenizer: &TextTokenizer, id: u32) -> String {
        match self {
            TokenNaming::Text => token_text(tokenizer, id),
            TokenNaming::Id => format!("token_id:{id}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_named_by_id_carry_the_id_and_nothing_else() {
        let tokenizer = crate::mock_text::byte_tokenizer().expect("byte tokenizer");
        assert_eq!(TokenNaming::Id.name(&tokenizer, 42), "token_id:42");
        assert_eq!(TokenNaming::Text.name(&tokenizer, 42), "*");
        assert_eq!(TokenNaming::default(), TokenNaming::Text);
    }
}
