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
//! as it is generated: content before the first call at once, the rest held and parsed whole at
//! the end ([`StreamingToolCallParser`]), except that a JSON array's calls go out one by one as
//! each closes; so a streamed output always adds up to the whole-text result and a malformed
//! call is never sent as a call. (A JSON array keeps the calls completed before a cut or before
//! an element that is not a call, which is what lets them go out early.) Both give each call's `arguments` as the
//! exact text of its JSON object in the output.

mod array_progress;
mod call_object;
mod content_watch;
mod format;
mod json_scan;
mod parse;
mod streaming;

pub(crate) use content_watch::marker_start_len;
pub use format::{ParsedOutput, ParsedToolCall, ToolCallFormat, UnknownToolCallFormat};
pub use streaming::{StreamingToolCallParser, ToolStreamDelta};

impl ToolCallFormat {
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

#[cfg(test)]
mod generated_stream_tests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
