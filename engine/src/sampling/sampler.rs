//! One sampler per sequence: it owns the sequence's parameters and RNG, so a seeded request
//! draws the same tokens whatever else shares its batch. The buffers a row needs while it is
//! sampled are a [`SamplerScratch`], one per thread, not one per sequence.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::filters::{
    argmax, draw, keep_min_p, keep_top_k, keep_top_p, keep_top_p_of_mass, logits_to_weights,
    Candidate,
};
use super::prune::{
    draw_at_least, fill_at_least, top_k_floor, top_p_floor, total_of, weights_into, ANY_WEIGHT,
};
use super::logprobs::{listed_logprobs, log_softmax_into, top_n};
use super::penalties::{
    apply_presence_frequency_penalties, apply_repetition_penalty, ban_tokens, TokenCounter,
};
use super::restrictions::{ban_bad_words, AllowedTokens};
use crate::constraint::{ConstraintError, TokenMask};
use crate::error::{EngineError, Result};
use crate::request::SamplingParams;

/// What the sampler needs to know about the sequence at this step.
#[derive(Debug, Clone, Copy, Default)]
pub struct SamplingContext<'a> {
    pub prompt_tokens: &'a [u32],
    pub output_tokens: &'a [u32],
    /// Tokens that must not be drawn this step (e.g. EOS and stop ids before `min_tokens`).
    pub banned_token_ids: &'a [u32],
    /// The only tokens that may be drawn this step (a grammar's mask); `None` = any.
    pub allowed: Option<&'a TokenMask>,
}

/// The chosen token and, when the request asked for them, its log-probabilities.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledToken {
    pub token_id: u32,
    /// `log_softmax` of the raw logits at `token_id`; `Some` iff `SamplingParams::logprobs` is.
    pub logprob: Option<f32>,
    /// The `n` most likely `(token_id, logprob)` from the raw logits, by descending logprob.
    pub top_logprobs: Vec<(u32, f32)>,
    /// The sequence's grammar is complete (or could not go on) with this token: it ends here.
    pub ends_constraint: bool,
    /// Why the grammar could not go on (it refused the token, or allowed none): the sequence
    /// ends with this error instead of the token.
    pub constraint_failure: Option<ConstraintError>,
}

impl SampledToken {
    /// A token chosen without a distribution (the mock's), with no log-probabilities.
    pub fn chosen(token_id: u32) -> Self {
        Self {
            token_id,
            logprob: None,
            top_logprobs: Vec::new(),
            ends_constraint: false,
            constraint_failure: None,
        }
    }
}

/// Buffers for sampling one row, reused from row to row (a warm scratch allocates nothing).
#[derive(Debug, Default)]
pub struct SamplerScratch {
    processed_logits: Vec<f32>,
    /// The row's softmax weights, when no top-k comes first.
    weights: Vec<f32>,
    candidates: Vec<Candidate>,
    raw_logprobs: Vec<f32>,
    token_counter: TokenCounter,
}

/// Turns one row of logits per step into one token for one sequence.
///
/// Steps: grammar mask → allowed token ids → logit bias → banned ids → bad words → repetition penalty → presence/frequency penalties → greedy
/// argmax, or top-k (on the logits) → temperature softmax → top-p → min-p → draw. Top-k keeps the
/// same tokens before or after temperature; min-p comes last here, where vLLM applies it before
/// top-k and top-p. The draw takes one uniform number from the sequence's RNG per step and walks
/// the kept tokens in vocabulary order (inverse CDF), so the result depends only on the row, the
/// parameters and that number — never on the batch or on how the filters ordered their
/// candidates. Log-probabilities are reported from the raw logits.
#[derive(Debug)]
pub struct SequenceSampler {
    params: SamplingParams,
    /// `params.allowed_token_ids`, sorted.
    allowed: Option<AllowedTokens>,
    rng: ChaCha8Rng,
}

impl SequenceSampler {
    /// `params` must have passed `SamplingParams::validate`. The RNG is seeded with
    /// `params.seed`, or with the engine's `fallback_seed` when the request gave none.
    pub fn new(params: &SamplingParams, fallback_seed: u64) -> Self {
        Self {
            params: params.clone(),
            allowed: params.allowed_token_ids.as_deref().map(AllowedTokens::new),
            rng: ChaCha8Rng::seed_from_u64(params.seed.unwrap_or(fallback_seed)),
        }
    }

    pub fn params(&self) -> &SamplingParams {
        &self.params
    }

    /// Picks the next token from one row of `logits` (one entry per vocabulary token).
    ///
    /// Never panics on degenerate rows: if banning and penalties leave no token with any
    /// probability, the argmax of the raw logits is returned — among the tokens the grammar
    /// allows, when there is one (token 0 if even those are all `-inf`/NaN). Only an empty row is
    /// an error.
    pub fn sample(
        &mut self,
        logits: &[f32],
        ctx: &SamplingContext<'_>,
        scratch: &mut SamplerScratch,
    ) -> Result<SampledToken> {
        if logits.is_empty() {
            return Err(EngineError::Execution("empty logits".to_string()));
        }
        self.process_logits(logits, ctx, scratch);
        let token_id = match self.choose_token(scratch) {
            Some(token_id) => token_id,
            None => {
                tracing::debug!("no token left after banning and penalties; using raw argmax");
                let best = match (ctx.allowed, &self.allowed) {
                    (Some(mask), _) => mask.best_allowed(logits),
                    (None, Some(allowed)) => allowed.best_of(logits),
                    (None, None) => argmax(logits).map(|index| index as u32),
                };
                best.unwrap_or(0)
            }
        };
        Ok(self.with_logprobs(logits, token_id, scratch))
    }

