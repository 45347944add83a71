//! The draft model of speculative decoding (`--speculative-config` method `draft_model`): a
//! second, smaller model with the target's vocabulary that proposes each decoding sequence's next
//! tokens by greedy decoding, into the rows the scheduler reserved.
//!
//! Its paged KV cache has the target's block size and number of blocks and is addressed by the
//! same block tables, so a sequence's blocks hold both models' keys and values, and whatever
//! frees, shares (prefix caching) or preempts a block does so for both. Each step the draft
//! model runs, before the target:
//! 1. over every token the target computes this step except the proposal rows (prefill chunks
//!    and decode tokens), so its cache follows the target's; a decoding sequence's row gives
//!    its first proposal;
//! 2. then once per further proposal, one token per sequence still proposing: the proposal
//!    before it, at the next position (its slots are the reserved rows').
//!
//! A proposal the target accepts is then in the draft's cache already, except the last one of a
//! fully accepted proposal (never fed back): it is remembered and fed with the sequence's next
//! step. Rejected rows' stale entries lie past the sequence's length and are overwritten before
//! they are read. Proposals are greedy (deterministic given the context), so the target's
//! verification (`sampling::verify`) keeps its output distribution exactly.

use std::collections::HashMap;

use candle_core::{Tensor, D};

use super::executor::StepOutput;
use super::forward::forward;
use crate::attention::PagedKvCache;
use crate::batch::{BatchPlan, ScheduledSeq};
use crate::error::Result;
use crate::models::CausalLm;
use crate::request::RequestId;

/// A proposal token the draft model has not seen: the last of a fully accepted proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Unfed {
    position: usize,
    token_id: u32,
}

#[derive(Debug)]
pub struct DraftModel {
    model: Box<dyn CausalLm>,
    kv_cache: Box<dyn PagedKvCache>,
    block_size: usize,
    unfed: HashMap<RequestId, Unfed>,
}

impl DraftModel {
    pub fn new(model: Box<dyn CausalLm>, kv_cache: Box<dyn PagedKvCache>, block_size: usize) -> Self {
        Self {
            model,
            kv_cache,
            block_size,
            unfed: HashMap::new(),
        }
    }

    /// Runs the draft model over `plan`'s tokens; returns `plan` with its reserved proposal
    /// rows holding the draft model's proposals (`None` when it reserved none).
    pub fn propose(&mut self, plan: &BatchPlan) -> Result<Option<BatchPlan>> {
        let first = catch_up_plan(&mut self.unfed, plan);
        let mut next = self.proposal_tokens(&first)?;
        if !plan.has_drafts() {
            return Ok(None);
        }
        let mut proposals: Vec<Vec<u32>> = vec![Vec::new(); plan.seqs.len()];
        let max_num_drafts = plan.seqs.iter().map(|s| s.num_draft_tokens).max().unwrap_or(0);
        for round in 1..=max_num_drafts {
            // `next[j]` is the proposal of the `j`-th sequence still proposing.
            let proposing: Vec<usize> = (0..plan.seqs.len())
                .filter(|&i| plan.seqs[i].num_draft_tokens >= round)
                .collect();
            for (&i, &token_id) in proposing.iter().zip(&next) {
                proposals[i].push(token_id);
            }
            let feeding: Vec<usize> = proposing
                .into_iter()
                .filter(|&i| plan.seqs[i].num_draft_tokens > round)
                .collect();
            if feeding.is_empty() {
                break;
            }
            next = self.proposal_tokens(&feed_plan(plan, &feeding, &proposals))?;
        }
        Ok(Some(with_proposals(plan, proposals)))
    }

    /// After the target's step: remembers the last proposal of each fully accepted one.
    pub fn observe(&mut self, plan: &BatchPlan, output: &StepOutput) {
        let sampling = plan.seqs.iter().filter(|s| s.sample);
        for (row, seq) in sampling.enumerate() {
            let num_accepted = output.accepted_drafts_of(row).len();
            if seq.num_draft_tokens > 0 && num_accepted == seq.num_draft_tokens {
                let unfed = Unfed {
                    position: seq.num_tokens_after_step() - 1,
                    token_id: *seq.new_token_ids.last().expect("a proposal"),
                };
                self.unfed.insert(seq.id, unfed);
            }
        }
    }

