//! The split invariance on many generated outputs: random content around random calls, in
//! every format, streamed in random chunks.

#![allow(clippy::unwrap_used)]

use super::stream_tests::{random_chunks, stream, Assembled};
use super::*;

/// Argument objects with the characters a scanner can trip on.
const ARGUMENTS: &[&str] = &[
    "{}",
    r#"{"city": "Paris"}"#,
    r#"{"s": "}{][\"\\", "n": -1.5e3, "t": true, "z": null}"#,
    r#"{"nested": {"list": [1, [2, {"deep": []}]], "x": {}}}"#,
    "{\"text\": \"h\u{e9}llo \u{1f30d} \\u00e9 \\n\"}",
    "{ \"spaced\" : [ 1 , 2 ] }",
];

const NAMES: &[&str] = &["f", "get_weather", "na\\\"me", "\u{e9}t\u{e9}"];

/// Content that is not a call, including near-misses of every marker.
const CONTENT: &[&str] = &[
    "Sure.",
    "Let me check <tool",
    "x [TOOL_CALLS",
    " <|python_tag ",
    "\n\n",
    "é 🌍 {not json}",
];

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// A call object, with the arguments first or last and sometimes an extra key.
fn call_object(rng: &mut Rng) -> String {
    let name = format!("\"name\": \"{}\"", rng.pick(NAMES));
    let arguments = format!("\"arguments\": {}", rng.pick(ARGUMENTS));
    let members = match rng.below(3) {
        0 => [name, arguments].join(", "),
        1 => [arguments, name].join(",\n "),
        _ => [name, "\"id\": \"call_1\"".to_string(), arguments].join(", "),
    };
    format!("{{{members}}}")
}

/// An output in `format` with `calls` calls.
fn output(format: ToolCallFormat, calls: usize, rng: &mut Rng) -> String {
    let objects: Vec<String> = (0..calls).map(|_| call_object(rng)).collect();
    let lead = rng.pick(CONTENT);
    match format {
        ToolCallFormat::Hermes => {
            let blocks: Vec<String> = objects
                .iter()
                .map(|o| {
                    format!(
                        "<tool_call>\n{o}\n</tool_call>{}",
                        rng.pick(&["\n", "", " ok"])
                    )
                })
                .collect();
            format!("{lead}{}", blocks.concat())
        }
        ToolCallFormat::Llama3Json => {
            let tag = rng.pick(&["", "<|python_tag|>", " \n"]);
            format!(
                "{tag}{}{}",
                objects.join("; "),
                rng.pick(&["", " done", ";"])
            )
        }
        ToolCallFormat::Mistral => format!("{lead}[TOOL_CALLS] [{}]", objects.join(", ")),
        ToolCallFormat::JsonArray => format!("[{}]{}", objects.join(",\n"), rng.pick(&["", "\n"])),
    }
}

#[test]
fn generated_outputs_stream_as_they_parse() {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    for format in [
        ToolCallFormat::Hermes,
        ToolCallFormat::Llama3Json,
        ToolCallFormat::Mistral,
        ToolCallFormat::JsonArray,
    ] {
        for case in 0..40 {
            let calls = 1 + case % 3;
            let text = output(format, calls, &mut rng);
            let parsed = format.parse(&text);
            assert_eq!(parsed.tool_calls.len(), calls, "{format:?} {text:?}");
            let expected = Assembled::of_parsed(parsed);
            for seed in 0..20 {
                let chunks = random_chunks(&text, rng.0 ^ seed);
                assert_eq!(stream(format, &chunks), expected, "{chunks:?}");
            }
        }
    }
}
