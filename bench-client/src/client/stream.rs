//! Reads one streamed response: SSE events in, with the time each read arrived; out, the arrival
//! time of every output chunk, the server's usage and (for the tokenizer fallback) the
//! generated text. Content is text, reasoning, or tool calls' names and argument fragments; an
//! output chunk is one with content, or with an empty `text`/`content` that is neither chat's
//! opening delta nor a finish-only chunk (a token whose text is empty, as vLLM's client counts
//! it). A
//! server that answers one JSON body instead of a stream is read by
//! [`StreamParser::whole_response`]: its content arrives at once, at the end. Pure: no I/O, no
//! clock, so every case is unit-tested.

use super::openai::{error_body_message, CompletionResponse, StreamChunk, Usage};
use super::sse::SseDecoder;
use crate::record::TokenCountSource;

/// Counts the tokens of a text with the model's tokenizer: the fallback when a server sends no
/// `usage`.
pub type TokenCounter = dyn Fn(&str) -> usize + Send + Sync;

/// What the caller should do after a read.
#[derive(Debug, Clone, PartialEq)]
pub enum Flow {
    /// Keep reading.
    Continue,
    /// `data: [DONE]` arrived: the response is complete.
    Done,
    /// An error event, an unparseable event, or the body ended before a `finish_reason` or
    /// `[DONE]`.
    Failed(String),
}

/// The state of one response being read.
#[derive(Debug)]
pub struct StreamParser {
    sse: SseDecoder,
    chunk_times_s: Vec<f64>,
    usage: Option<Usage>,
    /// The generated text, kept only when a tokenizer may have to count it.
    text: Option<String>,
    /// Once `Done` or `Failed`, later bytes are ignored.
    finished: Option<Flow>,
    /// A choice's `finish_reason` arrived: the body may end without `[DONE]`.
    saw_finish: bool,
}

/// What a response left once read.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamResult {
    pub chunk_times_s: Vec<f64>,
    /// The last `usage` the server sent (servers with continuous usage send one per chunk).
    pub usage: Option<Usage>,
    pub text: Option<String>,
}

impl StreamParser {
    /// `keep_text`: keep the generated text for a tokenizer to count.
    pub fn new(keep_text: bool) -> Self {
        Self {
            sse: SseDecoder::new(),
            chunk_times_s: Vec::new(),
            usage: None,
            text: keep_text.then(String::new),
            finished: None,
            saw_finish: false,
        }
    }

    /// Feeds one read that arrived at `at_s`; every content chunk it completes is stamped `at_s`.
    pub fn push(&mut self, bytes: &[u8], at_s: f64) -> Flow {
        if let Some(flow) = &self.finished {
            return flow.clone();
        }
        for data in self.sse.push(bytes) {
            let flow = self.event(&data, at_s);
            if flow != Flow::Continue {
                self.finished = Some(flow.clone());
                return flow;
            }
        }
        Flow::Continue
    }

    /// The body ended. `Done` when `[DONE]` had arrived (or arrives in an unterminated last
    /// event), or when a `finish_reason` had (some servers close the stream without `[DONE]`,
    /// which vLLM's client accepts too); else `Failed`: the stream was cut short.
    pub fn end_of_body(&mut self, at_s: f64) -> Flow {
        if let Some(flow) = &self.finished {
            return flow.clone();
        }
        let flow = match self.sse.finish() {
            Some(data) => self.event(&data, at_s),
            None => Flow::Continue,
        };
        let flow = match flow {
            Flow::Continue if self.saw_finish => Flow::Done,
            Flow::Continue => {
                Flow::Failed("the stream ended without a finish_reason or data: [DONE]".into())
            }
            other => other,
        };
        self.finished = Some(flow.clone());
        flow
    }

    /// Reads a whole (non-streamed) JSON response that arrived at `at_s`: its content is one
    /// arrival at `at_s`. `Done`, or `Failed` for an error body or a body that is no response.
    pub fn whole_response(&mut self, body: &str, at_s: f64) -> Flow {
        let flow = self.read_whole_response(body, at_s);
        self.finished = Some(flow.clone());
        flow
    }

