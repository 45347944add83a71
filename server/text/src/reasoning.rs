//! A reasoning model's thinking, split from its answer: the `<think>…</think>` part of the
//! output becomes `reasoning_content`, the rest `content` (vLLM's `--reasoning-parser`).
//!
//! - [`ReasoningFormat::DeepSeekR1`] (DeepSeek-R1 and its distills, whose templates often open
//!   the `<think>` block in the prompt): everything up to `</think>` is reasoning, after an
//!   optional leading `<think>`; an output without `</think>` is all reasoning (cut short while
//!   thinking).
//! - [`ReasoningFormat::Qwen3`] (Qwen3, QwQ): an output that starts with `<think>` reasons until
//!   `</think>` (or its end); any other output is all content (`enable_thinking: false`).
//!
//! [`ReasoningFormat::split`] reads a whole output; [`ReasoningFormat::streaming`] the same
//! output as it is generated, with the same result however it is split: only text that could
//! still be the start of a tag is held back.

use std::str::FromStr;

use crate::tool_calls::marker_start_len;

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// How a model marks its reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningFormat {
    DeepSeekR1,
    Qwen3,
}

/// A `--reasoning-parser` name that is not one of [`ReasoningFormat::CLI_NAMES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownReasoningFormat(pub String);

impl ReasoningFormat {
    /// The `--reasoning-parser` names, as vLLM spells them.
    pub const CLI_NAMES: &'static [&'static str] = &["deepseek_r1", "qwen3"];

    /// The tags that open and close the reasoning (the same for every format here).
    pub fn tags(self) -> (&'static str, &'static str) {
        (THINK_OPEN, THINK_CLOSE)
    }

    /// A whole output's reasoning (`None` when it has none) and content.
    pub fn split(self, text: &str) -> (Option<String>, String) {
        let opened = text.strip_prefix(THINK_OPEN);
        let thinking = match (self, opened) {
            (_, Some(rest)) => rest,
            (Self::DeepSeekR1, None) => text,
            (Self::Qwen3, None) => return (None, text.to_string()),
        };
        let (reasoning, content) = match thinking.find(THINK_CLOSE) {
            Some(end) => (&thinking[..end], &thinking[end + THINK_CLOSE.len()..]),
            None => (thinking, ""),
        };
        let reasoning = (!reasoning.is_empty()).then(|| reasoning.to_string());
        (reasoning, content.to_string())
    }

    /// A splitter for the output as it is generated.
    pub fn streaming(self) -> ReasoningStream {
        ReasoningStream {
            format: self,
            phase: Phase::Start,
            held: String::new(),
            num_reasoning_tokens: 0,
            num_undecided_tokens: 0,
        }
    }
}

impl FromStr for ReasoningFormat {
    type Err = UnknownReasoningFormat;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "deepseek_r1" => Ok(Self::DeepSeekR1),
            "qwen3" => Ok(Self::Qwen3),
            other => Err(UnknownReasoningFormat(other.to_string())),
        }
    }
}

/// What a piece of output turned into.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReasoningDelta {
    pub reasoning: String,
    pub content: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The first characters: is this `<think>`?
    Start,
    /// Inside the reasoning, watching for `</think>`.
    Reasoning,
    /// After the reasoning (or an output without any): all content.
    Content,
}

/// Splits one output as it arrives (see [`ReasoningFormat::streaming`]).
#[derive(Debug, Clone)]
pub struct ReasoningStream {
    format: ReasoningFormat,
    phase: Phase,
    /// Text read but not yet sent: a possible start of the tag being watched for.
    held: String,
    /// Generated tokens of the reasoning (its tags included), as [`Self::push_tokens`] counts.
    num_reasoning_tokens: usize,
    /// Tokens read while it was not yet known whether the output reasons (a possible
    /// `<think>`): reasoning tokens if it turns out to.
    num_undecided_tokens: usize,
}

impl ReasoningStream {
    /// The reasoning and content that the next piece of output makes certain.
    pub fn push(&mut self, text: &str) -> ReasoningDelta {
        let mut delta = ReasoningDelta::default();
        for c in text.chars() {
            self.step(c, &mut delta);
        }
        delta
    }

    /// [`Self::push`] for the text of `num_tokens` generated tokens, counting those of the
    /// reasoning: a token read inside it, the one that closes it, and those of an opening
    /// `<think>` once it is one.
    pub fn push_tokens(&mut self, text: &str, num_tokens: usize) -> ReasoningDelta {
        let before = self.phase;
        let delta = self.push(text);
        match (before, self.phase) {
            (_, Phase::Start) => self.num_undecided_tokens += num_tokens,
            (Phase::Start, Phase::Reasoning) => {
                self.num_reasoning_tokens += self.num_undecided_tokens + num_tokens;
                self.num_undecided_tokens = 0;
            }
            (Phase::Start, Phase::Content) => {
                // Reasoned and closed within this text, or never reasoned at all.
                if !delta.reasoning.is_empty() || text.contains(THINK_CLOSE) {
                    self.num_reasoning_tokens += self.num_undecided_tokens + num_tokens;
                }
                self.num_undecided_tokens = 0;
            }
            (Phase::Reasoning, _) => self.num_reasoning_tokens += num_tokens,
            (Phase::Content, _) => {}
        }
        delta
    }

    /// Generated tokens of the reasoning so far (see [`Self::push_tokens`]).
    pub fn num_reasoning_tokens(&self) -> usize {
        self.num_reasoning_tokens
    }

    /// What is still held when the output ends.
    pub fn finish(&mut self) -> ReasoningDelta {
        let held = std::mem::take(&mut self.held);
        let reasoning = match (self.phase, self.format) {
            (Phase::Reasoning, _) | (Phase::Start, ReasoningFormat::DeepSeekR1) => true,
            (Phase::Content, _) | (Phase::Start, ReasoningFormat::Qwen3) => false,
        };
        if reasoning && self.phase == Phase::Start {
            self.num_reasoning_tokens += self.num_undecided_tokens;
        }
        self.num_undecided_tokens = 0;
        self.phase = Phase::Content;
        match reasoning {
            true => ReasoningDelta {
                reasoning: held,
                content: String::new(),
            },
            false => ReasoningDelta {
                reasoning: String::new(),
                content: held,
            },
        }
    }

    fn step(&mut self, c: char, delta: &mut ReasoningDelta) {
        match self.phase {
            Phase::Content => delta.content.push(c),
            Phase::Start => {
                self.held.push(c);
                if self.held == THINK_OPEN {
                    self.held.clear();
                    self.phase = Phase::Reasoning;
                } else if !THINK_OPEN.starts_with(self.held.as_str()) {
                    let held = std::mem::take(&mut self.held);
                    match self.format {
                        ReasoningFormat::DeepSeekR1 => {
                            self.phase = Phase::Reasoning;
                            for c in held.chars() {
                                self.step(c, delta);
                            }
                        }
                        ReasoningFormat::Qwen3 => {
                            self.phase = Phase::Content;
                            delta.content.push_str(&held);
                        }
                    }
                }
            }
            Phase::Reasoning => {
                self.held.push(c);
                if let Some(before) = self.held.strip_suffix(THINK_CLOSE) {
                    delta.reasoning.push_str(before);
                    self.held.clear();
                    self.phase = Phase::Content;
                    return;
                }
                let keep = marker_start_len(&self.held, THINK_CLOSE);
                let sendable = self.held.len() - keep;
                delta.reasoning.push_str(&self.held[..sendable]);
                self.held.drain(..sendable);
            }
        }
    }
}

#[cfg(test)]
#[path = "reasoning_tests.rs"]
mod tests;
