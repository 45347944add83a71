//! The tokenizer a GGUF file describes, as plain data (no tensors, no tokenizer library).
//!
//! GGUF files carry their tokenizer as metadata under llama.cpp's key names
//! (`tokenizer.ggml.tokens`, `tokenizer.ggml.merges`, ...). [`TokenizerSpec`] reads those keys once,
//! checks their types and lengths, and leaves building a real tokenizer to the server crate.

use std::collections::HashMap;
use std::path::Path;

use candle_core::quantized::gguf_file::{Content, Value};

use crate::{EngineError, Result};

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
            return Err(load_err("`tokenizer.ggml.tokens` is empty"));
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
                return Err(load_err(format!(
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
                return Err(load_err(format!(
                    "`tokenizer.ggml.{key}` is {id}, outside the vocabulary of {n} tokens"
                )));
            }
        }
        Ok(())
    }
}

/// Opens a GGUF file and reads only its header (metadata and tensor table, no tensor data).
pub fn read_tokenizer_spec(path: &Path) -> Result<TokenizerSpec> {
    let file = std::fs::File::open(path)
        .map_err(|e| load_err(format!("cannot open {}: {e}", path.display())))?;
    let mut reader = std::io::BufReader::new(file);
    let content = Content::read(&mut reader).map_err(|e| {
        load_err(format!(
            "{} is not a readable GGUF file: {e}",
            path.display()
        ))
    })?;
    TokenizerSpec::from_gguf_metadata(&content.metadata).map_err(|e| match e {
        EngineError::ModelLoad { message: msg, .. } => {
            load_err(format!("{}: {msg}", path.display()))
        }
        other => other,
    })
}

fn load_err(msg: impl Into<String>) -> EngineError {
    EngineError::model_load(msg)
}

fn missing(key: &str) -> EngineError {
    load_err(format!("GGUF metadata has no `{key}`"))
}

