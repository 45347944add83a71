//! A chat choice's generated text → `content` and OpenAI `tool_calls`, whole or streamed.
//!
//! Streamed, each call appears as `delta.tool_calls` chunks the official SDKs assemble: first
//! `{"index", "id", "type": "function", "function": {"name", "arguments": ""}}`, then
//! `{"index", "function": {"arguments": <text>}}`: the whole arguments once the output has ended
//! and parsed (see `StreamingToolCallParser`), or, for a named function, fragments as they are
//! generated. Whole, the message carries `tool_calls` with the same ids' shape and the same
//! arguments text.

use pagoda_text::tool_calls::{StreamingToolCallParser, ToolCallFormat, ToolStreamDelta};

use crate::openai::wire::tool_calls::{ArgumentsDelta, ToolCall, ToolCallDelta};

/// How a choice's output is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolOutput {
    /// Calls written in this format among (or instead of) content; with `parallel: false`
    /// (`parallel_tool_calls: false`) only the first call is returned, as OpenAI promises.
    Parsed {
        format: ToolCallFormat,
        parallel: bool,
    },
    /// The whole output is the arguments of a call to this function.
    Named(String),
}

/// A new call id, as OpenAI spells them (`call_` and 24 alphanumerics).
pub fn new_call_id() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let suffix: String = (0..24)
        .map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("call_{suffix}")
}

/// A call as a whole message carries it, with a new id.
fn new_call(name: &str, arguments: &str) -> ToolCall {
    ToolCall::function(new_call_id(), name, arguments)
}

/// A streamed call's opening piece: the call with its `index` among the choice's calls.
fn opening(index: usize, name: &str) -> ToolCallDelta {
    ToolCallDelta::opening(index, new_call(name, ""))
}

/// A finished choice's message fields: `content` (`None` when all of it was calls) and the calls.
pub fn message_parts(output: &ToolOutput, text: &str) -> (Option<String>, Vec<ToolCall>) {
    match output {
        ToolOutput::Named(name) => (None, vec![new_call(name, text)]),
        ToolOutput::Parsed { format, parallel } => {
            let parsed = format.parse(text);
            let calls = parsed
                .tool_calls
                .iter()
                .take(max_calls(*parallel))
                .map(|call| new_call(&call.name, &call.arguments))
                .collect();
            (parsed.content, calls)
        }
    }
}

/// How many of the parsed calls a choice returns.
fn max_calls(parallel: bool) -> usize {
    if parallel {
        usize::MAX
    } else {
        1
    }
}

/// What one streamed text delta becomes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatDelta {
    pub content: String,
    pub tool_calls: Vec<ToolCallDelta>,
}

impl ChatDelta {
    pub fn is_empty(&self) -> bool {
        self.content.is_empty() && self.tool_calls.is_empty()
    }

    /// Adds arguments text to call `index`: to its entry when this delta has one (one entry per
    /// index per chunk, as OpenAI and vLLM stream; the SDKs' stream helpers and instructor read
    /// a repeated index as another call), else as an entry of its own.
    fn push_arguments(&mut self, index: usize, fragment: &str) {
        match self.tool_calls.iter_mut().find(|c| c.index() == index) {
            Some(call) => call.push_arguments(fragment),
            None => self.tool_calls.push(ToolCallDelta::Arguments {
                index,
                function: ArgumentsDelta {
                    arguments: fragment.to_string(),
                },
            }),
        }
    }
}

/// One streamed choice's reader.
#[derive(Debug)]
pub struct ToolCallStream {
    reader: Reader,
    num_calls: usize,
    max_calls: usize,
}

#[derive(Debug)]
enum Reader {
    Parsed(StreamingToolCallParser),
    Named { name: String },
}

impl ToolCallStream {
    pub fn new(output: &ToolOutput) -> Self {
        let (reader, max_calls) = match output {
            ToolOutput::Parsed { format, parallel } => {
                (Reader::Parsed(format.streaming()), max_calls(*parallel))
            }
            ToolOutput::Named(name) => (Reader::Named { name: name.clone() }, 1),
        };
        Self {
            reader,
            num_calls: 0,
            max_calls,
        }
    }

    /// Calls started so far.
    pub fn num_calls(&self) -> usize {
        self.num_calls
    }

    pub fn push(&mut self, text: &str) -> ChatDelta {
        match &mut self.reader {
            Reader::Parsed(parser) => {
                let deltas = parser.push(text);
                self.convert(deltas)
            }
            Reader::Named { name } => {
                let mut delta = ChatDelta::default();
                if self.num_calls == 0 {
                    delta.tool_calls.push(opening(0, name));
                    self.num_calls = 1;
                }
                if !text.is_empty() {
                    delta.push_arguments(0, text);
                }
                delta
            }
        }
    }

    /// What the reader still held when the choice ended.
    pub fn finish(&mut self) -> ChatDelta {
        match &mut self.reader {
            Reader::Parsed(parser) => {
                let deltas = parser.finish();
                self.convert(deltas)
            }
            Reader::Named { .. } => self.push(""),
        }
    }

    fn convert(&mut self, deltas: Vec<ToolStreamDelta>) -> ChatDelta {
        let mut delta = ChatDelta::default();
        for item in deltas {
            match item {
                ToolStreamDelta::Content(text) => delta.content.push_str(&text),
                ToolStreamDelta::CallStart { index, .. }
                | ToolStreamDelta::Arguments { index, .. }
                    if index >= self.max_calls => {}
                ToolStreamDelta::CallStart { index, name } => {
                    self.num_calls = self.num_calls.max(index + 1);
                    delta.tool_calls.push(opening(index, &name));
                }
                ToolStreamDelta::Arguments { index, fragment } => {
                    delta.push_arguments(index, &fragment);
                }
            }
        }
        delta
    }
}

