//! `/v1/chat/completions` bodies: the whole `chat.completion` object and the
//! `chat.completion.chunk`s of a stream.

use serde::Serialize;
use utoipa::ToSchema;

use super::prompt_logprobs::PromptLogprobs;

use super::logprobs::ChatLogprobs;
use super::tool_calls::{LegacyFunctionCall, ToolCall, ToolCallDelta};
use super::usage::Usage;
use super::{Nullable, StopReasonSchema};
use crate::openai::choices::stop_reason::StopReason;

/// A chat completion (`object` `chat.completion`) or one chunk of a stream
/// (`chat.completion.chunk`, with `C` = the chunk's already written choices).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ChatCompletion<C = ChatChoice> {
    pub id: String,
    #[schema(value_type = String)]
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub choices: Vec<C>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Nullable<Usage>,
    /// vLLM's `prompt_logprobs`: the response's, as every choice has the same prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Value>)]
    pub prompt_logprobs: Option<PromptLogprobs>,
    /// vLLM's `return_token_ids`: the prompt's ids, the response's in chat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_token_ids: Option<Vec<u32>>,
}

/// A choice of a whole chat completion.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ChatChoice {
    pub index: usize,
    pub message: ChatMessage,
    pub logprobs: Option<ChatLogprobs>,
    pub finish_reason: String,
    /// vLLM's: the stop string or token that ended the choice, `null` otherwise.
    #[schema(value_type = Option<StopReasonSchema>)]
    pub stop_reason: Option<StopReason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_ids: Option<Vec<u32>>,
}

/// The assistant's message of a whole completion.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ChatMessage {
    pub role: String,
    /// `null` when the reply is only tool calls.
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// With a reasoning parser: the thinking (`null` when there was none, or it is hidden).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Nullable<String>,
    /// The deprecated `functions`' answer: the first call (instead of `tool_calls`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function_call: Option<LegacyFunctionCall>,
}

/// A choice of a streamed chunk.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ChatChunkChoice {
    pub index: usize,
    pub delta: ChatChunkDelta,
    pub logprobs: Option<ChatLogprobs>,
    /// `null` until the choice's last chunk.
    pub finish_reason: Option<String>,
    /// vLLM's, on the choice's last chunk: the stop string or token that ended it, or `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<StopReasonSchema>)]
    pub stop_reason: Nullable<StopReason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_ids: Option<Vec<u32>>,
}

/// What one chunk adds to a choice's message; empty fields are left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
pub struct ChatChunkDelta {
    /// The first chunk's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
    /// The deprecated `functions`' answer: the first call's piece (instead of `tool_calls`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function_call: Option<LegacyFunctionCall>,
}

impl ChatChunkChoice {
    pub fn new(index: usize, delta: ChatChunkDelta) -> Self {
        Self {
            index,
            delta,
            logprobs: None,
            finish_reason: None,
            stop_reason: None,
            token_ids: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn deltas_leave_out_what_they_do_not_carry_and_messages_write_null_content() {
        let opening = ChatChunkDelta {
            role: Some("assistant".into()),
            content: Some(String::new()),
            ..ChatChunkDelta::default()
        };
        let chunk = serde_json::to_value(ChatChunkChoice::new(0, opening)).expect("serializes");
        assert_eq!(
            chunk,
            json!({"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null,
                "finish_reason": null})
        );
        let empty = serde_json::to_value(ChatChunkDelta::default()).expect("serializes");
        assert_eq!(empty, json!({}));
        let message = ChatMessage {
            role: "assistant".into(),
            content: None,
            tool_calls: Some(vec![ToolCall::function("call_0".into(), "f", "{}")]),
            reasoning_content: Some(None),
            function_call: None,
        };
        assert_eq!(
            serde_json::to_value(message).expect("serializes"),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_0",
                "type": "function", "function": {"name": "f", "arguments": "{}"}}],
                "reasoning_content": null})
        );
    }
}
