//! Constrained decoding, in token ids: what a grammar (a JSON schema, a regex, a choice, a Lark
//! grammar) looks like to the engine. The engine knows no grammar language and no tokenizer; a
//! caller compiles its grammar for the model's vocabulary and hands over a [`TokenConstraint`].
//!
//! Per sequence the sampler keeps a [`ConstraintMatcher`]: before each step's token is sampled,
//! the matcher fills a [`TokenMask`] of the tokens the grammar allows next (computed while the
//! step's forward pass runs), the sampler draws only among those, and the chosen token is handed
//! back with [`ConstraintMatcher::accept`]. When the matcher reports that the grammar is complete
//! the sequence stops with `stop`.

use std::fmt::Debug;

/// A grammar compiled for the model's vocabulary, shared by every sequence that uses it.
pub trait TokenConstraint: Send + Sync + Debug {
    /// A fresh matcher at the grammar's start, for one sequence.
    fn start(&self) -> Box<dyn ConstraintMatcher>;
}

/// One sequence's position in its grammar.
pub trait ConstraintMatcher: Send + Debug {
    /// Writes the tokens the grammar allows next into `mask` (cleared first by the caller).
    /// An error ends the sequence (the grammar cannot go on).
    fn fill_next_mask(&mut self, mask: &mut TokenMask) -> Result<(), ConstraintError>;

    /// Advances past the token that was chosen. An error ends the sequence.
    fn accept(&mut self, token_id: u32) -> Result<(), ConstraintError>;

    /// Whether the grammar is complete and allows nothing more (not even optional text).
    fn is_finished(&self) -> bool;
}

/// Why a grammar cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConstraintError {
    /// The grammar needs more work for the next token than the matcher's limits allow (too many
    /// parser items or lexer states): the request's grammar is too complex, the client's to fix.
    #[error("the grammar is too complex to follow: {0}")]
    TooComplex(String),
    /// The matcher failed otherwise (it refused a token its own mask allowed, or allowed none).
    #[error("{0}")]
    Failed(String),
}

impl ConstraintError {
    /// The same kind of error, its message prefixed with where it happened.
    pub fn context(self, context: &str) -> Self {
        match self {
            Self::TooComplex(message) => Self::TooComplex(format!("{context}: {message}")),
            Self::Failed(message) => Self::Failed(format!("{context}: {message}")),
        }
    }
}

/// A set of token ids as a bitmask: bit `id % 32` of word `id / 32`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenMask {
    words: Vec<u32>,
}

impl TokenMask {
    /// An empty set over ids `0..vocab_size`.
    pub fn new(vocab_size: usize) -> Self {
        Self {
            words: vec![0; vocab_size.div_ceil(32)],
        }
    }

    /// Removes every token.
    pub fn clear(&mut self) {
        self.words.fill(0);
    }

    /// The set as bits, token `i` at bit `i % 32` of word `i / 32` (what the GPU takes).
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// The words, to fill from a bitmask computed elsewhere (ids past the vocabulary stay unset).
    pub fn words_mut(&mut self) -> &mut [u32] {
        &mut self.words
    }

    pub fn allow(&mut self, token_id: u32) {
        if let Some(word) = self.words.get_mut(token_id as usize / 32) {
            *word |= 1 << (token_id % 32);
        }
    }

    pub fn allows(&self, token_id: u32) -> bool {
        self.words
            .get(token_id as usize / 32)
            .is_some_and(|word| word & (1 << (token_id % 32)) != 0)
    }

    pub fn num_allowed(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Sets every logit of a token outside the set to `-inf` (ids past the mask included).
    pub fn apply_to(&self, logits: &mut [f32]) {
        for (word_index, chunk) in logits.chunks_mut(32).enumerate() {
            let word = self.words.get(word_index).copied().unwrap_or(0);
            if word == u32::MAX {
                continue;
            }
            for (bit, logit) in chunk.iter_mut().enumerate() {
                if word & (1 << bit) == 0 {
                    *logit = f32::NEG_INFINITY;
                }
            }
        }
    }

    /// The allowed token with the highest logit (NaN counts as `-inf`; lowest id on ties), or
    /// `None` when the set is empty.
    pub fn best_allowed(&self, logits: &[f32]) -> Option<u32> {
        let mut best: Option<(u32, f32)> = None;
        for (token_id, &logit) in logits.iter().enumerate() {
            let token_id = token_id as u32;
            if !self.allows(token_id) {
                continue;
            }
            let logit = if logit.is_nan() {
                f32::NEG_INFINITY
            } else {
                logit
            };
            if best.is_none_or(|(_, best_logit)| logit > best_logit) {
                best = Some((token_id, logit));
            }
        }
        best.map(|(token_id, _)| token_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_sets_clears_and_applies() {
        let mut mask = TokenMask::new(70);
        assert_eq!(mask.words_mut().len(), 3);
        for id in [0, 31, 32, 69] {
            mask.allow(id);
        }
        mask.allow(1000); // outside: ignored
        assert_eq!(mask.num_allowed(), 4);
        assert!(mask.allows(31) && mask.allows(32) && !mask.allows(33) && !mask.allows(1000));
        let mut logits: Vec<f32> = (0..72).map(|i| i as f32).collect();
        mask.apply_to(&mut logits);
        let kept: Vec<usize> = (0..72).filter(|&i| logits[i].is_finite()).collect();
        assert_eq!(
            kept,
            vec![0, 31, 32, 69],
            "ids past the vocabulary are dropped too"
        );
        mask.clear();
        assert_eq!(mask.num_allowed(), 0);
    }

    #[test]
    fn best_allowed_ignores_disallowed_and_nan() {
        let mut mask = TokenMask::new(8);
        mask.allow(1);
        mask.allow(3);
        mask.allow(5);
        let logits = [9.0, 1.0, 9.0, f32::NAN, 9.0, 2.0, 9.0, 9.0];
        assert_eq!(mask.best_allowed(&logits), Some(5));
        let all_impossible = [f32::NEG_INFINITY; 8];
        assert_eq!(
            mask.best_allowed(&all_impossible),
            Some(1),
            "an allowed id even when every logit is -inf"
        );
        assert_eq!(TokenMask::new(8).best_allowed(&logits), None);
    }
}
