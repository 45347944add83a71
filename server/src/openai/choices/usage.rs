//! The `usage` object: prompt tokens counted once per prompt, completion tokens of every choice.

use pagoda_engine::{SpecDecodeUsage, Usage};

use crate::openai::wire::usage::{
    CompletionTokensDetails, PromptTokensDetails, Usage as WireUsage,
};

/// Sums the usage of a response's choices. Choice `i` belongs to prompt `i / n`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageTotals {
    prompt_lens: Vec<usize>,
    /// Per prompt: the most prompt tokens any of its choices found in the prefix cache.
    cached: Vec<usize>,
    completion_tokens: usize,
    max_choice_completion_tokens: usize,
    n: usize,
    /// Per choice: tokens streamed so far (the final count once it finished).
    streamed: Vec<usize>,
    /// Proposed and accepted tokens of the finished choices, when the engine speculates.
    spec_decode: Option<SpecDecodeUsage>,
}

impl UsageTotals {
    pub fn new(prompt_lens: Vec<usize>, n: usize) -> Self {
        let cached = vec![0; prompt_lens.len()];
        let n = n.max(1);
        Self {
            streamed: vec![0; prompt_lens.len() * n],
            prompt_lens,
            cached,
            completion_tokens: 0,
            max_choice_completion_tokens: 0,
            n,
            spec_decode: None,
        }
    }

    pub fn add(&mut self, choice_index: usize, usage: &Usage) {
        if let Some(streamed) = self.streamed.get_mut(choice_index) {
            *streamed = usage.completion_tokens;
        }
        self.completion_tokens += usage.completion_tokens;
        self.max_choice_completion_tokens = self
            .max_choice_completion_tokens
            .max(usage.completion_tokens);
        if let Some(cached) = self.cached.get_mut(choice_index / self.n) {
            *cached = (*cached).max(usage.num_cached_tokens);
        }
        if let Some(choice) = usage.spec_decode {
            let total = self.spec_decode.get_or_insert_with(Default::default);
            total.num_draft_tokens += choice.num_draft_tokens;
            total.num_accepted_tokens += choice.num_accepted_tokens;
        }
    }

    pub fn prompt_tokens(&self) -> usize {
        self.prompt_lens.iter().sum()
    }

    pub fn completion_tokens(&self) -> usize {
        self.completion_tokens
    }

    /// The most tokens any one choice generated.
    pub fn max_choice_completion_tokens(&self) -> usize {
        self.max_choice_completion_tokens
    }

    /// A streamed choice produced `num_tokens` more tokens.
    pub fn note_streamed(&mut self, choice_index: usize, num_tokens: usize) {
        if let Some(streamed) = self.streamed.get_mut(choice_index) {
            *streamed += num_tokens;
        }
    }

    /// vLLM's `continuous_usage_stats`: one choice's usage so far (its prompt, its tokens).
    pub fn running(&self, choice_index: usize) -> WireUsage {
        let prompt_tokens = self
            .prompt_lens
            .get(choice_index / self.n)
            .copied()
            .unwrap_or(0);
        let completion_tokens = self.streamed.get(choice_index).copied().unwrap_or(0);
        WireUsage::new(prompt_tokens, completion_tokens)
    }

    /// The whole response's usage (with what speculation proposed and kept, when it ran).
    pub fn usage(&self) -> WireUsage {
        WireUsage {
            prompt_tokens_details: Some(PromptTokensDetails {
                cached_tokens: self.cached.iter().sum(),
            }),
            completion_tokens_details: self.spec_decode.map(|spec| CompletionTokensDetails {
                accepted_prediction_tokens: Some(spec.num_accepted_tokens),
                rejected_prediction_tokens: Some(
                    spec.num_draft_tokens
                        .saturating_sub(spec.num_accepted_tokens),
                ),
                ..CompletionTokensDetails::default()
            }),
            ..WireUsage::new(self.prompt_tokens(), self.completion_tokens)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn prompts_count_once_and_choices_add_up() {
        let mut totals = UsageTotals::new(vec![10, 4], 2);
        let usage = |completion, cached| Usage {
            prompt_tokens: 0,
            completion_tokens: completion,
            num_cached_tokens: cached,
            spec_decode: None,
        };
        totals.add(0, &usage(3, 0));
        totals.add(1, &usage(5, 8));
        totals.add(2, &usage(1, 0));
        totals.add(3, &usage(2, 0));
        let json = serde_json::to_value(totals.usage()).expect("usage");
        assert_eq!(json["prompt_tokens"], 14);
        assert_eq!(json["completion_tokens"], 11);
        assert_eq!(json["total_tokens"], 25);
        assert_eq!(json["prompt_tokens_details"]["cached_tokens"], 8);
        assert_eq!(totals.max_choice_completion_tokens(), 5);
    }

    #[test]
    fn running_usage_counts_one_choice_streamed_then_finished() {
        let mut totals = UsageTotals::new(vec![10, 4], 2);
        totals.note_streamed(3, 1);
        totals.note_streamed(3, 1);
        assert_eq!(
            serde_json::to_value(totals.running(3)).expect("usage"),
            json!({"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6})
        );
        assert_eq!(totals.running(0).completion_tokens, 0);
        let finished = Usage {
            prompt_tokens: 4,
            completion_tokens: 3,
            num_cached_tokens: 0,
            spec_decode: None,
        };
        totals.add(3, &finished);
        assert_eq!(totals.running(3).completion_tokens, 3);
    }
}
