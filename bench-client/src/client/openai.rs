//! The OpenAI wire types the bench client sends and reads. They are the client's own copy, not
//! pagoda-server's: an end-to-end test then catches drift between what the server speaks and what
//! other OpenAI clients expect.
//!
//! Response types are lenient on purpose (every field optional or defaulted, unknown fields
//! ignored): the client must read vLLM, SGLang, TGI and OpenAI itself, not only pagoda.

mod message;
mod response;
mod tool_call;

use serde::{Deserialize, Serialize};

pub use message::{ChatDelta, Usage};
pub use response::{CompletionResponse, ResponseChoice};
pub use tool_call::{FunctionCall, ToolCall};

use crate::workload::Message;

/// `stream_options`: ask for a final chunk carrying the token counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StreamOptions {
    pub include_usage: bool,
}

/// `POST /v1/chat/completions`, streamed. Optional fields are left out when unset: OpenAI itself
/// rejects fields it does not know (`ignore_eos`), so they are only sent when asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatCompletionRequest<'a> {
    pub model: &'a str,
    pub messages: &'a [Message],
    pub max_tokens: usize,
    /// OpenAI's newer name for `max_tokens`; servers that know both let it win.
    pub max_completion_tokens: usize,
    pub stream: bool,
    pub stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ignore_eos: bool,
}

/// `POST /v1/completions`, streamed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletionRequest<'a> {
    pub model: &'a str,
    pub prompt: &'a str,
    pub max_tokens: usize,
    pub stream: bool,
    pub stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ignore_eos: bool,
}

/// One `data:` event of a streamed response, chat (`chat.completion.chunk`) or text
/// (`text_completion`) alike. An error event (`{"error": …}`, or vLLM's older
/// `{"object": "error", "message": …}`) parses into the same type.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct StreamChunk {
    /// Empty in the usage-only chunk (never index `choices[0]` blindly).
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub object: Option<String>,
    /// OpenAI's error shape: an object with `message`, or (some servers) a bare string.
    #[serde(default)]
    pub error: Option<serde_json::Value>,
    /// vLLM's older error shape puts the message at the top level.
    #[serde(default)]
    pub message: Option<String>,
}

impl StreamChunk {
    /// The error this chunk carries, as text; `None` for an ordinary chunk.
    pub fn error_message(&self) -> Option<String> {
        if let Some(error) = &self.error {
            if error.is_null() {
                return None;
            }
            let message = error
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
                .or_else(|| error.as_str().map(str::to_string));
            return Some(message.unwrap_or_else(|| error.to_string()));
        }
        if self.object.as_deref() == Some("error") {
            return Some(self.message.clone().unwrap_or_else(|| "error event".into()));
        }
        None
    }

    /// The generated text this chunk carries, over all its choices (empty when none).
    pub fn content(&self) -> impl Iterator<Item = &str> {
        self.choices.iter().flat_map(ChunkChoice::content)
    }

    /// Whether this chunk marks the arrival of generated output (see
    /// [`ChunkChoice::is_arrival`]).
    pub fn is_arrival(&self) -> bool {
        self.choices.iter().any(ChunkChoice::is_arrival)
    }

    /// Whether a choice of this chunk carries its `finish_reason`.
    pub fn has_finish_reason(&self) -> bool {
        self.choices.iter().any(|c| c.finish_reason.is_some())
    }
}

/// One choice of a chunk.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ChunkChoice {
    /// Chat: the new piece of the message.
    #[serde(default)]
    pub delta: Option<ChatDelta>,
    /// Completions: the new piece of text.
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

impl ChunkChoice {
    /// The non-empty generated pieces of this choice: completions' `text`, chat's
    /// `delta.content`, reasoning models' `delta.reasoning_content` (vLLM) or `delta.reasoning`
    /// (SGLang), and the name and argument fragments of `delta.tool_calls` — reasoning and
    /// tool-call tokens are generated tokens too.
    fn content(&self) -> impl Iterator<Item = &str> {
        self.text
            .as_deref()
            .into_iter()
            .chain(self.delta.iter().flat_map(ChatDelta::pieces))
            .filter(|piece| !piece.is_empty())
    }

