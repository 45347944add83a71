//! Passes over a whole row that cut it down before the filters (`filters.rs`) select: the row's
//! softmax weights, their total, and a floor that every token top-k or top-p keeps reaches, so
//! that only the tokens at or above it become candidates. Each pass reads a contiguous row in
//! lanes the compiler vectorizes; the selection and sorts that follow see tens or hundreds of
//! candidates instead of the whole vocabulary. The filters keep exactly the tokens they keep
//! over the whole row.

use super::filters::{exp_non_positive, Candidate};

/// Lanes of the vectorized passes.
const LANES: usize = 8;
/// Floors tried for top-k, as distances below the largest logit; the last is no floor.
const TOP_K_DISTANCES: [f32; 8] = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, f32::INFINITY];
/// The smallest positive f32: a weight reaches it iff it is above 0 (every token still possible).
pub(super) const ANY_WEIGHT: f32 = f32::from_bits(1);
/// Floors tried for top-p, as weights (the most likely token weighs 1); the last is no floor.
const TOP_P_FLOORS: [f32; 8] = [
    0.25,
    0.0625,
    1.0 / 128.0,
    1.0 / 1024.0,
    1e-4,
    1e-5,
    1e-7,
    ANY_WEIGHT,
];
/// A floor's mass is summed in f32 lanes (relative error below 1e-3 over a 128k row): it must
/// exceed the target by this share to be trusted.
const MASS_MARGIN: f32 = 1e-2;

/// `exp((logit − max_logit) / temperature)` for every token into `weights` (0 for `-inf` and
/// NaN logits, and where it underflows): the same values `filters::logits_to_weights` gives.
pub(super) fn weights_into(logits: &[f32], max_logit: f32, temperature: f32, weights: &mut Vec<f32>) {
    let inverse_temperature = 1.0 / temperature;
    weights.clear();
    weights.resize(logits.len(), 0.0);
    for (weight, &logit) in weights.iter_mut().zip(logits) {
        let value = exp_non_positive((logit - max_logit) * inverse_temperature);
        // A select, not a branch, so the loop vectorizes: NaN fails the comparison (-inf gives
        // exactly 0 already).
        let keep = if logit >= f32::MIN { u32::MAX } else { 0 };
        *weight = f32::from_bits(value.to_bits() & keep);
    }
}

/// The sum of `weights` in f64 (lanes of partial sums, then their sum).
pub(super) fn total_of(weights: &[f32]) -> f64 {
    let mut lanes = [0f64; LANES];
    let chunks = weights.chunks_exact(LANES);
    let tail: f64 = chunks.remainder().iter().map(|&w| f64::from(w)).sum();
    for chunk in chunks {
        for (lane, &weight) in lanes.iter_mut().zip(chunk) {
            *lane += f64::from(weight);
        }
    }
    lanes.iter().sum::<f64>() + tail
}

/// A logit floor for top-k: at least `top_k` of `logits` reach it (`-inf` if no tried floor
/// does, with fewer than `top_k` finite logits), so the `top_k` largest all do.
pub(super) fn top_k_floor(logits: &[f32], max_logit: f32, top_k: usize) -> f32 {
    // One pass per floor, nearest the top first, as for top-p.
    let reached = TOP_K_DISTANCES
        .iter()
        .map(|distance| max_logit - distance)
        .find(|&floor| count_at_least(logits, floor) >= top_k);
    reached.unwrap_or(f32::NEG_INFINITY)
}

/// How many of `values` are at or above `floor`, counted in lanes.
fn count_at_least(values: &[f32], floor: f32) -> usize {
    let mut lanes = [0u32; LANES];
    let chunks = values.chunks_exact(LANES);
    let rest = chunks.remainder().iter().filter(|&&v| v >= floor).count();
    for chunk in chunks {
        for (lane, &value) in lanes.iter_mut().zip(chunk) {
            *lane += u32::from(value >= floor);
        }
    }
    lanes.iter().map(|&lane| lane as usize).sum::<usize>() + rest
}

/// A weight floor for top-p: the tokens reaching it hold more than `target_mass` (with a
/// margin for rounding), so the smallest most-likely set that reaches the target is among them.
/// `ANY_WEIGHT` when only the whole row does.
pub(super) fn top_p_floor(weights: &[f32], target_mass: f64) -> f32 {
    let needed = target_mass * f64::from(1.0 + MASS_MARGIN);
    // One pass per floor, heaviest first: a peaked row stops after one or two.
    let reached = TOP_P_FLOORS
        .iter()
        .find(|&&floor| mass_at_least(weights, floor) >= needed);
    reached.copied().unwrap_or(ANY_WEIGHT)
}

