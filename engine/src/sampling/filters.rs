//! From processed logits to one token: top-k, softmax weights, top-p, min-p and the draw.
//!
//! After top-k, candidates carry *unnormalised* probabilities (`exp((logit - max) / temperature)`,
//! so the most likely token weighs exactly 1); every later filter is ratio-based, so renormalising
//! is implicit and the draw scales by whatever mass is left.

use std::cmp::Ordering;

/// A token still in the running: `(token_id, value)`, where the value is its logit until
/// `logits_to_weights`, then its unnormalised probability (finite and > 0). Both orders agree, so
/// top-k can run on logits and spare the exponentials of every token it drops.
pub(super) type Candidate = (u32, f32);

/// How many of the most likely candidates `keep_top_p` first assumes hold the nucleus; grown
/// fourfold until they do, so a full-vocabulary sort is only needed for very flat distributions.
const INITIAL_NUCLEUS_GUESS: usize = 64;

/// Descending probability, ties to the lowest token id: a total order, so every filter and every
/// run agree on it.
fn by_descending_probability(a: &Candidate, b: &Candidate) -> Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

fn total_weight(candidates: &[Candidate]) -> f64 {
    candidates
        .iter()
        .map(|&(_, weight)| f64::from(weight))
        .sum()
}

/// Index of the largest value, ties to the lowest index; `None` when every value is `-inf` or NaN.
pub(super) fn argmax(values: &[f32]) -> Option<usize> {
    // Two branch-free passes beat one branchy pass over a 49k-entry row; `f32::max` skips NaN.
    let max_value = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max_value == f32::NEG_INFINITY {
        return None;
    }
    values.iter().position(|&value| value == max_value)
}

/// Fills `candidates` with `(token_id, logit)` for every token that is still possible
/// (`-inf` and NaN logits drop out here).
#[cfg(test)]
pub(super) fn fill_candidates(logits: &[f32], candidates: &mut Vec<Candidate>) {
    candidates.clear();
    candidates.extend(
        logits
            .iter()
            .enumerate()
            .filter(|&(_, &logit)| logit > f32::NEG_INFINITY)
            .map(|(token_id, &logit)| (token_id as u32, logit)),
    );
}

/// Turns each candidate's logit into its softmax weight `exp((logit - max_logit) / temperature)`,
/// dropping those that underflow to zero. The most likely token weighs exactly 1.
pub(super) fn logits_to_weights(candidates: &mut Vec<Candidate>, max_logit: f32, temperature: f32) {
    let inverse_temperature = 1.0 / temperature;
    for (_, value) in candidates.iter_mut() {
        // Subtract first, then scale: no overflow even for a tiny temperature.
        *value = exp_non_positive((*value - max_logit) * inverse_temperature);
    }
    candidates.retain(|&(_, weight)| weight > 0.0);
}

/// `e^x` for `x <= 0` (NaN-free input), within 3e-7 relative of the exact value (f32::exp: ~6e-8), 0 below -87.3 (where
/// `f32::exp` turns subnormal). Branch-free, so a loop over a row vectorizes: `2^k · p(r)` with
/// `k = round(x / ln 2)`, `r = x - k ln 2` in [-ln2/2, ln2/2] and `p` a degree-6 Taylor polynomial.
#[inline]
pub(super) fn exp_non_positive(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    /// 1.5 · 2^23: adding and subtracting it rounds to the nearest integer.
    const ROUNDER: f32 = 12_582_912.0;
    let clamped = x.max(-87.3);
    let k = (clamped * LOG2_E + ROUNDER) - ROUNDER;
    let r = (clamped - k * LN2_HI) - k * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // 2^k from k's float bits (no float-to-int conversion, so a loop stays vectorized): with
    // n = k + 127 in [1, 127], 2^23 + n holds n in its low mantissa bits, which shift up into
    // the exponent field; the upper bits of 2^23 shift out.
    let biased = (k + 127.0) + 8_388_608.0;
    let scale = f32::from_bits(biased.to_bits() << 23);
    let value = p * scale;
    if x < -87.3 {
        0.0
    } else {
        value
    }
}