    /// Whether this choice marks a generated token's arrival, as vLLM's client times them: any
    /// content, and also an empty `text` or chat `content` (a token whose text is special or
    /// held back still arrives as its own chunk, and dropping it would merge two gaps into one
    /// ITL sample) — but not chat's opening delta (`role` and empty content) nor a chunk that
    /// only carries the `finish_reason`.
    fn is_arrival(&self) -> bool {
        if self.content().next().is_some() {
            return true;
        }
        let empty_piece = match &self.delta {
            Some(delta) => delta.role.is_none() && delta.has_output_field(),
            None => self.text.is_some(),
        };
        empty_piece && self.finish_reason.is_none()
    }
}

/// `GET /v1/models`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ModelList {
    #[serde(default)]
    pub data: Vec<ModelCard>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModelCard {
    pub id: String,
}

/// An error response body (`{"error": {"message", …}}`); `None` when the body is not one.
pub fn error_body_message(body: &str) -> Option<String> {
    serde_json::from_str::<StreamChunk>(body)
        .ok()
        .and_then(|chunk| chunk.error_message())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(json: &str) -> StreamChunk {
        serde_json::from_str(json).expect("a chunk")
    }

    #[test]
    fn role_only_and_finish_only_chunks_carry_no_content() {
        let role = chunk(r#"{"choices":[{"delta":{"role":"assistant","content":""},"index":0}]}"#);
        assert_eq!(role.content().count(), 0);
        let finish = chunk(r#"{"choices":[{"delta":{},"finish_reason":"length","index":0}]}"#);
        assert_eq!(finish.content().count(), 0);
        let text_finish = chunk(r#"{"choices":[{"text":"","finish_reason":"length"}]}"#);
        assert_eq!(text_finish.content().count(), 0);
        let usage = chunk(r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#);
        assert_eq!(usage.content().count(), 0);
        assert_eq!(usage.usage.map(|u| u.completion_tokens), Some(2));
    }

    #[test]
    fn empty_token_chunks_are_arrivals_but_openings_and_finishes_are_not() {
        let arrival = |json: &str| chunk(json).is_arrival();
        assert!(arrival(
            r#"{"choices":[{"delta":{"content":""},"index":0}]}"#
        ));
        assert!(arrival(r#"{"choices":[{"text":"","finish_reason":null}]}"#));
        assert!(arrival(
            r#"{"choices":[{"delta":{"content":"Hi"},"finish_reason":"stop"}]}"#
        ));
        assert!(arrival(
            r#"{"choices":[{"delta":{"role":"assistant","content":"Hi"}}]}"#
        ));
        assert!(!arrival(
            r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#
        ));
        assert!(!arrival(
            r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#
        ));
        assert!(!arrival(
            r#"{"choices":[{"text":"","finish_reason":"length"}]}"#
        ));
        assert!(!arrival(
            r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#
        ));
    }

    #[test]
    fn content_comes_from_chat_text_and_reasoning() {
        let chat = chunk(r#"{"choices":[{"delta":{"content":"Hi"}}],"usage":null}"#);
        assert_eq!(chat.content().collect::<Vec<_>>(), ["Hi"]);
        let text = chunk(r#"{"choices":[{"text":" there","finish_reason":null}]}"#);
        assert_eq!(text.content().collect::<Vec<_>>(), [" there"]);
        let reasoning = chunk(r#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#);
        assert_eq!(reasoning.content().collect::<Vec<_>>(), ["hmm"]);
    }

    #[test]
    fn error_shapes_are_recognised() {
        let openai = chunk(r#"{"error":{"message":"boom","type":"server_error"}}"#);
        assert_eq!(openai.error_message().as_deref(), Some("boom"));
        let bare = chunk(r#"{"error":"overloaded"}"#);
        assert_eq!(bare.error_message().as_deref(), Some("overloaded"));
        let vllm = chunk(r#"{"object":"error","message":"bad","code":400}"#);
        assert_eq!(vllm.error_message().as_deref(), Some("bad"));
        let ok = chunk(r#"{"choices":[],"error":null}"#);
        assert_eq!(ok.error_message(), None);
    }

    #[test]
    fn unset_fields_are_not_sent() {
        let messages = [Message {
            role: "user".into(),
            content: "hi".into(),
        }];
        let request = ChatCompletionRequest {
            model: "m",
            messages: &messages,
            max_tokens: 4,
            max_completion_tokens: 4,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            temperature: None,
            top_p: None,
            ignore_eos: false,
        };
        let json = serde_json::to_value(&request).expect("serialises");
        assert!(json.get("ignore_eos").is_none());
        assert!(json.get("temperature").is_none());
        assert_eq!(json["stream_options"]["include_usage"], true);
        assert_eq!(json["max_completion_tokens"], 4);
    }
}