/// The mass of the weights at or above `floor`, summed in f32 lanes.
fn mass_at_least(weights: &[f32], floor: f32) -> f64 {
    let mut lanes = [0f32; LANES];
    let chunks = weights.chunks_exact(LANES);
    let rest: f32 = chunks.remainder().iter().filter(|&&w| w >= floor).sum();
    for chunk in chunks {
        for (lane, &weight) in lanes.iter_mut().zip(chunk) {
            *lane += if weight >= floor { weight } else { 0.0 };
        }
    }
    lanes.iter().map(|&lane| f64::from(lane)).sum::<f64>() + f64::from(rest)
}

/// Draws a token by inverse CDF with `uniform` (in [0, 1)) over the `weights` at or above
/// `floor` (> 0), in vocabulary order: what `filters::draw` picks from the candidates
/// `fill_at_least(weights, floor)` would make, up to the rounding of the sums, without making
/// them. The masses of blocks of the row are summed in vector lanes, first for the total, then
/// again until the block holding the target mass, which is walked token by token. `None` when no
/// weight reaches the floor.
pub(super) fn draw_at_least(weights: &[f32], floor: f32, uniform: f64) -> Option<u32> {
    const BLOCK: usize = 4 * LANES;
    let block_mass = |block: &[f32]| {
        let mut lanes = [0f64; LANES];
        for chunk in block.chunks(LANES) {
            for (lane, &weight) in lanes.iter_mut().zip(chunk) {
                *lane += if weight >= floor { f64::from(weight) } else { 0.0 };
            }
        }
        lanes.iter().sum::<f64>()
    };
    let total: f64 = weights.chunks(BLOCK).map(block_mass).sum();
    if total <= 0.0 {
        return None;
    }
    let target_mass = uniform * total;
    let mut cumulative_mass = 0.0;
    let mut last_block_with_mass = 0;
    for (block_index, block) in weights.chunks(BLOCK).enumerate() {
        let mass = block_mass(block);
        if mass <= 0.0 {
            continue;
        }
        last_block_with_mass = block_index;
        if cumulative_mass + mass <= target_mass {
            cumulative_mass += mass;
            continue;
        }
        let mut last_kept = None;
        for (offset, &weight) in block.iter().enumerate() {
            if weight >= floor {
                cumulative_mass += f64::from(weight);
                last_kept = Some(block_index * BLOCK + offset);
                if cumulative_mass > target_mass {
                    break;
                }
            }
        }
        // Rounding can leave the walk a hair short of the target: the block's last kept token.
        return last_kept.map(|id| id as u32);
    }
    // Rounding again (the target at the very end): the row's last kept token.
    let block = weights.chunks(BLOCK).nth(last_block_with_mass)?;
    let offset = block.iter().rposition(|&w| w >= floor)?;
    Some((last_block_with_mass * BLOCK + offset) as u32)
}

