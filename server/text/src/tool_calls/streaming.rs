//! The streaming parser: text deltas in, content and tool-call deltas out. Content before the
//! first call streams as it arrives; from the first call on, the output is held and read by the
//! whole-text parser when it ends, so a streamed choice always adds up to exactly what the same
//! output gives unstreamed, malformed or cut-short calls included. A JSON array of calls
//! (`tool_choice: "required"`) sends each call as soon as it closes, since nothing written after
//! it can take it back ([`ToolCallFormat::JsonArray`]'s parse keeps every completed call).

use super::array_progress::ArrayProgress;
use super::call_object::parse_call_at;
use super::content_watch::{ContentWatch, WatchStep};
use super::format::{ParsedToolCall, ToolCallFormat};
use super::parse::{self, HERMES_OPEN, MISTRAL_MARKER, PYTHON_TAG};

/// A piece of a streamed output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolStreamDelta {
    /// Text that is not part of a tool call.
    Content(String),
    /// Call `index` (0, 1, ... in output order) begins; its name is complete.
    CallStart { index: usize, name: String },
    /// More of call `index`'s arguments JSON text.
    Arguments { index: usize, fragment: String },
}

/// Parses an output as it is generated (see [`ToolCallFormat::streaming`]).
///
/// The `Content` deltas add up to [`ToolCallFormat::parse`]'s content, the `CallStart`s name its
/// calls in order and each call's `Arguments` is its arguments text, however the output is split.
/// Content goes out at once, except a tail that could begin a marker (`<tool_call>`,
/// `[TOOL_CALLS]`; for Llama 3 JSON and JSON arrays, leading whitespace). Once a call region
/// begins (the marker, or the output's first `{` / `[`), everything after it is held until
/// [`StreamingToolCallParser::finish`], which parses it whole: each call then goes out as its
/// `CallStart` and its complete `Arguments`, and text that is not a well-formed call goes out as
/// content. In a JSON array of calls, each call goes out (`CallStart` and complete `Arguments`)
/// as soon as its object closes. A call is never sent before it is known to be well formed:
/// arguments that turn out not to be JSON, or a call cut short by a stop string or the token
/// limit, come out as content (a JSON array's unfinished last call is dropped), as they do
/// unstreamed, and never as a call a client would try to run.
#[derive(Debug)]
pub struct StreamingToolCallParser {
    format: ToolCallFormat,
    phase: Phase,
    out: Vec<ToolStreamDelta>,
}

#[derive(Debug)]
enum Phase {
    /// Hermes, Mistral: content, watching for the marker.
    Content(ContentWatch),
    /// Llama 3, JSON array: the whitespace (and `<|python_tag|>`) before the first other character.
    Leading(String),
    /// From the start of the first call region: held until the output ends.
    Calls(String),
    /// A JSON array of calls from its `[` (and the whitespace before): held, each call sent as
    /// it closes.
    Array(ArrayCalls),
    /// Everything is content: not a tool-call output, or after `finish`.
    Passthrough,
}

impl StreamingToolCallParser {
    pub(super) fn new(format: ToolCallFormat) -> Self {
        let phase = match format {
            ToolCallFormat::Hermes => Phase::Content(ContentWatch::new(HERMES_OPEN)),
            ToolCallFormat::Mistral => Phase::Content(ContentWatch::new(MISTRAL_MARKER)),
            ToolCallFormat::Llama3Json | ToolCallFormat::JsonArray => Phase::Leading(String::new()),
        };
        Self {
            format,
            phase,
            out: Vec::new(),
        }
    }

    /// The deltas that the next piece of output makes certain.
    pub fn push(&mut self, text_delta: &str) -> Vec<ToolStreamDelta> {
        for c in text_delta.chars() {
            let phase = std::mem::replace(&mut self.phase, Phase::Passthrough);
            self.phase = self.step(phase, c);
        }
        std::mem::take(&mut self.out)
    }

    /// The last deltas, once the output is complete. Later pushes are passed through as content.
    pub fn finish(&mut self) -> Vec<ToolStreamDelta> {
        match std::mem::replace(&mut self.phase, Phase::Passthrough) {
            Phase::Content(mut watch) => {
                let held = watch.finish();
                self.send_content(&held);
            }
            Phase::Leading(held) => self.send_content(&held),
            Phase::Calls(held) => self.send_calls(&held),
            Phase::Array(array) => self.send_rest_of_array(&array),
            Phase::Passthrough => {}
        }
        std::mem::take(&mut self.out)
    }

