#![allow(clippy::unwrap_used)]

use super::tests::SAMPLES;
use super::*;

use ToolCallFormat::{Hermes, JsonArray, Llama3Json, Mistral};

/// What a stream of deltas adds up to.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Assembled {
    content: String,
    names: Vec<String>,
    arguments: Vec<String>,
}

impl Assembled {
    fn add(&mut self, deltas: Vec<ToolStreamDelta>) {
        for delta in deltas {
            match delta {
                ToolStreamDelta::Content(text) => {
                    assert!(!text.is_empty(), "empty content delta");
                    self.content.push_str(&text);
                }
                ToolStreamDelta::CallStart { index, name } => {
                    assert_eq!(index, self.names.len(), "call indices go up one at a time");
                    self.names.push(name);
                    self.arguments.push(String::new());
                }
                ToolStreamDelta::Arguments { index, fragment } => {
                    assert!(!fragment.is_empty(), "empty arguments delta");
                    self.arguments[index].push_str(&fragment);
                }
            }
        }
    }

    pub(super) fn of_parsed(parsed: ParsedOutput) -> Self {
        Self {
            content: parsed.content.unwrap_or_default(),
            names: parsed.tool_calls.iter().map(|c| c.name.clone()).collect(),
            arguments: parsed.tool_calls.into_iter().map(|c| c.arguments).collect(),
        }
    }
}

pub(super) fn stream(format: ToolCallFormat, chunks: &[&str]) -> Assembled {
    let mut parser = format.streaming();
    let mut assembled = Assembled::default();
    for chunk in chunks {
        assembled.add(parser.push(chunk));
    }
    assembled.add(parser.finish());
    assembled
}

/// Every way of splitting `text` in two at a char boundary.
fn two_way_splits(text: &str) -> impl Iterator<Item = [&str; 2]> {
    (0..=text.len())
        .filter(|&at| text.is_char_boundary(at))
        .map(|at| [&text[..at], &text[at..]])
}

/// A reproducible pseudo-random chunking of `text` into pieces of 1 to 8 chars.
pub(super) fn random_chunks(text: &str, seed: u64) -> Vec<&str> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut chunks = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let chars = 1 + (state % 8) as usize;
        let split = rest
            .char_indices()
            .nth(chars)
            .map_or(rest.len(), |(at, _)| at);
        chunks.push(&rest[..split]);
        rest = &rest[split..];
    }
    chunks
}

fn assert_split_invariant(format: ToolCallFormat, text: &str) {
    let expected = Assembled::of_parsed(format.parse(text));
    assert_eq!(stream(format, &[text]), expected, "whole: {text:?}");
    let each_char: Vec<String> = text.chars().map(String::from).collect();
    let each_char: Vec<&str> = each_char.iter().map(String::as_str).collect();
    assert_eq!(stream(format, &each_char), expected, "per char: {text:?}");
    for split in two_way_splits(text) {
        assert_eq!(stream(format, &split), expected, "split {split:?}");
    }
    for seed in 0..100 {
        let chunks = random_chunks(text, seed);
        assert_eq!(stream(format, &chunks), expected, "chunks {chunks:?}");
    }
}

#[test]
fn any_split_streams_what_the_whole_text_parses_to() {
    for (format, text) in SAMPLES {
        assert_split_invariant(*format, text);
    }
}

#[test]
fn content_streams_promptly() {
    let mut parser = Hermes.streaming();
    let content = |s: &str| vec![ToolStreamDelta::Content(s.into())];
    assert_eq!(parser.push("Hello <"), content("Hello "));
    assert_eq!(parser.push("b> <tool_c"), content("<b> "));
    assert_eq!(parser.push("all>\n{\"na"), vec![]);
    let mut parser = Llama3Json.streaming();
    assert_eq!(parser.push("  "), vec![]);
    assert_eq!(parser.push(" Hi"), content("   Hi"));
    let mut parser = Mistral.streaming();
    assert_eq!(parser.push("a[TOOL_"), content("a"));
    assert_eq!(parser.push("X"), content("[TOOL_X"));
}

