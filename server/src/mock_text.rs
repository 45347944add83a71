//! The text side of `--mock` without a model: a byte-level tokenizer (256 byte tokens plus ChatML
//! specials) and the token ids the mock engine streams back.

use pagoda_text::tokenizer::{Result, TextTokenizer};
use serde_json::{json, Map, Value};

/// What the mock engine says, over and over.
pub const MOCK_TEXT: &str =
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod \
tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud \
exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. ";

/// Special tokens after the 256 byte tokens: EOS first.
const SPECIAL_TOKENS: [&str; 3] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];

/// GPT-2's printable stand-in for each byte, so every byte is one vocabulary entry.
fn byte_to_char(byte: u8) -> char {
    let printable = matches!(byte, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    if printable {
        return char::from(byte);
    }
    let rank = (0..byte)
        .filter(|b| !matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF))
        .count() as u32;
    char::from_u32(256 + rank).unwrap_or('?')
}

/// A byte-level tokenizer: one token per byte, ids 0–255; `<|endoftext|>` = 256 is EOS.
pub fn byte_tokenizer() -> Result<TextTokenizer> {
    let vocab: Map<String, Value> = (0..=255u8)
        .map(|b| (byte_to_char(b).to_string(), Value::from(b)))
        .collect();
    let added: Vec<Value> = SPECIAL_TOKENS
        .iter()
        .enumerate()
        .map(|(i, content)| {
            json!({"id": 256 + i, "content": content, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let spec = json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
        "normalizer": null,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "vocab": vocab, "merges": []}
    });
    TextTokenizer::from_json_str(&spec.to_string(), Some(SPECIAL_TOKENS[0]))
}

/// Vocabulary size of [`byte_tokenizer`].
pub const BYTE_TOKENIZER_VOCAB_SIZE: usize = 256 + SPECIAL_TOKENS.len();

/// The ids of [`MOCK_TEXT`] under `tokenizer`, without special tokens.
pub fn mock_output_token_ids(tokenizer: &TextTokenizer) -> Result<Vec<u32>> {
    let ids = tokenizer.encode(MOCK_TEXT, false)?;
    let eos = tokenizer.eos_token_ids();
    Ok(ids.into_iter().filter(|id| !eos.contains(id)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_tokenizer_round_trips_any_text_one_token_per_byte() {
        let tokenizer = byte_tokenizer().expect("builds");
        let text = "Héllo, 世界!\n";
        let ids = tokenizer.encode(text, false).expect("encodes");
        assert_eq!(ids.len(), text.len());
        assert_eq!(tokenizer.decode(&ids, true).expect("decodes"), text);
        // EOS, then ChatML's end-of-turn token.
        assert_eq!(tokenizer.eos_token_ids(), [256, 258]);
        assert_eq!(tokenizer.vocab_size(), BYTE_TOKENIZER_VOCAB_SIZE);
        let chat = tokenizer
            .encode("<|im_start|>user", false)
            .expect("encodes");
        assert_eq!(chat[0], 257);
    }

    #[test]
    fn mock_output_is_the_lorem_text() {
        let tokenizer = byte_tokenizer().expect("builds");
        let ids = mock_output_token_ids(&tokenizer).expect("encodes");
        assert_eq!(tokenizer.decode(&ids, true).expect("decodes"), MOCK_TEXT);
    }
}
