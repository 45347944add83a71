//! The streaming parser: text deltas in, content and tool-call deltas out, as soon as they are
//! certain. It reads the same grammar as the whole-text parser a character at a time, so how the
//! output is split into deltas never changes what comes out.

use super::call_object::{CallObjectReader, CallStep};
use super::content_watch::{ContentWatch, WatchStep};
use super::format::ToolCallFormat;
use super::parse::{HERMES_CLOSE, HERMES_OPEN, MISTRAL_MARKER, PYTHON_TAG};

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
/// For a well-formed output, the `Content` deltas add up to [`ToolCallFormat::parse`]'s content,
/// the `CallStart`s name its calls in order, and each call's `Arguments` fragments add up to its
/// arguments text, however the output is split. A call's name goes out once complete and its
/// arguments as they arrive; content goes out at once, except a tail that could begin a marker
/// (and whitespace after a call, which is dropped unless more content follows).
///
/// A malformed call cannot be taken back once parts of it are sent. When the parser finds one
/// (at the first character that breaks the grammar, or at [`StreamingToolCallParser::finish`]
/// for a call cut short), the text of the call it still holds (everything not yet sent as a
/// `CallStart` or `Arguments`) goes out as `Content`, and so does all the output after it. So a
/// "call" that breaks before its name is complete comes out entirely as content. JSON that is
/// well nested but invalid (`{"a": tru}`) is only caught by the whole-text parser.
#[derive(Debug)]
pub struct StreamingToolCallParser {
    format: ToolCallFormat,
    phase: Phase,
    call: Option<OpenCall>,
    /// Text of the current call region read but not yet sent in any delta.
    unsent: String,
    next_index: usize,
    out: Vec<ToolStreamDelta>,
}

/// The call object being read.
#[derive(Debug)]
struct OpenCall {
    reader: CallObjectReader,
    /// Set once the name is complete and its `CallStart` sent.
    index: Option<usize>,
    /// Arguments that came before the name, sent right after its `CallStart`.
    early_arguments: String,
}

#[derive(Debug)]
enum Phase {
    /// Hermes, Mistral: content, watching for the marker (also after the last call).
    Content(ContentWatch),
    /// Llama 3, JSON array: the whitespace (and `<|python_tag|>`) before the first other character.
    Leading(String),
    /// Whitespace, then `opener`; at the output's end, fine only if `end_ok`.
    SeekOpen { opener: char, end_ok: bool },
    /// Inside a call object.
    Call,
    /// Hermes: whitespace, then `</tool_call>` (`matched` bytes of it so far).
    HermesClose { matched: usize },
    /// Llama 3: whitespace, then `;` and another call, or trailing content.
    LlamaAfterCall,
    /// Just after an array's `[`: a call or `]`.
    ArrayFirst,
    /// After a call in an array: `,` or `]`.
    ArrayAfterItem,
    /// Everything is content: not a tool-call output, text after it, or after a malformed call.
    Passthrough,
}

impl StreamingToolCallParser {
    pub(super) fn new(format: ToolCallFormat) -> Self {
        let phase = match format {
            ToolCallFormat::Hermes => Phase::Content(ContentWatch::leading(Some(HERMES_OPEN))),
            ToolCallFormat::Mistral => Phase::Content(ContentWatch::leading(Some(MISTRAL_MARKER))),
            ToolCallFormat::Llama3Json | ToolCallFormat::JsonArray => Phase::Leading(String::new()),
        };
        Self {
            format,
            phase,
            call: None,
            unsent: String::new(),
            next_index: 0,
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
            Phase::SeekOpen { end_ok: true, .. }
            | Phase::HermesClose { .. }
            | Phase::LlamaAfterCall => {
                self.unsent.clear();
            }
            Phase::SeekOpen { end_ok: false, .. }
            | Phase::Call
            | Phase::ArrayFirst
            | Phase::ArrayAfterItem => self.give_up(),
            Phase::Passthrough => {}
        }
        std::mem::take(&mut self.out)
    }

    fn step(&mut self, phase: Phase, c: char) -> Phase {
        match phase {
            Phase::Content(watch) => self.step_content(watch, c),
            Phase::Leading(held) => self.step_leading(held, c),
            Phase::Call => self.step_call(c),
            Phase::Passthrough => {
                self.send_content(c.encode_utf8(&mut [0; 4]));
                Phase::Passthrough
            }
            structural => self.step_structure(structural, c),
        }
    }