fn call_start(index: usize, name: &str) -> ToolStreamDelta {
    ToolStreamDelta::CallStart {
        index,
        name: name.into(),
    }
}

fn arguments(index: usize, fragment: &str) -> ToolStreamDelta {
    ToolStreamDelta::Arguments {
        index,
        fragment: fragment.into(),
    }
}

#[test]
fn calls_are_held_until_the_output_ends_then_sent_whole() {
    let mut parser = Hermes.streaming();
    assert_eq!(parser.push("<tool_call>\n{\"name\": \"f"), vec![]);
    assert_eq!(
        parser.push("\", \"arguments\": {\"a\": 1}}\n</tool_call>"),
        vec![]
    );
    assert_eq!(
        parser.finish(),
        vec![call_start(0, "f"), arguments(0, "{\"a\": 1}")]
    );
    let text = "{\"parameters\": {\"x\": 1}, \"name\": \"f\"}";
    assert_split_invariant(Llama3Json, text);
}

/// `tool_choice: "required"`: each call goes out as soon as its object closes, while the model
/// writes the next; an unfinished last call (the token limit) is dropped, as unstreamed.
#[test]
fn a_call_array_sends_each_call_as_it_closes() {
    let mut parser = JsonArray.streaming();
    assert_eq!(parser.push("[{\"name\": \"f"), vec![]);
    assert_eq!(
        parser.push("\", \"arguments\": {\"a\": 1}"),
        vec![],
        "the arguments object closed, the call has not"
    );
    assert_eq!(
        parser.push("}, {\"name\": \"g\", "),
        vec![call_start(0, "f"), arguments(0, "{\"a\": 1}")]
    );
    assert_eq!(
        parser.push("\"arguments\": {}}"),
        vec![call_start(1, "g"), arguments(1, "{}")]
    );
    assert_eq!(parser.push(", {\"name\": \"h\", \"argu"), vec![]);
    assert_eq!(parser.finish(), vec![], "the cut call is dropped");
    let cut = "[{\"name\": \"f\", \"arguments\": {\"a\": 1}}, {\"name\": \"h\", \"argu";
    assert_split_invariant(JsonArray, cut);
    // A closed array with an element that is not a call after a sent call: the call stays, the
    // text from that element on is content, streamed as unstreamed.
    let broken = "[{\"name\": \"f\", \"arguments\": {}}, 42]";
    let streamed = stream(JsonArray, &[broken]);
    assert_eq!(streamed.names, ["f"]);
    assert_eq!(streamed.content, "42]");
    assert_split_invariant(JsonArray, broken);
    // With no call before it, the whole output is content.
    let not_calls = "[42, {\"name\": \"f\", \"arguments\": {}}]";
    assert_eq!(stream(JsonArray, &[not_calls]).content, not_calls);
    assert_split_invariant(JsonArray, not_calls);
}

/// Calls that break after their name (arguments that are not JSON, or not an object), or that a
/// stop string or the token limit cuts short: never a call, all content, as unstreamed.
#[test]
fn malformed_and_cut_calls_come_out_as_content_as_unstreamed() {
    let texts = [
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": Paris}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"Paris\"}\n</tool_call>",
        "<tool_call>\n{\"name\": \"f\", \"arguments\": [1]}\n</tool_call> after",
        "Sure. <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":",
    ];
    for text in texts {
        let streamed = stream(Hermes, &[text]);
        assert!(streamed.names.is_empty(), "{text:?} streamed a call");
        assert_eq!(streamed.content, text);
        assert_split_invariant(Hermes, text);
    }
    let mut parser = Mistral.streaming();
    let sent = parser.push("[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}}, {\"na");
    assert_eq!(sent, vec![]);
    assert_eq!(
        parser.finish(),
        vec![ToolStreamDelta::Content(
            "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}}, {\"na".into()
        )]
    );
    assert_eq!(parser.push("x"), vec![ToolStreamDelta::Content("x".into())]);
}
