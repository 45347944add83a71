//! Log-probabilities reported back to the caller: a numerically stable log-softmax and the
//! selection of the most likely alternatives.

/// Writes `log_softmax(logits)` into `out`, reusing its allocation.
///
/// Stable for any magnitude: the maximum is subtracted before exponentiating and the sum is
/// accumulated in `f64`. NaN logits count as impossible (`-inf`). Degenerate rows never panic:
/// if every logit is `-inf`/NaN every entry is `-inf`; if some logits are `+inf` they share all
/// the probability mass.
pub fn log_softmax_into(logits: &[f32], out: &mut Vec<f32>) {
    out.clear();
    let max_logit = logits
        .iter()
        .copied()
        .filter(|v| !v.is_nan())
        .fold(f32::NEG_INFINITY, f32::max);
    if max_logit == f32::NEG_INFINITY {
        out.resize(logits.len(), f32::NEG_INFINITY);
        return;
    }
    if max_logit == f32::INFINITY {
        let num_infinite = logits.iter().filter(|&&v| v == f32::INFINITY).count();
        let shared_logprob = -(num_infinite as f32).ln();
        out.extend(logits.iter().map(|&v| {
            if v == f32::INFINITY {
                shared_logprob
            } else {
                f32::NEG_INFINITY
            }
        }));
        return;
    }
    let sum_exp: f64 = logits
        .iter()
        .filter(|v| !v.is_nan())
        .map(|&v| f64::from((v - max_logit).exp()))
        .sum();
    let log_sum_exp = sum_exp.ln() as f32;
    out.extend(logits.iter().map(|&v| {
        if v.is_nan() {
            f32::NEG_INFINITY
        } else {
            (v - max_logit) - log_sum_exp
        }
    }));
}

/// The sampled token's and then `listed` tokens' log-probabilities, each token once, in that
/// order (vLLM's `logprob_token_ids`); ids outside the row are skipped.
pub fn listed_logprobs(logprobs: &[f32], sampled: u32, listed: &[u32]) -> Vec<(u32, f32)> {
    let mut entries: Vec<(u32, f32)> = Vec::with_capacity(listed.len() + 1);
    for &token_id in std::iter::once(&sampled).chain(listed) {
        let Some(&logprob) = logprobs.get(token_id as usize) else {
            continue;
        };
        if !entries.iter().any(|&(seen, _)| seen == token_id) {
            entries.push((token_id, logprob));
        }
    }
    entries
}

/// The `n` largest entries of `logprobs` as `(token_id, logprob)`, sorted by descending logprob
/// (ties: lowest token id first). NaN entries rank last.
///
/// One pass over the row keeping a small sorted buffer: O(vocab) when `n` is small, as it is for
/// `top_logprobs` (20 by default), and no allocation beyond the result. A large `n` (a server with
/// a high `--max-logprobs`) selects instead: O(vocab + n log n).
pub fn top_n(logprobs: &[f32], n: usize) -> Vec<(u32, f32)> {
    if n > MAX_BUFFERED_TOP_N {
        return top_n_by_selection(logprobs, n);
    }
    let mut best: Vec<(u32, f32)> = Vec::with_capacity(n.min(logprobs.len()) + 1);
    if n == 0 {
        return best;
    }
    for (token_id, &logprob) in logprobs.iter().enumerate() {
        let rank_key = rank_of(logprob);
        let is_full = best.len() == n;
        if is_full
            && best
                .last()
                .is_some_and(|&(_, worst)| rank_key <= rank_of(worst))
        {
            continue;
        }
        // Insert after every entry at least as good, so earlier (lower) ids win ties.
        let position = best.partition_point(|&(_, kept)| rank_of(kept) >= rank_key);
        best.insert(position, (token_id as u32, logprob));
        best.truncate(n);
    }
    best
}

/// Above this many alternatives `top_n` selects instead of keeping a sorted buffer.
const MAX_BUFFERED_TOP_N: usize = 64;

/// `top_n` for a large `n`: the same entries in the same order.
fn top_n_by_selection(logprobs: &[f32], n: usize) -> Vec<(u32, f32)> {
    let order = |a: &(u32, f32), b: &(u32, f32)| {
        rank_of(b.1)
            .total_cmp(&rank_of(a.1))
            .then_with(|| a.0.cmp(&b.0))
    };
    let mut all: Vec<(u32, f32)> = (0u32..).zip(logprobs.iter().copied()).collect();
    if n < all.len() {
        all.select_nth_unstable_by(n, order);
        all.truncate(n);
    }
    all.sort_unstable_by(order);
    all
}

