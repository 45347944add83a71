//! Unit tests on tiny hand-written specs; the real SmolLM2 tokenizer is checked against an
//! independent reference in `server/tests/tokenizer_reference.rs`.

#![allow(clippy::unwrap_used)]

use super::*;

fn spec(model: &str, tokens: &[&str], token_types: Vec<i32>) -> TokenizerSpec {
    TokenizerSpec {
        model: model.into(),
        pre: None,
        tokens: tokens.iter().map(|t| t.to_string()).collect(),
        token_types,
        merges: Vec::new(),
        scores: Vec::new(),
        bos_token_id: None,
        eos_token_id: None,
        unknown_token_id: None,
        padding_token_id: None,
        add_bos_token: false,
        add_space_prefix: false,
        chat_template: None,
    }
}

/// A byte-level vocabulary in GPT-2's alphabet (Ġ = space, Ċ = newline).
fn gpt2_spec(pre: Option<&str>) -> TokenizerSpec {
    let tokens = [
        "<|endoftext|>",
        "<|im_start|>",
        "<|im_end|>",
        "a",
        "b",
        "Ġ",
        "1",
        "2",
        "Ċ",
        "ab",
        "Ġa",
        "Ġab",
        "ĠĠ",
        "<think>",
    ];
    let mut types = vec![1; tokens.len()];
    types[..3].fill(3);
    types[13] = 4;
    let mut spec = spec("gpt2", &tokens, types);
    spec.pre = pre.map(String::from);
    spec.merges = ["a b", "Ġ a", "Ġ ab", "Ġ Ġ"].map(String::from).to_vec();
    spec.bos_token_id = Some(1);
    spec.eos_token_id = Some(2);
    spec
}

fn tokens_of(tok: &TextTokenizer, text: &str) -> Vec<String> {
    let ids = tok.encode(text, false).unwrap();
    ids.iter().map(|&id| tok.id_to_token(id).unwrap()).collect()
}

#[test]
fn byte_level_bpe_merges_and_round_trips() {
    let tok = TextTokenizer::from_spec(&gpt2_spec(Some("smollm"))).unwrap();
    assert_eq!(tokens_of(&tok, "ab ab"), ["ab", "Ġab"]);
    assert_eq!(tokens_of(&tok, "ab\n12"), ["ab", "Ċ", "1", "2"]);
    let ids = tok.encode("ab ab\n12 a", false).unwrap();
    assert_eq!(tok.decode(&ids, false).unwrap(), "ab ab\n12 a");
    assert_eq!(tok.vocab_size(), 14);
}

#[test]
fn smollm_splits_digits_before_the_gpt2_regex() {
    // The digit split leaves "  " as its own run, which merges into ĠĠ; GPT-2's regex alone
    // keeps one space with the digit ("Ġ1"), which has no merge.
    let smollm = TextTokenizer::from_spec(&gpt2_spec(Some("smollm"))).unwrap();
    assert_eq!(tokens_of(&smollm, "a  1"), ["a", "ĠĠ", "1"]);
    let gpt2 = TextTokenizer::from_spec(&gpt2_spec(None)).unwrap();
    assert_eq!(tokens_of(&gpt2, "a  1"), ["a", "Ġ", "Ġ", "1"]);
}

#[test]
fn control_tokens_are_special_and_matched_whole() {
    let tok = TextTokenizer::from_spec(&gpt2_spec(Some("smollm"))).unwrap();
    let ids = tok
        .encode("<|im_start|>ab<|im_end|><think>", false)
        .unwrap();
    assert_eq!(ids, [1, 9, 2, 13]);
    assert_eq!(
        tok.decode(&ids, false).unwrap(),
        "<|im_start|>ab<|im_end|><think>"
    );
    // User-defined tokens are matched whole but are not special.
    assert_eq!(tok.decode(&ids, true).unwrap(), "ab<think>");
    assert!(tok.is_special(0) && tok.is_special(1) && tok.is_special(2));
    assert!(!tok.is_special(9) && !tok.is_special(13));
    assert_eq!(tok.eos_token_ids(), [2, 0]);
    assert_eq!(tok.bos_token_id(), Some(1));
    assert_eq!(tok.token_to_id("<|im_end|>"), Some(2));
}

#[test]
fn bos_is_added_only_when_the_spec_asks() {
    let mut spec = gpt2_spec(Some("smollm"));
    let tok = TextTokenizer::from_spec(&spec).unwrap();
    assert_eq!(tok.encode("ab", true).unwrap(), [9]);
    spec.add_bos_token = true;
    let tok = TextTokenizer::from_spec(&spec).unwrap();
    assert_eq!(tok.encode("ab", true).unwrap(), [1, 9]);
    assert_eq!(tok.encode("ab", false).unwrap(), [9]);
}

#[test]
fn unsupported_kinds_are_reported() {
    let err = TextTokenizer::from_spec(&spec("bert", &["a"], vec![])).unwrap_err();
    assert!(
        matches!(err, TokenizerError::Unsupported(ref m) if m.contains("\"bert\"")),
        "{err}"
    );
    let err = TextTokenizer::from_spec(&gpt2_spec(Some("weird"))).unwrap_err();
    assert!(
        matches!(err, TokenizerError::Unsupported(ref m) if m.contains("\"weird\"")),
        "{err}"
    );
    let mut bad = gpt2_spec(None);
    bad.merges.push("nospace".into());
    let err = TextTokenizer::from_spec(&bad).unwrap_err();
    assert!(matches!(err, TokenizerError::InvalidSpec(_)), "{err}");
}

