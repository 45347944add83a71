//! `/v1/completions` bodies: the whole `text_completion` object and its streamed chunks.

use serde::Serialize;
use utoipa::ToSchema;

use super::prompt_logprobs::PromptLogprobs;

use super::logprobs::CompletionLogprobs;
use super::usage::Usage;
use super::{Nullable, StopReasonSchema};
use crate::openai::choices::stop_reason::StopReason;

/// The object of a completion and of each of its chunks (OpenAI uses `text_completion` for
/// both).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Completion<C = CompletionChoice> {
    pub id: String,
    #[schema(value_type = String)]
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub choices: Vec<C>,
    /// Always in a whole response; in a stream `null` on every chunk but the usage chunk when
    /// `include_usage` asks (a running count with vLLM's `continuous_usage_stats`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Nullable<Usage>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct CompletionChoice {
    pub index: usize,
    pub text: String,
    pub logprobs: Option<CompletionLogprobs>,
    /// `null` until the choice's last chunk.
    pub finish_reason: Option<String>,
    /// vLLM's, in a whole response and a stream's last chunk of the choice: the stop string or
    /// token that ended it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<StopReasonSchema>)]
    pub stop_reason: Nullable<StopReason>,
    /// vLLM's `prompt_logprobs`, when asked for (whole responses).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Value>)]
    pub prompt_logprobs: Option<PromptLogprobs>,
    /// vLLM's `return_token_ids`: the prompt's ids (a stream's first chunk of the choice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_token_ids: Option<Vec<u32>>,
    /// vLLM's `return_token_ids`: the generated ids (a chunk's own when streamed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_ids: Option<Vec<u32>>,
}

impl CompletionChoice {
    /// A choice with text and nothing optional.
    pub fn new(index: usize, text: String) -> Self {
        Self {
            index,
            text,
            logprobs: None,
            finish_reason: None,
            stop_reason: None,
            prompt_logprobs: None,
            prompt_token_ids: None,
            token_ids: None,
        }
    }
}