/// Keeps the `top_k` most likely candidates (0 = off) in O(n); their order is left unspecified.
/// Works on logits or on weights alike.
pub(super) fn keep_top_k(candidates: &mut Vec<Candidate>, top_k: usize) {
    if top_k == 0 || top_k >= candidates.len() {
        return;
    }
    candidates.select_nth_unstable_by(top_k - 1, by_descending_probability);
    candidates.truncate(top_k);
}

/// Keeps the smallest set of most likely candidates whose mass reaches `top_p` of the remaining
/// total (always at least one), sorted by descending probability.
pub(super) fn keep_top_p(candidates: &mut Vec<Candidate>, top_p: f32) {
    if top_p >= 1.0 || candidates.is_empty() {
        return;
    }
    let target_mass = f64::from(top_p) * total_weight(candidates);
    keep_top_p_of_mass(candidates, target_mass);
}

/// Keeps the smallest set of most likely candidates whose mass reaches `target_mass` (all of
/// them if none does), sorted by descending probability. `target_mass` may come from a larger
/// row than the candidates (pruned by `prune::top_p_floor`).
pub(super) fn keep_top_p_of_mass(candidates: &mut Vec<Candidate>, target_mass: f64) {
    if candidates.is_empty() {
        return;
    }
    let num_head = select_head_holding(candidates, target_mass);
    let head = &mut candidates[..num_head];
    head.sort_unstable_by(by_descending_probability);
    let mut cumulative_mass = 0.0;
    let num_kept = head
        .iter()
        .position(|&(_, weight)| {
            cumulative_mass += f64::from(weight);
            cumulative_mass >= target_mass
        })
        .map_or(num_head, |index| index + 1);
    candidates.truncate(num_kept);
}

/// Moves the `n` most likely candidates to the front, for the smallest tried `n` whose mass
/// reaches `target_mass`, and returns `n`. Each try is one O(len) selection.
fn select_head_holding(candidates: &mut [Candidate], target_mass: f64) -> usize {
    let num_candidates = candidates.len();
    let mut num_head = INITIAL_NUCLEUS_GUESS.min(num_candidates);
    loop {
        if num_head == num_candidates {
            return num_head;
        }
        candidates.select_nth_unstable_by(num_head - 1, by_descending_probability);
        if total_weight(&candidates[..num_head]) >= target_mass {
            return num_head;
        }
        num_head = (num_head * 4).min(num_candidates);
    }
}

/// Drops candidates whose probability is below `min_p` times the most likely one's (0 = off).
pub(super) fn keep_min_p(candidates: &mut Vec<Candidate>, min_p: f32) {
    if min_p <= 0.0 {
        return;
    }
    let max_weight = candidates
        .iter()
        .map(|&(_, weight)| weight)
        .fold(0.0, f32::max);
    let min_weight = min_p * max_weight;
    candidates.retain(|&(_, weight)| weight >= min_weight);
}

