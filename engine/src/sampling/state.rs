//! What sampling needs to remember about one sequence between steps, kept by the executor that
//! samples (its `add_request`/`release` give it the lifecycle): the sampler (parameters, seeded
//! RNG), the tokens the penalties look at, what `min_tokens` bans, and the grammar's matcher.

use super::constrained::ConstraintState;
use super::sampler::{SampledToken, SamplerScratch, SamplingContext, SequenceSampler};
use super::device::RowFilters;
use crate::constraint::TokenMask;
use super::thinking::ThinkingTracker;
use crate::error::Result;
use crate::request::{EngineRequest, SamplingParams};

/// One sequence's sampling state.
#[derive(Debug)]
pub struct SequenceSamplingState {
    sampler: SequenceSampler,
    /// The prompt, kept only when the repetition penalty needs it.
    prompt_tokens: Vec<u32>,
    /// Every token sampled so far (kept across preemption: recomputation does not resample).
    output_tokens: Vec<u32>,
    /// Banned while fewer than `min_tokens` tokens were generated: stop ids, and the EOS ids
    /// unless `ignore_eos`.
    banned_until_min_tokens: Vec<u32>,
    min_tokens: usize,
    /// The grammar the output follows, if the request gave one.
    constraint: Option<ConstraintState>,
    /// The thinking budget at work, if the request gave one.
    thinking: Option<ThinkingTracker>,
}

/// How the device chooses a row's token ([`SequenceSamplingState::device_choice`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DeviceChoice {
    /// The best token the grammar's mask allows.
    Greedy,
    /// A draw with these filters (under the grammar's mask, if any).
    Draw(RowFilters),
}

impl SequenceSamplingState {
    /// The state of an admitted request. Its seed should be resolved by now (an unseeded request
    /// would draw with seed 0).
    pub fn new(request: &EngineRequest, eos_token_ids: &[u32], vocab_size: usize) -> Self {
        let params = &request.sampling;
        let prompt_tokens = if params.repetition_penalty != 1.0 {
            request.prompt.clone()
        } else {
            Vec::new()
        };
        let mut banned = request.stop.stop_token_ids.clone();
        if !request.stop.ignore_eos {
            banned.extend_from_slice(eos_token_ids);
        }
        Self {
            sampler: SequenceSampler::new(params, 0),
            prompt_tokens,
            output_tokens: Vec::new(),
            banned_until_min_tokens: banned,
            min_tokens: request.stop.min_tokens,
            constraint: request
                .constraint
                .as_ref()
                .map(|c| ConstraintState::new(c.start(), vocab_size, eos_token_ids)),
            thinking: params
                .thinking_budget
                .clone()
                .map(|budget| ThinkingTracker::new(budget, &request.prompt)),
        }
    }

    /// Whether a grammar constrains this sequence's tokens.
    pub fn is_constrained(&self) -> bool {
        self.constraint.is_some()
    }

    /// Computes this step's grammar mask ahead of sampling (while the forward pass runs); a
    /// no-op without a grammar or when it is already computed.
    pub fn prepare_mask(&mut self) {
        if let Some(constraint) = &mut self.constraint {
            constraint.prepare_mask();
        }
    }

    pub fn params(&self) -> &SamplingParams {
        self.sampler.params()
    }

    /// Whether this step's token is the argmax of the raw row: greedy, nothing banned, no bias,
    /// no penalty, no log-probabilities asked for. Such rows can be decided where the logits are.
    pub fn is_plain_greedy(&self) -> bool {
        self.params().is_greedy() && self.only_filters()
    }

    /// How the device can choose this step's token when the row follows a grammar or is a plain
    /// random row: greedy under the grammar's mask, or a draw with these filters (under the mask,
    /// if any). `None` for every other row — anything besides the filters and the grammar shaping
    /// it (penalties, bias, bans, log-probabilities, a thinking budget), a plain greedy row (the
    /// batch's argmax decides it), or a grammar that failed or allows nothing (the host pipeline
    /// reports that). Computes the grammar's mask if it is not yet.
    pub fn device_choice(&mut self) -> Option<DeviceChoice> {
        if !self.only_filters_and_grammar() {
            return None;
        }
        let params = self.params();
        let choice = if params.is_greedy() {
            DeviceChoice::Greedy
        } else {
            DeviceChoice::Draw(RowFilters {
                inv_temperature: 1.0 / params.temperature,
                top_k: params.top_k,
                top_p: params.top_p,
                min_p: params.min_p,
            })
        };
        match &mut self.constraint {
            None if choice == DeviceChoice::Greedy => None,
            None => Some(choice),
            Some(constraint) => {
                constraint.prepare_mask();
                constraint.usable_mask().is_some().then_some(choice)
            }
        }
    }

