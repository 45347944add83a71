//! The default model's tokenizer and chat template, checked against ids produced by Hugging Face
//! `tokenizers`/transformers (see `data/gen_tokenizer_reference.py`, which wrote the JSON).
//!
//! Needs the default model: `scripts/fetch-default-model.sh` puts it in `models/`
//! (or in `$PAGODA_MODEL_DIR`, as the script does).

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, OnceLock};

use common::reference::{reference, Sample};
use pagoda_text::detokenizer::IncrementalDetokenizer;
use pagoda_text::template::{ChatMessage, ChatTemplate};
use pagoda_text::tokenizer::TextTokenizer;
use pagoda_text::tokenizer_spec::read_tokenizer_spec;

fn tokenizer() -> Arc<TextTokenizer> {
    static TOKENIZER: OnceLock<Arc<TextTokenizer>> = OnceLock::new();
    let tok =
        TOKENIZER.get_or_init(|| Arc::new(TextTokenizer::from_gguf(common::model_path()).unwrap()));
    Arc::clone(tok)
}

#[test]
fn ids_match_the_reference() {
    let tok = tokenizer();
    let reference = reference();
    assert!(reference.samples.len() >= 40);
    let mismatches: Vec<String> = reference
        .samples
        .iter()
        .filter_map(|s| {
            let ids = tok.encode(&s.text, false).unwrap();
            (ids != s.ids).then(|| {
                format!(
                    "{}: {:?}\n  expected {:?}\n  got      {ids:?}",
                    s.name, s.text, s.ids
                )
            })
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn ids_follow_the_original_smollm_pre_tokenizer_not_transformers() {
    let tok = tokenizer();
    let reference = reference();
    let disputed: Vec<&Sample> = reference
        .samples
        .iter()
        .filter(|s| s.transformers_ids.is_some())
        .collect();
    assert!(
        !disputed.is_empty(),
        "the reference should hold inputs where transformers 5.23 differs"
    );
    for s in disputed {
        let ids = tok.encode(&s.text, false).unwrap();
        assert_eq!(ids, s.ids, "{}", s.name);
        assert_ne!(Some(&ids), s.transformers_ids.as_ref(), "{}", s.name);
    }
    // The clearest case: digits are split off before GPT-2's regex, so "  " stays one token.
    let ids = tok.encode("a  1", false).unwrap();
    let tokens: Vec<String> = ids.iter().map(|&id| tok.id_to_token(id).unwrap()).collect();
    assert_eq!(tokens, ["a", "ĠĠ", "1"]);
}

#[test]
fn add_special_tokens_adds_no_bos_for_smollm2() {
    let tok = tokenizer();
    for s in reference().samples {
        assert_eq!(tok.encode(&s.text, true).unwrap(), s.ids, "{}", s.name);
    }
}

#[test]
fn decoding_round_trips() {
    let tok = tokenizer();
    for s in reference().samples {
        assert_eq!(tok.decode(&s.ids, false).unwrap(), s.decoded, "{}", s.name);
        assert_eq!(
            s.decoded, s.text,
            "{}: the reference itself should round-trip",
            s.name
        );
        assert_eq!(
            tok.decode(&s.ids, true).unwrap(),
            s.decoded_skip_special,
            "{}",
            s.name
        );
    }
}

#[test]
fn streaming_detokenization_matches_decode() {
    let tok = tokenizer();
    for s in reference().samples {
        for skip_special in [false, true] {
            let mut detok = IncrementalDetokenizer::new(Arc::clone(&tok), skip_special);
            let mut deltas: Vec<String> = s.ids.iter().map(|&id| detok.push(id).unwrap()).collect();
            deltas.push(detok.finish().unwrap());
            let expected = if skip_special {
                &s.decoded_skip_special
            } else {
                &s.decoded
            };
            assert_eq!(&deltas.concat(), expected, "{}", s.name);
            if !expected.contains('\u{FFFD}') {
                assert!(
                    deltas.iter().all(|d| !d.contains('\u{FFFD}')),
                    "{}: {deltas:?}",
                    s.name
                );
            }
        }
    }
}

#[test]
fn special_tokens_and_vocabulary() {
    let tok = tokenizer();
    assert_eq!(tok.vocab_size(), 49152);
    assert_eq!(tok.bos_token_id(), Some(1));
    assert_eq!(tok.eos_token_ids(), [2, 0]);
    assert_eq!(tok.token_to_id("<|im_start|>"), Some(1));
    assert_eq!(tok.id_to_token(2).as_deref(), Some("<|im_end|>"));
    assert!((0..17).all(|id| tok.is_special(id)));
    assert!(!tok.is_special(17) && !tok.is_special(49151));
}

fn smollm2_template() -> ChatTemplate {
    let spec = read_tokenizer_spec(&common::model_path()).unwrap();
    let source = spec
        .chat_template
        .as_deref()
        .expect("SmolLM2 ships a chat template");
    let token = |id: Option<u32>| id.map(|id| spec.tokens[id as usize].clone());
    ChatTemplate::new(source, token(spec.bos_token_id), token(spec.eos_token_id)).unwrap()
}

#[test]
fn chat_template_with_a_system_message() {
    let messages = [
        ChatMessage::new("system", "You are a concise assistant."),
        ChatMessage::new("user", "What is the capital of France?"),
        ChatMessage::new("assistant", "Paris."),
        ChatMessage::new("user", "And of Japan?"),
    ];
    let prompt = smollm2_template().render(&messages, true).unwrap();
    let expected = "<|im_start|>system\nYou are a concise assistant.<|im_end|>\n\
                    <|im_start|>user\nWhat is the capital of France?<|im_end|>\n\
                    <|im_start|>assistant\nParis.<|im_end|>\n\
                    <|im_start|>user\nAnd of Japan?<|im_end|>\n\
                    <|im_start|>assistant\n";
    assert_eq!(prompt, expected);
}

#[test]
fn chat_template_inserts_the_default_system_prompt() {
    let messages = [ChatMessage::new("user", "Hi!")];
    let template = smollm2_template();
    let expected = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n\
                    <|im_start|>user\nHi!<|im_end|>\n";
    assert_eq!(template.render(&messages, false).unwrap(), expected);
    let with_prompt = template.render(&messages, true).unwrap();
    assert_eq!(with_prompt, format!("{expected}<|im_start|>assistant\n"));
}

#[test]
fn chat_prompts_match_transformers_rendering_and_ids() {
    let tok = tokenizer();
    let template = smollm2_template();
    let reference = reference();
    for chat in &reference.chat {
        let prompt = template
            .render(&chat.messages, chat.add_generation_prompt)
            .unwrap();
        assert_eq!(prompt, chat.prompt, "{}", chat.name);
        let sample = reference
            .samples
            .iter()
            .find(|s| s.name == format!("chat_prompt_{}", chat.name))
            .expect("each chat has its prompt among the samples");
        assert_eq!(
            tok.encode(&prompt, true).unwrap(),
            sample.ids,
            "{}",
            chat.name
        );
    }
}