/// `(token_id, value)` for every value at or above `floor` and above `-inf` (NaN never), in
/// token order. Blocks of the row wholly below the floor are skipped with one vector compare.
pub(super) fn fill_at_least(values: &[f32], floor: f32, candidates: &mut Vec<Candidate>) {
    candidates.clear();
    const BLOCK: usize = 4 * LANES;
    for (block_index, block) in values.chunks(BLOCK).enumerate() {
        let block_max = block.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        if block_max < floor || block_max == f32::NEG_INFINITY {
            continue;
        }
        let first_id = block_index * BLOCK;
        for (offset, &value) in block.iter().enumerate() {
            if value >= floor && value > f32::NEG_INFINITY {
                candidates.push(((first_id + offset) as u32, value));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::filters::{
        draw, fill_candidates, keep_top_k, keep_top_p, keep_top_p_of_mass, logits_to_weights,
    };
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Rows of many shapes: flat to peaked, with ties, a long tail of tiny weights, and tokens
    /// that are impossible (`-inf`) or broken (NaN).
    fn rows(num_tokens: usize) -> Vec<Vec<f32>> {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut all = Vec::new();
        for spread in [0.01f32, 1.0, 4.0, 12.0, 40.0, 200.0] {
            all.push(
                (0..num_tokens)
                    .map(|_| rng.random_range(-spread..spread))
                    .collect(),
            );
        }
        all.push((0..num_tokens).map(|i| -((i % 10) as f32)).collect());
        all.push(
            (0..num_tokens)
                .map(|i| match i % 997 {
                    0 => 0.0,
                    1 => f32::NEG_INFINITY,
                    2 => f32::NAN,
                    _ => -9.0,
                })
                .collect(),
        );
        all
    }

    fn ids(candidates: &[Candidate]) -> Vec<u32> {
        let mut ids: Vec<u32> = candidates.iter().map(|&(id, _)| id).collect();
        ids.sort_unstable();
        ids
    }

    fn max_of(row: &[f32]) -> f32 {
        row.iter().copied().fold(f32::NEG_INFINITY, f32::max)
    }

    /// The dense draw picks the token the candidates' draw picks, for every row shape, floor and
    /// a grid of uniform numbers (the sums round differently only at a hair's breadth from a
    /// token boundary, which no grid point here lands on).
    #[test]
    fn the_dense_draw_picks_what_the_candidates_draw_picks() {
        for num_tokens in [1, 63, 64, 3_001] {
            for row in rows(num_tokens) {
                let mut weights = Vec::new();
                weights_into(&row, max_of(&row), 0.8, &mut weights);
                for floor in [ANY_WEIGHT, 1e-3, 0.1, 1.0] {
                    let mut candidates = Vec::new();
                    fill_at_least(&weights, floor, &mut candidates);
                    for step in 0..1_000 {
                        let uniform = (f64::from(step) + 0.5) / 1_000.0;
                        assert_eq!(
                            draw_at_least(&weights, floor, uniform),
                            draw(&candidates, uniform),
                            "{num_tokens} tokens, floor {floor}, uniform {uniform}"
                        );
                    }
                }
            }
        }
        assert_eq!(draw_at_least(&[0.0, 0.5], 0.6, 0.3), None, "nothing kept");
        assert_eq!(draw_at_least(&[0.5, 0.0, 1.0, 0.0], ANY_WEIGHT, 0.9999), Some(2));
    }

    #[test]
    fn weights_and_total_are_the_pipelines() {
        for row in rows(3_001) {
            let max = max_of(&row);
            let mut dense = Vec::new();
            weights_into(&row, max, 0.7, &mut dense);
            let mut candidates = Vec::new();
            fill_candidates(&row, &mut candidates);
            logits_to_weights(&mut candidates, max, 0.7);
            let positive: Vec<Candidate> = dense
                .iter()
                .enumerate()
                .filter(|&(_, &w)| w > 0.0)
                .map(|(id, &w)| (id as u32, w))
                .collect();
            assert_eq!(positive, candidates);
            let exact: f64 = candidates.iter().map(|&(_, w)| f64::from(w)).sum();
            assert!((total_of(&dense) - exact).abs() <= 1e-12 * exact);
        }
    }

    #[test]
    fn top_k_keeps_the_same_tokens_from_the_floor_as_from_the_whole_row() {
        for row in rows(5_000) {
            let max = max_of(&row);
            for top_k in [1, 2, 10, 50, 999, 4_990] {
                let mut plain = Vec::new();
                fill_candidates(&row, &mut plain);
                keep_top_k(&mut plain, top_k);
                let mut pruned = Vec::new();
                fill_at_least(&row, top_k_floor(&row, max, top_k), &mut pruned);
                keep_top_k(&mut pruned, top_k);
                assert_eq!(ids(&plain), ids(&pruned), "top_k {top_k}");
            }
        }
    }

    #[test]
    fn top_p_keeps_the_same_tokens_from_the_floor_as_from_the_whole_row() {
        for row in rows(5_000) {
            let max = max_of(&row);
            let mut weights = Vec::new();
            weights_into(&row, max, 1.0, &mut weights);
            for top_p in [0.01f32, 0.5, 0.9, 0.95, 0.999] {
                let mut plain = Vec::new();
                fill_candidates(&row, &mut plain);
                logits_to_weights(&mut plain, max, 1.0);
                keep_top_p(&mut plain, top_p);
                let target_mass = f64::from(top_p) * total_of(&weights);
                let mut pruned = Vec::new();
                fill_at_least(&weights, top_p_floor(&weights, target_mass), &mut pruned);
                assert!(pruned.iter().all(|&(_, w)| w > 0.0));
                keep_top_p_of_mass(&mut pruned, target_mass);
                assert_eq!(ids(&plain), ids(&pruned), "top_p {top_p}");
            }
        }
    }

    #[test]
    fn peaked_rows_shrink_to_a_few_candidates() {
        let mut row = vec![-20.0f32; 49_152];
        for i in (0..49_152).step_by(1_000) {
            row[i] = 0.0;
        }
        let mut candidates = Vec::new();
        fill_at_least(&row, top_k_floor(&row, 0.0, 20), &mut candidates);
        assert_eq!(candidates.len(), 50, "only the 50 tokens within half a logit of the top");
        let mut weights = Vec::new();
        weights_into(&row, 0.0, 1.0, &mut weights);
        let floor = top_p_floor(&weights, 0.95 * total_of(&weights));
        fill_at_least(&weights, floor, &mut candidates);
        assert_eq!(candidates.len(), 50);
    }
}
