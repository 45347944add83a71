//! What speculation proposed and what the target model kept, counted as vLLM's
//! `spec_decode_*` metrics count them: a draft is one sequence's proposal in one step.

/// Totals since the engine started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpecDecodeCounters {
    /// Proposals verified (one per sequence and step that proposed at least one token).
    pub num_drafts: u64,
    /// Tokens proposed.
    pub num_draft_tokens: u64,
    /// Proposed tokens the target model accepted.
    pub num_accepted_tokens: u64,
    /// `[i]`: proposals whose token at position `i` (0-based) was accepted; as long as
    /// `num_speculative_tokens`.
    pub num_accepted_tokens_per_pos: Vec<u64>,
}

impl SpecDecodeCounters {
    /// Counters for proposals of up to `num_speculative_tokens` tokens.
    pub fn new(num_speculative_tokens: usize) -> Self {
        Self {
            num_accepted_tokens_per_pos: vec![0; num_speculative_tokens],
            ..Self::default()
        }
    }

    /// One sequence's verified proposal of `num_draft_tokens`, of which the first
    /// `num_accepted` were kept.
    pub fn observe(&mut self, num_draft_tokens: usize, num_accepted: usize) {
        if num_draft_tokens == 0 {
            return;
        }
        self.num_drafts += 1;
        self.num_draft_tokens += num_draft_tokens as u64;
        self.num_accepted_tokens += num_accepted as u64;
        for count in self
            .num_accepted_tokens_per_pos
            .iter_mut()
            .take(num_accepted)
        {
            *count += 1;
        }
    }

    /// Accepted tokens per proposed token, in [0, 1] (`None` before any proposal).
    pub fn acceptance_rate(&self) -> Option<f64> {
        (self.num_draft_tokens > 0)
            .then(|| self.num_accepted_tokens as f64 / self.num_draft_tokens as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proposals_count_per_position_as_vllm_does() {
        let mut counters = SpecDecodeCounters::new(3);
        counters.observe(3, 2);
        counters.observe(2, 0);
        counters.observe(0, 0);
        counters.observe(3, 3);
        assert_eq!(counters.num_drafts, 3);
        assert_eq!(counters.num_draft_tokens, 8);
        assert_eq!(counters.num_accepted_tokens, 5);
        assert_eq!(counters.num_accepted_tokens_per_pos, vec![2, 2, 1]);
        assert_eq!(counters.acceptance_rate(), Some(5.0 / 8.0));
        assert_eq!(SpecDecodeCounters::new(2).acceptance_rate(), None);
    }
}
