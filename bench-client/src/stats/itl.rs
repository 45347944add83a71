//! Tokens and chunks: the record keeps each content chunk's arrival time and the request's total
//! output tokens, not how many tokens each chunk carried. One rule attributes tokens to chunks,
//! and both the per-token ITL and the peak output tokens/s use it:
//!
//! the first chunk carries the first token (one token: prefill emits one, and TPOT's
//! `output_tokens − 1` makes the same assumption); the other `n − 1` tokens are split as evenly
//! as integers allow over the later chunks, chunk `j` (1-based among the `k − 1` later ones)
//! getting `⌊j(n−1)/(k−1)⌋ − ⌊(j−1)(n−1)/(k−1)⌋`.
//!
//! With one token per chunk (vLLM, Pagoda) every chunk gets exactly one token and the per-token
//! ITL equals vLLM's per-chunk ITL.

use crate::record::RequestRecord;

/// The gaps between consecutive content chunks, in seconds: vLLM's ITL samples.
pub fn chunk_gaps_s(record: &RequestRecord) -> Vec<f64> {
    record
        .chunk_times_s
        .windows(2)
        .map(|pair| pair[1] - pair[0])
        .collect()
}

/// How many of `num_tokens` output tokens each of `num_chunks` chunks carried, by the rule above.
/// Sums to `num_tokens` whenever there is a chunk.
pub fn tokens_per_chunk(num_tokens: usize, num_chunks: usize) -> Vec<usize> {
    match (num_tokens, num_chunks) {
        (_, 0) => Vec::new(),
        (0, k) => vec![0; k],
        (n, 1) => vec![n],
        (n, k) => {
            let (later_tokens, later_chunks) = ((n - 1) as u128, (k - 1) as u128);
            let cumulative = |j: u128| (j * later_tokens / later_chunks) as usize;
            std::iter::once(1)
                .chain((1..k as u128).map(|j| cumulative(j) - cumulative(j - 1)))
                .collect()
        }
    }
}

/// Per-token inter-token latencies, in seconds: each chunk gap divided evenly among the tokens
/// the later chunk carried (one sample per token). A gap whose chunk carried no token (more
/// chunks than tokens) is added to the next gap that did, so the samples always sum to
/// last chunk − first chunk. A request with fewer than two tokens or two chunks has none.
pub fn per_token_itls_s(record: &RequestRecord) -> Vec<f64> {
    let counts = tokens_per_chunk(record.output_tokens, record.chunk_times_s.len());
    let mut samples = Vec::with_capacity(record.output_tokens.saturating_sub(1));
    let mut pending_s = 0.0;
    for (gap_s, &num_tokens) in chunk_gaps_s(record).iter().zip(counts.iter().skip(1)) {
        pending_s += gap_s;
        if num_tokens > 0 {
            let per_token_s = pending_s / num_tokens as f64;
            samples.extend(std::iter::repeat_n(per_token_s, num_tokens));
            pending_s = 0.0;
        }
    }
    samples
}

/// When each output token arrived: `(time_s, num_tokens)` per chunk by the rule above; a
/// request that produced tokens but no content chunk (a non-streamed response) gets them all
/// at its end.
pub fn token_arrivals(record: &RequestRecord) -> Vec<(f64, usize)> {
    if record.chunk_times_s.is_empty() {
        return match record.output_tokens {
            0 => Vec::new(),
            n => vec![(record.end_s, n)],
        };
    }
    let counts = tokens_per_chunk(record.output_tokens, record.chunk_times_s.len());
    record.chunk_times_s.iter().copied().zip(counts).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_records::streamed;

    #[test]
    fn split_of_tokens_over_chunks() {
        assert_eq!(tokens_per_chunk(5, 5), vec![1, 1, 1, 1, 1]);
        assert_eq!(tokens_per_chunk(7, 4), vec![1, 2, 2, 2]);
        assert_eq!(tokens_per_chunk(6, 3), vec![1, 2, 3]);
        assert_eq!(tokens_per_chunk(3, 5), vec![1, 0, 1, 0, 1]);
        assert_eq!(tokens_per_chunk(4, 1), vec![4]);
        assert_eq!(tokens_per_chunk(0, 2), vec![0, 0]);
        assert_eq!(tokens_per_chunk(4, 0), Vec::<usize>::new());
        for n in 0..40 {
            for k in 1..12 {
                assert_eq!(
                    tokens_per_chunk(n, k).iter().sum::<usize>(),
                    n,
                    "n={n} k={k}"
                );
            }
        }
    }

    #[test]
    fn one_token_per_chunk_gives_vllm_itl() {
        let record = streamed(0, 0.0, 0.0, &[0.5, 0.75, 1.25, 1.5], 1.5, 4);
        assert_eq!(chunk_gaps_s(&record), vec![0.25, 0.5, 0.25]);
        assert_eq!(per_token_itls_s(&record), chunk_gaps_s(&record));
    }

    #[test]
    fn multi_token_chunks_spread_their_gap() {
        // 7 tokens over 4 chunks: 1, 2, 2, 2 tokens; gaps 0.5, 0.25, 1.0.
        let record = streamed(0, 0.0, 0.0, &[0.5, 1.0, 1.25, 2.25], 2.25, 7);
        assert_eq!(chunk_gaps_s(&record), vec![0.5, 0.25, 1.0]);
        let per_token = per_token_itls_s(&record);
        assert_eq!(per_token, vec![0.25, 0.25, 0.125, 0.125, 0.5, 0.5]);
        assert_eq!(per_token.iter().sum::<f64>(), 2.25 - 0.5);
    }

    #[test]
    fn gaps_without_tokens_join_the_next() {
        // 3 tokens over 5 chunks: 1, 0, 1, 0, 1.
        let record = streamed(0, 0.0, 0.0, &[0.25, 0.5, 0.75, 1.0, 1.5], 1.5, 3);
        assert_eq!(per_token_itls_s(&record), vec![0.5, 0.75]);
    }

    #[test]
    fn arrivals_follow_the_same_split() {
        let record = streamed(0, 0.0, 0.0, &[0.5, 1.0, 1.25, 2.25], 2.5, 7);
        assert_eq!(
            token_arrivals(&record),
            vec![(0.5, 1), (1.0, 2), (1.25, 2), (2.25, 2)]
        );
        let mut unstreamed = streamed(0, 0.0, 0.0, &[], 3.0, 9);
        assert_eq!(token_arrivals(&unstreamed), vec![(3.0, 9)]);
        unstreamed.output_tokens = 0;
        assert!(token_arrivals(&unstreamed).is_empty());
    }
}
