//! What sampling needs to remember about one sequence between steps, kept by the executor that
//! samples (its `add_request`/`release` give it the lifecycle): the sampler (parameters, seeded
//! RNG), the tokens the penalties look at, what `min_tokens` bans, and the grammar's matcher.

use super::constrained::ConstraintState;
use super::sampler::{SampledToken, SamplerScratch, SamplingContext, SequenceSampler};
use super::device::RowFilters;
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

    /// The filters of a plain random row (a temperature, with top-k / top-p / min-p, and nothing
    /// else: no ban, bias, restriction, penalty, grammar or log-probabilities): such rows can be sampled where
    /// the logits are. `None` for every other row.
    pub fn device_filters(&self) -> Option<RowFilters> {
        let params = self.params();
        (!params.is_greedy() && self.only_filters()).then(|| RowFilters {
            inv_temperature: 1.0 / params.temperature,
            top_k: params.top_k,
            top_p: params.top_p,
            min_p: params.min_p,
        })
    }

    /// Nothing but temperature and the top-k / top-p / min-p filters shapes this step's token.
    fn only_filters(&self) -> bool {
        let params = self.params();
        self.constraint.is_none()
            && params.logprobs.is_none()
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
        if let Some(constraint) = &mut self.constraint {
            sampled.ends_constraint = constraint.accept(sampled.token_id);
            sampled.constraint_failure = constraint.failure().cloned();
        }
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
