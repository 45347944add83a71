//! The prompt log-probabilities of a step: the logits rows after the sampling rows, one per
//! prompt token asked for (`PromptLogprobRows`), turned into log-softmax entries on the host.
//! They come from the raw logits: no temperature, penalty or bias, as vLLM returns them.

use candle_core::{DType, Tensor};
use rayon::prelude::*;

use crate::batch::BatchPlan;
use crate::error::Result;
use crate::events::PromptTokenLogprob;
use crate::sampling::logprobs::{log_softmax_into, top_n};

/// The entries of every sequence with prompt rows in `plan`, in plan order, from the rows of
/// `logits` (`[rows, vocab]`) that follow the first `num_sampled`.
pub fn prompt_logprobs(
    logits: &Tensor,
    num_sampled: usize,
    plan: &BatchPlan,
) -> Result<Vec<Vec<PromptTokenLogprob>>> {
    let targets: Vec<(u32, usize)> = plan
        .prompt_logprob_seqs()
        .flat_map(|(_, rows)| rows.target_ids.iter().map(|&t| (t, rows.num_top)))
        .collect();
    if targets.is_empty() {
        return Ok(Vec::new());
    }
    let (_, vocab_size) = logits.dims2()?;
    let values = logits
        .narrow(0, num_sampled, targets.len())?
        .to_dtype(DType::F32)?
        .flatten_all()?
        .to_vec1::<f32>()?;
    let mut entries: Vec<PromptTokenLogprob> = values
        .par_chunks(vocab_size)
        .zip(targets.par_iter())
        .map_init(Vec::new, |scratch, (row, &(target, num_top))| {
            entry_of(row, target, num_top, scratch)
        })
        .collect();
    let mut per_seq = Vec::new();
    for (_, rows) in plan.prompt_logprob_seqs() {
        let rest = entries.split_off(rows.target_ids.len());
        per_seq.push(std::mem::replace(&mut entries, rest));
    }
    Ok(per_seq)
}

/// One prompt token's entry from its predecessor's logits row.
pub fn entry_of(
    logits: &[f32],
    target: u32,
    num_top: usize,
    scratch: &mut Vec<f32>,
) -> PromptTokenLogprob {
    log_softmax_into(logits, scratch);
    let logprob = scratch
        .get(target as usize)
        .copied()
        .unwrap_or(f32::NEG_INFINITY);
    let num_more_likely = scratch.iter().filter(|&&lp| lp > logprob).count();
    PromptTokenLogprob {
        token_id: target,
        logprob,
        rank: u32::try_from(num_more_likely + 1).unwrap_or(u32::MAX),
        top_logprobs: top_n(scratch, num_top),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{PromptLogprobRows, ScheduledSeq};
    use crate::request::RequestId;
    use candle_core::Device;

    #[test]
    fn an_entry_has_the_targets_logprob_rank_and_alternatives() {
        let logits = [1.0, 3.0, 2.0, 0.0];
        let log_z = (1f32.exp() + 3f32.exp() + 2f32.exp() + 1.0).ln();
        let entry = entry_of(&logits, 2, 2, &mut Vec::new());
        assert_eq!((entry.token_id, entry.rank), (2, 2));
        assert!((entry.logprob - (2.0 - log_z)).abs() < 1e-6);
        let ids: Vec<u32> = entry.top_logprobs.iter().map(|&(id, _)| id).collect();
        assert_eq!(ids, vec![1, 2]);
        assert_eq!(entry_of(&logits, 1, 0, &mut Vec::new()).rank, 1);
    }

    fn seq(id: u64, sample: bool, rows: Option<Vec<u32>>) -> ScheduledSeq {
        ScheduledSeq {
            id: RequestId(id),
            num_computed_tokens: 0,
            new_token_ids: vec![0; 4],
            num_draft_tokens: 0,
            block_table: Vec::new(),
            sample,
            lora: None,
            prompt_logprobs: rows.map(|target_ids| PromptLogprobRows {
                first_row: 0,
                target_ids,
                num_top: 1,
            }),
        }
    }

    #[test]
    fn rows_after_the_sampling_rows_go_to_their_sequences_in_plan_order() {
        let plan = BatchPlan {
            seqs: vec![seq(1, true, Some(vec![0, 1])), seq(2, false, Some(vec![2]))],
            num_batched_tokens: 8,
        };
        // Row 0 samples; rows 1..4 are prompt rows, each peaked on a different id.
        let mut values = vec![0f32; 4 * 3];
        for (row, peak) in [(0, 1), (1, 0), (2, 1), (3, 2)] {
            values[row * 3 + peak] = 5.0;
        }
        let logits = Tensor::from_vec(values, (4, 3), &Device::Cpu).expect("tensor");
        let entries = prompt_logprobs(&logits, 1, &plan).expect("entries");
        let ranks: Vec<Vec<(u32, u32)>> = entries
            .iter()
            .map(|e| e.iter().map(|x| (x.token_id, x.rank)).collect())
            .collect();
        assert_eq!(ranks, vec![vec![(0, 1), (1, 1)], vec![(2, 1)]]);
    }
}
