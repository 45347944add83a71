//! An incremental scanner that finds where one JSON object, array or string ends, fed a
//! character at a time: it tracks string and escape state and the stack of open brackets, but does
//! not validate numbers or literals (`serde_json` does that once the text is complete).

/// What one more character did to the value being scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ScanStep {
    /// The character is inside the value, which goes on.
    Inside,
    /// The character closed the value.
    Complete,
    /// The character cannot be part of a JSON value here (a mismatched closer, or a first
    /// character that starts no object, array or string).
    Invalid,
}

/// Scans one JSON object, array or string from its first character to its last.
#[derive(Debug, Default, Clone)]
pub(super) struct JsonValueScanner {
    /// The closers of the open objects and arrays, innermost last.
    closers: Vec<char>,
    in_string: bool,
    after_backslash: bool,
    started: bool,
}

impl JsonValueScanner {
    pub(super) fn new() -> Self {
        Self::default()
    }

    /// Feeds the next character of the value.
    pub(super) fn step(&mut self, c: char) -> ScanStep {
        if !self.started {
            self.started = true;
            if !matches!(c, '{' | '[' | '"') {
                return ScanStep::Invalid;
            }
        }
        if self.in_string {
            return self.step_in_string(c);
        }
        match c {
            '"' => self.in_string = true,
            '{' => self.closers.push('}'),
            '[' => self.closers.push(']'),
            '}' | ']' => {
                if self.closers.pop() != Some(c) {
                    return ScanStep::Invalid;
                }
                if self.closers.is_empty() {
                    return ScanStep::Complete;
                }
            }
            _ => {}
        }
        ScanStep::Inside
    }

    fn step_in_string(&mut self, c: char) -> ScanStep {
        if self.after_backslash {
            self.after_backslash = false;
        } else if c == '\\' {
            self.after_backslash = true;
        } else if c == '"' {
            self.in_string = false;
            if self.closers.is_empty() {
                return ScanStep::Complete;
            }
        }
        ScanStep::Inside
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte length of the value at the start of `text`, or `None` if it is invalid or unfinished.
    fn scanned_len(text: &str) -> Option<usize> {
        let mut scanner = JsonValueScanner::new();
        for (at, c) in text.char_indices() {
            match scanner.step(c) {
                ScanStep::Inside => {}
                ScanStep::Complete => return Some(at + c.len_utf8()),
                ScanStep::Invalid => return None,
            }
        }
        None
    }

    #[test]
    fn finds_the_end_of_nested_values() {
        assert_eq!(scanned_len(r#"{"a": [1, {"b": 2}]} tail"#), Some(20));
        assert_eq!(scanned_len("[[], {}]x"), Some(8));
        assert_eq!(scanned_len(r#""abc" x"#), Some(5));
    }

    #[test]
    fn brackets_and_quotes_inside_strings_do_not_count() {
        let text = r#"{"a": "}]{[\"\\", "é": "\u00e9"}"#;
        assert_eq!(scanned_len(text), Some(text.len()));
        assert_eq!(scanned_len(r#""a\"b"!"#), Some(6));
    }

    #[test]
    fn unfinished_and_invalid_values() {
        assert_eq!(scanned_len(r#"{"a": [1, 2}"#), None);
        assert_eq!(scanned_len(r#"{"a": "}"#), None);
        assert_eq!(scanned_len("42"), None);
        let mut scanner = JsonValueScanner::new();
        assert_eq!(scanner.step('['), ScanStep::Inside);
        assert_eq!(scanner.step('}'), ScanStep::Invalid);
    }
}
