//! Token ids → text deltas for streaming, never splitting a UTF-8 character.
//!
//! Decoding one token at a time is wrong: a byte-level token may hold half of "é", and decoders
//! such as SentencePiece's strip or join across tokens. So each step decodes a short window of
//! ids twice — `ids[prefix_offset..read_offset]` (text already emitted) and
//! `ids[prefix_offset..]` — and emits the difference, unless the new text ends in U+FFFD (an
//! incomplete character, which the next token may complete). After an emission the window slides
//! forward, so the cost per token is O(window), not O(generated text).

use std::sync::Arc;

use crate::tokenizer::{Result, TextTokenizer};

const REPLACEMENT: char = '\u{FFFD}';

/// Streams the text of one sequence of generated token ids.
#[derive(Debug)]
pub struct IncrementalDetokenizer {
    tokenizer: Arc<TextTokenizer>,
    skip_special_tokens: bool,
    ids: Vec<u32>,
    /// Start of the decode window: the ids whose text was emitted by the previous step.
    prefix_offset: usize,
    /// End of the emitted ids: text up to here has been returned.
    read_offset: usize,
    text: String,
}

impl IncrementalDetokenizer {
    pub fn new(tokenizer: Arc<TextTokenizer>, skip_special_tokens: bool) -> Self {
        Self {
            tokenizer,
            skip_special_tokens,
            ids: Vec::new(),
            prefix_offset: 0,
            read_offset: 0,
            text: String::new(),
        }
    }

    /// Adds one token; returns the text it completes (empty while a character is incomplete,
    /// or for a skipped special token).
    pub fn push(&mut self, token_id: u32) -> Result<String> {
        self.ids.push(token_id);
        let (prefix, full) = self.decode_window()?;
        if full.len() <= prefix.len() || full.ends_with(REPLACEMENT) {
            return Ok(String::new());
        }
        Ok(self.emit(&prefix, &full))
    }

    /// Flushes whatever is held back (an incomplete character is emitted as U+FFFD).
    pub fn finish(&mut self) -> Result<String> {
        if self.read_offset == self.ids.len() {
            return Ok(String::new());
        }
        let (prefix, full) = self.decode_window()?;
        Ok(self.emit(&prefix, &full))
    }

    /// All text emitted so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The token ids pushed so far.
    pub fn token_ids(&self) -> &[u32] {
        &self.ids
    }

    fn decode_window(&self) -> Result<(String, String)> {
        let window = &self.ids[self.prefix_offset..];
        let emitted = self.read_offset - self.prefix_offset;
        let prefix = self
            .tokenizer
            .decode(&window[..emitted], self.skip_special_tokens)?;
        let full = self.tokenizer.decode(window, self.skip_special_tokens)?;
        Ok((prefix, full))
    }

    /// Returns the part of `full` after `prefix` and slides the window to the pushed ids.
    fn emit(&mut self, prefix: &str, full: &str) -> String {
        let delta = match full.strip_prefix(prefix) {
            Some(delta) => delta.to_string(),
            // A decoder rewrote the emitted text (rare): skip as many bytes as were emitted,
            // moved forward to a character boundary.
            None => {
                let mut cut = prefix.len().min(full.len());
                while !full.is_char_boundary(cut) {
                    cut += 1;
                }
                full[cut..].to_string()
            }
        };
        self.prefix_offset = self.read_offset;
        self.read_offset = self.ids.len();
        self.text.push_str(&delta);
        delta
    }
}

#[cfg(test)]
mod tests;
