//! Unit tests of reading a GGUF header's tokenizer keys.

#![allow(clippy::unwrap_used)]

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
        Err(TokenizerSpecError::Metadata(msg)) => {
            assert!(msg.contains(needle), "error {msg:?} lacks {needle:?}")
        }
        other => panic!("expected a Metadata error containing {needle:?}, got {other:?}"),
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
        Err(TokenizerSpecError::Unreadable(msg)) => assert!(msg.contains("not a readable GGUF")),
        other => panic!("expected Unreadable, got {other:?}"),
    }
    let missing = read_tokenizer_spec(Path::new("/nonexistent/model.gguf"));
    assert!(matches!(missing, Err(TokenizerSpecError::Unreadable(m)) if m.contains("cannot open")));
}