/// The finish reason of a choice that made `num_calls` calls: `tool_calls` when it stopped
/// after calling (OpenAI's, for `auto` and `required`; a named function keeps `stop`, as OpenAI).
pub fn finish_reason<'a>(output: &ToolOutput, num_calls: usize, reason: &'a str) -> &'a str {
    match output {
        ToolOutput::Parsed { .. } if num_calls > 0 && reason == "stop" => "tool_calls",
        _ => reason,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    /// What a call or a piece of one writes.
    fn json<T: serde::Serialize>(value: &T) -> Value {
        serde_json::to_value(value).expect("serializes")
    }

    fn calls_json(calls: &[ToolCall]) -> Vec<Value> {
        calls.iter().map(json).collect()
    }

    fn pieces(delta: &ChatDelta) -> Vec<Value> {
        delta.tool_calls.iter().map(json).collect()
    }

    fn arguments_of(deltas: &[ChatDelta], index: usize) -> String {
        deltas
            .iter()
            .flat_map(pieces)
            .filter(|c| c["index"] == index)
            .filter_map(|c| c["function"]["arguments"].as_str().map(str::to_string))
            .collect()
    }

    fn assert_one_entry_per_index(deltas: &[ChatDelta]) {
        for delta in deltas {
            let mut indices: Vec<u64> = pieces(delta)
                .iter()
                .filter_map(|c| c["index"].as_u64())
                .collect();
            let num_entries = indices.len();
            indices.dedup();
            assert_eq!(indices.len(), num_entries, "{:?}", delta.tool_calls);
        }
    }

    #[test]
    fn streamed_calls_add_up_to_the_whole_message() {
        let text = "Let me check.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        let output = ToolOutput::Parsed {
            format: ToolCallFormat::Hermes,
            parallel: true,
        };
        let (content, calls) = message_parts(&output, text);
        let calls = calls_json(&calls);
        assert_eq!(content.as_deref(), Some("Let me check."));
        assert_eq!(calls.len(), 1);
        assert!(
            calls[0].get("index").is_none(),
            "a whole message's calls have no index"
        );
        let mut stream = ToolCallStream::new(&output);
        let mut deltas: Vec<ChatDelta> = text
            .as_bytes()
            .chunks(5)
            .map(|chunk| stream.push(std::str::from_utf8(chunk).expect("ascii")))
            .collect();
        deltas.push(stream.finish());
        assert_one_entry_per_index(&deltas);
        let streamed_content: String = deltas.iter().map(|d| d.content.as_str()).collect();
        assert_eq!(streamed_content, "Let me check.");
        assert_eq!(arguments_of(&deltas, 0), calls[0]["function"]["arguments"]);
        let starts: Vec<Value> = deltas
            .iter()
            .flat_map(pieces)
            .filter(|c| c.get("id").is_some())
            .collect();
        assert_eq!(starts.len(), 1, "one opening chunk per call");
        assert_eq!(starts[0]["function"]["name"], "get_weather");
        assert!(starts[0]["id"].as_str().expect("id").starts_with("call_"));
        assert_eq!(stream.num_calls(), 1);
        assert_eq!(finish_reason(&output, 1, "stop"), "tool_calls");
        assert_eq!(finish_reason(&output, 1, "length"), "length");
        assert_eq!(finish_reason(&output, 0, "stop"), "stop");
    }

    #[test]
    fn without_parallel_calls_only_the_first_is_returned() {
        let call = |city: &str| {
            format!("<tool_call>\n{{\"name\": \"w\", \"arguments\": {{\"city\": \"{city}\"}}}}\n</tool_call>\n")
        };
        let text = format!("{}{}", call("Paris"), call("Rome"));
        for (parallel, num_calls) in [(true, 2), (false, 1)] {
            let output = ToolOutput::Parsed {
                format: ToolCallFormat::Hermes,
                parallel,
            };
            let (_, calls) = message_parts(&output, &text);
            let calls = calls_json(&calls);
            assert_eq!(calls.len(), num_calls);
            assert_eq!(calls[0]["function"]["arguments"], "{\"city\": \"Paris\"}");
            let mut stream = ToolCallStream::new(&output);
            let deltas = vec![stream.push(&text), stream.finish()];
            assert_one_entry_per_index(&deltas);
            let indices: Vec<Value> = deltas
                .iter()
                .flat_map(pieces)
                .map(|c| c["index"].clone())
                .collect();
            assert!(indices.iter().all(|i| i.as_u64() < Some(num_calls as u64)));
            assert_eq!(arguments_of(&deltas, 0), "{\"city\": \"Paris\"}");
            assert_eq!(stream.num_calls(), num_calls);
        }
    }

    #[test]
    fn a_named_function_streams_its_arguments_from_the_first_token() {
        let output = ToolOutput::Named("add".into());
        let mut stream = ToolCallStream::new(&output);
        let first = stream.push("{\"a\":");
        assert_eq!(pieces(&first)[0]["function"]["name"], "add");
        // The opening entry carries the first fragment: one entry per index in a chunk.
        assert_eq!(first.tool_calls.len(), 1);
        assert_eq!(pieces(&first)[0]["function"]["arguments"], "{\"a\":");
        let deltas = vec![first, stream.push(" 1}"), stream.finish()];
        assert_one_entry_per_index(&deltas);
        assert_eq!(arguments_of(&deltas, 0), "{\"a\": 1}");
        let (content, calls) = message_parts(&output, "{\"a\": 1}");
        let calls = calls_json(&calls);
        assert_eq!(content, None);
        assert_eq!(calls[0]["function"]["arguments"], "{\"a\": 1}");
        assert_eq!(finish_reason(&output, 1, "stop"), "stop");
    }
}