    pub fn release(&mut self, id: RequestId) {
        self.unfed.remove(&id);
    }

    /// The draft's greedy token after each sampling sequence of `plan`, in plan order.
    fn proposal_tokens(&mut self, plan: &BatchPlan) -> Result<Vec<u32>> {
        let logits = forward(self.model.as_ref(), self.kv_cache.as_mut(), self.block_size, plan)?;
        match logits {
            Some(logits) if plan.num_sampled() > 0 => Ok(argmax_rows(&logits)?),
            _ => Ok(Vec::new()),
        }
    }
}

/// Step 1's plan: the target's without proposal rows or prompt log-probabilities, an unfed
/// token first where the sequence continues right after it; only proposing sequences sample.
fn catch_up_plan(unfed: &mut HashMap<RequestId, Unfed>, plan: &BatchPlan) -> BatchPlan {
    let seqs = plan
        .seqs
        .iter()
        .map(|seq| {
            let mut token_ids = seq.token_ids_without_drafts().to_vec();
            let mut num_computed_tokens = seq.num_computed_tokens;
            match unfed.remove(&seq.id) {
                Some(token) if token.position + 1 == seq.num_computed_tokens => {
                    token_ids.insert(0, token.token_id);
                    num_computed_tokens -= 1;
                }
                _ => {}
            }
            draft_row(seq, num_computed_tokens, token_ids, seq.num_draft_tokens > 0)
        })
        .collect();
    plan_of(seqs)
}

/// One sequence's row of a draft pass: `token_ids` from position `num_computed_tokens`, in the
/// target's blocks, without the request's adapter or prompt log-probabilities.
fn draft_row(
    seq: &ScheduledSeq,
    num_computed_tokens: usize,
    token_ids: Vec<u32>,
    sample: bool,
) -> ScheduledSeq {
    ScheduledSeq {
        id: seq.id,
        num_computed_tokens,
        new_token_ids: token_ids,
        num_draft_tokens: 0,
        block_table: seq.block_table.clone(),
        sample,
        lora: None,
        prompt_logprobs: None,
    }
}

/// Rows' argmax, computed where the logits are (only ids cross from a GPU).
fn argmax_rows(logits: &Tensor) -> Result<Vec<u32>> {
    Ok(logits.argmax(D::Minus1)?.to_vec1::<u32>()?)
}

/// A later round: each of `feeding` (indices into `plan`) runs its latest proposal, at the
/// position after the rows it already ran.
fn feed_plan(plan: &BatchPlan, feeding: &[usize], proposals: &[Vec<u32>]) -> BatchPlan {
    let seqs = feeding
        .iter()
        .map(|&i| {
            let seq = &plan.seqs[i];
            let fed = &proposals[i];
            let position = seq.num_computed_tokens + seq.token_ids_without_drafts().len() + fed.len() - 1;
            draft_row(seq, position, vec![*fed.last().expect("a proposal")], true)
        })
        .collect();
    plan_of(seqs)
}

fn plan_of(seqs: Vec<ScheduledSeq>) -> BatchPlan {
    let num_batched_tokens = seqs.iter().map(|s| s.new_token_ids.len()).sum();
    BatchPlan {
        seqs,
        num_batched_tokens,
    }
}

/// `plan` with each sequence's reserved rows replaced by its proposals.
fn with_proposals(plan: &BatchPlan, proposals: Vec<Vec<u32>>) -> BatchPlan {
    let mut filled = plan.clone();
    for (seq, proposal) in filled.seqs.iter_mut().zip(proposals) {
        debug_assert_eq!(proposal.len(), seq.num_draft_tokens);
        let num_own = seq.token_ids_without_drafts().len();
        seq.new_token_ids.truncate(num_own);
        seq.new_token_ids.extend(proposal);
    }
    filled
}

#[cfg(test)]
#[path = "draft_tests.rs"]
mod tests;
