//! `Scheduler::update`: a step's results applied to its sequences. Counters advance, the next
//! token is sampled from logits or taken as the executor chose it, stops are checked, and
//! finished sequences leave with their blocks freed.

use std::collections::HashMap;
use std::time::Instant;

use super::Scheduler;
use crate::batch::BatchPlan;
use crate::error::EngineError;
use crate::events::{FinishReason, GeneratedToken};
use crate::request::RequestId;
use crate::runner::StepOutput;
use crate::sampling::SamplingContext;
use crate::sequence::{Sequence, SequenceStatus};

/// What one step changed: tokens to report, sequences that ended.
#[derive(Debug, Default)]
pub struct StepUpdate {
    pub tokens: Vec<(RequestId, GeneratedToken)>,
    /// Prompt tokens of the requests that produced their first token this step.
    pub num_prompt_tokens: usize,
    /// Tokens the step put into the KV cache: the plan's tokens, less the last token of each
    /// sequence whose next token was not ready (it is computed again in a later step).
    pub num_computed_tokens: usize,
    pub finished: Vec<Sequence>,
    pub failed: Vec<(Sequence, EngineError)>,
}

/// What the step's output says about one scheduled sequence.
enum Next<'a> {
    /// The step did not reach the end of the sequence (a prefill chunk).
    NoSample,
    Logits(&'a [f32]),
    Chosen(u32),
    /// The executor's token is not ready yet (the mock's clock has not reached it).
    NotReady,
}

fn next_of(output: &StepOutput, row: usize) -> Next<'_> {
    match output {
        StepOutput::Logits(logits) if row < logits.num_rows() => Next::Logits(logits.row(row)),
        StepOutput::Tokens(tokens) => match tokens.get(row) {
            Some(&Some(token_id)) => Next::Chosen(token_id),
            _ => Next::NotReady,
        },
        // The engine checks the row count first; a short output leaves the rest not ready.
        StepOutput::Logits(_) => Next::NotReady,
    }
}

impl Scheduler {
    /// Applies a step's results: advances counters, samples (or takes the chosen token), checks
    /// stops, frees finished blocks.
    pub fn update(&mut self, plan: &BatchPlan, output: &StepOutput) -> StepUpdate {
        let mut update = StepUpdate::default();
        let positions: HashMap<RequestId, usize> = self
            .running
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id, i))
            .collect();
        let mut errors: Vec<(RequestId, EngineError)> = Vec::new();
        let mut row = 0;
        for scheduled in &plan.seqs {
            let next = if scheduled.sample {
                row += 1;
                next_of(output, row - 1)
            } else {
                Next::NoSample
            };
            let Some(&index) = positions.get(&scheduled.id) else {
                continue;
            };
            let seq = &mut self.running[index];
            // A token not ready leaves the sequence's last token to be computed again next step.
            let num_computed =
                scheduled.new_token_ids.len() - usize::from(matches!(next, Next::NotReady));
            seq.num_computed_tokens += num_computed;
            update.num_computed_tokens += num_computed;
            self.kv.cache_full_blocks(seq);
            let token = match next {
                Next::NoSample | Next::NotReady => continue,
                Next::Logits(logits) => sample_next(seq, logits, &self.eos_token_ids),
                Next::Chosen(token_id) => Ok(take_chosen(seq, token_id)),
            };
            match token {
                Ok(token) => {
                    if seq.num_output_tokens() == 1 {
                        update.num_prompt_tokens += seq.num_prompt_tokens;
                    }
                    update.tokens.push((seq.id, token));
                }
                Err(e) => {
                    seq.status = SequenceStatus::Finished(FinishReason::Abort);
                    errors.push((seq.id, e));
                    continue;
                }
            }
            if let Some(reason) = seq.check_stop(&self.eos_token_ids, self.limits.max_model_len) {
                seq.status = SequenceStatus::Finished(reason);
            }
        }
        self.collect_finished(&mut update, errors);
        update
    }

    fn collect_finished(
        &mut self,
        update: &mut StepUpdate,
        mut errors: Vec<(RequestId, EngineError)>,
    ) {
        let mut index = 0;
        while index < self.running.len() {
            if !self.running[index].is_finished() {
                index += 1;
                continue;
            }
            let mut seq = self.running.remove(index);
            self.kv.free(&mut seq);
            match errors.iter().position(|(id, _)| *id == seq.id) {
                Some(i) => update.failed.push((seq, errors.swap_remove(i).1)),
                None => update.finished.push(seq),
            }
        }
    }
}

fn sample_next(
    seq: &mut Sequence,
    logits: &[f32],
    eos_token_ids: &[u32],
) -> Result<GeneratedToken, EngineError> {
    let banned = seq.banned_token_ids(eos_token_ids);
    let (prompt_tokens, output_tokens) = seq.token_ids.split_at(seq.num_prompt_tokens);
    let ctx = SamplingContext {
        prompt_tokens,
        output_tokens,
        banned_token_ids: &banned,
    };
    let sampled = seq.sampler.sample(logits, &ctx)?;
    let at = Instant::now();
    seq.token_ids.push(sampled.token_id);
    seq.first_token.get_or_insert(at);
    Ok(GeneratedToken {
        token_id: sampled.token_id,
        logprob: sampled.logprob,
        top_logprobs: sampled.top_logprobs,
        at,
    })
}

/// Appends a token the executor chose. No distribution stands behind it, so when log-probabilities
/// were asked for, the token gets 0.0 (the executor chose it with certainty) and no alternatives.
fn take_chosen(seq: &mut Sequence, token_id: u32) -> GeneratedToken {
    let at = Instant::now();
    seq.token_ids.push(token_id);
    seq.first_token.get_or_insert(at);
    GeneratedToken {
        token_id,
        logprob: seq.sampling.logprobs.map(|_| 0.0),
        top_logprobs: Vec::new(),
        at,
    }
}
