//! One sequence's thinking budget at work (`crate::thinking::ThinkingBudget`): whether it is
//! inside a thinking section (opened in the prompt, as templates that start the reply with
//! `<think>` do, or by the model), how many tokens the section holds, and, once the budget is
//! spent, which token of the closing tag the sampler must write next.

use crate::thinking::ThinkingBudget;

#[derive(Debug)]
pub(super) struct ThinkingTracker {
    budget: ThinkingBudget,
    in_thinking: bool,
    /// Tokens of the open section so far.
    num_thinking_tokens: usize,
    /// The closing tag is being written: the index of its next token.
    closing: Option<usize>,
}

/// Where the last occurrence of `pattern` in `tokens` starts.
fn last_position(tokens: &[u32], pattern: &[u32]) -> Option<usize> {
    if pattern.is_empty() || pattern.len() > tokens.len() {
        return None;
    }
    (0..=tokens.len() - pattern.len())
        .rev()
        .find(|&start| &tokens[start..start + pattern.len()] == pattern)
}

impl ThinkingTracker {
    /// The tracker of a sequence whose prompt is `prompt`: a prompt whose last opening tag is
    /// not closed leaves the reply inside the section, its tokens after the tag counted.
    pub fn new(budget: ThinkingBudget, prompt: &[u32]) -> Self {
        let opened = last_position(prompt, &budget.start_token_ids);
        let closed = last_position(prompt, &budget.end_token_ids);
        let section_start = match (opened, closed) {
            (Some(open), Some(close)) if close > open => None,
            (Some(open), _) => Some(open + budget.start_token_ids.len()),
            (None, _) => None,
        };
        let mut tracker = Self {
            in_thinking: section_start.is_some(),
            num_thinking_tokens: section_start.map_or(0, |start| prompt.len() - start),
            closing: None,
            budget,
        };
        tracker.close_when_spent();
        tracker
    }

    /// The token the sampler must write this step (the closing tag's next one), if any.
    pub fn forced_token(&self) -> Option<u32> {
        let index = self.closing?;
        self.budget.end_token_ids.get(index).copied()
    }

    /// Takes the token just appended to `output`.
    pub fn observe(&mut self, output: &[u32]) {
        if let Some(index) = self.closing {
            let next = index + 1;
            match next < self.budget.end_token_ids.len() {
                true => self.closing = Some(next),
                false => {
                    self.closing = None;
                    self.in_thinking = false;
                }
            }
            return;
        }
        if self.in_thinking {
            if output.ends_with(&self.budget.end_token_ids) {
                self.in_thinking = false;
                return;
            }
            self.num_thinking_tokens += 1;
        } else if output.ends_with(&self.budget.start_token_ids) {
            self.in_thinking = true;
            self.num_thinking_tokens = 0;
        }
        self.close_when_spent();
    }

    fn close_when_spent(&mut self) {
        if self.in_thinking && self.num_thinking_tokens >= self.budget.max_tokens {
            self.closing = Some(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: [u32; 2] = [90, 91];
    const CLOSE: [u32; 2] = [92, 91];

    fn budget(max_tokens: usize) -> ThinkingBudget {
        ThinkingBudget {
            max_tokens,
            start_token_ids: OPEN.to_vec(),
            end_token_ids: CLOSE.to_vec(),
        }
    }

    /// The output a model that only ever writes `word` gives under the tracker.
    fn run(mut tracker: ThinkingTracker, steps: usize, model: impl Fn(&[u32]) -> u32) -> Vec<u32> {
        let mut output = Vec::new();
        for _ in 0..steps {
            let token = tracker.forced_token().unwrap_or_else(|| model(&output));
            output.push(token);
            tracker.observe(&output);
        }
        output
    }

    #[test]
    fn a_section_opened_in_the_prompt_is_closed_after_the_budget() {
        let tracker = ThinkingTracker::new(budget(3), &[1, 2, 90, 91, 7]);
        // One token of the section was in the prompt: two more, then the closing tag.
        let output = run(tracker, 7, |_| 5);
        assert_eq!(output, [5, 5, 92, 91, 5, 5, 5]);
    }

    #[test]
    fn a_section_the_model_opens_is_counted_from_its_tag() {
        // The model opens a section at once, then thinks forever.
        let model = |output: &[u32]| match output.len() {
            0 => 90,
            1 => 91,
            _ => 6,
        };
        let output = run(ThinkingTracker::new(budget(2), &[1]), 8, model);
        assert_eq!(output, [90, 91, 6, 6, 92, 91, 6, 6]);
        // Budget 0: closed right after it opens.
        let output = run(ThinkingTracker::new(budget(0), &[1]), 5, model);
        assert_eq!(output, [90, 91, 92, 91, 6]);
    }

    #[test]
    fn the_sequence_s_sampler_writes_the_closing_tag_with_its_logprobs() {
        use super::super::sampler::SamplerScratch;
        use super::super::state::SequenceSamplingState;
        use crate::request::{EngineRequest, RequestId, SamplingParams, StopConditions};

        let sampling = SamplingParams {
            thinking_budget: Some(budget(2)),
            logprobs: Some(1),
            ..SamplingParams::greedy()
        };
        let request = EngineRequest::new(
            RequestId(1),
            vec![3, 90, 91],
            sampling,
            StopConditions::default(),
        );
        let mut state = SequenceSamplingState::new(&request, &[0], 100);
        let mut row = vec![0.0f32; 100];
        row[7] = 5.0;
        let mut scratch = SamplerScratch::default();
        let tokens: Vec<(u32, Option<f32>)> = (0..5)
            .map(|_| {
                let sampled = state.sample(&row, &mut scratch).expect("a token");
                (sampled.token_id, sampled.logprob)
            })
            .collect();
        let ids: Vec<u32> = tokens.iter().map(|&(id, _)| id).collect();
        assert_eq!(ids, [7, 7, 92, 91, 7]);
        // The forced tokens carry the raw row's log-probabilities, far below the greedy one's.
        let (greedy, forced) = (tokens[0].1.expect("asked"), tokens[2].1.expect("asked"));
        assert!(forced < greedy - 4.0, "{forced} vs {greedy}");
        assert!(!state.is_plain_greedy(), "such rows are sampled on the host");
    }

    #[test]
    fn a_section_closed_in_time_or_never_opened_is_left_alone() {
        let closes = |output: &[u32]| match output.len() {
            2 => 92,
            3 => 91,
            _ => 4,
        };
        let output = run(ThinkingTracker::new(budget(5), &[90, 91]), 8, closes);
        assert_eq!(output, [4, 4, 92, 91, 4, 4, 4, 4]);
        let closed_prompt = ThinkingTracker::new(budget(0), &[90, 91, 3, 92, 91]);
        assert_eq!(run(closed_prompt, 4, |_| 4), [4; 4]);
        assert_eq!(run(ThinkingTracker::new(budget(0), &[]), 3, |_| 4), [4; 3]);
    }
}