    fn step_content(&mut self, mut watch: ContentWatch, c: char) -> Phase {
        match watch.step(c) {
            WatchStep::Content(content) => {
                self.send_content(&content);
                Phase::Content(watch)
            }
            WatchStep::Marker(before) => {
                self.send_content(&before);
                match self.format {
                    ToolCallFormat::Mistral => {
                        self.unsent = MISTRAL_MARKER.to_string();
                        Phase::SeekOpen {
                            opener: '[',
                            end_ok: false,
                        }
                    }
                    _ => {
                        self.unsent = HERMES_OPEN.to_string();
                        Phase::SeekOpen {
                            opener: '{',
                            end_ok: false,
                        }
                    }
                }
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
            Some('{') if self.format == ToolCallFormat::Llama3Json => {
                held.pop();
                self.unsent = held;
                self.begin_call(c)
            }
            Some('[') if self.format == ToolCallFormat::JsonArray => {
                self.unsent = held;
                Phase::ArrayFirst
            }
            Some(_) => {
                self.send_content(&held);
                Phase::Passthrough
            }
        }
    }

    /// The syntax around call objects.
    fn step_structure(&mut self, phase: Phase, c: char) -> Phase {
        let space = c.is_whitespace();
        let next = match phase {
            Phase::SeekOpen { .. }
            | Phase::LlamaAfterCall
            | Phase::ArrayFirst
            | Phase::ArrayAfterItem
                if space =>
            {
                phase
            }
            Phase::HermesClose { matched: 0 } if space => phase,
            Phase::SeekOpen { opener: '{', .. } | Phase::ArrayFirst if c == '{' => {
                return self.begin_call(c)
            }
            Phase::SeekOpen { opener: '[', .. } if c == '[' => Phase::ArrayFirst,
            Phase::ArrayFirst | Phase::ArrayAfterItem if c == ']' => return self.end_region(),
            Phase::ArrayAfterItem if c == ',' => Phase::SeekOpen {
                opener: '{',
                end_ok: false,
            },
            Phase::LlamaAfterCall if c == ';' => Phase::SeekOpen {
                opener: '{',
                end_ok: true,
            },
            Phase::HermesClose { matched } if HERMES_CLOSE[matched..].starts_with(c) => {
                let matched = matched + c.len_utf8();
                if matched == HERMES_CLOSE.len() {
                    return self.end_region();
                }
                Phase::HermesClose { matched }
            }
            // A malformed region, or (Llama 3) content after the calls.
            _ => {
                self.unsent.push(c);
                self.give_up();
                return Phase::Passthrough;
            }
        };
        self.unsent.push(c);
        next
    }

    fn begin_call(&mut self, open_brace: char) -> Phase {
        self.call = Some(OpenCall {
            reader: CallObjectReader::new(),
            index: None,
            early_arguments: String::new(),
        });
        self.step_call(open_brace)
    }

    fn step_call(&mut self, c: char) -> Phase {
        let Some(call) = self.call.as_mut() else {
            return Phase::Passthrough;
        };
        match call.reader.step(c) {
            CallStep::Structure => self.unsent.push(c),
            CallStep::Name(name) => {
                let index = self.next_index;
                self.next_index += 1;
                call.index = Some(index);
                let early = std::mem::take(&mut call.early_arguments);
                self.out.push(ToolStreamDelta::CallStart { index, name });
                self.send_arguments(index, &early);
                self.unsent.clear();
            }
            CallStep::Argument => match call.index {
                Some(index) => {
                    self.unsent.clear();
                    self.send_arguments(index, c.encode_utf8(&mut [0; 4]));
                }
                None => {
                    call.early_arguments.push(c);
                    self.unsent.push(c);
                }
            },
            CallStep::Done => {
                self.unsent.clear();
                self.call = None;
                return match self.format {
                    ToolCallFormat::Hermes => Phase::HermesClose { matched: 0 },
                    ToolCallFormat::Llama3Json => Phase::LlamaAfterCall,
                    ToolCallFormat::Mistral | ToolCallFormat::JsonArray => Phase::ArrayAfterItem,
                };
            }
            CallStep::Malformed => {
                self.unsent.push(c);
                self.give_up();
                return Phase::Passthrough;
            }
        }
        Phase::Call
    }

    /// A Hermes block or a call array is complete: back to (gap) content.
    fn end_region(&mut self) -> Phase {
        self.unsent.clear();
        let marker = match self.format {
            ToolCallFormat::Hermes => Some(HERMES_OPEN),
            ToolCallFormat::Mistral => Some(MISTRAL_MARKER),
            ToolCallFormat::Llama3Json | ToolCallFormat::JsonArray => None,
        };
        Phase::Content(ContentWatch::gap(marker))
    }

    /// Not a (complete) call after all: what is held goes out as content.
    fn give_up(&mut self) {
        self.call = None;
        let unsent = std::mem::take(&mut self.unsent);
        self.send_content(&unsent);
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

    fn send_arguments(&mut self, index: usize, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.out.last_mut() {
            Some(ToolStreamDelta::Arguments {
                index: last,
                fragment,
            }) if *last == index => fragment.push_str(text),
            _ => self.out.push(ToolStreamDelta::Arguments {
                index,
                fragment: text.to_string(),
            }),
        }
    }
}
