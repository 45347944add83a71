//! What a chat chunk's `delta` and a whole response's `message` hold (the same fields), and the
//! token counts of a response.

use serde::Deserialize;

use super::tool_call::ToolCall;

/// A chat chunk's `delta`, or a whole response's `message` (the same fields). A delta with only
/// `role`, or an empty one next to a `finish_reason`, carries no content.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ChatDelta {
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub reasoning_content: Option<String>,
    #[serde(default)]
    pub reasoning: Option<String>,
    /// Tool calls being streamed (`null` or absent when none).
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCall>>,
}

impl ChatDelta {
    /// Whether it has a field that carries generated output (empty or not).
    pub fn has_output_field(&self) -> bool {
        self.content.is_some()
            || self.reasoning_content.is_some()
            || self.reasoning.is_some()
            || self.tool_calls.is_some()
    }

    /// Its generated pieces: content, reasoning, and tool calls' names and arguments.
    pub fn pieces(&self) -> impl Iterator<Item = &str> {
        let tool_calls = self.tool_calls.as_deref().unwrap_or(&[]);
        [
            self.content.as_deref(),
            self.reasoning_content.as_deref(),
            self.reasoning.as_deref(),
        ]
        .into_iter()
        .flatten()
        .chain(tool_calls.iter().flat_map(ToolCall::generated_pieces))
    }
}

/// Token counts (`stream_options.include_usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: usize,
    #[serde(default)]
    pub completion_tokens: usize,
}