    fn read_whole_response(&mut self, body: &str, at_s: f64) -> Flow {
        if let Some(message) = error_body_message(body) {
            return Flow::Failed(format!("error response: {message}"));
        }
        let response = match serde_json::from_str::<CompletionResponse>(body) {
            Ok(response) if !response.choices.is_empty() => response,
            _ => {
                return Flow::Failed(format!(
                    "the server answered JSON, not a stream: {}",
                    clip(body)
                ))
            }
        };
        self.usage = response.usage;
        let has_content = self.take_text(response.content());
        if has_content {
            self.chunk_times_s.push(at_s);
        }
        Flow::Done
    }

    /// Appends `pieces` to the text; whether there was any.
    fn take_text<'a>(&mut self, pieces: impl Iterator<Item = &'a str>) -> bool {
        let mut has_content = false;
        for piece in pieces {
            has_content = true;
            if let Some(text) = &mut self.text {
                text.push_str(piece);
            }
        }
        has_content
    }

    pub fn into_result(self) -> StreamResult {
        StreamResult {
            chunk_times_s: self.chunk_times_s,
            usage: self.usage,
            text: self.text,
        }
    }

    fn event(&mut self, data: &str, at_s: f64) -> Flow {
        let data = data.trim();
        if data == "[DONE]" {
            return Flow::Done;
        }
        if data.is_empty() {
            return Flow::Continue;
        }
        let chunk: StreamChunk = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(e) => return Flow::Failed(format!("unparseable event ({e}): {}", clip(data))),
        };
        if let Some(message) = chunk.error_message() {
            return Flow::Failed(format!("error event: {message}"));
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        self.take_text(chunk.content());
        if chunk.is_arrival() {
            self.chunk_times_s.push(at_s);
        }
        self.saw_finish |= chunk.has_finish_reason();
        Flow::Continue
    }
}

impl StreamResult {
    /// The generated tokens and where the count comes from: the server's usage; else the
    /// tokenizer on the generated text; else (no tokenizer given) one token per content chunk,
    /// which is what most servers stream — recorded as `Tokenizer`, the only other source a
    /// record knows, so callers that need exact counts must pass a tokenizer.
    pub fn output_tokens(&self, tokenizer: Option<&TokenCounter>) -> (usize, TokenCountSource) {
        if let Some(usage) = self.usage {
            return (usage.completion_tokens, TokenCountSource::ServerUsage);
        }
        let count = match (tokenizer, &self.text) {
            (Some(count), Some(text)) => count(text),
            _ => self.chunk_times_s.len(),
        };
        (count, TokenCountSource::Tokenizer)
    }
}

/// The first 200 characters of a text, for error messages.
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

#[cfg(test)]
#[path = "stream_tool_call_tests.rs"]
mod tool_call_tests;

#[cfg(test)]
mod tests {
    use super::*;

