//! The Responses API's `usage`: chat's counts under its own names.

use serde::Serialize;
use utoipa::ToSchema;

use super::usage::Usage;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct ResponsesUsage {
    pub input_tokens: usize,
    pub input_tokens_details: InputTokensDetails,
    pub output_tokens: usize,
    pub output_tokens_details: OutputTokensDetails,
    pub total_tokens: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct InputTokensDetails {
    /// Prompt tokens served from the prefix cache.
    pub cached_tokens: usize,
    /// Always 0: nothing is written to a cache on request.
    pub cache_write_tokens: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct OutputTokensDetails {
    pub reasoning_tokens: usize,
}

impl From<&Usage> for ResponsesUsage {
    fn from(chat: &Usage) -> Self {
        Self {
            input_tokens: chat.prompt_tokens,
            input_tokens_details: InputTokensDetails {
                cached_tokens: chat.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
                cache_write_tokens: 0,
            },
            output_tokens: chat.completion_tokens,
            output_tokens_details: OutputTokensDetails {
                reasoning_tokens: chat
                    .completion_tokens_details
                    .and_then(|d| d.reasoning_tokens)
                    .unwrap_or(0),
            },
            total_tokens: chat.total_tokens,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::openai::wire::usage::PromptTokensDetails;

    #[test]
    fn usage_has_every_field_the_sdk_types_require() {
        let chat = Usage {
            prompt_tokens_details: Some(PromptTokensDetails { cached_tokens: 1 }),
            ..Usage::new(3, 2)
        };
        assert_eq!(
            serde_json::to_value(ResponsesUsage::from(&chat)).expect("serializes"),
            json!({"input_tokens": 3, "input_tokens_details": {"cached_tokens": 1,
                "cache_write_tokens": 0}, "output_tokens": 2,
                "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 5})
        );
    }
}