    /// The grammar's mask for this step, once [`SequenceSamplingState::device_choice`] computed
    /// it (`None` without a grammar).
    pub fn device_mask(&self) -> Option<&TokenMask> {
        self.constraint.as_ref().and_then(ConstraintState::usable_mask)
    }

    /// Takes a token the device chose (by the batch's argmax or a device kernel): the grammar
    /// advances past it, as after [`SequenceSamplingState::sample`], and the token is remembered.
    pub fn take_chosen(&mut self, token_id: u32) -> SampledToken {
        let mut sampled = SampledToken::chosen(token_id);
        self.advance_grammar(&mut sampled);
        self.record(token_id);
        sampled
    }

    /// Advances the grammar past `sampled`'s token, noting whether it ends there or failed.
    fn advance_grammar(&mut self, sampled: &mut SampledToken) {
        if let Some(constraint) = &mut self.constraint {
            sampled.ends_constraint = constraint.accept(sampled.token_id);
            sampled.constraint_failure = constraint.failure().cloned();
        }
    }

    /// Nothing but temperature and the top-k / top-p / min-p filters shapes this step's token.
    fn only_filters(&self) -> bool {
        self.constraint.is_none() && self.only_filters_and_grammar()
    }

    /// Nothing but the filters and the grammar (if any) shapes this step's token.
    fn only_filters_and_grammar(&self) -> bool {
        let params = self.params();
        params.logprobs.is_none()
            && params.logit_bias.is_empty()
            && params.allowed_token_ids.is_none()
            && params.bad_words.is_empty()
            && params.thinking_budget.is_none()
            && params.repetition_penalty == 1.0
            && params.presence_penalty == 0.0
            && params.frequency_penalty == 0.0
            && self.banned_now().is_empty()
    }

    /// The uniform number this step's draw takes from the sequence's seeded generator.
    pub fn draw_uniform(&mut self) -> f64 {
        self.sampler.draw_uniform()
    }

    fn banned_now(&self) -> &[u32] {
        if self.output_tokens.len() < self.min_tokens {
            &self.banned_until_min_tokens
        } else {
            &[]
        }
    }

    /// Samples this step's token from the sequence's row of logits (among the tokens its grammar
    /// allows), and remembers it.
    pub fn sample(&mut self, logits: &[f32], scratch: &mut SamplerScratch) -> Result<SampledToken> {
        if let Some(token_id) = self.thinking.as_ref().and_then(ThinkingTracker::forced_token) {
            // The thinking budget is spent: the closing tag is written, whatever the row says.
            let sampled = self.sampler.forced(logits, token_id, scratch);
            self.record(token_id);
            return Ok(sampled);
        }
        self.prepare_mask();
        let banned: &[u32] = if self.output_tokens.len() < self.min_tokens {
            &self.banned_until_min_tokens
        } else {
            &[]
        };
        let ctx = SamplingContext {
            prompt_tokens: &self.prompt_tokens,
            output_tokens: &self.output_tokens,
            banned_token_ids: banned,
            allowed: self.constraint.as_ref().map(ConstraintState::mask),
        };
        let mut sampled = self.sampler.sample(logits, &ctx, scratch)?;
        self.advance_grammar(&mut sampled);
        self.record(sampled.token_id);
        Ok(sampled)
    }

    /// Remembers a token decided elsewhere (a plain-greedy row's device argmax, a plain random
    /// row sampled on the device) or here; the thinking budget counts it.
    pub fn record(&mut self, token_id: u32) {
        self.output_tokens.push(token_id);
        if let Some(thinking) = &mut self.thinking {
            thinking.observe(&self.output_tokens);
        }
    }
}
