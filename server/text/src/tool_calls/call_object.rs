//! One tool-call object, `{"name": "f", "arguments": {...}}`, read a character at a time. The
//! streaming parser feeds it as text arrives; the whole-text parser feeds it a complete output, so
//! both see the same names and the same raw arguments text.
//!
//! The arguments may be spelled `"parameters"` (Llama 3); other keys (`"id"`, ...) are skipped.
//! A call needs a string `name` and an object `arguments`; a key given twice is malformed.

use super::format::ParsedToolCall;
use super::json_scan::{JsonValueScanner, ScanStep};

/// What one more character of a call object was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CallStep {
    /// Syntax around the name and arguments: braces, keys, other members, whitespace.
    Structure,
    /// The character closed the name string; here is the name.
    Name(String),
    /// The character is part of the arguments' JSON text.
    Argument,
    /// The character closed the call object, which had both a name and arguments.
    Done,
    /// The object is not a well-formed call; it stays so for every later character.
    Malformed,
}

/// The object read so far cannot be a call.
#[derive(Debug)]
struct NotACall;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Name,
    Arguments,
    Other,
}

#[derive(Debug)]
enum Part {
    Open,
    KeyOrClose,
    Key,
    KeyText(JsonValueScanner, String),
    Colon(Member),
    Value(Member),
    NameText(JsonValueScanner, String),
    Arguments(JsonValueScanner),
    OtherValue(JsonValueScanner),
    OtherScalar,
    CommaOrClose,
    Closed,
    Failed,
}

/// Reads one call object, from its `{` to its `}`.
#[derive(Debug)]
pub(super) struct CallObjectReader {
    part: Part,
    seen_name: bool,
    seen_arguments: bool,
}

/// JSON's insignificant whitespace, the only kind `serde_json` allows between tokens.
fn is_json_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

impl CallObjectReader {
    pub(super) fn new() -> Self {
        Self {
            part: Part::Open,
            seen_name: false,
            seen_arguments: false,
        }
    }

    /// Feeds the next character, starting with the object's `{`.
    pub(super) fn step(&mut self, c: char) -> CallStep {
        self.advance(c).unwrap_or_else(|NotACall| {
            self.part = Part::Failed;
            CallStep::Malformed
        })
    }

    fn advance(&mut self, c: char) -> Result<CallStep, NotACall> {
        match &mut self.part {
            Part::Open if c == '{' => self.part = Part::KeyOrClose,
            Part::KeyOrClose | Part::Key | Part::Colon(_) | Part::Value(_) | Part::CommaOrClose
                if is_json_space(c) => {}
            Part::KeyOrClose if c == '}' => return self.close(),
            Part::KeyOrClose | Part::Key if c == '"' => {
                let mut scanner = JsonValueScanner::new();
                scanner.step(c);
                self.part = Part::KeyText(scanner, c.to_string());
            }
            Part::KeyText(scanner, raw) => {
                raw.push(c);
                if scanner.step(c) == ScanStep::Complete {
                    let key = decode_string(raw)?;
                    self.part = Part::Colon(self.member(&key)?);
                }
            }
            Part::Colon(member) if c == ':' => self.part = Part::Value(*member),
            Part::Value(member) => {
                let member = *member;
                return self.start_value(member, c);
            }
            Part::NameText(scanner, raw) => {
                raw.push(c);
                if scanner.step(c) == ScanStep::Complete {
                    let name = decode_string(raw)?;
                    self.part = Part::CommaOrClose;
                    return Ok(CallStep::Name(name));
                }
            }
            Part::Arguments(scanner) => {
                match scanner.step(c) {
                    ScanStep::Inside => {}
                    ScanStep::Complete => self.part = Part::CommaOrClose,
                    ScanStep::Invalid => return Err(NotACall),
                }
                return Ok(CallStep::Argument);
            }
            Part::OtherValue(scanner) => match scanner.step(c) {
                ScanStep::Inside => {}
                ScanStep::Complete => self.part = Part::CommaOrClose,
                ScanStep::Invalid => return Err(NotACall),
            },
            // A number or literal ends where the object's syntax resumes.
            Part::OtherScalar if is_json_space(c) || c == ',' || c == '}' => {
                self.part = Part::CommaOrClose;
                return self.advance(c);
            }
            Part::OtherScalar => {}
            Part::CommaOrClose if c == ',' => self.part = Part::Key,
            Part::CommaOrClose if c == '}' => return self.close(),
            _ => return Err(NotACall),
        }
        Ok(CallStep::Structure)
    }

    /// The member a key names; a name or arguments given twice is malformed.
    fn member(&mut self, key: &str) -> Result<Member, NotACall> {
        let (member, seen) = match key {
            "name" => (Member::Name, &mut self.seen_name),
            "arguments" | "parameters" => (Member::Arguments, &mut self.seen_arguments),
            _ => return Ok(Member::Other),
        };
        if std::mem::replace(seen, true) {
            return Err(NotACall);
        }
        Ok(member)
    }

    /// The first character of a member's value.
    fn start_value(&mut self, member: Member, c: char) -> Result<CallStep, NotACall> {
        let mut scanner = JsonValueScanner::new();
        match (member, c) {
            (Member::Name, '"') => {
                scanner.step(c);
                self.part = Part::NameText(scanner, c.to_string());
            }
            (Member::Arguments, '{') => {
                scanner.step(c);
                self.part = Part::Arguments(scanner);
                return Ok(CallStep::Argument);
            }
            (Member::Other, '{' | '[' | '"') => {
                scanner.step(c);
                self.part = Part::OtherValue(scanner);
            }
            (Member::Other, ',' | '}') => return Err(NotACall),
            (Member::Other, _) => self.part = Part::OtherScalar,
            _ => return Err(NotACall),
        }
        Ok(CallStep::Structure)
    }

    fn close(&mut self) -> Result<CallStep, NotACall> {
        if self.seen_name && self.seen_arguments {
            self.part = Part::Closed;
            Ok(CallStep::Done)
        } else {
            Err(NotACall)
        }
    }
}

/// A complete JSON string literal, quotes included, as text.
fn decode_string(raw: &str) -> Result<String, NotACall> {
    serde_json::from_str(raw).map_err(|_| NotACall)
}

/// The call object starting at byte `start` of `text` (which must be its `{`) and the byte just
/// after it; `None` if it is not a well-formed call or its JSON does not parse.
pub(super) fn parse_call_at(text: &str, start: usize) -> Option<(ParsedToolCall, usize)> {
    let mut reader = CallObjectReader::new();
    let mut name = None;
    let mut arguments: Option<(usize, usize)> = None;
    for (offset, c) in text[start..].char_indices() {
        let at = start + offset;
        match reader.step(c) {
            CallStep::Structure => {}
            CallStep::Name(decoded) => name = Some(decoded),
            CallStep::Argument => {
                let begin = arguments.map_or(at, |(begin, _)| begin);
                arguments = Some((begin, at + c.len_utf8()));
            }
            CallStep::Done => {
                let end = at + c.len_utf8();
                serde_json::from_str::<serde_json::Value>(&text[start..end]).ok()?;
                let (begin, args_end) = arguments?;
                let call = ParsedToolCall {
                    name: name?,
                    arguments: text[begin..args_end].to_string(),
                };
                return Some((call, end));
            }
            CallStep::Malformed => return None,
        }
    }
    None
}

#[cfg(test)]
#[path = "call_object_tests.rs"]
mod tests;
