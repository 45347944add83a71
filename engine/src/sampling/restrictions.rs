//! vLLM's two per-request vocabulary restrictions: `allowed_token_ids` (only these may be drawn)
//! and `bad_words` (a word's last token is banned wherever the output already ends with the rest
//! of it). Both work on the processed row, before the penalties, and leave the raw row (and so
//! the log-probabilities reported) alone, as vLLM does.

/// The only tokens a request may draw, sorted and without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AllowedTokens(Vec<u32>);

impl AllowedTokens {
    pub fn new(token_ids: &[u32]) -> Self {
        let mut sorted = token_ids.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        Self(sorted)
    }

    /// Sets every other token's logit to `-inf`.
    pub fn keep_only(&self, logits: &mut [f32]) {
        let mut allowed = self.0.iter().copied().peekable();
        for (token_id, logit) in logits.iter_mut().enumerate() {
            if allowed.peek() == Some(&(token_id as u32)) {
                allowed.next();
            } else {
                *logit = f32::NEG_INFINITY;
            }
        }
    }

    /// The allowed token with the largest logit (ties: the lowest id); `None` when none of them
    /// is in the row or every one is NaN.
    pub fn best_of(&self, logits: &[f32]) -> Option<u32> {
        let mut best: Option<(u32, f32)> = None;
        for &token_id in &self.0 {
            let Some(&logit) = logits.get(token_id as usize) else {
                break;
            };
            if !logit.is_nan() && best.is_none_or(|(_, top)| logit > top) {
                best = Some((token_id, logit));
            }
        }
        best.map(|(token_id, _)| token_id)
    }
}

/// Bans the last token of every bad word whose other tokens are the output's last tokens (a
/// one-token word is always banned). Only the output is looked at, not the prompt (vLLM's rule).
pub(super) fn ban_bad_words(logits: &mut [f32], bad_words: &[Vec<u32>], output_tokens: &[u32]) {
    for word in bad_words {
        let Some((&last, prefix)) = word.split_last() else {
            continue;
        };
        if output_tokens.ends_with(prefix) {
            if let Some(logit) = logits.get_mut(last as usize) {
                *logit = f32::NEG_INFINITY;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::sampler::{SamplerScratch, SamplingContext, SequenceSampler};
    use super::*;
    use crate::request::SamplingParams;

    /// `num_draws` tokens drawn at temperature 1 from a flat 16-token row, the output growing
    /// with each (as a sequence's does); also the chosen tokens' reported log-probabilities.
    fn draws(params: SamplingParams, num_draws: usize) -> (Vec<u32>, Vec<f32>) {
        let params = SamplingParams {
            seed: Some(11),
            logprobs: Some(0),
            ..params
        };
        let mut sampler = SequenceSampler::new(&params, 0);
        let mut scratch = SamplerScratch::default();
        let (mut output, mut logprobs) = (Vec::new(), Vec::new());
        for _ in 0..num_draws {
            let ctx = SamplingContext {
                output_tokens: &output,
                ..SamplingContext::default()
            };
            let sampled = sampler.sample(&[0.0; 16], &ctx, &mut scratch).expect("a token");
            output.push(sampled.token_id);
            logprobs.push(sampled.logprob.expect("asked for"));
        }
        (output, logprobs)
    }

    #[test]
    fn the_sampler_draws_only_allowed_tokens_and_reports_raw_logprobs() {
        let allowed = SamplingParams {
            allowed_token_ids: Some(vec![2, 9]),
            ..SamplingParams::default()
        };
        let (tokens, logprobs) = draws(allowed, 200);
        assert!(tokens.iter().all(|t| [2, 9].contains(t)), "{tokens:?}");
        assert!(tokens.contains(&2) && tokens.contains(&9), "both drawn");
        // The log-probabilities are the raw row's (1/16 each), as vLLM reports them.
        let raw = -(16f32.ln());
        assert!(logprobs.iter().all(|&l| (l - raw).abs() < 1e-5), "{logprobs:?}");
    }

    #[test]
    fn the_sampler_never_completes_a_bad_word() {
        // Allowed {1, 2, 3, 4}; "4", "1 2" and "2 2" are bad: 4 never comes, 2 follows only 3.
        let params = SamplingParams {
            allowed_token_ids: Some(vec![1, 2, 3, 4]),
            bad_words: vec![vec![4], vec![1, 2], vec![2, 2]],
            ..SamplingParams::default()
        };
        let (tokens, _) = draws(params, 300);
        assert!(!tokens.contains(&4), "{tokens:?}");
        let pairs: Vec<&[u32]> = tokens.windows(2).collect();
        assert!(!pairs.contains(&&[1, 2][..]) && !pairs.contains(&&[2, 2][..]), "{tokens:?}");
        assert!(pairs.contains(&&[3, 2][..]), "{tokens:?}");
    }

    #[test]
    fn when_the_bans_leave_nothing_the_best_allowed_token_is_taken() {
        let params = SamplingParams {
            allowed_token_ids: Some(vec![4, 5]),
            bad_words: vec![vec![4], vec![5]],
            ..SamplingParams::greedy()
        };
        let mut sampler = SequenceSampler::new(&params, 0);
        let mut row = vec![0.0; 8];
        row[0] = 9.0;
        row[5] = 1.0;
        let sampled = sampler
            .sample(&row, &SamplingContext::default(), &mut SamplerScratch::default())
            .expect("a token");
        assert_eq!(sampled.token_id, 5);
    }

    #[test]
    fn only_the_allowed_tokens_keep_their_logits() {
        let allowed = AllowedTokens::new(&[4, 1, 4, 9]);
        let mut logits = vec![0.5; 6];
        allowed.keep_only(&mut logits);
        let kept: Vec<usize> = (0..6).filter(|&i| logits[i].is_finite()).collect();
        // 9 is outside this row and ignored; the repeat of 4 counts once.
        assert_eq!(kept, [1, 4]);
        assert_eq!(logits[1], 0.5);
    }

    #[test]
    fn the_best_allowed_token_ignores_the_rest_and_nans() {
        let allowed = AllowedTokens::new(&[0, 2, 3]);
        assert_eq!(allowed.best_of(&[1.0, 9.0, 2.0, 2.0]), Some(2));
        assert_eq!(allowed.best_of(&[f32::NAN, 9.0, f32::NAN, -1.0]), Some(3));
        assert_eq!(allowed.best_of(&[f32::NAN; 4]), None);
        assert_eq!(
            allowed.best_of(&[f32::NEG_INFINITY; 4]),
            Some(0),
            "-inf rows still name a token"
        );
    }

    #[test]
    fn a_bad_word_is_banned_only_after_its_prefix() {
        let words = vec![vec![7], vec![3, 4, 5]];
        let banned = |output: &[u32]| -> Vec<usize> {
            let mut logits = vec![0.0; 8];
            ban_bad_words(&mut logits, &words, output);
            (0..8).filter(|&i| logits[i] == f32::NEG_INFINITY).collect()
        };
        assert_eq!(banned(&[]), [7]);
        assert_eq!(banned(&[3]), [7]);
        assert_eq!(banned(&[1, 3, 4]), [5, 7]);
        assert_eq!(banned(&[3, 4, 1]), [7]);
        // Out-of-row ids are ignored, not a panic.
        let mut short = vec![0.0; 4];
        ban_bad_words(&mut short, &words, &[3, 4]);
        assert!(short.iter().all(|l| l.is_finite()));
    }
}
