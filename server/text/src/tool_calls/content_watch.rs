//! Content text streamed out as it arrives while watching for a marker (`<tool_call>`,
//! `[TOOL_CALLS]`): only a suffix that could be the marker's beginning is held back.

/// What one more character of content did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum WatchStep {
    /// Text that is certainly content (possibly empty).
    Content(String),
    /// The marker is complete; the content before it is here (possibly empty).
    Marker(String),
}

/// Content, watched for a marker.
#[derive(Debug)]
pub(super) struct ContentWatch {
    marker: &'static str,
    held: String,
}

impl ContentWatch {
    pub(super) fn new(marker: &'static str) -> Self {
        Self {
            marker,
            held: String::new(),
        }
    }

    pub(super) fn step(&mut self, c: char) -> WatchStep {
        self.held.push(c);
        if let Some(before) = self.held.strip_suffix(self.marker) {
            let before = before.to_string();
            self.held.clear();
            return WatchStep::Marker(before);
        }
        let safe = self.held.len() - marker_start_len(&self.held, self.marker);
        let content = self.held[..safe].to_string();
        self.held.drain(..safe);
        WatchStep::Content(content)
    }

    /// The content still held when the output ends.
    pub(super) fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

/// The length of the longest suffix of `text` that is a proper prefix of `marker`.
pub(crate) fn marker_start_len(text: &str, marker: &str) -> usize {
    (1..marker.len().min(text.len() + 1))
        .rev()
        .find(|&len| {
            text.is_char_boundary(text.len() - len) && marker.starts_with(&text[text.len() - len..])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(watch: &mut ContentWatch, text: &str) -> Vec<WatchStep> {
        text.chars()
            .map(|c| watch.step(c))
            .filter(|step| *step != WatchStep::Content(String::new()))
            .collect()
    }

    #[test]
    fn holds_back_only_a_possible_marker_start() {
        let mut watch = ContentWatch::new("<tool_call>");
        let steps = run(&mut watch, "a<b<tool");
        let content = |s: &str| WatchStep::Content(s.to_string());
        assert_eq!(steps, [content("a"), content("<b")]);
        assert_eq!(
            run(&mut watch, "_call>"),
            [WatchStep::Marker(String::new())]
        );
        assert_eq!(watch.finish(), "");
    }

    #[test]
    fn a_marker_start_that_breaks_off_is_content() {
        let mut watch = ContentWatch::new("[TOOL_CALLS]");
        run(&mut watch, "x [TOOL");
        assert_eq!(watch.finish(), "[TOOL");
    }

    #[test]
    fn marker_start_len_respects_char_boundaries() {
        assert_eq!(marker_start_len("é<tool_", "<tool_call>"), 6);
        assert_eq!(marker_start_len("é", "<tool_call>"), 0);
        assert_eq!(marker_start_len("", "<tool_call>"), 0);
    }
}
