//! vLLM's `bad_words`: words the output must never contain, turned into the token sequences the
//! engine bans. Each word is tokenized as written (without its leading spaces) and, as a word in
//! running text, with one leading space; the second form is banned too when it starts with
//! another token and has as many tokens (vLLM's rule: "Paris" and " Paris" are different tokens
//! in most vocabularies). The engine checks the counts and the ids.

use pagoda_engine::MAX_NUM_BAD_WORDS;
use pagoda_text::tokenizer::TextTokenizer;

use crate::openai::error::ApiError;

const FIELD: &str = "bad_words";

/// The token sequences to ban for `words` (none for `None` or an empty list).
pub fn bad_words_token_ids(
    tokenizer: &TextTokenizer,
    words: Option<&[String]>,
) -> Result<Vec<Vec<u32>>, ApiError> {
    let encode = |text: &str| {
        tokenizer.encode(text, false).map_err(|e| {
            ApiError::invalid(FIELD, format!("`bad_words` could not be tokenized: {e}"))
        })
    };
    sequences_of(words.unwrap_or_default(), encode)
}

fn sequences_of(
    words: &[String],
    encode: impl Fn(&str) -> Result<Vec<u32>, ApiError>,
) -> Result<Vec<Vec<u32>>, ApiError> {
    // Each word gives at least one sequence: too many words fail before any is tokenized.
    if words.len() > MAX_NUM_BAD_WORDS {
        return Err(ApiError::invalid(
            FIELD,
            format!(
                "`bad_words` may hold at most {MAX_NUM_BAD_WORDS} words, got {}",
                words.len()
            ),
        ));
    }
    let mut sequences: Vec<Vec<u32>> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for word in words {
        if word.is_empty() {
            return Err(ApiError::invalid(
                FIELD,
                "`bad_words` must not contain an empty string",
            ));
        }
        if seen.contains(&word.as_str()) {
            continue;
        }
        seen.push(word);
        let bare = word.trim_start();
        let as_written = encode(bare)?;
        if as_written.is_empty() {
            return Err(ApiError::invalid(
                FIELD,
                format!("`bad_words` entry {word:?} gives no token to ban"),
            ));
        }
        let in_text = encode(&format!(" {bare}"))?;
        let another_word =
            in_text.first() != as_written.first() && in_text.len() == as_written.len();
        sequences.push(as_written);
        if another_word {
            sequences.push(in_text);
        }
    }
    Ok(sequences)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy vocabulary: whole words, with a leading-space form for some.
    fn encode(text: &str) -> Result<Vec<u32>, ApiError> {
        Ok(match text {
            "Paris" => vec![1],
            " Paris" => vec![2],
            "New York" => vec![3, 4],
            " New York" => vec![5, 4],
            "ok" => vec![6],
            " ok" => vec![7, 6],
            "" => vec![],
            " " => vec![8],
            other => panic!("unexpected {other:?}"),
        })
    }

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn a_word_is_banned_as_written_and_inside_text() {
        let sequences = sequences_of(&words(&["Paris", "  New York", "ok", "Paris"]), encode);
        assert_eq!(
            sequences.expect("valid"),
            // "ok"'s in-text form has another length: not added (vLLM's rule). The repeat of
            // "Paris" counts once; leading spaces are dropped first.
            [vec![1], vec![2], vec![3, 4], vec![5, 4], vec![6]]
        );
    }

    #[test]
    fn empty_blank_and_too_many_words_are_refused() {
        let message = |list: Vec<String>| match sequences_of(&list, encode) {
            Err(e) => e.message,
            Ok(s) => panic!("accepted {s:?}"),
        };
        assert!(message(words(&[""])).contains("empty string"));
        assert!(message(words(&["  "])).contains("no token"));
        let many: Vec<String> = (0..=MAX_NUM_BAD_WORDS).map(|_| "ok".to_string()).collect();
        assert!(message(many).contains("at most 128"));
        assert_eq!(
            sequences_of(&[], encode).expect("none"),
            Vec::<Vec<u32>>::new()
        );
    }

    #[test]
    fn a_real_tokenizer_is_used_without_special_tokens() {
        let tokenizer = crate::mock_text::byte_tokenizer().expect("builds");
        let sequences =
            bad_words_token_ids(&tokenizer, Some(&words(&["hi", "<|im_end|>"]))).expect("valid");
        // Byte tokens: " hi" is longer than "hi", so only the written form; a special token's
        // text is that token, as vLLM's tokenizer reads it.
        assert_eq!(
            sequences,
            [vec![u32::from(b'h'), u32::from(b'i')], vec![258]]
        );
    }
}
