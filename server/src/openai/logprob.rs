//! One token's log-probability as the API writes it (chat and completions alike).

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
