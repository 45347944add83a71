//! The formats tool calls are written in, and what parsing an output gives.

use std::str::FromStr;

/// How a model writes tool calls in its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolCallFormat {
    /// `<tool_call>{...}</tool_call>` blocks (Hermes, Qwen).
    Hermes,
    /// Llama 3.1/3.2 JSON tool calling: `{"name": ..., "parameters": ...}` objects separated by `;`.
    Llama3Json,
    /// `[TOOL_CALLS]` and a JSON array of calls (Mistral).
    Mistral,
    /// The whole output is a JSON array of calls; internal, not a `--tool-call-parser` name.
    JsonArray,
}

/// A `--tool-call-parser` name that is not one of [`ToolCallFormat::CLI_NAMES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool call parser {name:?}: expected one of {}", ToolCallFormat::CLI_NAMES.join(", "))]
pub struct UnknownToolCallFormat {
    pub name: String,
}

impl ToolCallFormat {
    /// The names `--tool-call-parser` accepts, as vLLM spells them.
    pub const CLI_NAMES: &'static [&'static str] = &["hermes", "llama3_json", "mistral"];

    /// The format's name (`"json_array"` for the internal [`ToolCallFormat::JsonArray`]).
    pub fn name(&self) -> &'static str {
        match self {
            ToolCallFormat::Hermes => "hermes",
            ToolCallFormat::Llama3Json => "llama3_json",
            ToolCallFormat::Mistral => "mistral",
            ToolCallFormat::JsonArray => "json_array",
        }
    }
}

impl FromStr for ToolCallFormat {
    type Err = UnknownToolCallFormat;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "hermes" => Ok(ToolCallFormat::Hermes),
            "llama3_json" => Ok(ToolCallFormat::Llama3Json),
            "mistral" => Ok(ToolCallFormat::Mistral),
            _ => Err(UnknownToolCallFormat {
                name: name.to_string(),
            }),
        }
    }
}

/// One tool call found in the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedToolCall {
    /// The function's name.
    pub name: String,
    /// The JSON text of the arguments object, exactly as the model wrote it.
    pub arguments: String,
}

/// A complete output split into content and tool calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedOutput {
    /// The text that is not part of a call; `None` when there is none.
    pub content: Option<String>,
    /// The calls, in the order the model wrote them.
    pub tool_calls: Vec<ParsedToolCall>,
}

impl ParsedOutput {
    pub(super) fn new(content: String, tool_calls: Vec<ParsedToolCall>) -> Self {
        Self {
            content: (!content.is_empty()).then_some(content),
            tool_calls,
        }
    }
}
