//! Logit adjustments that depend on what the sequence already holds: banned ids, the
//! repetition penalty (prompt and output) and the presence/frequency penalties (output only).
//!
//! Token ids outside the vocabulary are ignored rather than trusted, so a bad id can never panic.

/// Sets the logit of every banned token to `-inf`.
pub(super) fn ban_tokens(logits: &mut [f32], banned_token_ids: &[u32]) {
    for &token_id in banned_token_ids {
        if let Some(logit) = logits.get_mut(token_id as usize) {
            *logit = f32::NEG_INFINITY;
        }
    }
}

/// Counts distinct tokens by sorting into a reusable buffer: O(n log n) in the number of tokens,
/// never O(vocab), and no allocation once the buffer has grown.
#[derive(Debug, Default)]
pub(super) struct TokenCounter {
    sorted_tokens: Vec<u32>,
}

impl TokenCounter {
    /// Calls `visit(token_id, count)` once per distinct token across `token_lists`.
    fn for_each_distinct(&mut self, token_lists: &[&[u32]], mut visit: impl FnMut(u32, usize)) {
        self.sorted_tokens.clear();
        for tokens in token_lists {
            self.sorted_tokens.extend_from_slice(tokens);
        }
        self.sorted_tokens.sort_unstable();
        for run in self.sorted_tokens.chunk_by(|a, b| a == b) {
            visit(run[0], run.len());
        }
    }
}

/// For every token present in the prompt or the output (once each): a positive logit is divided
/// by `penalty`, any other multiplied by it.
pub(super) fn apply_repetition_penalty(
    logits: &mut [f32],
    penalty: f32,
    prompt_tokens: &[u32],
    output_tokens: &[u32],
    counter: &mut TokenCounter,
) {
    counter.for_each_distinct(&[prompt_tokens, output_tokens], |token_id, _| {
        if let Some(logit) = logits.get_mut(token_id as usize) {
            *logit = if *logit > 0.0 {
                *logit / penalty
            } else {
                *logit * penalty
            };
        }
    });
}

/// For every token generated so far: `logit -= presence_penalty + frequency_penalty * count`.
pub(super) fn apply_presence_frequency_penalties(
    logits: &mut [f32],
    presence_penalty: f32,
    frequency_penalty: f32,
    output_tokens: &[u32],
    counter: &mut TokenCounter,
) {
    counter.for_each_distinct(&[output_tokens], |token_id, count| {
        if let Some(logit) = logits.get_mut(token_id as usize) {
            *logit -= presence_penalty + frequency_penalty * count as f32;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banning_sets_minus_infinity_and_ignores_unknown_ids() {
        let mut logits = vec![1.0, 2.0, 3.0];
        ban_tokens(&mut logits, &[2, 0, 99]);
        assert_eq!(logits, vec![f32::NEG_INFINITY, 2.0, f32::NEG_INFINITY]);
    }

    #[test]
    fn repetition_penalty_applies_once_per_distinct_token() {
        let mut logits = vec![2.0, -1.0, 3.0, 0.5, 0.0];
        let mut counter = TokenCounter::default();
        // Token 0 appears three times across prompt and output, token 1 in the prompt only,
        // token 4 (logit 0) is multiplied, 99 is out of the vocabulary.
        apply_repetition_penalty(&mut logits, 2.0, &[0, 1, 0], &[0, 4, 99], &mut counter);
        assert_eq!(logits, vec![1.0, -2.0, 3.0, 0.5, 0.0]);
    }

    #[test]
    fn presence_and_frequency_penalties_match_hand_computation() {
        let mut logits = vec![1.0, 1.0, 1.0, 1.0];
        let mut counter = TokenCounter::default();
        // Token 0 generated twice, token 2 once, tokens 1 and 3 never.
        apply_presence_frequency_penalties(&mut logits, 0.5, 0.25, &[0, 2, 0], &mut counter);
        // 1 - (0.5 + 0.25 * 2) = 0.0 ; 1 - (0.5 + 0.25 * 1) = 0.25
        assert_eq!(logits, vec![0.0, 1.0, 0.25, 1.0]);

        let mut logits = vec![0.0, 0.0];
        apply_presence_frequency_penalties(&mut logits, -1.0, 0.0, &[1, 1, 1], &mut counter);
        assert_eq!(
            logits,
            vec![0.0, 1.0],
            "negative presence penalty encourages repeats"
        );
    }
}
