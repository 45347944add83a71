//! One sequence's grammar while it samples: its matcher, and this step's mask of allowed tokens.
//!
//! The mask is computed once per step (ahead of sampling, while the forward pass runs, when the
//! runner asks) and the chosen token is then accepted by the matcher. A matcher that fails — it
//! cannot compute a mask or refuses a token — ends the sequence with an error (the token is
//! reported with the failure, and the scheduler ends the request with it instead of the token);
//! its mask then allows only EOS.

use crate::constraint::{ConstraintError, ConstraintMatcher, TokenMask};

#[derive(Debug)]
pub(super) struct ConstraintState {
    matcher: Box<dyn ConstraintMatcher>,
    mask: TokenMask,
    /// Whether `mask` is this step's (computed since the last accepted token).
    mask_ready: bool,
    /// Why the grammar cannot go on, once it could not.
    failure: Option<ConstraintError>,
    eos_token_ids: Vec<u32>,
}

impl ConstraintState {
    pub(super) fn new(
        matcher: Box<dyn ConstraintMatcher>,
        vocab_size: usize,
        eos_token_ids: &[u32],
    ) -> Self {
        Self {
            matcher,
            mask: TokenMask::new(vocab_size),
            mask_ready: false,
            failure: None,
            eos_token_ids: eos_token_ids.to_vec(),
        }
    }

    /// Computes this step's mask unless it is already there.
    pub(super) fn prepare_mask(&mut self) {
        if self.mask_ready {
            return;
        }
        self.mask.clear();
        if self.failure.is_none() {
            if let Err(error) = self.matcher.fill_next_mask(&mut self.mask) {
                self.fail(error.context("cannot compute the grammar's next tokens"));
            } else if self.mask.num_allowed() == 0 {
                self.fail(ConstraintError::Failed(
                    "the grammar allows no next token".to_string(),
                ));
            }
        }
        if self.failure.is_some() {
            self.mask.clear();
            for &eos in &self.eos_token_ids {
                self.mask.allow(eos);
            }
        }
        self.mask_ready = true;
    }

    /// This step's mask (call [`Self::prepare_mask`] first).
    pub(super) fn mask(&self) -> &TokenMask {
        &self.mask
    }

    /// This step's mask when a kernel can choose by it alone: computed, the grammar not failed,
    /// and some token allowed (otherwise the host pipeline reports what went wrong).
    pub(super) fn usable_mask(&self) -> Option<&TokenMask> {
        (self.mask_ready && self.failure.is_none() && self.mask.num_allowed() > 0).then_some(&self.mask)
    }

    /// Advances the matcher past the chosen token; `true` when the sequence must end with it
    /// (the grammar is complete, or cannot go on).
    pub(super) fn accept(&mut self, token_id: u32) -> bool {
        self.mask_ready = false;
        if self.failure.is_some() {
            return true;
        }
        if let Err(error) = self.matcher.accept(token_id) {
            self.fail(error.context(&format!("the grammar refused token {token_id}")));
            return true;
        }
        self.matcher.is_finished()
    }

    /// Why the grammar cannot go on, once it could not.
    pub(super) fn failure(&self) -> Option<&ConstraintError> {
        self.failure.as_ref()
    }

    fn fail(&mut self, reason: ConstraintError) {
        tracing::warn!(%reason, "constrained decoding ends the sequence");
        self.failure = Some(reason);
    }
}

#[cfg(test)]
mod tests {
    use super::super::sampler::{SamplerScratch, SamplingContext, SequenceSampler};
    use super::*;
    use crate::request::SamplingParams;

    /// Allows `allowed[step]` at each step; finishes after the last; fails on `fail_at`.
    #[derive(Debug)]
    struct Script {
        allowed: Vec<Vec<u32>>,
        step: usize,
        fail_at: Option<usize>,
    }

    impl ConstraintMatcher for Script {
        fn fill_next_mask(&mut self, mask: &mut TokenMask) -> Result<(), ConstraintError> {
            if self.fail_at == Some(self.step) {
                return Err(ConstraintError::TooComplex("broken".into()));
            }
            for &id in &self.allowed[self.step] {
                mask.allow(id);
            }
            Ok(())
        }
        fn accept(&mut self, token_id: u32) -> Result<(), ConstraintError> {
            if !self.allowed[self.step].contains(&token_id) {
                return Err(ConstraintError::Failed(format!("{token_id} not allowed")));
            }
            self.step += 1;
            Ok(())
        }
        fn is_finished(&self) -> bool {
            self.step == self.allowed.len()
        }
    }

    fn state(allowed: Vec<Vec<u32>>, fail_at: Option<usize>) -> ConstraintState {
        let script = Script {
            allowed,
            step: 0,
            fail_at,
        };
        ConstraintState::new(Box::new(script), 16, &[0])
    }

    #[test]
    fn masks_follow_the_matcher_and_the_last_token_ends_the_sequence() {
        let mut state = state(vec![vec![3, 4], vec![7]], None);
        state.prepare_mask();
        assert!(state.mask().allows(3) && state.mask().allows(4) && !state.mask().allows(7));
        assert!(!state.accept(4));
        state.prepare_mask();
        assert_eq!(state.mask().num_allowed(), 1);
        assert!(state.accept(7), "the grammar is complete");
    }

    #[test]
    fn a_failing_matcher_allows_only_eos_and_ends_the_sequence() {
        let mut broken = state(vec![vec![3], vec![4]], Some(1));
        broken.prepare_mask();
        assert!(!broken.accept(3));
        broken.prepare_mask();
        assert!(broken.mask().allows(0) && broken.mask().num_allowed() == 1);
        assert!(broken.accept(0));
        let mut refused = state(vec![vec![3]], None);
        refused.prepare_mask();
        assert!(refused.accept(5), "a refused token ends the sequence");
        let mut empty = state(vec![vec![]], None);
        empty.prepare_mask();
        assert!(empty.mask().allows(0), "an empty mask falls back to EOS");
    }

    fn sample_one(sampler: &mut SequenceSampler, logits: &[f32], ctx: &SamplingContext<'_>) -> u32 {
        let mut scratch = SamplerScratch::default();
        sampler.sample(logits, ctx, &mut scratch).expect("a row").token_id
    }

    #[test]
    fn a_grammar_mask_restricts_every_draw_and_the_fallback() {
        let mut mask = TokenMask::new(6);
        mask.allow(2);
        mask.allow(4);
        let constrained = SamplingContext {
            allowed: Some(&mask),
            ..SamplingContext::default()
        };
        let logits = [5.0, 4.0, 1.0, 3.0, 0.5, 4.5];
        let mut greedy = SequenceSampler::new(&SamplingParams::greedy(), 0);
        assert_eq!(sample_one(&mut greedy, &logits, &constrained), 2);
        let hot_params = SamplingParams {
            temperature: 5.0,
            seed: Some(7),
            ..SamplingParams::default()
        };
        let mut hot = SequenceSampler::new(&hot_params, 0);
        let drawn: std::collections::BTreeSet<u32> = (0..500)
            .map(|_| sample_one(&mut hot, &logits, &constrained))
            .collect();
        assert_eq!(drawn.into_iter().collect::<Vec<_>>(), vec![2, 4]);
        // Everything the mask allows is banned: the best allowed raw logit, never a masked token.
        let banned_too = SamplingContext {
            banned_token_ids: &[2, 4],
            allowed: Some(&mask),
            ..SamplingContext::default()
        };
        assert_eq!(sample_one(&mut greedy, &logits, &banned_too), 2);
    }
}
