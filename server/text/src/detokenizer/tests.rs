#![allow(clippy::unwrap_used)]

use super::*;
use crate::tokenizer_spec::TokenizerSpec;

/// GPT-2's printable stand-ins for the 256 byte values.
fn byte_chars() -> Vec<char> {
    let printable = |b: u32| (0x21..=0x7E).contains(&b) || (0xA1..=0xAC).contains(&b) || b >= 0xAE;
    let mut next = 256;
    (0u32..256)
        .map(|b| {
            if printable(b) {
                char::from_u32(b).unwrap()
            } else {
                next += 1;
                char::from_u32(next - 1).unwrap()
            }
        })
        .collect()
}

fn spell(text: &str) -> Vec<String> {
    let chars = byte_chars();
    text.bytes()
        .map(|b| chars[b as usize].to_string())
        .collect()
}

fn spec(model: &str, tokens: Vec<String>, token_types: Vec<i32>) -> TokenizerSpec {
    TokenizerSpec {
        model: model.into(),
        pre: Some("smollm".into()),
        tokens,
        token_types,
        merges: Vec::new(),
        scores: Vec::new(),
        bos_token_id: None,
        eos_token_id: Some(1),
        unknown_token_id: None,
        padding_token_id: None,
        add_bos_token: false,
        add_space_prefix: false,
        chat_template: None,
    }
}

/// Every byte is a token; a few merges make tokens that end in the middle of a character
/// (the first two bytes of "🍕", of "日") or span characters ("é" + "t").
fn byte_level() -> Arc<TextTokenizer> {
    let mut tokens: Vec<String> = vec!["<|endoftext|>".into(), "<|im_end|>".into()];
    tokens.extend(byte_chars().iter().map(char::to_string));
    let mut merges = Vec::new();
    for word in ["🍕", "日", "é", "ét"] {
        let pieces = spell(word);
        let (mut left, right) = (pieces[0].clone(), pieces[1].clone());
        merges.push(format!("{left} {right}"));
        left.push_str(&right);
        tokens.push(left.clone());
        if pieces.len() == 3 {
            merges.push(format!("{left} {}", pieces[2]));
            tokens.push(format!("{left}{}", pieces[2]));
        }
    }
    let mut types = vec![1; tokens.len()];
    types[..2].fill(3);
    let mut spec = spec("gpt2", tokens, types);
    spec.merges = merges;
    Arc::new(TextTokenizer::from_spec(&spec).unwrap())
}

/// A SentencePiece vocabulary of single characters with byte fallback and a space prefix.
fn sentencepiece() -> Arc<TextTokenizer> {
    let mut tokens: Vec<String> = ["<unk>", "<s>", "</s>"].map(String::from).to_vec();
    let mut types = vec![2, 3, 3];
    tokens.extend((0..=255).map(|b| format!("<0x{b:02X}>")));
    types.extend([6; 256]);
    for piece in ["▁", "h", "e", "l", "o", "w", "r", "d", "▁h", "▁w"] {
        tokens.push(piece.into());
        types.push(1);
    }
    let mut spec = spec("llama", tokens, types);
    spec.pre = None;
    spec.scores = vec![0.0; spec.tokens.len()];
    (spec.unknown_token_id, spec.bos_token_id, spec.eos_token_id) = (Some(0), Some(1), Some(2));
    spec.add_space_prefix = true;
    Arc::new(TextTokenizer::from_spec(&spec).unwrap())
}

/// Pushes `ids` one by one and checks the stream against decoding them all at once.
fn stream(tok: &Arc<TextTokenizer>, ids: &[u32], skip_special: bool) -> Vec<String> {
    let mut detok = IncrementalDetokenizer::new(Arc::clone(tok), skip_special);
    let mut deltas: Vec<String> = ids.iter().map(|&id| detok.push(id).unwrap()).collect();
    deltas.push(detok.finish().unwrap());
    let expected = tok.decode(ids, skip_special).unwrap();
    assert_eq!(deltas.concat(), expected, "ids {ids:?}");
    assert_eq!(detok.text(), expected);
    assert_eq!(detok.token_ids(), ids);
    if !expected.contains(REPLACEMENT) {
        for delta in &deltas {
            assert!(
                !delta.contains(REPLACEMENT),
                "partial character in {deltas:?}"
            );
        }
    }
    deltas
}

#[test]
fn multi_byte_characters_are_never_split() {
    let tok = byte_level();
    for text in [
        "plain ascii text",
        "Café été, naïve",
        "日本語のテキスト",
        "pizza 🍕🍕 family 👨‍👩‍👧 flag 🇫🇷 ok 👍🏽",
        "שלום עולם and مرحبا",
        "é",
        "🍕",
    ] {
        let ids = tok.encode(text, false).unwrap();
        let deltas = stream(&tok, &ids, false);
        assert!(
            ids.len() > text.chars().count() / 2,
            "{text}: expected byte-sized tokens"
        );
        assert_eq!(
            deltas.last().map(String::as_str),
            Some(""),
            "{text}: nothing left to flush"
        );
    }
}

#[test]
fn a_character_is_held_until_complete() {
    let tok = byte_level();
    let ids = tok.encode("a🍕", false).unwrap();
    // "a", the first two bytes of 🍕 (one merged token), then one byte each.
    assert_eq!(ids.len(), 4);
    let mut detok = IncrementalDetokenizer::new(Arc::clone(&tok), false);
    let deltas: Vec<String> = ids.iter().map(|&id| detok.push(id).unwrap()).collect();
    assert_eq!(deltas, ["a", "", "", "🍕"]);
}

#[test]
fn finish_flushes_an_incomplete_tail() {
    let tok = byte_level();
    let ids = tok.encode("ok🍕", false).unwrap();
    let truncated = &ids[..ids.len() - 1];
    let deltas = stream(&tok, truncated, false);
    assert_eq!(deltas.concat(), "ok\u{FFFD}");
    assert_eq!(deltas.last().map(String::as_str), Some("\u{FFFD}"));
}

#[test]
fn special_tokens_are_skipped_or_kept() {
    let tok = byte_level();
    let ids = tok.encode("é<|im_end|>b<|endoftext|>", false).unwrap();
    assert_eq!(stream(&tok, &ids, true).concat(), "éb");
    assert_eq!(
        stream(&tok, &ids, false).concat(),
        "é<|im_end|>b<|endoftext|>"
    );
}

#[test]
fn sentencepiece_spaces_and_byte_fallback_stream_correctly() {
    let tok = sentencepiece();
    for text in ["hello world", "hé wörld 🍕", " hello  world "] {
        let ids = tok.encode(text, true).unwrap();
        stream(&tok, &ids, true);
        stream(&tok, &ids, false);
    }
}

#[test]
fn the_decode_window_stays_short() {
    let tok = byte_level();
    let ids = tok.encode(&"abc é 日 ".repeat(50), false).unwrap();
    let mut detok = IncrementalDetokenizer::new(tok, false);
    for &id in &ids {
        detok.push(id).unwrap();
        // A window never holds more than the previous emission plus one character's bytes.
        assert!(detok.ids.len() - detok.prefix_offset <= 4, "window grew");
    }
    assert!(detok.finish().unwrap().is_empty());
}
