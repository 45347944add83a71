#![allow(clippy::unwrap_used)]

use super::*;

use ToolCallFormat::{Hermes, JsonArray, Llama3Json, Mistral};

fn call(name: &str, arguments: &str) -> ParsedToolCall {
    ParsedToolCall {
        name: name.into(),
        arguments: arguments.into(),
    }
}

fn output(content: Option<&str>, tool_calls: Vec<ParsedToolCall>) -> ParsedOutput {
    ParsedOutput {
        content: content.map(str::to_string),
        tool_calls,
    }
}

/// Outputs in each format, well formed or malformed; the streaming tests split them every way.
pub(super) const SAMPLES: &[(ToolCallFormat, &str)] = &[
    (Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"),
    (Hermes, "Let me check. <tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"arguments\": {\"x\": [1, {\"y\": null}]}, \"name\": \"b\"}\n</tool_call>\n"),
    (Hermes, "<tool_call>{\"name\": \"say\", \"arguments\": {\"text\": \"h\u{e9}llo \\\"}{\\\" \u{1f30d} \\\\\"}}</tool_call> done <tool"),
    (Hermes, "No tools needed: <tool> and <tool_cal are fine.\n"),
    (Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}"),
    (Hermes, "Hi <tool_call>\n{\"nam\": \"f\", \"arguments\": {}}\n</tool_call>"),
    (Llama3Json, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"),
    (Llama3Json, "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"q\": \"x;y\"}}; {\"name\": \"b\", \"arguments\": {\"n\": {\"m\": [1, 2]}}}"),
    (Llama3Json, "  \n{\"name\": \"f\", \"parameters\": {}} I called f."),
    (Llama3Json, "The answer is {\"name\": 42}."),
    (Llama3Json, "<|python_tag|>brave_search.call(query=\"x\")"),
    (Llama3Json, "{\"title\": \"not a call\"}"),
    (Mistral, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": \"\u{e9}\"}}, {\"name\": \"g\", \"arguments\": {\"b\": [[]]}}]"),
    (Mistral, "Sure [x]. [TOOL_CALLS] [ {\"name\": \"f\", \"arguments\": {}, \"id\": \"abc123XYZ\"} ] "),
    (Mistral, "Just text with [TOOL_ and [brackets]."),
    (Mistral, "[TOOL_CALLS][]"),
    (JsonArray, "[{\"name\": \"f\", \"arguments\": {\"s\": \"]}\"}}, {\"name\": \"g\", \"arguments\": {}}]"),
    (JsonArray, " [\n  {\"name\": \"f\", \"arguments\": {\"n\": -1.5e3}}\n]\n"),
    (JsonArray, "plain text"),
    (JsonArray, "[\"not a call\"]"),
    (JsonArray, "[{\"name\": \"f\", \"arguments\": {\"a\": 1}}, {\"name\": \"g\", \"argu"),
];

#[test]
fn format_names() {
    for name in ToolCallFormat::CLI_NAMES {
        assert_eq!(name.parse::<ToolCallFormat>().unwrap().name(), *name);
    }
    assert_eq!(JsonArray.name(), "json_array");
    let err = "json_array".parse::<ToolCallFormat>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown tool call parser \"json_array\": expected one of hermes, llama3_json, mistral"
    );
}

#[test]
fn hermes_calls_and_content() {
    assert_eq!(
        Hermes.parse(SAMPLES[0].1),
        output(None, vec![call("get_weather", r#"{"city": "Paris"}"#)])
    );
    assert_eq!(
        Hermes.parse(SAMPLES[1].1),
        output(
            Some("Let me check. "),
            vec![call("a", "{}"), call("b", r#"{"x": [1, {"y": null}]}"#)]
        )
    );
}

#[test]
fn hermes_unicode_escapes_and_trailing_text() {
    assert_eq!(
        Hermes.parse(SAMPLES[2].1),
        output(
            Some(" done <tool"),
            vec![call(
                "say",
                "{\"text\": \"h\u{e9}llo \\\"}{\\\" \u{1f30d} \\\\\"}"
            )]
        )
    );
}

#[test]
fn hermes_without_calls_or_closing_tag() {
    let text = SAMPLES[3].1;
    assert_eq!(Hermes.parse(text), output(Some(text), vec![]));
    assert_eq!(
        Hermes.parse(SAMPLES[4].1),
        output(None, vec![call("f", r#"{"a": 1}"#)])
    );
    assert_eq!(Hermes.parse(""), output(None, vec![]));
}

#[test]
fn hermes_malformed_calls_are_content() {
    for text in [
        SAMPLES[5].1,
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": tru}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{}\"}\n</tool_call>",
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}\n</tool_call>",
        "<tool_call>\n</tool_call>",
        "ok <tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call><tool_call>{\"name\": \"b\"}</tool_call>",
    ] {
        assert_eq!(Hermes.parse(text), output(Some(text), vec![]), "{text}");
    }
}

#[test]
fn llama3_calls() {
    assert_eq!(
        Llama3Json.parse(SAMPLES[6].1),
        output(None, vec![call("get_weather", r#"{"city": "Paris"}"#)])
    );
    assert_eq!(
        Llama3Json.parse(SAMPLES[7].1),
        output(
            None,
            vec![
                call("a", r#"{"q": "x;y"}"#),
                call("b", r#"{"n": {"m": [1, 2]}}"#)
            ]
        )
    );
    assert_eq!(
        Llama3Json.parse(SAMPLES[8].1),
        output(Some(" I called f."), vec![call("f", "{}")])
    );
    assert_eq!(
        Llama3Json.parse("{\"name\": \"f\", \"parameters\": {}};\n"),
        output(None, vec![call("f", "{}")])
    );
}

#[test]
fn llama3_content_and_malformed() {
    for text in [
        SAMPLES[9].1,
        SAMPLES[10].1,
        SAMPLES[11].1,
        "{\"name\": \"f\", \"parameters\": {}}; hello",
        "{\"name\": \"f\", \"parameters\": [1]}",
    ] {
        assert_eq!(Llama3Json.parse(text), output(Some(text), vec![]), "{text}");
    }
}

#[test]
fn mistral_calls() {
    assert_eq!(
        Mistral.parse(SAMPLES[12].1),
        output(
            None,
            vec![
                call("f", "{\"a\": \"\u{e9}\"}"),
                call("g", r#"{"b": [[]]}"#)
            ]
        )
    );
    assert_eq!(
        Mistral.parse(SAMPLES[13].1),
        output(Some("Sure [x]. "), vec![call("f", "{}")])
    );
    assert_eq!(Mistral.parse(SAMPLES[15].1), output(None, vec![]));
}

#[test]
fn mistral_content_and_malformed() {
    for text in [
        SAMPLES[14].1,
        "[TOOL_CALLS] {\"name\": \"f\", \"arguments\": {}}",
        "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}},]",
        "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}",
        "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": \"\\q\"}}]",
    ] {
        assert_eq!(Mistral.parse(text), output(Some(text), vec![]), "{text}");
    }
}

#[test]
fn json_array_calls_content_and_malformed() {
    assert_eq!(
        JsonArray.parse(SAMPLES[16].1),
        output(None, vec![call("f", r#"{"s": "]}"}"#), call("g", "{}")])
    );
    assert_eq!(
        JsonArray.parse(SAMPLES[17].1),
        output(None, vec![call("f", r#"{"n": -1.5e3}"#)])
    );
    assert_eq!(
        JsonArray.parse("[] and then text"),
        output(Some(" and then text"), vec![])
    );
    for text in [SAMPLES[18].1, SAMPLES[19].1, "[{\"name\": \"f\"}]"] {
        assert_eq!(JsonArray.parse(text), output(Some(text), vec![]), "{text}");
    }
}

/// `tool_choice: "required"` cut by `max_tokens`: the calls completed before the cut, no content
/// (the unfinished call is dropped, not returned as text).
#[test]
fn json_array_cut_short_keeps_the_calls_completed_before_the_cut() {
    assert_eq!(
        JsonArray.parse(SAMPLES[20].1),
        output(None, vec![call("f", r#"{"a": 1}"#)])
    );
    for cut in [
        "[",
        "[{\"name\": \"f\", \"argum",
        "[{\"name\": \"f\", \"arguments\": {\"s\": \"]}",
    ] {
        assert_eq!(JsonArray.parse(cut), output(None, vec![]), "{cut}");
    }
    // A closed array that is not calls stays content: only an unfinished one is a cut.
    let closed = "[{\"name\": \"f\"}, 3]";
    assert_eq!(JsonArray.parse(closed), output(Some(closed), vec![]));
    // Calls completed before an element that is not one are kept (a stream sent them already);
    // the text from that element on is content.
    let after_a_call = "[{\"name\": \"f\", \"arguments\": {}}, 3]";
    assert_eq!(
        JsonArray.parse(after_a_call),
        output(Some("3]"), vec![call("f", "{}")])
    );
    assert_eq!(
        JsonArray.parse("[{\"name\": \"f\", \"arguments\": {}} x]"),
        output(Some("x]"), vec![call("f", "{}")])
    );
}