/// A SentencePiece vocabulary: `<unk> <s> </s>`, 256 byte tokens, then pieces whose scores
/// (higher = merged earlier) build "▁hello" and "▁world". The file has no merges.
fn llama_spec() -> TokenizerSpec {
    let pieces = [
        ("▁", -100.0),
        ("h", -100.0),
        ("e", -100.0),
        ("l", -100.0),
        ("o", -100.0),
        ("w", -100.0),
        ("r", -100.0),
        ("d", -100.0),
        ("ll", -1.0),
        ("llo", -2.0),
        ("he", -3.0),
        ("hello", -4.0),
        ("▁hello", -5.0),
        ("or", -6.0),
        ("wor", -7.0),
        ("ld", -8.0),
        ("world", -9.0),
        ("▁world", -10.0),
    ];
    let mut tokens: Vec<String> = ["<unk>", "<s>", "</s>"].map(String::from).to_vec();
    let mut types = vec![2, 3, 3];
    tokens.extend((0..=255).map(|b| format!("<0x{b:02X}>")));
    types.extend([6; 256]);
    tokens.extend(pieces.iter().map(|(p, _)| p.to_string()));
    types.extend(vec![1; pieces.len()]);
    let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let mut spec = spec("llama", &refs, types);
    spec.scores = vec![0.0; 259];
    spec.scores.extend(pieces.iter().map(|(_, s)| *s as f32));
    spec.bos_token_id = Some(1);
    spec.eos_token_id = Some(2);
    spec.unknown_token_id = Some(0);
    spec.add_bos_token = true;
    spec.add_space_prefix = true;
    spec
}

#[test]
fn sentencepiece_bpe_with_space_prefix() {
    let tok = TextTokenizer::from_spec(&llama_spec()).unwrap();
    assert_eq!(tokens_of(&tok, "hello world"), ["▁hello", "▁world"]);
    let ids = tok.encode("hello world", true).unwrap();
    assert_eq!(ids[0], 1);
    assert_eq!(tok.decode(&ids, true).unwrap(), "hello world");
    assert_eq!(tok.decode(&ids, false).unwrap(), "<s> hello world");
}

#[test]
fn sentencepiece_falls_back_to_bytes() {
    let tok = TextTokenizer::from_spec(&llama_spec()).unwrap();
    assert_eq!(tokens_of(&tok, "hé"), ["▁", "h", "<0xC3>", "<0xA9>"]);
    let ids = tok.encode("hé wörld", false).unwrap();
    assert_eq!(tok.decode(&ids, false).unwrap(), "hé wörld");
}

#[test]
fn sentencepiece_prefixes_each_segment_after_a_special_token() {
    let tok = TextTokenizer::from_spec(&llama_spec()).unwrap();
    assert_eq!(
        tokens_of(&tok, "<s>hello</s>world"),
        ["<s>", "▁hello", "</s>", "▁world"]
    );
    let mut no_prefix = llama_spec();
    no_prefix.add_space_prefix = false;
    let tok = TextTokenizer::from_spec(&no_prefix).unwrap();
    assert_eq!(tokens_of(&tok, "hello world"), ["hello", "▁world"]);
    let ids = tok.encode("hello world", false).unwrap();
    assert_eq!(tok.decode(&ids, false).unwrap(), "hello world");
}

#[test]
fn tokenizer_json_round_trip_with_config() {
    let built = TextTokenizer::from_spec(&gpt2_spec(Some("smollm"))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("tokenizer.json");
    built.inner().save(&json, false).unwrap();
    let config = r#"{"bos_token": {"content": "<|im_start|>"}, "eos_token": "<|im_end|>"}"#;
    std::fs::write(dir.path().join("tokenizer_config.json"), config).unwrap();
    let loaded = TextTokenizer::from_tokenizer_json(&json).unwrap();
    let text = "<|im_start|>ab ab\n12<|im_end|>";
    assert_eq!(
        loaded.encode(text, true).unwrap(),
        built.encode(text, true).unwrap()
    );
    assert_eq!(loaded.bos_token_id(), Some(1));
    assert_eq!(loaded.eos_token_ids(), [2, 0]);
    assert!(loaded.is_special(1));
    let missing = TextTokenizer::from_tokenizer_json(dir.path().join("nope.json")).unwrap_err();
    assert!(matches!(missing, TokenizerError::File { .. }), "{missing}");
}

/// The pre-tokenizer's pieces of `text`, in GPT-2's byte alphabet.
fn pre_tokens(tok: &TextTokenizer, text: &str) -> Vec<String> {
    use tokenizers::{OffsetReferential, OffsetType, PreTokenizedString, PreTokenizer};
    let mut pieces = PreTokenizedString::from(text);
    let pre_tokenizer = tok.inner().get_pre_tokenizer().unwrap();
    pre_tokenizer.pre_tokenize(&mut pieces).unwrap();
    let splits = pieces.get_splits(OffsetReferential::Original, OffsetType::Byte);
    splits.into_iter().map(|(s, _, _)| s.to_string()).collect()
}

#[test]
fn named_pre_tokenizers_split_numbers_their_way() {
    let text = "x 12345 it's\n\n";
    let of = |pre: &str| {
        pre_tokens(
            &TextTokenizer::from_spec(&gpt2_spec(Some(pre))).unwrap(),
            text,
        )
    };
    let by_digit = ["x", "Ġ", "1", "2", "3", "4", "5", "Ġit", "'s", "ĊĊ"];
    assert_eq!(of("smollm"), by_digit);
    assert_eq!(of("qwen2"), by_digit);
    assert_eq!(of("llama-bpe"), ["x", "Ġ", "123", "45", "Ġit", "'s", "ĊĊ"]);
    assert_eq!(of("gpt2"), ["x", "Ġ12345", "Ġit", "'s", "ĊĊ"]);
}
