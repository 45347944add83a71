//! An incremental Server-Sent Events decoder: bytes in, in whatever pieces the network delivers
//! them; the `data` of each complete event out.
//!
//! Follows the HTML spec's event-stream rules where they matter to a benchmark: lines end with
//! `\n`, `\r\n` or a lone `\r` (and a line ending may be split across two reads); a line starting
//! with `:` is a comment (servers send `: keep-alive` on idle streams); `data:` lines accumulate,
//! joined with `\n`, until a blank line dispatches the event; one space after the colon is
//! dropped; other fields (`event`, `id`, `retry`) are ignored. Lines are decoded as UTF-8 only once
//! complete, so a character split across reads is never mangled.

/// The decoder's state between reads.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes received and not yet consumed (at most a partial line once `push` returns).
    buf: Vec<u8>,
    /// The last consumed byte was a `\r`: a `\n` starting the next read belongs to it.
    after_cr: bool,
    /// The `data` of the event being built; `None` when it has no `data` line yet.
    data: Option<String>,
    num_comments: usize,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one read; returns the `data` of every event it completed, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut events = Vec::new();
        let mut bytes = bytes;
        if self.after_cr && !bytes.is_empty() {
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
            self.after_cr = false;
        }
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            let byte = bytes[i];
            if byte != b'\n' && byte != b'\r' {
                i += 1;
                continue;
            }
            self.take_line(&bytes[start..i], &mut events);
            if byte == b'\r' {
                match bytes.get(i + 1) {
                    Some(b'\n') => i += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            i += 1;
            start = i;
        }
        self.buf.extend_from_slice(&bytes[start..]);
        events
    }

    /// The stream ended: returns the `data` of an event that was never closed by a blank line,
    /// if any. (The spec drops such an event; a benchmark would rather see a last `[DONE]` that a
    /// server forgot to terminate.)
    pub fn finish(&mut self) -> Option<String> {
        let mut events = Vec::new();
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.field(&line);
        }
        self.dispatch(&mut events);
        events.pop()
    }

    /// Comment lines seen so far (keep-alives).
    pub fn num_comments(&self) -> usize {
        self.num_comments
    }

    /// One complete line: `head` ends this read's part of it; earlier parts wait in `buf`.
    fn take_line(&mut self, head: &[u8], events: &mut Vec<String>) {
        if self.buf.is_empty() {
            self.line(head, events);
        } else {
            let mut line = std::mem::take(&mut self.buf);
            line.extend_from_slice(head);
            self.line(&line, events);
        }
    }

    fn line(&mut self, line: &[u8], events: &mut Vec<String>) {
        if line.is_empty() {
            self.dispatch(events);
        } else {
            self.field(line);
        }
    }

    fn field(&mut self, line: &[u8]) {
        if line.first() == Some(&b':') {
            self.num_comments += 1;
            return;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        if name != b"data" {
            return;
        }
        let value = String::from_utf8_lossy(value);
        match &mut self.data {
            Some(data) => {
                data.push('\n');
                data.push_str(&value);
            }
            None => self.data = Some(value.into_owned()),
        }
    }

    fn dispatch(&mut self, events: &mut Vec<String>) {
        if let Some(data) = self.data.take() {
            events.push(data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `stream` cut at every byte boundary in `cuts`; returns all events.
    fn decode_in_pieces(stream: &[u8], cuts: &[usize]) -> Vec<String> {
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        let mut start = 0;
        for &cut in cuts.iter().chain(std::iter::once(&stream.len())) {
            events.extend(decoder.push(&stream[start..cut]));
            start = cut;
        }
        events.extend(decoder.finish());
        events
    }

    const STREAM: &str =
        "data: {\"a\":1}\n\n: keep-alive\n\ndata: {\"b\":\"é\"}\n\ndata: [DONE]\n\n";

    #[test]
    fn one_read_several_events() {
        assert_eq!(
            decode_in_pieces(STREAM.as_bytes(), &[]),
            ["{\"a\":1}", "{\"b\":\"é\"}", "[DONE]"]
        );
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let bytes = STREAM.as_bytes();
        let whole = decode_in_pieces(bytes, &[]);
        for cut in 0..=bytes.len() {
            assert_eq!(decode_in_pieces(bytes, &[cut]), whole, "cut at {cut}");
        }
        let every_byte: Vec<usize> = (1..bytes.len()).collect();
        assert_eq!(decode_in_pieces(bytes, &every_byte), whole);
    }

    #[test]
    fn crlf_and_lone_cr_line_endings() {
        let crlf = STREAM.replace('\n', "\r\n");
        let cr = STREAM.replace('\n', "\r");
        let expected = decode_in_pieces(STREAM.as_bytes(), &[]);
        for stream in [crlf, cr] {
            let bytes = stream.as_bytes();
            for cut in 0..=bytes.len() {
                assert_eq!(decode_in_pieces(bytes, &[cut]), expected, "cut at {cut}");
            }
        }
    }

    #[test]
    fn empty_reads_change_nothing() {
        let mut decoder = SseDecoder::new();
        let mut events = decoder.push(b"data: a\r");
        events.extend(decoder.push(b""));
        events.extend(decoder.push(b"\n\r"));
        events.extend(decoder.push(b""));
        events.extend(decoder.push(b"\ndata: b\n\n"));
        assert_eq!(events, ["a", "b"]);
    }

    #[test]
    fn comments_are_counted_not_returned() {
        let mut decoder = SseDecoder::new();
        let events = decoder.push(b": keep-alive\n\n:ping\n\ndata: x\n\n");
        assert_eq!(events, ["x"]);
        assert_eq!(decoder.num_comments(), 2);
    }

    #[test]
    fn multi_line_data_other_fields_and_no_space() {
        let events = decode_in_pieces(
            b"event: message\nid: 7\ndata:first\ndata:  second\nretry: 10\n\n",
            &[],
        );
        assert_eq!(events, ["first\n second"]);
    }

    #[test]
    fn an_unterminated_last_event_is_returned_by_finish() {
        let mut decoder = SseDecoder::new();
        assert!(decoder.push(b"data: [DONE]").is_empty());
        assert_eq!(decoder.finish().as_deref(), Some("[DONE]"));
        assert_eq!(decoder.finish(), None);
    }
}
