#![allow(clippy::unwrap_used)]

use super::*;

fn parsed(text: &str) -> Option<(String, String, usize)> {
    parse_call_at(text, 0).map(|(call, end)| (call.name, call.arguments, end))
}

#[test]
fn reads_name_and_raw_arguments() {
    let text = r#"{"name": "f", "arguments": {"a": 1,  "b": [2]}} tail"#;
    assert_eq!(
        parsed(text),
        Some(("f".into(), r#"{"a": 1,  "b": [2]}"#.into(), 47))
    );
}

#[test]
fn parameters_other_keys_and_any_order() {
    let text =
        r#"{"id": 7, "parameters" :{}, "extra": [{"}": "x"}], "name": "g\u00e9", "z": null}"#;
    assert_eq!(parsed(text), Some(("gé".into(), "{}".into(), text.len())));
}

#[test]
fn steps_say_which_characters_are_arguments() {
    let mut reader = CallObjectReader::new();
    let steps: Vec<CallStep> =
        r#"{"name":"f","arguments":{"x":"}"}}"#.chars().map(|c| reader.step(c)).collect();
    assert_eq!(steps[10], CallStep::Name("f".into()));
    let arguments = steps.iter().filter(|s| **s == CallStep::Argument).count();
    assert_eq!(arguments, r#"{"x":"}"}"#.len());
    assert_eq!(steps.last(), Some(&CallStep::Done));
}

#[test]
fn malformed_calls() {
    for text in [
        r#"{"arguments": {}}"#,
        r#"{"name": "f"}"#,
        r#"{"name": "f", "arguments": "{}"}"#,
        r#"{"name": 3, "arguments": {}}"#,
        r#"{"name": "f", "arguments": {}, "name": "g"}"#,
        r#"{"name": "f", "arguments": {}, "parameters": {}}"#,
        r#"{"name": "f", "arguments": {"a": tru}}"#,
        r#"{"name": "f", "arguments": {"a": 1],}"#,
        r#"{"name": "f" "arguments": {}}"#,
        r#"{"name": "f", "x": , "arguments": {}}"#,
        r#"{"name": "f", "arguments": {}"#,
        r#"["name"]"#,
    ] {
        assert_eq!(parsed(text), None, "{text}");
    }
}

#[test]
fn a_malformed_reader_stays_malformed() {
    let mut reader = CallObjectReader::new();
    assert_eq!(reader.step('x'), CallStep::Malformed);
    assert_eq!(reader.step('{'), CallStep::Malformed);
}