    /// Copies the raw row and applies banning and the enabled penalties to the copy.
    fn process_logits(
        &self,
        raw_logits: &[f32],
        ctx: &SamplingContext<'_>,
        scratch: &mut SamplerScratch,
    ) {
        let logits = &mut scratch.processed_logits;
        logits.clear();
        logits.extend_from_slice(raw_logits);
        if let Some(mask) = ctx.allowed {
            mask.apply_to(logits);
        }
        if let Some(allowed) = &self.allowed {
            allowed.keep_only(logits);
        }
        let params = &self.params;
        for &(token_id, bias) in &params.logit_bias {
            if let Some(logit) = logits.get_mut(token_id as usize) {
                *logit += bias;
            }
        }
        ban_tokens(logits, ctx.banned_token_ids);
        ban_bad_words(logits, &params.bad_words, ctx.output_tokens);
        if params.repetition_penalty != 1.0 {
            apply_repetition_penalty(
                logits,
                params.repetition_penalty,
                ctx.prompt_tokens,
                ctx.output_tokens,
                &mut scratch.token_counter,
            );
        }
        if params.presence_penalty != 0.0 || params.frequency_penalty != 0.0 {
            apply_presence_frequency_penalties(
                logits,
                params.presence_penalty,
                params.frequency_penalty,
                ctx.output_tokens,
                &mut scratch.token_counter,
            );
        }
    }

    /// The token picked from the processed logits; `None` when none has any probability left.
    fn choose_token(&mut self, scratch: &mut SamplerScratch) -> Option<u32> {
        let best_index = argmax(&scratch.processed_logits)?;
        let max_logit = scratch.processed_logits[best_index];
        // A `+inf` logit takes all the mass: nothing to draw.
        if self.params.is_greedy() || max_logit == f32::INFINITY {
            return Some(best_index as u32);
        }
        let params = &self.params;
        let logits = &scratch.processed_logits;
        let candidates = &mut scratch.candidates;
        if params.top_k > 0 && params.top_k < logits.len() {
            // Top-k on the logits, from the tokens that can make it.
            fill_at_least(logits, top_k_floor(logits, max_logit, params.top_k), candidates);
            keep_top_k(candidates, params.top_k);
            logits_to_weights(candidates, max_logit, params.temperature);
            keep_top_p(candidates, params.top_p);
        } else {
            // The whole row's weights, then only the tokens that top-p or min-p can keep.
            let weights = &mut scratch.weights;
            weights_into(logits, max_logit, params.temperature, weights);
            if params.top_p < 1.0 {
                let target_mass = f64::from(params.top_p) * total_of(weights);
                fill_at_least(weights, top_p_floor(weights, target_mass), candidates);
                keep_top_p_of_mass(candidates, target_mass);
            } else {
                // Temperature (and min-p) alone, the most common sampled row: the top weighs
                // exactly 1, so min-p's bar is `min_p` itself, and the draw walks the dense
                // weights instead of building a candidate per kept token.
                let uniform = self.rng.random::<f64>();
                return draw_at_least(weights, params.min_p.max(ANY_WEIGHT), uniform);
            }
        }
        keep_min_p(candidates, params.min_p);
        let reordered = (params.top_k > 0 && params.top_k < scratch.processed_logits.len())
            || params.top_p < 1.0;
        if reordered {
            // The draw walks the kept tokens in vocabulary order, whatever the filters did.
            candidates.sort_unstable_by_key(|&(token_id, _)| token_id);
        }
        let uniform = self.rng.random::<f64>();
        draw(candidates, uniform)
    }

    /// `token_id`, chosen without a draw (a thinking budget closing its section), with the
    /// log-probabilities the request asked for, from the raw row.
    pub fn forced(
        &self,
        raw_logits: &[f32],
        token_id: u32,
        scratch: &mut SamplerScratch,
    ) -> SampledToken {
        self.with_logprobs(raw_logits, token_id, scratch)
    }

    /// One uniform number in [0, 1) from the sequence's generator: what the host pipeline's
    /// draw would take this step (the device path draws with it instead).
    pub fn draw_uniform(&mut self) -> f64 {
        self.rng.random::<f64>()
    }

    fn with_logprobs(
        &self,
        raw_logits: &[f32],
        token_id: u32,
        scratch: &mut SamplerScratch,
    ) -> SampledToken {
        let Some(num_top_logprobs) = self.params.logprobs else {
            return SampledToken::chosen(token_id);
        };
        log_softmax_into(raw_logits, &mut scratch.raw_logprobs);
        let top_logprobs = match &self.params.logprob_token_ids {
            Some(ids) => listed_logprobs(&scratch.raw_logprobs, token_id, ids),
            None => top_n(&scratch.raw_logprobs, num_top_logprobs),
        };
        SampledToken {
            token_id,
            logprob: scratch.raw_logprobs.get(token_id as usize).copied(),
            top_logprobs,
            ends_constraint: false,
            constraint_failure: None,
        }
    }
}

#[cfg(test)]
#[path = "sampler_tests.rs"]
mod tests;
