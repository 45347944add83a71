//! Text ↔ token ids for one model: a `tokenizers::Tokenizer` plus the model's BOS/EOS conventions.
//!
//! Built from a GGUF file's metadata ([`TextTokenizer::from_gguf`]) or from a Hugging Face
//! `tokenizer.json` ([`TextTokenizer::from_tokenizer_json`]).

mod build;
mod error;

use std::collections::HashSet;
use std::path::Path;

use aho_corasick::{AhoCorasick, MatchKind};
use tokenizers::Tokenizer;

pub use error::{Result, TokenizerError};

use crate::tokenizer_spec::{read_tokenizer_spec, TokenizerSpec};

/// Control tokens that end a turn in common chat formats; with the spec's EOS they stop generation.
const END_OF_GENERATION_TOKENS: &[&str] = &[
    "<|endoftext|>",
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end|>",
    "<end_of_turn>",
    "<|end_of_text|>",
];

/// A model's tokenizer. Cheap to share behind an `Arc`; all methods take `&self`.
pub struct TextTokenizer {
    inner: Tokenizer,
    bos_token_id: Option<u32>,
    eos_token_ids: Vec<u32>,
    /// Prepend BOS ourselves (GGUF specs have no post-processor; tokenizer.json ones do it inside).
    add_bos_token: bool,
    special_ids: HashSet<u32>,
    /// The same tokenizer with special-token text read as plain text.
    text_only: Tokenizer,
    /// Finds special-token text (leftmost-longest, as the library does); `None` without any.
    special_matcher: Option<SpecialMatcher>,
}

/// Special-token texts and their ids, for finding them in a string.
struct SpecialMatcher {
    automaton: AhoCorasick,
    ids: Vec<u32>,
}

/// One special token's text found in a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialTokenMatch {
    pub start: usize,
    pub end: usize,
    pub id: u32,
}

impl std::fmt::Debug for TextTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextTokenizer")
            .field("vocab_size", &self.vocab_size())
            .field("bos_token_id", &self.bos_token_id)
            .field("eos_token_ids", &self.eos_token_ids)
            .field("add_bos_token", &self.add_bos_token)
            .finish_non_exhaustive()
    }
}

impl TextTokenizer {
    /// Rebuilds the tokenizer a GGUF spec describes ("gpt2" byte-level BPE or "llama" SentencePiece).
    pub fn from_spec(spec: &TokenizerSpec) -> Result<Self> {
        let inner = build::tokenizer_from_spec(spec)?;
        Ok(Self::assemble(
            inner,
            spec.bos_token_id,
            spec.eos_token_id,
            spec.add_bos_token,
        ))
    }

    /// Reads the tokenizer from a GGUF file's header (no tensor data is read).
    pub fn from_gguf(path: impl AsRef<Path>) -> Result<Self> {
        Self::from_spec(&read_tokenizer_spec(path.as_ref())?)
    }