    fn step(&mut self, phase: Phase, c: char) -> Phase {
        match phase {
            Phase::Content(mut watch) => match watch.step(c) {
                WatchStep::Content(content) => {
                    self.send_content(&content);
                    Phase::Content(watch)
                }
                WatchStep::Marker(before) => {
                    self.send_content(&before);
                    let marker = match self.format {
                        ToolCallFormat::Mistral => MISTRAL_MARKER,
                        _ => HERMES_OPEN,
                    };
                    Phase::Calls(marker.to_string())
                }
            },
            Phase::Leading(held) => self.step_leading(held, c),
            Phase::Calls(mut held) => {
                held.push(c);
                Phase::Calls(held)
            }
            Phase::Array(mut array) => {
                if let Some(call) = array.push(c) {
                    self.send_call(array.num_sent - 1, call);
                }
                Phase::Array(array)
            }
            Phase::Passthrough => {
                self.send_content(c.encode_utf8(&mut [0; 4]));
                Phase::Passthrough
            }
        }
    }

    /// Decides at the first character past whitespace (and Llama 3's `<|python_tag|>`).
    fn step_leading(&mut self, mut held: String, c: char) -> Phase {
        held.push(c);
        let rest = held.trim_start();
        let rest = match (self.format, rest.strip_prefix(PYTHON_TAG)) {
            (ToolCallFormat::Llama3Json, Some(after_tag)) => after_tag.trim_start(),
            (ToolCallFormat::Llama3Json, None) if PYTHON_TAG.starts_with(rest) => "",
            _ => rest,
        };
        match rest.chars().next() {
            None => Phase::Leading(held),
            Some('{') if self.format == ToolCallFormat::Llama3Json => Phase::Calls(held),
            Some('[') if self.format == ToolCallFormat::JsonArray => Phase::Array(ArrayCalls {
                held,
                progress: ArrayProgress::new(),
                num_sent: 0,
            }),
            Some(_) => {
                self.send_content(&held);
                Phase::Passthrough
            }
        }
    }

    /// The held call region, parsed whole: its calls and content, or all of it as content.
    fn send_calls(&mut self, held: &str) {
        let Ok(parsed) = parse::parse(self.format, held) else {
            self.send_content(held);
            return;
        };
        self.send_content(parsed.content.as_deref().unwrap_or_default());
        for (index, call) in parsed.tool_calls.into_iter().enumerate() {
            self.send_call(index, call);
        }
    }

    /// The held array parsed whole: the calls not sent yet, then its content (all of it as
    /// content when no call was read, which is the only way the parse can fail).
    fn send_rest_of_array(&mut self, array: &ArrayCalls) {
        let Ok(parsed) = parse::parse(self.format, &array.held) else {
            debug_assert_eq!(array.num_sent, 0, "a sent call is kept by the whole parse");
            self.send_content(&array.held);
            return;
        };
        let calls = parsed
            .tool_calls
            .into_iter()
            .enumerate()
            .skip(array.num_sent);
        for (index, call) in calls {
            self.send_call(index, call);
        }
        self.send_content(parsed.content.as_deref().unwrap_or_default());
    }

    /// Call `index`: its `CallStart` and its whole `Arguments`.
    fn send_call(&mut self, index: usize, call: ParsedToolCall) {
        self.out.push(ToolStreamDelta::CallStart {
            index,
            name: call.name,
        });
        if !call.arguments.is_empty() {
            self.out.push(ToolStreamDelta::Arguments {
                index,
                fragment: call.arguments,
            });
        }
    }

    fn send_content(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.out.last_mut() {
            Some(ToolStreamDelta::Content(content)) => content.push_str(text),
            _ => self.out.push(ToolStreamDelta::Content(text.to_string())),
        }
    }
}

/// A JSON array of calls being held: its text from the start of the output, how far its
/// elements have been read, and how many calls went out.
#[derive(Debug)]
struct ArrayCalls {
    held: String,
    progress: ArrayProgress,
    num_sent: usize,
}

impl ArrayCalls {
    /// Holds `c`; the call it completed, if it closed an element that is a call (an element that
    /// is not stops the sending: the whole parse reads the rest).
    fn push(&mut self, c: char) -> Option<ParsedToolCall> {
        let at = self.held.len();
        self.held.push(c);
        let start = self.progress.step(at, c)?;
        match parse_call_at(&self.held, start) {
            Some((call, _)) => {
                self.num_sent += 1;
                Some(call)
            }
            None => {
                self.progress.stop();
                None
            }
        }
    }
}
