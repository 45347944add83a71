//! vLLM's `thinking_token_budget`, in token ids: a reasoning model's thinking section (from its
//! opening tag to its closing one) may hold at most `max_tokens` tokens; past them the sampler
//! writes the closing tag itself, and the model goes on to its answer. The tags' ids come from
//! the caller (the server tokenizes `<think>` and `</think>`); the engine knows no text.

use crate::error::EngineError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThinkingBudget {
    /// The most tokens a thinking section holds before it is closed (0: closed at once).
    pub max_tokens: usize,
    /// The tokens that open a thinking section (`<think>`).
    pub start_token_ids: Vec<u32>,
    /// The tokens that close it (`</think>`), written when the budget runs out.
    pub end_token_ids: Vec<u32>,
}

impl ThinkingBudget {
    pub fn validate(&self) -> Result<(), EngineError> {
        if self.start_token_ids.is_empty() || self.end_token_ids.is_empty() {
            return Err(EngineError::InvalidRequest {
                field: "thinking_token_budget",
                message: "needs the tokens that open and close a thinking section".into(),
            });
        }
        Ok(())
    }

    /// Every token id it names (checked against the vocabulary).
    pub fn token_ids(&self) -> impl Iterator<Item = &u32> {
        self.start_token_ids.iter().chain(&self.end_token_ids)
    }
}
