//! Random text of an exact token length for the model's tokenizer.
//!
//! Decoding random token ids and encoding the text again rarely gives the same ids back (GPT-2:
//! `[" calls", "here"]` decodes to `" callshere"`, which encodes as `[" call", "sh", "ere"]`), so a
//! prompt built from `n` random ids is seldom `n` tokens long. vLLM decodes, re-encodes, trims or
//! pads a few times and accepts what is left; here every text is checked, so the length is exact:
//!
//! 1. Draw `n` random ordinary (non-special) ids, decode them and encode the text: these are
//!    the tokens of a random text (usually more than `n`: random ids decode to byte soup).
//! 2. Fit them to `n`: above, keep the first `n − 1`; then fill up to `n` with *words*. A word is
//!    a vocabulary token that decodes to a space and lowercase ASCII letters (`" table"`) and
//!    encodes back to itself alone; pre-tokenizers start a new piece at such a space, so each word
//!    adds exactly one token wherever it goes.
//! 3. Decode and check: encode the text (after the prefix, when there is one) and count the
//!    tokens it adds. Exactly `n`: done. Otherwise fit the re-encoded ids again (step 2) and
//!    check again. With the default model's tokenizer the first check passed for every length
//!    1..=2048 alone and for 97% of 2,048 continuations after a prefix; the second check passed
//!    for the rest (no restart, no fallback).
//! 4. After a few rounds without success, start again with new ids; as a last resort the text is
//!    words only. A text that still fails is an error, never a wrong length.
//!
//! After a prefix (the random dataset's shared prefix, prefix repetition's prefixes) the check is
//! on the whole prompt: `encode(prefix + text)` must be the prefix's own ids followed by exactly
//! `n` more, so a token merging across the boundary cannot change the count or the prefix's
//! tokens (which a prefix cache keys on). The continuation starts with a word to keep that seam
//! clean.

use pagoda_text::tokenizer::TextTokenizer;
use rand::Rng;

use super::error::DatasetError;

/// New starts with fresh random ids before falling back to words only.
const MAX_ATTEMPTS: usize = 4;
/// Checks per start.
const MAX_ROUNDS: usize = 6;

/// A text with its token ids (without special tokens).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenizedText {
    pub text: String,
    pub ids: Vec<u32>,
}

/// Builds random texts of exact token lengths for one tokenizer.
#[derive(Debug)]
pub struct ExactTextGenerator<'t> {
    tokenizer: &'t TextTokenizer,
    /// Every non-special id: what random text is drawn from.
    ordinary_ids: Vec<u32>,
    /// Ids that decode to `" " + lowercase letters` and encode back to themselves.
    word_ids: Vec<u32>,
}

impl<'t> ExactTextGenerator<'t> {
    pub fn new(tokenizer: &'t TextTokenizer) -> Result<Self, DatasetError> {
        let vocab_size = u32::try_from(tokenizer.vocab_size())
            .map_err(|_| DatasetError::Tokenizer("vocabulary too large".into()))?;
        let ordinary_ids: Vec<u32> = (0..vocab_size)
            .filter(|&id| !tokenizer.is_special(id))
            .collect();
        let mut word_ids = Vec::new();
        for &id in &ordinary_ids {
            let text = tokenizer.decode(&[id], false)?;
            if is_word(&text) && tokenizer.encode(&text, false)? == [id] {
                word_ids.push(id);
            }
        }
        if word_ids.is_empty() {
            return Err(DatasetError::Tokenizer(
                "no vocabulary token decodes to \" \" + lowercase letters; exact-length random text needs some".into(),
            ));
        }
        Ok(Self {
            tokenizer,
            ordinary_ids,
            word_ids,
        })
    }

