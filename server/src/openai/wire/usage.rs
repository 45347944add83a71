//! `usage`: token counts of a response, or of one streamed choice so far (vLLM's
//! `continuous_usage_stats`).

use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub total_tokens: usize,
    /// A whole response's; a running count has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// Chat with a reasoning parser; any response of a speculating server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct PromptTokensDetails {
    /// Prompt tokens served from the prefix cache.
    pub cached_tokens: usize,
}

/// OpenAI's completion details, each present when it applies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct CompletionTokensDetails {
    /// Tokens of the reasoning section (chat with a reasoning parser).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<usize>,
    /// Proposed tokens (speculative decoding) the model accepted: each is also a completion
    /// token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted_prediction_tokens: Option<usize>,
    /// Proposed tokens the model rejected. Unlike OpenAI's Predicted Outputs, they are not
    /// counted in `completion_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected_prediction_tokens: Option<usize>,
}

impl CompletionTokensDetails {
    /// Each field of `self`, else `other`'s; `None` when neither has any.
    pub fn merged(self, other: Option<Self>) -> Option<Self> {
        let other = other.unwrap_or_default();
        let merged = Self {
            reasoning_tokens: self.reasoning_tokens.or(other.reasoning_tokens),
            accepted_prediction_tokens: self
                .accepted_prediction_tokens
                .or(other.accepted_prediction_tokens),
            rejected_prediction_tokens: self
                .rejected_prediction_tokens
                .or(other.rejected_prediction_tokens),
        };
        (merged != Self::default()).then_some(merged)
    }
}

impl Usage {
    pub fn new(prompt_tokens: usize, completion_tokens: usize) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
            prompt_tokens_details: None,
            completion_tokens_details: None,
        }
    }
}
