//! A sequence's prompt log-probabilities (the request's `prompt_logprobs`): which rows of a
//! step compute them, and what has been collected until they are sent, once, before the first
//! token.
//!
//! The token at position `p` predicts the token at `p + 1`, so a prompt of `n` tokens has `n - 1`
//! entries, computed by positions `0..n - 1` as the prefill reaches them. While entries are
//! missing, the sequence takes nothing from the prefix cache (a cached block has no logits),
//! and each step computes at most [`MAX_PROMPT_LOGPROB_ROWS_PER_STEP`] of its tokens, which
//! bounds the logits a step holds (rows × vocabulary). After a preemption the prompt is computed
//! again, and only the rows still missing are returned.

use crate::events::PromptTokenLogprob;

/// Which of a step's tokens yield prompt log-probabilities: the token at `first_row + k` of
/// `new_token_ids` predicts `target_ids[k]`, the prompt token after it.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptLogprobRows {
    pub first_row: usize,
    pub target_ids: Vec<u32>,
    /// Alternatives returned per row.
    pub num_top: usize,
}

/// The most prompt tokens a sequence that still needs prompt log-probabilities computes in one
/// step (2048 rows of a 128k vocabulary are 1 GiB of f32 logits).
pub const MAX_PROMPT_LOGPROB_ROWS_PER_STEP: usize = 512;

/// What a sequence has collected of its prompt log-probabilities.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptLogprobsProgress {
    num_top: usize,
    entries: Vec<PromptTokenLogprob>,
}

impl PromptLogprobsProgress {
    pub fn new(num_top: usize) -> Self {
        Self {
            num_top,
            entries: Vec::new(),
        }
    }

    /// The rows of a step computing positions `start..start + num_new` whose entries are still
    /// missing (`None`: none of them).
    pub fn rows_for(
        &self,
        prompt: &[u32],
        start: usize,
        num_new: usize,
    ) -> Option<PromptLogprobRows> {
        // Position p yields entry p (the log-probability of prompt token p + 1).
        let first = start.max(self.entries.len());
        let end = (start + num_new).min(prompt.len().saturating_sub(1));
        (first < end).then(|| PromptLogprobRows {
            first_row: first - start,
            target_ids: prompt[first + 1..end + 1].to_vec(),
            num_top: self.num_top,
        })
    }

    /// Takes a step's entries (those of `rows_for`, in order).
    pub fn extend(&mut self, entries: Vec<PromptTokenLogprob>) {
        self.entries.extend(entries);
    }

    pub fn into_entries(self) -> Vec<PromptTokenLogprob> {
        self.entries
    }
}

/// Tokens a sequence may compute this step: `num_new` capped while its prompt log-probabilities
/// are being computed.
pub fn cap_chunk(progress: Option<&PromptLogprobsProgress>, num_new: usize) -> usize {
    match progress {
        Some(_) => num_new.min(MAX_PROMPT_LOGPROB_ROWS_PER_STEP),
        None => num_new,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(token_id: u32) -> PromptTokenLogprob {
        PromptTokenLogprob {
            token_id,
            logprob: -1.0,
            rank: 1,
            top_logprobs: Vec::new(),
        }
    }

    #[test]
    fn rows_cover_each_prompt_token_after_the_first_once_across_chunks() {
        let prompt = [10, 11, 12, 13, 14];
        let mut progress = PromptLogprobsProgress::new(2);
        let first = progress.rows_for(&prompt, 0, 3).expect("rows");
        assert_eq!((first.first_row, first.target_ids.clone()), (0, vec![11, 12, 13]));
        progress.extend(first.target_ids.iter().map(|&t| entry(t)).collect());
        // The last chunk's last position predicts the first output token, not a prompt token.
        let last = progress.rows_for(&prompt, 3, 2).expect("rows");
        assert_eq!((last.first_row, last.target_ids.clone()), (0, vec![14]));
        progress.extend(vec![entry(14)]);
        assert_eq!(progress.rows_for(&prompt, 4, 1), None);
        let ids: Vec<u32> = progress.into_entries().iter().map(|e| e.token_id).collect();
        assert_eq!(ids, vec![11, 12, 13, 14]);
    }

    #[test]
    fn a_recompute_after_preemption_returns_only_missing_rows() {
        let prompt = [1, 2, 3, 4, 5, 6];
        let mut progress = PromptLogprobsProgress::new(0);
        progress.extend(vec![entry(2), entry(3)]);
        let rows = progress.rows_for(&prompt, 0, 6).expect("rows");
        assert_eq!((rows.first_row, rows.target_ids), (2, vec![4, 5, 6]));
        // A chunk entirely before what is collected yields nothing.
        assert_eq!(progress.rows_for(&prompt, 0, 2), None);
    }

    #[test]
    fn a_one_token_prompt_has_no_rows() {
        let progress = PromptLogprobsProgress::new(1);
        assert_eq!(progress.rows_for(&[7], 0, 1), None);
    }

    #[test]
    fn chunks_are_capped_only_while_entries_are_missing() {
        let progress = PromptLogprobsProgress::new(0);
        assert_eq!(
            cap_chunk(Some(&progress), 4096),
            MAX_PROMPT_LOGPROB_ROWS_PER_STEP
        );
        assert_eq!(cap_chunk(None, 4096), 4096);
    }
}