    pub fn tokenizer(&self) -> &'t TextTokenizer {
        self.tokenizer
    }

    /// The words: vocabulary tokens that decode to `" "` + lowercase letters and add exactly one
    /// token wherever they go (trace prompts are built from them alone).
    pub(super) fn word_ids(&self) -> &[u32] {
        &self.word_ids
    }

    /// A standalone random text of exactly `num_tokens` tokens, with its ids.
    pub fn text(
        &self,
        num_tokens: usize,
        rng: &mut impl Rng,
    ) -> Result<TokenizedText, DatasetError> {
        let text = self.continuation(&TokenizedText::default(), num_tokens, rng)?;
        let ids = self.tokenizer.encode(&text, false)?;
        Ok(TokenizedText { text, ids })
    }

    /// Random text that, appended to `prefix`, adds exactly `num_tokens` tokens and leaves the
    /// prefix's tokens as they are. `prefix` must be its own tokenization.
    pub fn continuation(
        &self,
        prefix: &TokenizedText,
        num_tokens: usize,
        rng: &mut impl Rng,
    ) -> Result<String, DatasetError> {
        if num_tokens == 0 {
            return Ok(String::new());
        }
        for _ in 0..MAX_ATTEMPTS {
            if let Some(text) = self.try_random(prefix, num_tokens, rng)? {
                return Ok(text);
            }
        }
        self.words_only(prefix, num_tokens, rng)
    }

    /// One start from random ids, steered by at most [`MAX_ROUNDS`] checks.
    fn try_random(
        &self,
        prefix: &TokenizedText,
        num_tokens: usize,
        rng: &mut impl Rng,
    ) -> Result<Option<String>, DatasetError> {
        let random: Vec<u32> = (0..num_tokens)
            .map(|_| self.ordinary_ids[rng.random_range(0..self.ordinary_ids.len())])
            .collect();
        let mut ids = Vec::with_capacity(num_tokens + 1);
        if !prefix.ids.is_empty() {
            ids.push(self.random_word(rng));
        }
        // Encoded alone: cheaper than after a long prefix, and the next check is on the whole.
        ids.extend(
            self.tokenizer
                .encode(&self.tokenizer.decode(&random, false)?, false)?,
        );
        for _ in 0..MAX_ROUNDS {
            self.fit(&mut ids, num_tokens, rng);
            let text = self.tokenizer.decode(&ids, false)?;
            match self.added_ids(prefix, &text)? {
                Some(added) if added.len() == num_tokens => return Ok(Some(text)),
                Some(added) => ids = added,
                None => return Ok(None), // The seam moved the prefix's tokens: start again.
            }
        }
        Ok(None)
    }

    /// Makes `ids` `num_tokens` long: above, keeps the first `num_tokens − 1` (a cut token's
    /// remains may re-encode as more); then appends words.
    fn fit(&self, ids: &mut Vec<u32>, num_tokens: usize, rng: &mut impl Rng) {
        if ids.len() > num_tokens {
            ids.truncate(num_tokens - 1);
        }
        while ids.len() < num_tokens {
            ids.push(self.random_word(rng));
        }
    }

    /// The last resort: `num_tokens` words.
    fn words_only(
        &self,
        prefix: &TokenizedText,
        num_tokens: usize,
        rng: &mut impl Rng,
    ) -> Result<String, DatasetError> {
        let ids: Vec<u32> = (0..num_tokens).map(|_| self.random_word(rng)).collect();
        let text = self.tokenizer.decode(&ids, false)?;
        match self.added_ids(prefix, &text)? {
            Some(added) if added.len() == num_tokens => Ok(text),
            _ => Err(DatasetError::ExactLength { num_tokens }),
        }
    }

    /// The ids `text` adds after `prefix`, or `None` when the prefix's own ids changed.
    fn added_ids(
        &self,
        prefix: &TokenizedText,
        text: &str,
    ) -> Result<Option<Vec<u32>>, DatasetError> {
        let mut ids = if prefix.text.is_empty() {
            self.tokenizer.encode(text, false)?
        } else {
            self.tokenizer
                .encode(&format!("{}{text}", prefix.text), false)?
        };
        if !ids.starts_with(&prefix.ids) {
            return Ok(None);
        }
        Ok(Some(ids.split_off(prefix.ids.len())))
    }

    fn random_word(&self, rng: &mut impl Rng) -> u32 {
        self.word_ids[rng.random_range(0..self.word_ids.len())]
    }
}