/// The value `top_n` ranks by: NaN counts as `-inf`.
fn rank_of(logprob: f32) -> f32 {
    if logprob.is_nan() {
        f32::NEG_INFINITY
    } else {
        logprob
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_softmax(logits: &[f32]) -> Vec<f32> {
        let mut out = Vec::new();
        log_softmax_into(logits, &mut out);
        out
    }

    #[test]
    fn listed_tokens_follow_the_sampled_one_once_each() {
        let row = [-0.5, -1.0, -2.0, -3.0];
        assert_eq!(
            listed_logprobs(&row, 2, &[3, 2, 0, 3, 9]),
            [(2, -2.0), (3, -3.0), (0, -0.5)]
        );
    }

    #[test]
    fn a_large_n_selects_the_same_entries_in_the_same_order() {
        // Ties, NaN and -inf included; the buffer (n ≤ 64) is the reference.
        let row: Vec<f32> = (0..400)
            .map(|i| match i % 7 {
                0 => f32::NAN,
                1 => f32::NEG_INFINITY,
                _ => -(((i * 37) % 50) as f32) / 10.0,
            })
            .collect();
        for n in [10, 64] {
            assert_eq!(top_n_by_selection(&row, n), top_n(&row, n), "n = {n}");
        }
        let all = top_n(&row, 1000);
        assert_eq!(all.len(), 400);
        assert_eq!(&all[..64], &top_n(&row, 64)[..]);
        assert!(all.windows(2).all(|w| rank_of(w[0].1) >= rank_of(w[1].1)));
        assert_eq!(top_n(&row, 300).len(), 300);
    }

    #[test]
    fn log_softmax_matches_hand_computation() {
        let logprobs = log_softmax(&[1.0, 2.0, 3.0]);
        let log_z = (1f64.exp() + 2f64.exp() + 3f64.exp()).ln();
        for (i, &lp) in logprobs.iter().enumerate() {
            let expected = (i as f64 + 1.0) - log_z;
            assert!(
                (f64::from(lp) - expected).abs() < 1e-6,
                "{i}: {lp} vs {expected}"
            );
        }
    }

    #[test]
    fn log_softmax_is_stable_for_huge_logits() {
        let logprobs = log_softmax(&[1000.0, 1001.0, -1000.0]);
        assert!(logprobs.iter().all(|v| !v.is_nan()));
        let total: f32 = logprobs.iter().map(|v| v.exp()).sum();
        assert!((total - 1.0).abs() < 1e-6);
        assert!((logprobs[1] - logprobs[0] - 1.0).abs() < 1e-5);
    }

    #[test]
    fn log_softmax_reuses_the_buffer_and_handles_degenerate_rows() {
        let mut out = vec![7.0; 10];
        log_softmax_into(&[f32::NEG_INFINITY, f32::NAN], &mut out);
        assert_eq!(out, vec![f32::NEG_INFINITY; 2]);

        log_softmax_into(&[f32::INFINITY, 0.0, f32::INFINITY], &mut out);
        assert_eq!(out[1], f32::NEG_INFINITY);
        assert!((out[0] - 0.5f32.ln()).abs() < 1e-6 && out[0] == out[2]);

        log_softmax_into(&[0.0, f32::NAN], &mut out);
        assert_eq!(out, vec![0.0, f32::NEG_INFINITY]);
    }

    #[test]
    fn top_n_is_sorted_sized_and_breaks_ties_by_lowest_id() {
        let logprobs = [-3.0, -1.0, -2.0, -1.0, -5.0, f32::NAN];
        assert_eq!(top_n(&logprobs, 3), vec![(1, -1.0), (3, -1.0), (2, -2.0)]);
        assert!(top_n(&logprobs, 0).is_empty());
        let all = top_n(&logprobs, 100);
        assert_eq!(all.len(), logprobs.len());
        assert_eq!(all.last().map(|&(id, _)| id), Some(5), "NaN ranks last");
    }

    #[test]
    fn top_n_agrees_with_a_full_sort() {
        let logprobs: Vec<f32> = (0..5_000u32)
            .map(|i| -((i.wrapping_mul(2_654_435_761) % 997) as f32))
            .collect();
        let mut expected: Vec<(u32, f32)> = logprobs
            .iter()
            .enumerate()
            .map(|(i, &v)| (i as u32, v))
            .collect();
        expected.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        expected.truncate(20);
        assert_eq!(top_n(&logprobs, 20), expected);
    }
}
