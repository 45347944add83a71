//! `StepExecutor`: what runs a step's plan and chooses its tokens. The model runner computes
//! logits and samples them where they are; the mock executor (`crate::mock`) chooses tokens on a
//! clock, with no model at all. Only tokens come back to the scheduler.

use std::time::Instant;

use crate::batch::BatchPlan;
use crate::error::{EngineError, Result};
use crate::events::PromptTokenLogprob;
use crate::request::{EngineRequest, RequestId};
use crate::sampling::SampledToken;

/// Runs one step's plan. The engine thread owns it and calls it once per step; the scheduler,
/// the KV block accounting, the limits and the events are the same whatever the executor.
pub trait StepExecutor: Send + std::fmt::Debug {
    /// Runs one step; returns one token (or "not ready") per sequence that samples
    /// (`ScheduledSeq::sample`), in plan order.
    fn execute(&mut self, plan: &BatchPlan) -> Result<StepOutput>;

    /// A request was admitted; called once, before it first appears in a plan.
    fn add_request(&mut self, _request: &EngineRequest, _max_output_tokens: usize) {}

    /// A request ended (finished, aborted or failed): forget whatever is kept about it.
    fn release(&mut self, _id: RequestId) {}

    /// After a step in which no token was ready and nothing else was computed: when the next
    /// token is due. The engine then waits for commands until that time instead of stepping
    /// again, so it neither spins nor stops listening. `None` (the default): step again at once.
    fn idle_until(&self) -> Option<Instant> {
        None
    }
}

/// An executor's result for one step: the next token of each sampling sequence, in plan order,
/// already chosen (with its log-probabilities when the request asked for them); `None` = that
/// sequence's token is not ready yet this step (the mock's clock has not reached it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepOutput {
    pub tokens: Vec<Option<SampledToken>>,
    /// Per sampling sequence (in plan order; empty when the step verified no proposals): the
    /// proposed tokens it accepted, a prefix of its `ScheduledSeq::draft_token_ids`. They come
    /// before its token in `tokens`, which is the target model's own token after them.
    pub accepted_drafts: Vec<Vec<SampledToken>>,
    /// One entry per sequence with `prompt_logprobs` rows in the plan, in plan order: one
    /// log-probability per row.
    pub prompt_logprobs: Vec<Vec<PromptTokenLogprob>>,
}

impl StepOutput {
    /// Rows returned: one per sampling sequence when the executor kept its contract.
    pub fn num_rows(&self) -> usize {
        self.tokens.len()
    }

    /// The proposed tokens sampling sequence `row` accepted (none when it had none).
    pub fn accepted_drafts_of(&self, row: usize) -> &[SampledToken] {
        self.accepted_drafts.get(row).map_or(&[], Vec::as_slice)
    }

    /// Chosen token ids with no log-probabilities (`None`: not ready).
    pub fn from_ids(ids: impl IntoIterator<Item = Option<u32>>) -> Self {
        Self {
            tokens: ids
                .into_iter()
                .map(|id| id.map(SampledToken::chosen))
                .collect(),
            accepted_drafts: Vec::new(),
            prompt_logprobs: Vec::new(),
        }
    }
}

impl StepOutput {
    /// Whether this is a possible output of `plan`: one row per sampling sequence, accepted
    /// proposals a prefix of each sequence's (of its proposed tokens when the plan holds them,
    /// `tokens_in_plan`; else no more than the rows reserved), and the prompt log-probabilities
    /// the plan asked for. An executor that breaks this fails the step, never the engine.
    pub fn check_against(&self, plan: &BatchPlan, tokens_in_plan: bool) -> Result<()> {
        let fail = |message: String| Err(EngineError::Execution(message));
        if self.num_rows() != plan.num_sampled() {
            return fail(format!(
                "the step returned {} rows for {} sampling sequences",
                self.num_rows(),
                plan.num_sampled()
            ));
        }
        if !self.accepted_drafts_fit(plan, tokens_in_plan) {
            return fail("the step accepted tokens that were not proposed".into());
        }
        let expected: Vec<usize> = plan
            .prompt_logprob_seqs()
            .map(|(_, rows)| rows.target_ids.len())
            .collect();
        let returned: Vec<usize> = self.prompt_logprobs.iter().map(Vec::len).collect();
        if returned != expected {
            return fail(format!(
                "the step returned prompt log-probabilities for {returned:?} rows, not {expected:?}"
            ));
        }
        Ok(())
    }

    fn accepted_drafts_fit(&self, plan: &BatchPlan, tokens_in_plan: bool) -> bool {
        if self.accepted_drafts.is_empty() {
            return true;
        }
        let sampling = plan.seqs.iter().filter(|s| s.sample);
        self.accepted_drafts.len() == plan.num_sampled()
            && sampling.zip(&self.accepted_drafts).all(|(seq, accepted)| {
                let drafts = seq.draft_token_ids();
                accepted.len() <= drafts.len()
                    && (!tokens_in_plan
                        || accepted
                            .iter()
                            .zip(drafts)
                            .all(|(token, &draft)| token.token_id == draft))
            })
    }
}
