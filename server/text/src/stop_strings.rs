//! Stop strings matched across token boundaries: text that could still become a stop string is
//! held back, so a stop string never leaks into the output, not even in part.

/// Filters one choice's streamed text.
#[derive(Debug, Clone)]
pub struct StopStringMatcher {
    stops: Vec<String>,
    /// Text received but not yet released: a suffix that is a prefix of some stop string.
    held: String,
    stopped: bool,
    /// The stop string that ended the output, once one did.
    matched: Option<usize>,
    /// Whether the stop string itself ends the output (vLLM's `include_stop_str_in_output`).
    include_stop: bool,
}

/// What one piece of text turns into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filtered {
    /// Text safe to send now.
    pub text: String,
    /// A stop string was found; nothing more may be sent.
    pub stopped: bool,
}

impl StopStringMatcher {
    pub fn new(stops: Vec<String>) -> Self {
        Self {
            stops,
            held: String::new(),
            stopped: false,
            matched: None,
            include_stop: false,
        }
    }

    /// The stop string that ended the output (vLLM's `stop_reason`), once one did.
    pub fn matched_stop(&self) -> Option<&str> {
        self.matched
            .and_then(|index| self.stops.get(index))
            .map(String::as_str)
    }

    /// A matcher whose output keeps the stop string that ended it (the text after it is still
    /// cut).
    pub fn including_stop(stops: Vec<String>) -> Self {
        Self {
            include_stop: true,
            ..Self::new(stops)
        }
    }

    /// Adds newly generated text; returns what can be sent.
    pub fn push(&mut self, delta: &str) -> Filtered {
        if self.stopped {
            return Filtered {
                text: String::new(),
                stopped: true,
            };
        }
        if self.stops.is_empty() {
            return Filtered {
                text: delta.to_string(),
                stopped: false,
            };
        }
        self.held.push_str(delta);
        if let Some((position, len, index)) = self.earliest_stop() {
            self.stopped = true;
            self.matched = Some(index);
            let end = if self.include_stop {
                position + len
            } else {
                position
            };
            let text = self.held[..end].to_string();
            self.held.clear();
            return Filtered {
                text,
                stopped: true,
            };
        }
        let keep_from = self.partial_match_start();
        let text = self.held[..keep_from].to_string();
        self.held.drain(..keep_from);
        Filtered {
            text,
            stopped: false,
        }
    }

    /// Adds text that no stop string may end in (the tokens before `min_tokens`): it is
    /// released as it is, after anything held.
    pub fn pass(&mut self, delta: &str) -> Filtered {
        if self.stopped {
            return Filtered {
                text: String::new(),
                stopped: true,
            };
        }
        let mut text = std::mem::take(&mut self.held);
        text.push_str(delta);
        Filtered {
            text,
            stopped: false,
        }
    }

    /// The generation ended without a stop string: releases what was held back.
    pub fn finish(&mut self) -> String {
        if self.stopped {
            return String::new();
        }
        std::mem::take(&mut self.held)
    }

    /// Where the first stop string in the held text starts, and its length (the shortest of
    /// those starting there).
    /// The first stop string in the held text: its position, length and index among the stops
    /// (at one position, the shortest, then the first listed).
    fn earliest_stop(&self) -> Option<(usize, usize, usize)> {
        self.stops
            .iter()
            .enumerate()
            .filter_map(|(index, stop)| Some((self.held.find(stop.as_str())?, stop.len(), index)))
            .min()
    }

    /// Start of the longest suffix of the held text that is a proper prefix of a stop string.
    fn partial_match_start(&self) -> usize {
        let mut start = self.held.len();
        for (index, _) in self.held.char_indices().rev() {
            let suffix = &self.held[index..];
            if self
                .stops
                .iter()
                .any(|stop| stop.len() > suffix.len() && stop.starts_with(suffix))
            {
                start = index;
            }
            let longest = self.stops.iter().map(String::len).max().unwrap_or(0);
            if self.held.len() - index >= longest {
                break;
            }
        }
        start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&str]) -> (String, bool) {
        let mut matcher = StopStringMatcher::new(stops.iter().map(|s| s.to_string()).collect());
        let mut out = String::new();
        for piece in pieces {
            let filtered = matcher.push(piece);
            out.push_str(&filtered.text);
            if filtered.stopped {
                return (out, true);
            }
        }
        out.push_str(&matcher.finish());
        (out, false)
    }

    #[test]
    fn a_stop_string_split_over_tokens_is_caught_and_not_leaked() {
        assert_eq!(
            run(&["STOP"], &["Hello S", "TO", "P and more"]),
            ("Hello ".into(), true)
        );
        assert_eq!(run(&["\n\n"], &["line\n", "\nnext"]), ("line".into(), true));
    }

    #[test]
    fn passed_text_is_never_matched_and_matching_resumes_after_it() {
        let mut matcher = StopStringMatcher::new(vec!["e".into()]);
        assert_eq!(matcher.pass("one").text, "one");
        assert_eq!(matcher.pass(" the").text, " the");
        let after = matcher.push("n more");
        assert_eq!((after.text.as_str(), after.stopped), ("n mor", true));
        assert!(matcher.pass("x").stopped, "a stopped matcher stays stopped");
    }

    #[test]
    fn held_text_is_released_when_it_stops_matching_or_at_the_end() {
        let mut matcher = StopStringMatcher::new(vec!["STOP".into()]);
        assert_eq!(matcher.push("ab ST").text, "ab ");
        assert_eq!(matcher.push("AR").text, "STAR");
        assert_eq!(matcher.push("x S").text, "x ");
        assert_eq!(matcher.finish(), "S");
    }

    #[test]
    fn including_the_stop_string_keeps_it_and_cuts_what_follows() {
        let mut matcher = StopStringMatcher::including_stop(vec!["STOP".into(), "ST".into()]);
        assert_eq!(matcher.push("Hello S").text, "Hello ");
        let filtered = matcher.push("TOP and more");
        assert_eq!((filtered.text.as_str(), filtered.stopped), ("ST", true));
        let mut matcher = StopStringMatcher::including_stop(vec!["\n\n".into()]);
        assert_eq!(matcher.push("line\n").text, "line");
        assert_eq!(matcher.push("\nnext").text, "\n\n");
        assert_eq!(matcher.finish(), "");
    }

    #[test]
    fn the_earliest_of_several_stops_wins() {
        assert_eq!(run(&["b", "a"], &["xxab"]), ("xx".into(), true));
        assert_eq!(
            run(&["long stop", "op"], &["a long stop"]),
            ("a ".into(), true)
        );
        assert_eq!(
            run(&["stop", "op"], &["a long st", "op"]),
            ("a long ".into(), true)
        );
    }

    #[test]
    fn the_stop_that_matched_is_named() {
        let mut matcher = StopStringMatcher::new(vec!["b".into(), "a".into()]);
        assert!(!matcher.push("xx").stopped);
        assert_eq!(matcher.matched_stop(), None);
        assert!(matcher.push("ab").stopped);
        assert_eq!(matcher.matched_stop(), Some("a"));
    }

    #[test]
    fn multibyte_text_is_cut_on_character_boundaries() {
        assert_eq!(run(&["é!"], &["café", "é!"]), ("café".into(), true));
        assert_eq!(run(&["日本"], &["今日は日", "本"]), ("今日は".into(), true));
        assert_eq!(run(&["日本"], &["今日は日"]), ("今日は日".into(), false));
    }

    #[test]
    fn no_stops_passes_text_through() {
        assert_eq!(run(&[], &["a", "b"]), ("ab".into(), false));
    }
}