/// Draws one candidate with probability proportional to its weight, by inverse CDF with `uniform`
/// (in [0, 1)) over the candidates in their order; `None` if there is none.
pub(super) fn draw(candidates: &[Candidate], uniform: f64) -> Option<u32> {
    let &(last_token_id, _) = candidates.last()?;
    let target_mass = uniform * total_weight(candidates);
    let mut cumulative_mass = 0.0;
    for &(token_id, weight) in candidates {
        cumulative_mass += f64::from(weight);
        if cumulative_mass > target_mass {
            return Some(token_id);
        }
    }
    Some(last_token_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidates_from(weights: &[f32]) -> Vec<Candidate> {
        weights
            .iter()
            .enumerate()
            .map(|(id, &w)| (id as u32, w))
            .collect()
    }

    fn sorted_ids(candidates: &[Candidate]) -> Vec<u32> {
        let mut ids: Vec<u32> = candidates.iter().map(|&(id, _)| id).collect();
        ids.sort_unstable();
        ids
    }

    /// A skewed pseudo-random row: a few likely tokens, a long flat tail.
    fn skewed_weights(num_tokens: usize) -> Vec<f32> {
        (0..num_tokens as u32)
            .map(|i| {
                let noise = (i.wrapping_mul(2_654_435_761) >> 8) as f32 / 16_777_216.0;
                (-12.0 * noise).exp()
            })
            .collect()
    }

    /// The reference: full sort, then the shortest prefix reaching `top_p` of the mass.
    fn nucleus_by_full_sort(weights: &[f32], top_p: f32) -> Vec<u32> {
        let mut all = candidates_from(weights);
        all.sort_by(by_descending_probability);
        let target_mass = f64::from(top_p) * total_weight(&all);
        let mut cumulative_mass = 0.0;
        let num_kept = all
            .iter()
            .position(|&(_, w)| {
                cumulative_mass += f64::from(w);
                cumulative_mass >= target_mass
            })
            .map_or(all.len(), |i| i + 1);
        all.truncate(num_kept);
        sorted_ids(&all)
    }

    #[test]
    fn argmax_takes_lowest_id_on_ties_and_skips_nan() {
        assert_eq!(argmax(&[1.0, 3.0, f32::NAN, 3.0]), Some(1));
        assert_eq!(argmax(&[f32::NAN, f32::NEG_INFINITY]), None);
        assert_eq!(argmax(&[]), None);
    }

    #[test]
    fn candidates_drop_impossible_tokens_and_weigh_relative_to_the_top() {
        let mut candidates = Vec::new();
        fill_candidates(&[0.0, f32::NEG_INFINITY, 1.0, f32::NAN], &mut candidates);
        assert_eq!(candidates, vec![(0, 0.0), (2, 1.0)]);
        let mut weights = candidates.clone();
        logits_to_weights(&mut weights, 1.0, 1.0);
        assert_eq!(
            weights,
            vec![(0, (-1.0f32).exp()), (2, 1.0)],
            "the top weighs exactly 1"
        );
        logits_to_weights(&mut candidates, 1.0, 1e-3);
        assert_eq!(
            candidates,
            vec![(2, 1.0)],
            "exp(-1000) underflows and is dropped"
        );
    }

    #[test]
    fn the_fast_exponential_matches_the_library_one() {
        let mut worst = 0.0f64;
        let mut x = 0.0f32;
        while x > -87.0 {
            let exact = f64::from(x).exp();
            let fast = f64::from(exp_non_positive(x));
            worst = worst.max(((fast - exact) / exact).abs());
            x -= 0.000_731;
        }
        assert!(worst < 3e-7, "worst relative error {worst}");
        assert_eq!(exp_non_positive(0.0), 1.0);
        assert_eq!(exp_non_positive(-100.0), 0.0);
        assert_eq!(exp_non_positive(f32::NEG_INFINITY), 0.0);
    }

    #[test]
    fn top_k_keeps_the_k_most_likely() {
        let weights = skewed_weights(10_000);
        let mut candidates = candidates_from(&weights);
        keep_top_k(&mut candidates, 5);
        let mut expected = candidates_from(&weights);
        expected.sort_by(by_descending_probability);
        expected.truncate(5);
        assert_eq!(sorted_ids(&candidates), sorted_ids(&expected));
    }

    #[test]
    fn top_p_matches_full_sort_for_peaked_and_flat_rows() {
        for top_p in [0.1, 0.5, 0.9, 0.999] {
            for weights in [skewed_weights(49_152), vec![1.0; 1_000]] {
                let mut candidates = candidates_from(&weights);
                keep_top_p(&mut candidates, top_p);
                assert_eq!(
                    sorted_ids(&candidates),
                    nucleus_by_full_sort(&weights, top_p)
                );
            }
        }
    }

    #[test]
    fn top_p_keeps_at_least_one_and_min_p_is_relative_to_the_top() {
        let mut candidates = candidates_from(&[0.5, 0.3, 0.15, 0.05]);
        keep_top_p(&mut candidates, 1e-6);
        assert_eq!(candidates, vec![(0, 0.5)]);

        let mut candidates = candidates_from(&[0.5, 0.3, 0.15, 0.05]);
        keep_top_p(&mut candidates, 0.75);
        assert_eq!(sorted_ids(&candidates), vec![0, 1]);

        let mut candidates = candidates_from(&[0.3, 0.5, 0.15, 0.05]);
        keep_min_p(&mut candidates, 0.5);
        assert_eq!(sorted_ids(&candidates), vec![0, 1], "keeps weights >= 0.25");
    }
}
