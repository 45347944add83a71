//! Verifying proposed tokens (speculative decoding): a sequence with `k` proposals has `k + 1`
//! logits rows, and its sampling pipeline runs on them in order, exactly as it would one step
//! at a time — penalties, bans, grammar mask and thinking budget see the tokens accepted before
//! each row. The proposal at row `j` is accepted when the token drawn from row `j` equals it;
//! the first token that differs (or the one after every accepted proposal) is the target's own.
//!
//! This is the rejection-sampling rule for a proposer that is deterministic given the context
//! (prompt lookup is): accepting proposal `d` with probability `p(d)` and otherwise drawing from
//! `p` without `d`, renormalised, is the same as drawing `x ~ p` and accepting iff `x = d`. So
//! every emitted token has the target's distribution given the tokens before it: greedy rows are
//! token-for-token those of plain decoding, and a sampled output is distributed as without
//! speculation (only which random number each token takes differs). A grammar's mask is only
//! ever advanced by emitted tokens, so nothing needs rolling back; a proposal the grammar forbids
//! can never be drawn, which cuts the proposal there.

use candle_core::{DType, Tensor, D};
use rayon::prelude::*;

use super::batch::{host_values, BatchSampler, SCRATCH};
use super::filters::argmax;
use super::sampler::{SampledToken, SamplerScratch};
use super::state::SequenceSamplingState;
use crate::error::{EngineError, Result};
use crate::request::RequestId;

/// One sequence's verified step: the proposals it accepted, then the target's own token.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    pub accepted: Vec<SampledToken>,
    pub token: SampledToken,
}

/// Where a sequence's rows are read from.
enum Rows<'a> {
    /// The host copy of its rows.
    Host(&'a [f32]),
    /// Each row's argmax, computed where the logits are (a plain-greedy sequence on a GPU).
    Argmax(&'a [u32]),
}

impl BatchSampler {
    /// Verifies each sequence's proposals: `logits` holds `1 + drafts[i].len()` rows for
    /// sequence `ids[i]`, in order, the last one's after its last proposal.
    pub fn verify(
        &mut self,
        logits: &Tensor,
        ids: &[RequestId],
        drafts: &[&[u32]],
    ) -> Result<Vec<Verified>> {
        let (num_rows, vocab_size) = logits.dims2()?;
        let num_expected: usize = drafts.iter().map(|d| 1 + d.len()).sum();
        if num_rows != num_expected || ids.len() != drafts.len() {
            return Err(EngineError::Execution(format!(
                "{num_rows} logits rows for {} sequences verifying {num_expected} rows",
                ids.len()
            )));
        }
        let mut states = self.take_states(ids)?;
        let result = verify_rows(logits, &mut states, drafts, vocab_size, self);
        self.put_back(ids, states);
        result
    }
}

fn verify_rows(
    logits: &Tensor,
    states: &mut [SequenceSamplingState],
    drafts: &[&[u32]],
    vocab_size: usize,
    sampler: &mut BatchSampler,
) -> Result<Vec<Verified>> {
    let logits = logits.to_dtype(DType::F32)?;
    let plain: Vec<bool> = states
        .iter()
        .map(SequenceSamplingState::is_plain_greedy)
        .collect();
    let first_rows: Vec<usize> = drafts
        .iter()
        .scan(0, |next, d| {
            let first = *next;
            *next += 1 + d.len();
            Some(first)
        })
        .collect();
    // Off the CPU, a plain-greedy sequence's rows need only their argmax: only ids cross.
    let on_device = !logits.device().is_cpu();
    let argmaxes = match on_device && plain.contains(&true) {
        true => logits.argmax(D::Minus1)?.to_vec1::<u32>()?,
        false => Vec::new(),
    };
    let host_rows: Vec<usize> = (0..states.len())
        .filter(|&i| !(on_device && plain[i]))
        .flat_map(|i| first_rows[i]..first_rows[i] + 1 + drafts[i].len())
        .collect();
    let values = match host_rows.is_empty() {
        true => &[][..],
        false => host_values(&logits, &host_rows, num_rows_of(&logits)?, &mut sampler.staging)?,
    };
    let mut host_offset = 0;
    let mut work = Vec::with_capacity(states.len());
    for (i, state) in states.iter_mut().enumerate() {
        let num_seq_rows = 1 + drafts[i].len();
        let rows = if on_device && plain[i] {
            Rows::Argmax(&argmaxes[first_rows[i]..first_rows[i] + num_seq_rows])
        } else {
            let rows = &values[host_offset * vocab_size..(host_offset + num_seq_rows) * vocab_size];
            host_offset += num_seq_rows;
            Rows::Host(rows)
        };
        work.push((state, rows, drafts[i], plain[i]));
    }
    work.into_par_iter()
        .map(|(state, rows, drafts, plain)| {
            SCRATCH.with(|scratch| {
                verify_one(state, &rows, drafts, plain, vocab_size, &mut scratch.borrow_mut())
            })
        })
        .collect()
}

fn num_rows_of(logits: &Tensor) -> Result<usize> {
    Ok(logits.dims2()?.0)
}

/// Runs one sequence's pipeline over its rows until a drawn token differs from the proposal.
fn verify_one(
    state: &mut SequenceSamplingState,
    rows: &Rows<'_>,
    drafts: &[u32],
    plain: bool,
    vocab_size: usize,
    scratch: &mut SamplerScratch,
) -> Result<Verified> {
    let mut accepted = Vec::new();
    for j in 0..=drafts.len() {
        let token = match rows {
            Rows::Argmax(ids) => decide(state, ids[j]),
            Rows::Host(values) => {
                let row = &values[j * vocab_size..(j + 1) * vocab_size];
                match plain {
                    true => decide(state, argmax(row).map_or(0, |index| index as u32)),
                    false => state.sample(row, scratch)?,
                }
            }
        };
        let ends = token.ends_constraint || token.constraint_failure.is_some();
        match drafts.get(j) {
            Some(&draft) if draft == token.token_id && !ends => accepted.push(token),
            _ => return Ok(Verified { accepted, token }),
        }
    }
    Err(EngineError::Execution("a verification ran past its rows".into()))
}

/// A plain-greedy row's token, remembered by its sequence.
fn decide(state: &mut SequenceSamplingState, token_id: u32) -> SampledToken {
    state.record(token_id);
    SampledToken::chosen(token_id)
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
