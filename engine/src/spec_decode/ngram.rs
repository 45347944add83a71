//! Prompt lookup (n-gram) proposals: find the latest earlier place where the sequence's last
//! n tokens occurred (the longest n in `prompt_lookup_min..=prompt_lookup_max` that has one) and
//! propose the tokens that followed it there. Free to compute — a backward scan of the token ids
//! — and right whenever the output copies its prompt or itself (extraction, quoting, code edits,
//! RAG answers). A request's predicted output (OpenAI's Predicted Outputs) is looked up too:
//! [`NgramProposer::propose_with_prediction`].

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
        self.own_match(token_ids, max_tokens)
            .map_or_else(Vec::new, |found| found.tokens)
    }

    /// Proposals from `prediction` (the client's predicted output) or from the sequence's own
    /// tokens, whichever matches longer (the prediction on a tie); see [`Self::propose`] for
    /// the own tokens and `prediction_match` for the prediction.
    pub fn propose_with_prediction(
        &self,
        token_ids: &[u32],
        num_output_tokens: usize,
        prediction: &[u32],
        max_tokens: usize,
    ) -> Vec<u32> {
        let predicted = self.prediction_match(token_ids, num_output_tokens, prediction, max_tokens);
        let own = self.own_match(token_ids, max_tokens);
        let best = match (predicted, own) {
            (Some(predicted), Some(own)) if own.len > predicted.len => Some(own),
            (Some(predicted), _) => Some(predicted),
            (None, own) => own,
        };
        best.map_or_else(Vec::new, |found| found.tokens)
    }

    /// The own-token match: its length and what followed it.
    fn own_match(&self, token_ids: &[u32], max_tokens: usize) -> Option<Match> {
        let len = token_ids.len();
        let (min_n, max_n) = (self.config.prompt_lookup_min, self.config.prompt_lookup_max);
        if max_tokens == 0 || len <= min_n {
            return None;
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
        let (n, end) = best?;
        // What followed `end` is proposed to follow `last`. Past the end of the tokens the
        // continuation repeats with period `last - end` (a run or a cycle, as in a loop the
        // output fell into).
        let period = last - end;
        let tokens = (1..=max_tokens)
            .map(|i| {
                let mut position = end + i;
                while position >= len {
                    position -= period;
                }
                token_ids[position]
            })
            .collect();
        Some(Match { len: n, tokens })
    }

    /// Up to `max_tokens` tokens of `prediction` from where the output stands in it: right
    /// after the output when the output so far (the last `num_output_tokens` of `token_ids`)
    /// begins the prediction (a match as long as the output); else after the place in the
    /// prediction where the longest suffix of `token_ids` (`prompt_lookup_min..=max` tokens)
    /// occurs, the one nearest the output's own position when it occurs more than once (an
    /// edited text keeps its lines in order). `None` when neither, or nothing follows.
    fn prediction_match(
        &self,
        token_ids: &[u32],
        num_output_tokens: usize,
        prediction: &[u32],
        max_tokens: usize,
    ) -> Option<Match> {
        let output = &token_ids[token_ids.len().saturating_sub(num_output_tokens)..];
        let (len, from) = match prediction.starts_with(output) {
            true => (output.len(), output.len()),
            false => self.place_in(token_ids, num_output_tokens, prediction)?,
        };
        let rest = &prediction[from.min(prediction.len())..];
        let tokens = rest[..rest.len().min(max_tokens)].to_vec();
        (!tokens.is_empty()).then_some(Match { len, tokens })
    }

    /// The length of the longest suffix of `token_ids` found in `prediction` and where the
    /// tokens after it start (the occurrence nearest position `num_output_tokens` among equally
    /// long ones).
    fn place_in(
        &self,
        token_ids: &[u32],
        num_output_tokens: usize,
        prediction: &[u32],
    ) -> Option<(usize, usize)> {
        let (min_n, max_n) = (self.config.prompt_lookup_min, self.config.prompt_lookup_max);
        let max_n = max_n.min(token_ids.len());
        let last = token_ids.len().checked_sub(1)?;
        // (match length, distance from the output's position, where the continuation starts)
        let mut best: Option<(usize, usize, usize)> = None;
        for end in 0..prediction.len() {
            let limit = max_n.min(end + 1);
            let mut n = 0;
            while n < limit && prediction[end - n] == token_ids[last - n] {
                n += 1;
            }
            let start = end + 1;
            let distance = start.abs_diff(num_output_tokens);
            let better = |(best_n, best_distance, _): (usize, usize, usize)| {
                n > best_n || (n == best_n && distance < best_distance)
            };
            if n >= min_n && best.is_none_or(better) {
                best = Some((n, distance, start));
            }
        }
        best.map(|(n, _, start)| (n, start))
    }
}