fn wrong_type(key: &str, expected: &str, found: &Value) -> EngineError {
    load_err(format!(
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
            .map_err(|_| load_err(format!("GGUF metadata `{key}` is {x}, not a token id"))),
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Value {
        Value::Array(items.iter().map(|s| Value::String(s.to_string())).collect())
    }

    fn gpt2_metadata() -> Metadata {
        let mut md = Metadata::new();
        md.insert("tokenizer.ggml.model".into(), Value::String("gpt2".into()));
        md.insert("tokenizer.ggml.pre".into(), Value::String("smollm".into()));
        md.insert(
            "tokenizer.ggml.tokens".into(),
            strings(&["<|endoftext|>", "a", "b", "ab"]),
        );
        let types = [3, 1, 1, 1].iter().map(|&t| Value::I32(t)).collect();
        md.insert("tokenizer.ggml.token_type".into(), Value::Array(types));
        md.insert("tokenizer.ggml.merges".into(), strings(&["a b"]));
        md.insert("tokenizer.ggml.bos_token_id".into(), Value::U32(0));
        md.insert("tokenizer.ggml.eos_token_id".into(), Value::U32(0));
        md.insert("tokenizer.ggml.add_bos_token".into(), Value::Bool(false));
        md.insert(
            "tokenizer.chat_template".into(),
            Value::String("{{ messages }}".into()),
        );
        md
    }

    fn expect_error(md: &Metadata, needle: &str) {
        match TokenizerSpec::from_gguf_metadata(md) {
            Err(EngineError::ModelLoad { message: msg, .. }) => {
                assert!(msg.contains(needle), "error {msg:?} lacks {needle:?}")
            }
            other => panic!("expected a ModelLoad error containing {needle:?}, got {other:?}"),
        }
    }

    #[test]
    fn reads_a_gpt2_spec() {
        let spec = TokenizerSpec::from_gguf_metadata(&gpt2_metadata()).unwrap();
        assert_eq!(spec.model, "gpt2");
        assert_eq!(spec.pre.as_deref(), Some("smollm"));
        assert_eq!(spec.tokens, ["<|endoftext|>", "a", "b", "ab"]);
        assert_eq!(spec.token_types, [3, 1, 1, 1]);
        assert_eq!(spec.merges, ["a b"]);
        assert!(spec.scores.is_empty());
        assert_eq!((spec.bos_token_id, spec.eos_token_id), (Some(0), Some(0)));
        assert_eq!((spec.unknown_token_id, spec.padding_token_id), (None, None));
        assert!(!spec.add_bos_token && !spec.add_space_prefix);
        assert_eq!(spec.chat_template.as_deref(), Some("{{ messages }}"));
        assert_eq!(spec.vocab_size(), 4);
        assert_eq!(spec.token_type(0), TOKEN_TYPE_CONTROL);
    }

    #[test]
    fn llama_defaults_to_bos_and_space_prefix() {
        let mut md = gpt2_metadata();
        md.insert("tokenizer.ggml.model".into(), Value::String("llama".into()));
        md.remove("tokenizer.ggml.add_bos_token");
        md.remove("tokenizer.ggml.merges");
        let scores = (0..4).map(|i| Value::F32(-(i as f32))).collect();
        md.insert("tokenizer.ggml.scores".into(), Value::Array(scores));
        md.insert("tokenizer.ggml.unknown_token_id".into(), Value::I32(-1));
        let spec = TokenizerSpec::from_gguf_metadata(&md).unwrap();
        assert!(spec.add_bos_token && spec.add_space_prefix);
        assert!(spec.merges.is_empty());
        assert_eq!(spec.scores, [0.0, -1.0, -2.0, -3.0]);
        assert_eq!(spec.unknown_token_id, None);
    }

    #[test]
    fn missing_keys_are_named() {
        let mut md = gpt2_metadata();
        md.remove("tokenizer.ggml.model");
        expect_error(&md, "no `tokenizer.ggml.model`");
        let mut md = gpt2_metadata();
        md.remove("tokenizer.ggml.tokens");
        expect_error(&md, "no `tokenizer.ggml.tokens`");
    }

    #[test]
    fn wrong_types_are_named() {
        let mut md = gpt2_metadata();
        md.insert("tokenizer.ggml.model".into(), Value::U32(2));
        expect_error(&md, "`tokenizer.ggml.model` must be a string");
        let mut md = gpt2_metadata();
        md.insert(
            "tokenizer.ggml.tokens".into(),
            Value::Array(vec![Value::U8(1)]),
        );
        expect_error(&md, "`tokenizer.ggml.tokens` must be an array of strings");
        let mut md = gpt2_metadata();
        md.insert("tokenizer.ggml.bos_token_id".into(), Value::F32(1.0));
        expect_error(
            &md,
            "`tokenizer.ggml.bos_token_id` must be an integer token id",
        );
        let mut md = gpt2_metadata();
        md.insert("tokenizer.ggml.add_bos_token".into(), Value::U8(1));
        expect_error(&md, "`tokenizer.ggml.add_bos_token` must be a bool");
    }

    #[test]
    fn inconsistent_lengths_and_ids_are_rejected() {
        let mut md = gpt2_metadata();
        md.insert(
            "tokenizer.ggml.token_type".into(),
            Value::Array(vec![Value::I32(1)]),
        );
        expect_error(&md, "`tokenizer.ggml.token_type` has 1 entries");
        let mut md = gpt2_metadata();
        md.insert("tokenizer.ggml.eos_token_id".into(), Value::U32(4));
        expect_error(
            &md,
            "`tokenizer.ggml.eos_token_id` is 4, outside the vocabulary",
        );
        let mut md = gpt2_metadata();
        md.insert("tokenizer.ggml.tokens".into(), strings(&[]));
        expect_error(&md, "empty");
    }

    #[test]
    fn reads_the_spec_from_a_gguf_file_header() {
        let md = gpt2_metadata();
        let entries: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        candle_core::quantized::gguf_file::write(file.as_file_mut(), &entries, &[]).unwrap();
        let spec = read_tokenizer_spec(file.path()).unwrap();
        assert_eq!(spec, TokenizerSpec::from_gguf_metadata(&md).unwrap());
    }

    #[test]
    fn reading_a_non_gguf_file_fails_clearly() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, b"not a gguf file at all").unwrap();
        match read_tokenizer_spec(file.path()) {
            Err(EngineError::ModelLoad { message: msg, .. }) => {
                assert!(msg.contains("not a readable GGUF"))
            }
            other => panic!("expected ModelLoad, got {other:?}"),
        }
        let missing = read_tokenizer_spec(Path::new("/nonexistent/model.gguf"));
        assert!(
            matches!(missing, Err(EngineError::ModelLoad { message: m, .. }) if m.contains("cannot open"))
        );
    }
}
