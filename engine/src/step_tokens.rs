//! How many tokens each engine step ran, as a histogram the engine keeps (vLLM's
//! `iteration_tokens_total`): a step of one decode is 1, a chunked prefill fills
//! `max_num_batched_tokens`. The engine counts; the server only exports the counts.

/// vLLM's bucket bounds: powers of two up to a large `max_num_batched_tokens`.
pub const STEP_TOKENS_BOUNDS: [u64; 13] = [
    1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384,
];

/// Steps by their number of tokens, cumulative per bound as Prometheus histograms count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepTokenCounts {
    /// Steps of at most `STEP_TOKENS_BOUNDS[i]` tokens.
    pub cumulative: [u64; STEP_TOKENS_BOUNDS.len()],
    pub num_steps: u64,
    pub num_tokens: u64,
}

impl StepTokenCounts {
    pub fn observe(&mut self, num_tokens: usize) {
        let num_tokens = num_tokens as u64;
        for (count, &bound) in self.cumulative.iter_mut().zip(&STEP_TOKENS_BOUNDS) {
            if num_tokens <= bound {
                *count += 1;
            }
        }
        self.num_steps += 1;
        self.num_tokens += num_tokens;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_count_in_every_bucket_at_or_above_their_size() {
        let mut counts = StepTokenCounts::default();
        for num_tokens in [1, 9, 9, 20_000] {
            counts.observe(num_tokens);
        }
        assert_eq!(counts.cumulative[0], 1, "≤ 1");
        assert_eq!(counts.cumulative[1], 1, "≤ 8");
        assert_eq!(counts.cumulative[2], 3, "≤ 16");
        assert_eq!(counts.cumulative[12], 3, "20,000 is past the last bound");
        assert_eq!((counts.num_steps, counts.num_tokens), (4, 20_019));
    }
}