/// Proposed tokens and the length of the match they follow.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Match {
    len: usize,
    tokens: Vec<u32>,
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

    /// What the prediction alone proposes.
    fn from_prediction(
        lookup: NgramProposer,
        tokens: &[u32],
        num_output_tokens: usize,
        prediction: &[u32],
        max_tokens: usize,
    ) -> Vec<u32> {
        lookup
            .prediction_match(tokens, num_output_tokens, prediction, max_tokens)
            .map_or_else(Vec::new, |found| found.tokens)
    }

    #[test]
    fn a_prediction_is_followed_from_the_start_of_the_output() {
        // Prompt 1 2 3, output 10 11 so far; the prediction begins with the output.
        let tokens = [1, 2, 3, 10, 11];
        let prediction = [10, 11, 12, 13, 14];
        let lookup = proposer(2, 3);
        assert_eq!(
            from_prediction(lookup, &tokens, 2, &prediction, 2),
            [12, 13]
        );
        assert_eq!(
            from_prediction(lookup, &tokens, 2, &prediction, 9),
            [12, 13, 14]
        );
        // All of it written: nothing more to propose.
        assert!(from_prediction(lookup, &[1, 10, 11, 12, 13, 14], 5, &prediction, 3).is_empty());
    }

    #[test]
    fn an_edited_output_finds_its_place_in_the_prediction_again() {
        // The output changed 11 into 99 and went on with 12 13: "12 13" is found in the
        // prediction and what followed it there is proposed.
        let prediction = [10, 11, 12, 13, 14, 15];
        let tokens = [1, 2, 10, 99, 12, 13];
        let lookup = proposer(2, 3);
        assert_eq!(
            from_prediction(lookup, &tokens, 4, &prediction, 2),
            [14, 15]
        );
        // A 1-token match is below the minimum, and nothing else matches.
        assert!(from_prediction(lookup, &[1, 2, 10, 99, 13], 3, &prediction, 2).is_empty());
    }

    #[test]
    fn of_repeated_lines_the_one_at_the_outputs_place_is_followed() {
        // "7 8" occurs twice in the prediction, followed by 1 and by 2; the output (8 tokens)
        // stands at the second.
        let prediction = [7, 8, 1, 5, 5, 5, 7, 8, 2, 5];
        let tokens = [0, 3, 3, 3, 3, 3, 3, 7, 8];
        let lookup = proposer(2, 2);
        assert_eq!(from_prediction(lookup, &tokens, 8, &prediction, 1), [2]);
        assert_eq!(from_prediction(lookup, &tokens, 2, &prediction, 1), [1]);
    }

    #[test]
    fn the_longer_match_wins_between_the_prediction_and_the_sequences_own_tokens() {
        let lookup = proposer(2, 3);
        // Own tokens: "4 5 6" occurred before, followed by 7. The prediction holds only "5 6",
        // followed by 9: the own 3-token match wins.
        let tokens = [4, 5, 6, 7, 0, 4, 5, 6];
        assert_eq!(
            lookup.propose_with_prediction(&tokens, 3, &[1, 5, 6, 9], 1),
            [7]
        );
        // An equally long match in the prediction wins.
        assert_eq!(
            lookup.propose_with_prediction(&tokens, 3, &[4, 5, 6, 9], 1),
            [9]
        );
        // No match in the prediction: the own one.
        assert_eq!(lookup.propose_with_prediction(&tokens, 3, &[8, 8], 1), [7]);
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