/// `" "` followed by at least two lowercase ASCII letters.
fn is_word(text: &str) -> bool {
    text.strip_prefix(' ')
        .is_some_and(|rest| rest.len() >= 2 && rest.bytes().all(|b| b.is_ascii_lowercase()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::dataset::test_support::tokenizer;

    fn generator() -> ExactTextGenerator<'static> {
        ExactTextGenerator::new(tokenizer()).unwrap()
    }

    fn num_tokens(text: &str) -> usize {
        tokenizer().encode(text, false).unwrap().len()
    }

    fn assert_exact_for_lengths(lengths: impl Iterator<Item = usize>) {
        let generator = generator();
        for n in lengths {
            let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
            let text = generator.text(n, &mut rng).unwrap();
            assert_eq!(num_tokens(&text.text), n, "seed {n}");
            assert_eq!(text.ids.len(), n);
        }
    }

    /// Every length up to 300 and every 7th up to 2048 (a few seconds; the exhaustive sweep below
    /// is `--ignored` because it keeps a core busy for half a minute).
    #[test]
    fn lengths_from_1_to_2048_are_exact() {
        assert_exact_for_lengths((1..=300).chain((301..=2048).step_by(7)).chain([2048]));
    }

    #[test]
    fn every_length_from_1_to_2048_is_exact() {
        assert_exact_for_lengths(1..=2048);
    }

    #[test]
    fn many_seeds_give_exact_lengths() {
        let generator = generator();
        for seed in 0..40 {
            let mut rng = ChaCha8Rng::seed_from_u64(10_000 + seed);
            for n in [1, 2, 3, 5, 17, 100, 255, 1000, 2048] {
                let text = generator.text(n, &mut rng).unwrap().text;
                assert_eq!(num_tokens(&text), n, "seed {seed}, length {n}");
            }
        }
    }

    #[test]
    fn prefix_and_continuation_tokenize_as_one_text() {
        let generator = generator();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for prefix_len in [1, 2, 7, 64, 500, 2048] {
            let prefix = generator.text(prefix_len, &mut rng).unwrap();
            for n in [0, 1, 2, 3, 10, 128, 1024, 2048] {
                let text = generator.continuation(&prefix, n, &mut rng).unwrap();
                let ids = tokenizer()
                    .encode(&format!("{}{text}", prefix.text), false)
                    .unwrap();
                assert_eq!(ids.len(), prefix_len + n, "prefix {prefix_len}, suffix {n}");
                assert!(
                    ids.starts_with(&prefix.ids),
                    "prefix {prefix_len}: its tokens changed"
                );
            }
        }
    }

    #[test]
    fn the_seed_determines_the_text() {
        let generator = generator();
        let text = |seed| {
            generator
                .text(300, &mut ChaCha8Rng::seed_from_u64(seed))
                .unwrap()
        };
        assert_eq!(text(1), text(1));
        assert_ne!(text(1), text(2));
    }

    #[test]
    fn words_alone_are_exact_too() {
        let generator = generator();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let prefix = generator.text(33, &mut rng).unwrap();
        for n in [1, 2, 50, 2048] {
            let text = generator
                .words_only(&TokenizedText::default(), n, &mut rng)
                .unwrap();
            assert_eq!(num_tokens(&text), n);
            let text = generator.words_only(&prefix, n, &mut rng).unwrap();
            assert_eq!(num_tokens(&format!("{}{text}", prefix.text)), 33 + n);
        }
    }

    #[test]
    fn random_text_uses_no_special_tokens() {
        let generator = generator();
        let text = generator
            .text(2048, &mut ChaCha8Rng::seed_from_u64(8))
            .unwrap();
        assert!(text.ids.iter().all(|&id| !tokenizer().is_special(id)));
    }
}
