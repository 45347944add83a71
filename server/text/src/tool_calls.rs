//! Tool calls in a model's output text, in the formats vLLM's `--tool-call-parser` names.
//!
//! - [`ToolCallFormat::Hermes`] (Hermes, Qwen2.5, Qwen3): `<tool_call>\n{"name": "f", "arguments":
//!   {...}}\n</tool_call>` blocks. The closing tag may be missing at the very end of the output.
//! - [`ToolCallFormat::Llama3Json`] (Llama 3.1/3.2): the output starts, after whitespace and an
//!   optional `<|python_tag|>`, with `{"name": "f", "parameters": {...}}`; several calls are
//!   separated by `;`. Output that starts otherwise is plain content.
//! - [`ToolCallFormat::Mistral`]: `[TOOL_CALLS]` then a JSON array of calls.
//! - [`ToolCallFormat::JsonArray`]: the whole output is a JSON array of calls (what the server
//!   constrains decoding to for `tool_choice: "required"`).
//!
//! In every format a call object needs a string `name` and an object `arguments` (or
//! `parameters`); other keys are ignored. Text before the first call is content; text between or
//! after calls is content too unless it is only whitespace.
//!
//! [`ToolCallFormat::parse`] reads a complete output: a call that is not well formed makes the
//! whole output plain content with no calls, as vLLM does. [`ToolCallFormat::streaming`] reads it
//! as it is generated; see [`StreamingToolCallParser`] for what it does with a malformed call.
//! Both give each call's `arguments` as the exact text of its JSON object in the output, so the
//! streamed fragments add up to the whole-text result.

mod call_object;
mod content_watch;
mod json_scan;
mod parse;
mod streaming;

pub use streaming::{StreamingToolCallParser, ToolStreamDelta};

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

    /// The content and tool calls of a complete output.
    pub fn parse(&self, text: &str) -> ParsedOutput {
        parse::parse(*self, text)
            .unwrap_or_else(|_| ParsedOutput::new(text.to_string(), Vec::new()))
    }

    /// A parser for the output as it is generated, one text delta at a time.
    pub fn streaming(&self) -> StreamingToolCallParser {
        StreamingToolCallParser::new(*self)
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
    fn new(content: String, tool_calls: Vec<ParsedToolCall>) -> Self {
        Self {
            content: (!content.is_empty()).then_some(content),
            tool_calls,
        }
    }
}

#[cfg(test)]
mod generated_stream_tests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
