//! Trace prompts: text of exactly the trace's input length, whose blocks are equal exactly where
//! the trace's hash ids are equal, so that a server's prefix cache sees the trace's own reuse.
//!
//! Every prompt is made of *words* only (see `exact_len`: vocabulary tokens that decode to
//! `" " + lowercase letters` and encode back to themselves). A pre-tokenizer starts a new piece
//! at each such space, so a text of `n` words is exactly those `n` tokens, and two texts put
//! together tokenize as their tokens put together: block boundaries never merge. So:
//!
//! - hash id `h` is `block_size` words drawn from a generator seeded by `(seed, h)`: the same id
//!   is the same tokens in every prompt, and in every run with the same seed;
//! - a prompt is its blocks in order, the last one cut to the input length when that is not a
//!   multiple of the block size (the first tokens of that block);
//! - tokens past the last block (or all of them, when the trace has no hash ids) are words drawn
//!   from a generator seeded by `(seed, request index)`: unique to the request.
//!
//! The property holds for the byte-level BPE tokenizers of common models (GPT-2's, Llama 3's,
//! SmolLM2's); [`PromptBuilder::check`] verifies it on real prompts before a replay.

use pagoda_text::tokenizer::TextTokenizer;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::request::TraceRequest;
use crate::dataset::error::DatasetError;
use crate::dataset::exact_len::ExactTextGenerator;

/// Seeds of hash-id blocks and of per-request text come from different streams.
const BLOCK_STREAM: u64 = 0x6861_7368_5f62_6c6b;
const UNIQUE_STREAM: u64 = 0x756e_6971_7565_5f74;

/// Builds the prompts of one trace replay.
#[derive(Debug)]
pub(super) struct PromptBuilder {
    word_ids: Vec<u32>,
    /// `word_texts[i]` is the text of `word_ids[i]`.
    word_texts: Vec<String>,
    block_size: usize,
    seed: u64,
}

impl PromptBuilder {
    pub fn new(
        generator: &ExactTextGenerator,
        block_size: usize,
        seed: u64,
    ) -> Result<Self, DatasetError> {
        if block_size == 0 {
            return Err(DatasetError::InvalidConfig(
                "--trace-block-size must be at least 1".into(),
            ));
        }
        let word_ids = generator.word_ids().to_vec();
        let word_texts = word_ids
            .iter()
            .map(|&id| generator.tokenizer().decode(&[id], false))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            word_ids,
            word_texts,
            block_size,
            seed,
        })
    }

    /// The prompt of request `index` of the replay.
    pub fn prompt(&self, index: usize, request: &TraceRequest) -> String {
        let words = self.words(index, request);
        let mut text = String::with_capacity(words.iter().map(|&w| self.word_texts[w].len()).sum());
        for word in words {
            text.push_str(&self.word_texts[word]);
        }
        text
    }

    /// The token ids the prompt of request `index` is made of.
    pub fn prompt_ids(&self, index: usize, request: &TraceRequest) -> Vec<u32> {
        let words = self.words(index, request);
        words.into_iter().map(|w| self.word_ids[w]).collect()
    }

    /// Checks that `tokenizer` turns the prompt of request `index` into exactly its words' ids
    /// (the property the block sharing rests on).
    pub fn check(
        &self,
        tokenizer: &TextTokenizer,
        index: usize,
        request: &TraceRequest,
    ) -> Result<(), DatasetError> {
        let ids = tokenizer.encode(&self.prompt(index, request), false)?;
        if ids != self.prompt_ids(index, request) {
            return Err(DatasetError::Tokenizer(format!(
                "this tokenizer merges words across block boundaries ({} tokens for a prompt of {}): trace prompts cannot share exact blocks with it",
                ids.len(),
                request.input_tokens
            )));
        }
        Ok(())
    }

    /// Indices into the word table: the hash-id blocks, then the request's own words.
    fn words(&self, index: usize, request: &TraceRequest) -> Vec<usize> {
        let num_tokens = request.input_tokens;
        let mut words = Vec::with_capacity(num_tokens);
        for &hash_id in &request.hash_ids {
            let take = self.block_size.min(num_tokens - words.len());
            if take == 0 {
                break;
            }
            let mut rng = ChaCha8Rng::seed_from_u64(mix(self.seed, BLOCK_STREAM, hash_id));
            words.extend((0..take).map(|_| rng.random_range(0..self.word_ids.len())));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(mix(self.seed, UNIQUE_STREAM, index as u64));
        while words.len() < num_tokens {
            words.push(rng.random_range(0..self.word_ids.len()));
        }
        words
    }
}

/// A seed for `value` in `stream` of run `seed` (SplitMix64's finalizer, applied twice).
fn mix(seed: u64, stream: u64, value: u64) -> u64 {
    splitmix(splitmix(seed ^ stream) ^ value)
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
#[path = "prompts_tests.rs"]
mod tests;
