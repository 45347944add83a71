//! The tokenizer a GGUF file describes, as plain data (no tensors, no tokenizer library).
//!
//! GGUF files carry their tokenizer as metadata under llama.cpp's key names
//! (`tokenizer.ggml.tokens`, `tokenizer.ggml.merges`, ...). [`TokenizerSpec`] reads those keys once,
//! checks their types and lengths, and leaves building a real tokenizer to [`crate::tokenizer`].

use std::collections::HashMap;
use std::path::Path;

use candle_core::quantized::gguf_file::{Content, Value};

/// Why a GGUF file's tokenizer could not be read. The messages keep the wording of a model that
/// cannot be loaded ("model load failed: ..."), as the engine words its own load errors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TokenizerSpecError {
    /// The file cannot be opened, or it is not a GGUF file.
    #[error("model load failed: {0}")]
    Unreadable(String),
    /// A tokenizer key is missing or of the wrong type, or disagrees with the vocabulary.
    #[error("model load failed: {0}")]
    Metadata(String),
}

type Result<T, E = TokenizerSpecError> = std::result::Result<T, E>;

/// GGUF token type of a control token such as `<|im_end|>` (llama.cpp's `LLAMA_TOKEN_TYPE_CONTROL`).
pub const TOKEN_TYPE_CONTROL: i32 = 3;
/// GGUF token type of a user-defined token, matched whole in text but not special.
pub const TOKEN_TYPE_USER_DEFINED: i32 = 4;
/// GGUF token type of a byte-fallback token such as `<0x0A>`.
pub const TOKEN_TYPE_BYTE: i32 = 6;

/// Everything needed to rebuild a model's tokenizer and chat prompt, as stored in its GGUF header.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenizerSpec {
    /// `tokenizer.ggml.model`: "gpt2" (byte-level BPE), "llama" (SentencePiece BPE), ...
    pub model: String,
    /// `tokenizer.ggml.pre`: llama.cpp's name for the pre-tokenizer ("smollm", "llama3", ...).
    pub pre: Option<String>,
    /// `tokenizer.ggml.tokens`: the vocabulary, indexed by token id.
    pub tokens: Vec<String>,
    /// `tokenizer.ggml.token_type`: one per token (1 normal, 2 unknown, 3 control, 4 user-defined,
    /// 5 unused, 6 byte); empty when the file has none.
    pub token_types: Vec<i32>,
    /// `tokenizer.ggml.merges`: "left right" pairs, best first; empty when the file has none.
    pub merges: Vec<String>,
    /// `tokenizer.ggml.scores`: one per token; empty when the file has none.
    pub scores: Vec<f32>,
    pub bos_token_id: Option<u32>,
    pub eos_token_id: Option<u32>,
    pub unknown_token_id: Option<u32>,
    pub padding_token_id: Option<u32>,
    /// Whether encoding a prompt starts with BOS (default: true for "llama", false otherwise).
    pub add_bos_token: bool,
    /// Whether a space is prepended to the text (default: true for "llama", false otherwise).
    pub add_space_prefix: bool,
    /// `tokenizer.chat_template`: the model's Jinja chat template.
    pub chat_template: Option<String>,
}

type Metadata = HashMap<String, Value>;

impl TokenizerSpec {
    /// Reads the tokenizer keys of a GGUF header. Fails on a missing required key, a value of the
    /// wrong type, per-token arrays whose length differs from the vocabulary, or a special token id
    /// outside the vocabulary.
    pub fn from_gguf_metadata(md: &Metadata) -> Result<Self> {
        let model = required_string(md, "tokenizer.ggml.model")?;
        let tokens = string_array(md, "tokenizer.ggml.tokens")?
            .ok_or_else(|| missing("tokenizer.ggml.tokens"))?;
        if tokens.is_empty() {
            return Err(metadata_err("`tokenizer.ggml.tokens` is empty"));
        }
        let is_llama = model == "llama";
        let spec = Self {
            pre: optional_string(md, "tokenizer.ggml.pre")?,
            token_types: int_array(md, "tokenizer.ggml.token_type")?.unwrap_or_default(),
            merges: string_array(md, "tokenizer.ggml.merges")?.unwrap_or_default(),
            scores: f32_array(md, "tokenizer.ggml.scores")?.unwrap_or_default(),
            bos_token_id: token_id(md, "tokenizer.ggml.bos_token_id")?,
            eos_token_id: token_id(md, "tokenizer.ggml.eos_token_id")?,
            unknown_token_id: token_id(md, "tokenizer.ggml.unknown_token_id")?,
            padding_token_id: token_id(md, "tokenizer.ggml.padding_token_id")?,
            add_bos_token: optional_bool(md, "tokenizer.ggml.add_bos_token")?.unwrap_or(is_llama),
            add_space_prefix: optional_bool(md, "tokenizer.ggml.add_space_prefix")?
                .unwrap_or(is_llama),
            chat_template: optional_string(md, "tokenizer.chat_template")?,
            model,
            tokens,
        };
        spec.validate()?;
        Ok(spec)
    }

    /// Number of tokens in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// The type of token `id` (1 = normal when the file stores no types).
    pub fn token_type(&self, id: usize) -> i32 {
        self.token_types.get(id).copied().unwrap_or(1)
    }

