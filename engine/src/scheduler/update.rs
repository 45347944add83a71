//! A step's results applied to the running sequences (`Scheduler::update`). Counters advance, the token
//! the executor chose is appended, stops are checked, and finished sequences leave with their
//! blocks freed. The scheduler never sees logits.

use std::collections::HashMap;
use std::time::Instant;

use crate::batch::BatchPlan;
use crate::error::EngineError;
use crate::events::{FinishReason, GeneratedToken, PromptTokenLogprob};
use crate::kv::manager::KvCacheManager;
use crate::request::RequestId;
use crate::runner::StepOutput;
use crate::sampling::SampledToken;
use crate::sequence::{Sequence, SequenceStatus};
use crate::spec_decode::SpecDecodeCounters;

/// What one step changed: tokens to report, sequences that ended.
#[derive(Debug, Default)]
pub struct StepUpdate {
    /// Prompt log-probabilities complete this step, sent before the request's first token.
    pub prompt_logprobs: Vec<(RequestId, Vec<PromptTokenLogprob>)>,
    pub tokens: Vec<(RequestId, GeneratedToken)>,
    /// Prompt tokens of the requests that produced their first token this step.
    pub num_prompt_tokens: usize,
    /// Tokens the step put into the KV cache: the plan's tokens, less the last token of each
    /// sequence whose next token was not ready (it is computed again in a later step).
    pub num_computed_tokens: usize,
    pub finished: Vec<Sequence>,
    /// Finished sequences that end with an error instead of `Finished` (a grammar that could
    /// not go on).
    pub failed: Vec<(RequestId, EngineError)>,
}

/// What the step's output says about one scheduled sequence.
enum Next<'a> {
    /// The step did not reach the end of the sequence (a prefill chunk).
    NoSample,
    Chosen(&'a SampledToken),
    /// The executor's token is not ready yet (the mock's clock has not reached it).
    NotReady,
}

fn next_of(output: &StepOutput, row: usize) -> Next<'_> {
    match output.tokens.get(row) {
        Some(Some(token)) => Next::Chosen(token),
        // The engine checks the row count first; a short output leaves the rest not ready.
        _ => Next::NotReady,
    }
}

/// The scheduler's state a step's results change.
pub(super) struct RunningState<'a> {
    pub running: &'a mut Vec<Sequence>,
    pub kv: &'a mut KvCacheManager,
    pub eos_token_ids: &'a [u32],
    pub max_model_len: usize,
    pub spec_decode: &'a mut SpecDecodeCounters,
}

impl RunningState<'_> {
    /// Applies a step's results: advances counters, takes the chosen tokens (the accepted
    /// proposals, then the executor's own), checks stops, frees finished blocks and the slots of
    /// rejected proposals.
    pub(super) fn apply(self, plan: &BatchPlan, output: &StepOutput) -> StepUpdate {
        let mut update = StepUpdate::default();
        let positions: HashMap<RequestId, usize> = self
            .running
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id, i))
            .collect();
        let mut row = 0;
        let mut prompt_logprobs_row = 0;
        for scheduled in &plan.seqs {
            let (next, accepted) = if scheduled.sample {
                row += 1;
                (next_of(output, row - 1), output.accepted_drafts_of(row - 1))
            } else {
                (Next::NoSample, &[][..])
            };
            let prompt_entries = scheduled.prompt_logprobs.as_ref().and_then(|_| {
                prompt_logprobs_row += 1;
                output.prompt_logprobs.get(prompt_logprobs_row - 1)
            });
            let Some(&index) = positions.get(&scheduled.id) else {
                continue;
            };
            let seq = &mut self.running[index];
            if let (Some(entries), Some(progress)) = (prompt_entries, seq.prompt_logprobs.as_mut()) {
                progress.extend(entries.clone());
            }
            let num_drafts = scheduled.num_draft_tokens;
            // A token not ready leaves the sequence's last token to be computed again next step;
            // rejected proposals are not computed tokens.
            let num_computed = match next {
                Next::NotReady => scheduled.new_token_ids.len() - num_drafts - 1,
                _ => scheduled.new_token_ids.len() - num_drafts + accepted.len(),
            };
            update.num_computed_tokens += num_computed;
            let num_computed_before = seq.num_computed_tokens;
            if let Next::Chosen(token) = next {
                self.spec_decode.observe(num_drafts, accepted.len());
                if let Some(usage) = &mut seq.spec_decode {
                    usage.num_draft_tokens += num_drafts;
                    usage.num_accepted_tokens += accepted.len();
                }
                let tokens = accepted.iter().chain(std::iter::once(token));
                take_tokens(seq, tokens, self.eos_token_ids, self.max_model_len, &mut update);
            }
            // A stop among the accepted proposals ends the sequence before the rest.
            seq.num_computed_tokens = (num_computed_before + num_computed).min(seq.num_tokens());
            self.kv.cache_full_blocks(seq);
            if num_drafts > 0 && !seq.is_finished() {
                self.kv.release_unused_tail(seq);
            }
        }
        self.collect_finished(&mut update);
        update
    }

    fn collect_finished(self, update: &mut StepUpdate) {
        let mut index = 0;
        while index < self.running.len() {
            if !self.running[index].is_finished() {
                index += 1;
                continue;
            }
            let mut seq = self.running.remove(index);
            self.kv.free(&mut seq);
            update.finished.push(seq);
        }
    }
}

/// Appends a step's tokens to `seq` in order, checking the stops after each: the first one that
/// ends the sequence (or breaks its grammar) is the last one taken.
fn take_tokens<'t>(
    seq: &mut Sequence,
    tokens: impl Iterator<Item = &'t SampledToken>,
    eos_token_ids: &[u32],
    max_model_len: usize,
    update: &mut StepUpdate,
) {
    for token in tokens {
        if let Some(reason) = &token.constraint_failure {
            // The token breaks the grammar: it is not output.
            seq.status = SequenceStatus::Finished(FinishReason::Abort);
            let error = EngineError::Constraint(reason.clone());
            update.failed.push((seq.id, error));
            return;
        }
        let generated = append(seq, token);
        if seq.num_output_tokens() == 1 {
            update.num_prompt_tokens += seq.num_prompt_tokens;
            if let Some(progress) = seq.prompt_logprobs.take() {
                update
                    .prompt_logprobs
                    .push((seq.id, progress.into_entries()));
            }
        }
        update.tokens.push((seq.id, generated));
        // A complete grammar ends the output, whatever the stop settings say.
        let grammar_end = token.ends_constraint.then_some(FinishReason::Stop {
            stop_token_id: None,
        });
        if let Some(reason) = grammar_end.or_else(|| seq.check_stop(eos_token_ids, max_model_len))
        {
            seq.status = SequenceStatus::Finished(reason);
            if let Some((_, token)) = update.tokens.last_mut() {
                token.is_last = true;
            }
            return;
        }
    }
}

/// Appends the token the executor chose. A token chosen without a distribution (the mock's) gets
/// log-probability 0.0 when the request asked for them: the executor chose it with certainty.
fn append(seq: &mut Sequence, token: &SampledToken) -> GeneratedToken {
    let at = Instant::now();
    seq.token_ids.push(token.token_id);
    seq.first_token.get_or_insert(at);
    GeneratedToken {
        token_id: token.token_id,
        logprob: token.logprob.or(seq.sampling.logprobs.map(|_| 0.0)),
        top_logprobs: token.top_logprobs.clone(),
        at,
        is_last: false,
    }
}