    const CHAT: &str = concat!(
        "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"index\":0}],\"usage\":null}\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"},\"index\":0}],\"usage\":null}\n\n",
        ": keep-alive\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"index\":0}],\"usage\":null}\n\n",
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\",\"index\":0}],\"usage\":null}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2,\"total_tokens\":9}}\n\n",
        "data: [DONE]\n\n",
    );

    /// Feeds `stream` in reads of `size` bytes, read k arriving at time k; returns the last flow.
    fn feed(parser: &mut StreamParser, stream: &str, size: usize) -> Flow {
        for (k, piece) in stream.as_bytes().chunks(size).enumerate() {
            let flow = parser.push(piece, k as f64);
            if flow != Flow::Continue {
                return flow;
            }
        }
        parser.end_of_body(1e9)
    }

    #[test]
    fn chat_stream_in_one_read() {
        let mut parser = StreamParser::new(false);
        assert_eq!(feed(&mut parser, CHAT, CHAT.len()), Flow::Done);
        let result = parser.into_result();
        assert_eq!(result.chunk_times_s, [0.0, 0.0]);
        assert_eq!(
            result.output_tokens(None),
            (2, TokenCountSource::ServerUsage)
        );
        assert_eq!(result.usage.map(|u| u.prompt_tokens), Some(7));
    }

    #[test]
    fn chunks_are_stamped_with_the_read_that_completed_them() {
        for size in [1, 3, 17, 64] {
            let mut parser = StreamParser::new(false);
            assert_eq!(feed(&mut parser, CHAT, size), Flow::Done, "size {size}");
            let times = parser.into_result().chunk_times_s;
            // The first content event is complete at the second `\n` after its line.
            let line = CHAT
                .find("data: {\"choices\":[{\"delta\":{\"content\":\"Hel")
                .expect("content");
            let last_newline = CHAT[line..].find("\n\n").expect("end") + line + 1;
            assert_eq!(times[0], (last_newline / size) as f64, "size {size}");
            assert!(times[1] > times[0]);
        }
    }

    /// A token whose text is empty (special, or held back) still arrives as its own chunk.
    #[test]
    fn empty_token_chunks_are_timed() {
        let stream = concat!(
            "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let mut parser = StreamParser::new(true);
        let mut flow = Flow::Continue;
        for (k, event) in stream.split_inclusive("\n\n").enumerate() {
            flow = parser.push(event.as_bytes(), k as f64);
        }
        assert_eq!(flow, Flow::Done);
        let result = parser.into_result();
        assert_eq!(result.chunk_times_s, [1.0, 2.0, 3.0]);
        assert_eq!(result.text.as_deref(), Some("ab"));
    }

    #[test]
    fn crlf_stream() {
        let mut parser = StreamParser::new(false);
        assert_eq!(
            feed(&mut parser, &CHAT.replace('\n', "\r\n"), 5),
            Flow::Done
        );
        assert_eq!(parser.into_result().chunk_times_s.len(), 2);
    }

    #[test]
    fn no_usage_counts_the_text_with_the_tokenizer() {
        let stream = concat!(
            "data: {\"choices\":[{\"text\":\"one \",\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"text\":\"two three\",\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let mut parser = StreamParser::new(true);
        assert_eq!(feed(&mut parser, stream, 11), Flow::Done);
        let result = parser.into_result();
        assert_eq!(result.text.as_deref(), Some("one two three"));
        let words = |text: &str| text.split_whitespace().count();
        assert_eq!(
            result.output_tokens(Some(&words)),
            (3, TokenCountSource::Tokenizer)
        );
        // Without a tokenizer: one token per content chunk.
        assert_eq!(result.output_tokens(None), (2, TokenCountSource::Tokenizer));
    }

    #[test]
    fn error_event_fails_the_stream() {
        let stream = concat!(
            "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
            "data: {\"error\":{\"message\":\"engine died\",\"type\":\"server_error\"}}\n\n",
            "data: [DONE]\n\n",
        );
        let mut parser = StreamParser::new(false);
        let flow = feed(&mut parser, stream, stream.len());
        assert_eq!(flow, Flow::Failed("error event: engine died".into()));
        assert_eq!(parser.push(b"data: [DONE]\n\n", 5.0), flow);
        assert_eq!(parser.into_result().chunk_times_s, [0.0]);
    }

    #[test]
    fn a_stream_cut_before_its_finish_and_garbage_fail() {
        let mut parser = StreamParser::new(false);
        let cut = CHAT
            .find("data: {\"choices\":[{\"delta\":{},\"finish_reason")
            .expect("finish");
        assert_eq!(
            feed(&mut parser, &CHAT[..cut], 8),
            Flow::Failed("the stream ended without a finish_reason or data: [DONE]".into())
        );
        // A server that closes the stream after the finish (and usage) without `[DONE]`: done.
        let mut parser = StreamParser::new(false);
        let cut = CHAT.len() - "data: [DONE]\n\n".len();
        assert_eq!(feed(&mut parser, &CHAT[..cut], 8), Flow::Done);
        assert_eq!(parser.into_result().chunk_times_s.len(), 2);
        let mut parser = StreamParser::new(false);
        assert!(matches!(
            feed(&mut parser, "data: {not json\n\n", 100),
            Flow::Failed(message) if message.starts_with("unparseable event")
        ));
    }

    #[test]
    fn unterminated_done_still_completes() {
        let mut parser = StreamParser::new(false);
        let stream = CHAT.trim_end();
        assert_eq!(feed(&mut parser, stream, 9), Flow::Done);
    }
}