    fn validate(&self) -> Result<()> {
        let n = self.tokens.len();
        for (key, len) in [
            ("tokenizer.ggml.token_type", self.token_types.len()),
            ("tokenizer.ggml.scores", self.scores.len()),
        ] {
            if len != 0 && len != n {
                return Err(metadata_err(format!(
                    "`{key}` has {len} entries but the vocabulary has {n} tokens"
                )));
            }
        }
        for (key, id) in [
            ("bos_token_id", self.bos_token_id),
            ("eos_token_id", self.eos_token_id),
            ("unknown_token_id", self.unknown_token_id),
            ("padding_token_id", self.padding_token_id),
        ] {
            if let Some(id) = id.filter(|&id| id as usize >= n) {
                return Err(metadata_err(format!(
                    "`tokenizer.ggml.{key}` is {id}, outside the vocabulary of {n} tokens"
                )));
            }
        }
        Ok(())
    }
}

/// Opens a GGUF file and reads only its header (metadata and tensor table, no tensor data).
pub fn read_tokenizer_spec(path: &Path) -> Result<TokenizerSpec> {
    let file = std::fs::File::open(path).map_err(|e| {
        TokenizerSpecError::Unreadable(format!("cannot open {}: {e}", path.display()))
    })?;
    let mut reader = std::io::BufReader::new(file);
    let content = Content::read(&mut reader).map_err(|e| {
        TokenizerSpecError::Unreadable(format!(
            "{} is not a readable GGUF file: {e}",
            path.display()
        ))
    })?;
    TokenizerSpec::from_gguf_metadata(&content.metadata).map_err(|e| match e {
        TokenizerSpecError::Metadata(msg) => metadata_err(format!("{}: {msg}", path.display())),
        other => other,
    })
}

fn metadata_err(msg: impl Into<String>) -> TokenizerSpecError {
    TokenizerSpecError::Metadata(msg.into())
}

fn missing(key: &str) -> TokenizerSpecError {
    metadata_err(format!("GGUF metadata has no `{key}`"))
}

fn wrong_type(key: &str, expected: &str, found: &Value) -> TokenizerSpecError {
    metadata_err(format!(
        "GGUF metadata `{key}` must be {expected}, found {:?}",
        found.value_type()
    ))
}

fn required_string(md: &Metadata, key: &str) -> Result<String> {
    optional_string(md, key)?.ok_or_else(|| missing(key))
}

fn optional_string(md: &Metadata, key: &str) -> Result<Option<String>> {
    match md.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(wrong_type(key, "a string", v)),
    }
}

fn optional_bool(md: &Metadata, key: &str) -> Result<Option<bool>> {
    match md.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(wrong_type(key, "a bool", v)),
    }
}

/// Any integer type that holds a non-negative value below 2^32 is accepted.
fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::U8(x) => Some(i64::from(*x)),
        Value::I8(x) => Some(i64::from(*x)),
        Value::U16(x) => Some(i64::from(*x)),
        Value::I16(x) => Some(i64::from(*x)),
        Value::U32(x) => Some(i64::from(*x)),
        Value::I32(x) => Some(i64::from(*x)),
        Value::U64(x) => i64::try_from(*x).ok(),
        Value::I64(x) => Some(*x),
        _ => None,
    }
}

fn token_id(md: &Metadata, key: &str) -> Result<Option<u32>> {
    let Some(v) = md.get(key) else {
        return Ok(None);
    };
    // llama.cpp writes -1 (as i32) for "no such token".
    match as_i64(v) {
        Some(-1) => Ok(None),
        Some(x) => u32::try_from(x)
            .map(Some)
            .map_err(|_| metadata_err(format!("GGUF metadata `{key}` is {x}, not a token id"))),
        None => Err(wrong_type(key, "an integer token id", v)),
    }
}

fn array<'a>(md: &'a Metadata, key: &str) -> Result<Option<&'a Vec<Value>>> {
    match md.get(key) {
        None => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items)),
        Some(v) => Err(wrong_type(key, "an array", v)),
    }
}

fn string_array(md: &Metadata, key: &str) -> Result<Option<Vec<String>>> {
    let Some(items) = array(md, key)? else {
        return Ok(None);
    };
    items
        .iter()
        .map(|v| match v {
            Value::String(s) => Ok(s.clone()),
            other => Err(wrong_type(key, "an array of strings", other)),
        })
        .collect::<Result<_>>()
        .map(Some)
}

fn int_array(md: &Metadata, key: &str) -> Result<Option<Vec<i32>>> {
    let Some(items) = array(md, key)? else {
        return Ok(None);
    };
    items
        .iter()
        .map(|v| {
            as_i64(v)
                .and_then(|x| i32::try_from(x).ok())
                .ok_or_else(|| wrong_type(key, "an array of 32-bit integers", v))
        })
        .collect::<Result<_>>()
        .map(Some)
}

fn f32_array(md: &Metadata, key: &str) -> Result<Option<Vec<f32>>> {
    let Some(items) = array(md, key)? else {
        return Ok(None);
    };
    items
        .iter()
        .map(|v| match v {
            Value::F32(x) => Ok(*x),
            Value::F64(x) => Ok(*x as f32),
            other => Err(wrong_type(key, "an array of floats", other)),
        })
        .collect::<Result<_>>()
        .map(Some)
}

#[cfg(test)]
mod tests;
