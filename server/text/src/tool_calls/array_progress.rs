//! How far a streamed JSON array of calls (`tool_choice: "required"`) has been read: fed the
//! held text a character at a time after its `[`, it says where each element that closed began,
//! so that the call can be sent while the model writes the next one. It stops following the
//! array at its `]` or at the first character that is not an element, a `,` or whitespace; the
//! whole-text parser then reads what is left when the output ends.

use super::json_scan::{JsonValueScanner, ScanStep};

#[derive(Debug)]
pub(super) struct ArrayProgress {
    state: State,
}

#[derive(Debug)]
enum State {
    /// After `[` or `,`: whitespace, then an element (or, after `[`, the `]`).
    BeforeElement,
    /// Inside the element that began at this byte of the held text.
    InElement {
        start: usize,
        scanner: JsonValueScanner,
    },
    /// After an element: whitespace, then `,` or `]`.
    AfterElement,
    /// Closed, or not an array of elements any more: nothing more to follow.
    Stopped,
}

impl ArrayProgress {
    /// Just after the array's `[`.
    pub(super) fn new() -> Self {
        Self {
            state: State::BeforeElement,
        }
    }

    /// Feeds character `c`, found at byte `at` of the held text; the byte where an element began
    /// when `c` closed it.
    pub(super) fn step(&mut self, at: usize, c: char) -> Option<usize> {
        let state = std::mem::replace(&mut self.state, State::Stopped);
        let (state, closed) = match state {
            State::BeforeElement if c.is_whitespace() => (State::BeforeElement, None),
            State::BeforeElement if c == '{' => {
                let mut scanner = JsonValueScanner::new();
                scanner.step(c);
                (State::InElement { start: at, scanner }, None)
            }
            State::InElement { start, mut scanner } => match scanner.step(c) {
                ScanStep::Inside => (State::InElement { start, scanner }, None),
                ScanStep::Complete => (State::AfterElement, Some(start)),
                ScanStep::Invalid => (State::Stopped, None),
            },
            State::AfterElement if c.is_whitespace() => (State::AfterElement, None),
            State::AfterElement if c == ',' => (State::BeforeElement, None),
            _ => (State::Stopped, None),
        };
        self.state = state;
        closed
    }

    /// Stops following the array (an element that closed was not a call).
    pub(super) fn stop(&mut self) {
        self.state = State::Stopped;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The start bytes of the elements that close in `text` (which begins just after a `[`).
    fn closed_elements(text: &str) -> Vec<usize> {
        let mut progress = ArrayProgress::new();
        text.char_indices()
            .filter_map(|(at, c)| progress.step(at, c))
            .collect()
    }

    #[test]
    fn finds_each_element_as_it_closes() {
        assert_eq!(closed_elements(r#" {"a": "}"}, {"b": [1]} ]"#), vec![1, 13]);
        assert_eq!(closed_elements(r#"{"a": 1},{"#), vec![0]);
    }

    #[test]
    fn stops_at_the_close_or_at_what_is_not_an_element() {
        assert_eq!(closed_elements(r#"{"a": 1}] {"b": 2}"#), vec![0]);
        assert_eq!(closed_elements(r#"{"a": 1} x {"b": 2}"#), vec![0]);
        assert_eq!(closed_elements(r#"3, {"b": 2}"#), Vec::<usize>::new());
        assert_eq!(closed_elements(r#"{"a": 1}}, {"b": 2}"#), vec![0]);
    }

    #[test]
    fn a_stopped_array_finds_nothing_more() {
        let mut progress = ArrayProgress::new();
        progress.stop();
        let text = r#"{"a": 1}, {"b": 2}"#;
        assert!(text
            .char_indices()
            .all(|(at, c)| progress.step(at, c).is_none()));
    }
}