    /// Loads a Hugging Face `tokenizer.json`; BOS/EOS come from a `tokenizer_config.json` beside it
    /// when there is one. BOS is added by the file's own post-processor.
    pub fn from_tokenizer_json(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let inner = Tokenizer::from_file(path).map_err(|e| TokenizerError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let config = path.with_file_name("tokenizer_config.json");
        let (bos, eos) = special_tokens_from_config(&config)?;
        let bos = bos.and_then(|t| inner.token_to_id(&t));
        let eos = eos.and_then(|t| inner.token_to_id(&t));
        Ok(Self::assemble(inner, bos, eos, false))
    }

    /// A `tokenizer.json` held in memory, with the EOS token given by its text.
    pub fn from_json_str(json: &str, eos_token: Option<&str>) -> Result<Self> {
        let inner: Tokenizer = json
            .parse()
            .map_err(|e: tokenizers::Error| TokenizerError::InvalidSpec(e.to_string()))?;
        let eos = eos_token.and_then(|t| inner.token_to_id(t));
        Ok(Self::assemble(inner, None, eos, false))
    }

    fn assemble(inner: Tokenizer, bos: Option<u32>, eos: Option<u32>, add_bos: bool) -> Self {
        let special_ids: HashSet<u32> = inner
            .get_added_vocabulary()
            .get_added_tokens_decoder()
            .iter()
            .filter(|(_, token)| token.special)
            .map(|(&id, _)| id)
            .collect();
        let mut eos_token_ids: Vec<u32> = eos.into_iter().collect();
        for name in END_OF_GENERATION_TOKENS {
            if let Some(id) = inner
                .token_to_id(name)
                .filter(|id| special_ids.contains(id))
            {
                if !eos_token_ids.contains(&id) {
                    eos_token_ids.push(id);
                }
            }
        }
        let mut text_only = inner.clone();
        text_only.set_encode_special_tokens(true);
        let special_matcher = special_matcher(&inner, &special_ids);
        Self {
            inner,
            bos_token_id: bos,
            eos_token_ids,
            add_bos_token: add_bos && bos.is_some(),
            special_ids,
            text_only,
            special_matcher,
        }
    }

    /// Token ids of `text`. Special tokens written in the text (e.g. `<|im_start|>`) are matched
    /// whole. With `add_special_tokens`, BOS is prepended when the model asks for it.
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>> {
        self.encode_with(&self.inner, text, add_special_tokens)
    }

    /// Token ids of `text` with any special-token text in it read as ordinary text (e.g.
    /// `<|im_end|>` becomes `<`, `|`, `im`, ... never the control token).
    pub fn encode_as_text(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>> {
        self.encode_with(&self.text_only, text, add_special_tokens)
    }

    fn encode_with(
        &self,
        tokenizer: &Tokenizer,
        text: &str,
        add_special: bool,
    ) -> Result<Vec<u32>> {
        let encoding = tokenizer.encode_fast(text, add_special)?;
        let ids = encoding.get_ids();
        match self.bos_token_id {
            Some(bos) if add_special && self.add_bos_token => {
                Ok(std::iter::once(bos).chain(ids.iter().copied()).collect())
            }
            _ => Ok(ids.to_vec()),
        }
    }

    /// Where special-token texts occur in `text`, left to right (longest first at a position).
    pub fn find_special_tokens(&self, text: &str) -> Vec<SpecialTokenMatch> {
        let Some(matcher) = &self.special_matcher else {
            return Vec::new();
        };
        matcher
            .automaton
            .find_iter(text)
            .map(|m| SpecialTokenMatch {
                start: m.start(),
                end: m.end(),
                id: matcher.ids[m.pattern().as_usize()],
            })
            .collect()
    }

    /// Whether `text` holds the text of any special token.
    pub fn contains_special_text(&self, text: &str) -> bool {
        self.special_matcher
            .as_ref()
            .is_some_and(|m| m.automaton.is_match(text))
    }

    /// The text of `ids`; with `skip_special_tokens`, special tokens contribute nothing.
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        Ok(self.inner.decode(ids, skip_special_tokens)?)
    }

    /// Number of token ids, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    pub fn bos_token_id(&self) -> Option<u32> {
        self.bos_token_id
    }

    /// Ids that end generation: the model's EOS first, then known end-of-turn control tokens.
    pub fn eos_token_ids(&self) -> Vec<u32> {
        self.eos_token_ids.clone()
    }

    /// Whether `id` is a special token (dropped by `decode(.., skip_special_tokens = true)`).
    pub fn is_special(&self, id: u32) -> bool {
        self.special_ids.contains(&id)
    }

    pub fn inner(&self) -> &Tokenizer {
        &self.inner
    }
}

fn special_matcher(inner: &Tokenizer, special_ids: &HashSet<u32>) -> Option<SpecialMatcher> {
    let mut tokens: Vec<(String, u32)> = inner
        .get_added_vocabulary()
        .get_added_tokens_decoder()
        .iter()
        .filter(|(id, token)| special_ids.contains(id) && !token.content.is_empty())
        .map(|(&id, token)| (token.content.clone(), id))
        .collect();
    if tokens.is_empty() {
        return None;
    }
    tokens.sort();
    let automaton = AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(tokens.iter().map(|(text, _)| text))
        .map_err(|error| tracing::warn!(%error, "cannot index the special tokens"))
        .ok()?;
    Some(SpecialMatcher {
        automaton,
        ids: tokens.into_iter().map(|(_, id)| id).collect(),
    })
}

/// `(bos_token, eos_token)` from a `tokenizer_config.json`, where each is a string or an
/// `{"content": ...}` object. A missing file means "none known".
fn special_tokens_from_config(path: &Path) -> Result<(Option<String>, Option<String>)> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, None)),
        Err(e) => return Err(file_error(path, e)),
    };
    let config: serde_json::Value = serde_json::from_str(&text).map_err(|e| file_error(path, e))?;
    let token = |key: &str| match &config[key] {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Object(o) => o.get("content").and_then(|c| c.as_str()).map(String::from),
        _ => None,
    };
    Ok((token("bos_token"), token("eos_token")))
}

fn file_error(path: &Path, e: impl std::fmt::Display) -> TokenizerError {
    TokenizerError::File {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests;
