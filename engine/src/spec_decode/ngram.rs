//! Prompt lookup (n-gram) proposals: find the latest earlier place where the sequence's last
//! n tokens occurred (the longest n in `prompt_lookup_min..=prompt_lookup_max` that has one) and
//! propose the tokens that followed it there. Free to compute — a backward scan of the token ids
//! — and right whenever the output copies its prompt or itself (extraction, quoting, code edits,
//! RAG answers).

use super::config::NgramConfig;

/// Proposes from a sequence's own tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NgramProposer {
    config: NgramConfig,
}

impl NgramProposer {
    pub fn new(config: NgramConfig) -> Self {
        Self { config }
    }

    /// Up to `max_tokens` tokens that followed the latest earlier occurrence of the longest
    /// matching suffix of `token_ids`; empty when no suffix of at least `prompt_lookup_min`
    /// tokens occurred before.
    pub fn propose(&self, token_ids: &[u32], max_tokens: usize) -> Vec<u32> {
        let len = token_ids.len();
        let (min_n, max_n) = (self.config.prompt_lookup_min, self.config.prompt_lookup_max);
        if max_tokens == 0 || len <= min_n {
            return Vec::new();
        }
        let last = len - 1;
        // `end` is the last token of a candidate occurrence; the suffix itself ends at `last`.
        let mut best: Option<(usize, usize)> = None;
        for end in (0..last).rev() {
            let limit = max_n.min(end + 1);
            let mut n = 0;
            while n < limit && token_ids[end - n] == token_ids[last - n] {
                n += 1;
            }
            if n >= min_n && best.is_none_or(|(best_n, _)| n > best_n) {
                best = Some((n, end));
                if n == max_n {
                    break;
                }
            }
        }
        let Some((_, end)) = best else {
            return Vec::new();
        };
        // What followed `end` is proposed to follow `last`. Past the end of the tokens the
        // continuation repeats with period `last - end` (a run or a cycle, as in a loop the
        // output fell into).
        let period = last - end;
        (1..=max_tokens)
            .map(|i| {
                let mut position = end + i;
                while position >= len {
                    position -= period;
                }
                token_ids[position]
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposer(min: usize, max: usize) -> NgramProposer {
        NgramProposer::new(NgramConfig {
            prompt_lookup_min: min,
            prompt_lookup_max: max,
        })
    }

    #[test]
    fn proposes_what_followed_the_latest_occurrence_of_the_suffix() {
        // "... 1 2 3 4 5 ... 1 2 3 9 ... 1 2 3": the latest "1 2 3" was followed by 9.
        let tokens = [1, 2, 3, 4, 5, 7, 1, 2, 3, 9, 8, 1, 2, 3];
        assert_eq!(proposer(2, 3).propose(&tokens, 2), vec![9, 8]);
        // Past the tokens there are, the continuation repeats with the match's period (5).
        assert_eq!(
            proposer(2, 3).propose(&tokens, 7),
            vec![9, 8, 1, 2, 3, 9, 8]
        );
    }

    #[test]
    fn a_longer_match_wins_over_a_later_shorter_one() {
        // Suffix "5 1 2": "5 1 2" occurs once (followed by 6); a later "1 2" is followed by 3.
        let tokens = [5, 1, 2, 6, 0, 1, 2, 3, 0, 5, 1, 2];
        assert_eq!(proposer(2, 3).propose(&tokens, 1), vec![6]);
        assert_eq!(proposer(2, 2).propose(&tokens, 1), vec![3]);
    }

    #[test]
    fn nothing_is_proposed_below_the_minimum_or_when_nothing_repeats() {
        assert!(proposer(2, 4).propose(&[1, 2, 3, 4, 5, 6], 3).is_empty());
        // Only a 1-token match ("... 4 ... 4").
        assert!(proposer(2, 4).propose(&[4, 8, 1, 4], 3).is_empty());
        assert_eq!(proposer(1, 4).propose(&[4, 8, 1, 4], 4), vec![8, 1, 4, 8]);
        assert!(proposer(1, 4).propose(&[4, 8, 1, 4], 0).is_empty());
        assert!(proposer(1, 1).propose(&[4], 3).is_empty());
    }

    #[test]
    fn a_repeated_token_run_proposes_more_of_it() {
        let tokens = [7; 6];
        assert_eq!(proposer(2, 3).propose(&tokens, 4), vec![7, 7, 7, 7]);
        assert_eq!(
            proposer(2, 3).propose(&[5, 6, 5, 6, 5, 6], 3),
            vec![5, 6, 5]
        );
    }
}
