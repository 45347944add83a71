//! A compiled grammar as the engine sees it ([`TokenConstraint`]): each sequence gets a clone of
//! the matcher compiled once, whose masks are llguidance's, widened to every EOS id of the model.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use llguidance::api::StopReason;
use llguidance::Matcher;
use pagoda_engine::{ConstraintError, ConstraintMatcher, TokenConstraint, TokenMask};

/// Told how long each mask took to compute (for the metrics).
pub type MaskObserver = Arc<dyn Fn(Duration) + Send + Sync>;

/// A grammar compiled for the model's vocabulary, ready for any number of sequences.
pub struct CompiledGrammar {
    /// A matcher at the grammar's start (its first mask already computed, so warm).
    pristine: Mutex<Matcher>,
    /// The id llguidance's trie knows as EOS, and every id that ends the model's output.
    trie_eos: u32,
    eos_token_ids: Arc<[u32]>,
    on_mask: Option<MaskObserver>,
}

impl std::fmt::Debug for CompiledGrammar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGrammar")
            .field("trie_eos", &self.trie_eos)
            .field("eos_token_ids", &self.eos_token_ids)
            .finish_non_exhaustive()
    }
}

impl CompiledGrammar {
    pub(crate) fn new(
        pristine: Matcher,
        trie_eos: u32,
        eos_token_ids: Arc<[u32]>,
        on_mask: Option<MaskObserver>,
    ) -> Self {
        Self {
            pristine: Mutex::new(pristine),
            trie_eos,
            eos_token_ids,
            on_mask,
        }
    }
}

impl TokenConstraint for CompiledGrammar {
    fn start(&self) -> Box<dyn ConstraintMatcher> {
        let matcher = match self.pristine.lock() {
            Ok(pristine) => pristine.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        Box::new(GrammarMatcher {
            matcher,
            trie_eos: self.trie_eos,
            eos_token_ids: Arc::clone(&self.eos_token_ids),
            on_mask: self.on_mask.clone(),
        })
    }
}

/// One sequence's llguidance matcher.
struct GrammarMatcher {
    matcher: Matcher,
    trie_eos: u32,
    eos_token_ids: Arc<[u32]>,
    on_mask: Option<MaskObserver>,
}

impl std::fmt::Debug for GrammarMatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrammarMatcher")
            .field("stopped", &self.matcher.is_stopped())
            .finish_non_exhaustive()
    }
}

impl GrammarMatcher {
    /// The matcher's failure, told apart by why it stopped: over its lexer or parser limits (the
    /// grammar is too complex; llguidance's own words say which limit) or anything else.
    fn error(&self, message: &str) -> ConstraintError {
        classify(message, self.matcher.stop_reason())
    }
}

/// A failed matcher's error as the engine tells it. Once failed, the matcher's own stop reason
/// is `InternalError` whatever happened; the reason it stopped for is in the parser state
/// llguidance appends to the message (`Stop: ParserTooComplex`).
fn classify(message: &str, stop_reason: StopReason) -> ConstraintError {
    let too_complex = matches!(
        stop_reason,
        StopReason::LexerTooComplex | StopReason::ParserTooComplex
    ) || ["Stop: LexerTooComplex", "Stop: ParserTooComplex"]
        .iter()
        .any(|line| message.contains(line));
    let message = without_parser_state(message);
    if too_complex {
        ConstraintError::TooComplex(message)
    } else {
        ConstraintError::Failed(message)
    }
}

/// llguidance's message without the parser state it appends (`<state>…</state>`, hundreds of
/// characters of internals a client cannot use).
pub(crate) fn without_parser_state(message: &str) -> String {
    match message.find("<state>") {
        Some(start) => message[..start].trim_end().to_string(),
        None => message.to_string(),
    }
}

impl ConstraintMatcher for GrammarMatcher {
    fn fill_next_mask(&mut self, mask: &mut TokenMask) -> Result<(), ConstraintError> {
        let started = Instant::now();
        let allowed = self
            .matcher
            .compute_mask_or_eos()
            .map_err(|e| self.error(&e.to_string()))?;
        for (word, &allowed_word) in mask.words_mut().iter_mut().zip(allowed.as_slice()) {
            *word = allowed_word;
        }
        if allowed.is_allowed(self.trie_eos) {
            self.eos_token_ids.iter().for_each(|&id| mask.allow(id));
        }
        if let Some(observe) = &self.on_mask {
            observe(started.elapsed());
        }
        Ok(())
    }

    fn accept(&mut self, token_id: u32) -> Result<(), ConstraintError> {
        let token_id = if self.eos_token_ids.contains(&token_id) {
            self.trie_eos
        } else {
            token_id
        };
        self.matcher
            .consume_token(token_id)
            .map_err(|e| self.error(&e.to_string()))
    }

    fn is_finished(&self) -> bool {
        self.matcher.is_stopped()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_told_from_other_failures_and_the_state_is_dropped() {
        let over_items = "parser error: Too many items (limit 50000; ff_tokens)\n<state>\n\
                          Tokens: x\nStop: ParserTooComplex\nError: ...\n</state>";
        assert_eq!(
            classify(over_items, StopReason::InternalError),
            ConstraintError::TooComplex(
                "parser error: Too many items (limit 50000; ff_tokens)".into()
            )
        );
        let over_lexer = "lexer error: too many states";
        assert!(matches!(
            classify(over_lexer, StopReason::LexerTooComplex),
            ConstraintError::TooComplex(_)
        ));
        let refused = "token 5 not allowed\n<state>\nStop: InternalError\n</state>";
        assert_eq!(
            classify(refused, StopReason::InternalError),
            ConstraintError::Failed("token 5 not allowed".into())
        );
    }
}
