//! The whole-text parsers, one per format. Each walks the same grammar as the streaming parser,
//! and reads call objects with the same [`parse_call_at`].

use super::call_object::parse_call_at;
use super::format::{ParsedOutput, ParsedToolCall, ToolCallFormat};
use super::json_scan::{JsonValueScanner, ScanStep};

pub(super) const HERMES_OPEN: &str = "<tool_call>";
pub(super) const HERMES_CLOSE: &str = "</tool_call>";
pub(super) const MISTRAL_MARKER: &str = "[TOOL_CALLS]";
pub(super) const PYTHON_TAG: &str = "<|python_tag|>";

/// Some call in the output is not well formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Malformed;

type Calls = Vec<ParsedToolCall>;

pub(super) fn parse(format: ToolCallFormat, text: &str) -> Result<ParsedOutput, Malformed> {
    match format {
        ToolCallFormat::Hermes => parse_marked(text, HERMES_OPEN, hermes_block),
        ToolCallFormat::Mistral => parse_marked(text, MISTRAL_MARKER, call_array),
        ToolCallFormat::Llama3Json => parse_llama3(text),
        ToolCallFormat::JsonArray => parse_json_array(text),
    }
}

/// The byte at or after `at` where the whitespace ends.
pub(super) fn skip_space(text: &str, at: usize) -> usize {
    text[at..]
        .find(|c: char| !c.is_whitespace())
        .map_or(text.len(), |offset| at + offset)
}

/// Adds the text between calls to the content; a gap (after a call) only if it is not blank.
fn push_segment(content: &mut String, segment: &str, is_gap: bool) {
    if !is_gap || segment.chars().any(|c| !c.is_whitespace()) {
        content.push_str(segment);
    }
}

/// Content with calls introduced by `marker`; `region` reads what follows a marker and returns
/// where it ends.
fn parse_marked(
    text: &str,
    marker: &str,
    region: fn(&str, usize, &mut Calls) -> Result<usize, Malformed>,
) -> Result<ParsedOutput, Malformed> {
    let mut content = String::new();
    let mut calls = Vec::new();
    let mut at = 0;
    loop {
        let found = text[at..].find(marker).map(|offset| at + offset);
        let segment_end = found.unwrap_or(text.len());
        push_segment(&mut content, &text[at..segment_end], at > 0);
        let Some(marker_at) = found else {
            return Ok(ParsedOutput::new(content, calls));
        };
        at = region(text, marker_at + marker.len(), &mut calls)?;
    }
}

/// One call object at `at` (after whitespace); returns where it ends.
fn call_object(text: &str, at: usize, calls: &mut Calls) -> Result<usize, Malformed> {
    if !text[at..].starts_with('{') {
        return Err(Malformed);
    }
    let (call, end) = parse_call_at(text, at).ok_or(Malformed)?;
    calls.push(call);
    Ok(end)
}

/// After `<tool_call>`: one call, then `</tool_call>`, which may be cut short by the output's end.
fn hermes_block(text: &str, at: usize, calls: &mut Calls) -> Result<usize, Malformed> {
    let end = call_object(text, skip_space(text, at), calls)?;
    let after = skip_space(text, end);
    let rest = &text[after..];
    if rest.starts_with(HERMES_CLOSE) {
        Ok(after + HERMES_CLOSE.len())
    } else if HERMES_CLOSE.starts_with(rest) {
        Ok(text.len())
    } else {
        Err(Malformed)
    }
}

/// A JSON array of calls, after optional whitespace; returns where it ends.
pub(super) fn call_array(text: &str, at: usize, calls: &mut Calls) -> Result<usize, Malformed> {
    let open = skip_space(text, at);
    if !text[open..].starts_with('[') {
        return Err(Malformed);
    }
    let mut at = skip_space(text, open + 1);
    if text[at..].starts_with(']') {
        return Ok(at + 1);
    }
    loop {
        at = skip_space(text, call_object(text, at, calls)?);
        match text[at..].chars().next() {
            Some(',') => at = skip_space(text, at + 1),
            Some(']') => return Ok(at + 1),
            _ => return Err(Malformed),
        }
    }
}

/// Llama 3: calls only if the output starts with `{` (after whitespace and `<|python_tag|>`).
fn parse_llama3(text: &str) -> Result<ParsedOutput, Malformed> {
    let mut at = skip_space(text, 0);
    if text[at..].starts_with(PYTHON_TAG) {
        at = skip_space(text, at + PYTHON_TAG.len());
    }
    if !text[at..].starts_with('{') {
        return Ok(ParsedOutput::new(text.to_string(), Vec::new()));
    }
    let mut calls = Vec::new();
    loop {
        let end = call_object(text, at, &mut calls)?;
        let next = skip_space(text, end);
        match text[next..].chars().next() {
            None => return Ok(ParsedOutput::new(String::new(), calls)),
            Some(';') => {
                at = skip_space(text, next + 1);
                if at == text.len() {
                    return Ok(ParsedOutput::new(String::new(), calls));
                }
            }
            Some(_) => return Ok(ParsedOutput::new(text[end..].to_string(), calls)),
        }
    }
}

/// The whole output is one array of calls (after whitespace), or else plain content. The calls
/// are read in order and each is kept once it is complete, so a reply can stream them one by
/// one as the model writes them (`tool_choice: "required"`, whose grammar allows nothing else):
/// - the array the output's end cut short (`max_tokens`, a stop string) yields the calls
///   completed before the cut and no content (the unfinished call is dropped, not returned as
///   text);
/// - text after the closed array is content (when not blank);
/// - an element that is not a call (or a character that is neither `,` nor `]` after one) in an
///   array that closes: with calls before it, those calls and the text from there on as content;
///   with none, the whole output is content.
fn parse_json_array(text: &str) -> Result<ParsedOutput, Malformed> {
    let start = skip_space(text, 0);
    if !text[start..].starts_with('[') {
        return Ok(ParsedOutput::new(text.to_string(), Vec::new()));
    }
    let mut calls = Vec::new();
    let not_a_call_at = |at: usize, calls: Calls| {
        if is_cut_short(&text[start..]) {
            Ok(ParsedOutput::new(String::new(), calls))
        } else if calls.is_empty() {
            Err(Malformed)
        } else {
            Ok(ParsedOutput::new(text[at..].to_string(), calls))
        }
    };
    let mut at = skip_space(text, start + 1);
    if !text[at..].starts_with(']') {
        loop {
            let Ok(end) = call_object(text, at, &mut calls) else {
                return not_a_call_at(at, calls);
            };
            at = skip_space(text, end);
            match text[at..].chars().next() {
                Some(',') => at = skip_space(text, at + 1),
                Some(']') => break,
                _ => return not_a_call_at(at, calls),
            }
        }
    }
    let mut content = String::new();
    push_segment(&mut content, &text[at + 1..], true);
    Ok(ParsedOutput::new(content, calls))
}

/// Whether `value` is the start of a JSON value that never closes: every character keeps it open.
fn is_cut_short(value: &str) -> bool {
    let mut scanner = JsonValueScanner::new();
    value.chars().all(|c| scanner.step(c) == ScanStep::Inside)
}
