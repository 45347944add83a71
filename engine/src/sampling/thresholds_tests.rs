//! The twin against the host pipeline's filters (same kept set on rows without ties) and
//! against the exact filtered distribution (chi-square over 10,000 draws).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::sampling::device::RowFilters;
use crate::sampling::filters::{
    fill_candidates, keep_min_p, keep_top_k, keep_top_p, logits_to_weights,
};
use crate::sampling::reference::{check_draws, filtered_distribution, FilterParams};

/// What the host pipeline keeps (filters.rs), in vocabulary order.
fn host_kept(logits: &[f32], p: &FilterParams) -> Vec<u32> {
    let max_logit = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut candidates = Vec::new();
    fill_candidates(logits, &mut candidates);
    keep_top_k(&mut candidates, p.top_k);
    logits_to_weights(&mut candidates, max_logit, p.temperature);
    keep_top_p(&mut candidates, p.top_p);
    keep_min_p(&mut candidates, p.min_p);
    let mut ids: Vec<u32> = candidates.iter().map(|&(id, _)| id).collect();
    ids.sort_unstable();
    ids
}

const CASES: [FilterParams; 8] = [
    FilterParams { temperature: 1.0, top_k: 0, top_p: 1.0, min_p: 0.0 },
    FilterParams { temperature: 0.5, top_k: 1, top_p: 1.0, min_p: 0.0 },
    FilterParams { temperature: 0.8, top_k: 40, top_p: 1.0, min_p: 0.0 },
    FilterParams { temperature: 1.0, top_k: 0, top_p: 0.9, min_p: 0.0 },
    FilterParams { temperature: 2.0, top_k: 0, top_p: 0.5, min_p: 0.0 },
    FilterParams { temperature: 1.0, top_k: 0, top_p: 1.0, min_p: 0.1 },
    FilterParams { temperature: 0.7, top_k: 50, top_p: 0.95, min_p: 0.05 },
    FilterParams { temperature: 1.5, top_k: 5, top_p: 0.8, min_p: 0.0 },
];

#[test]
fn keeps_what_the_host_filters_keep() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for row in 0..6 {
        // Continuous random logits (no ties), some rows peaked, some flat.
        let spread = [0.5f32, 2.0, 6.0][row % 3];
        let logits: Vec<f32> = (0..700)
            .map(|_| rng.random::<f32>() * 2.0 * spread - spread)
            .collect();
        for p in CASES {
            let twin = kept_tokens(&logits, &p.row_filters());
            assert_eq!(twin, host_kept(&logits, &p), "row {row}, {p:?}");
        }
    }
}

#[test]
fn draws_follow_the_exact_filtered_distribution() {
    let logits = [
        3.0f32, 2.6, 2.2, 2.0, 1.5, 1.0, 0.5, 0.0, -1.0, -2.0, 2.4, 1.8, 2.5, -0.5,
    ];
    let cases = [
        FilterParams { temperature: 0.8, top_k: 6, top_p: 1.0, min_p: 0.0 },
        FilterParams { temperature: 1.0, top_k: 0, top_p: 0.85, min_p: 0.0 },
        FilterParams { temperature: 1.2, top_k: 0, top_p: 1.0, min_p: 0.2 },
        FilterParams { temperature: 0.9, top_k: 8, top_p: 0.9, min_p: 0.1 },
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for p in cases {
        let filters = p.row_filters();
        let tokens: Vec<u32> = (0..10_000)
            .map(|_| sample_by_thresholds(&logits, &filters, rng.random::<f32>()))
            .collect();
        let expected = filtered_distribution(&logits, &p);
        if let Err(why) = check_draws(&tokens, &expected) {
            panic!("{p:?}: {why}");
        }
    }
}

#[test]
fn a_draw_walks_the_kept_tokens_in_vocabulary_order() {
    // Weights 1, e^-1, e^-2 for tokens 2, 0, 1 (temperature 1, nothing filtered).
    let logits = [2.0f32, 1.0, 3.0];
    let filters = RowFilters {
        inv_temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        min_p: 0.0,
    };
    let total = 1.0 + (-1.0f32).exp() + (-2.0f32).exp();
    let share_of_0 = (-1.0f32).exp() / total;
    let share_of_1 = (-2.0f32).exp() / total;
    assert_eq!(sample_by_thresholds(&logits, &filters, 0.0), 0);
    assert_eq!(sample_by_thresholds(&logits, &filters, share_of_0 * 0.99), 0);
    assert_eq!(sample_by_thresholds(&logits, &filters, share_of_0 * 1.01), 1);
    assert_eq!(
        sample_by_thresholds(&logits, &filters, (share_of_0 + share_of_1) * 1.01),
        2
    );
    assert_eq!(sample_by_thresholds(&logits, &filters, 0.999_999), 2);
}

#[test]
fn degenerate_rows_are_decided_without_a_draw() {
    let filters = RowFilters {
        inv_temperature: 1.0,
        top_k: 0,
        top_p: 0.9,
        min_p: 0.0,
    };
    let inf = [0.0f32, f32::INFINITY, 1.0, f32::INFINITY];
    assert_eq!(sample_by_thresholds(&inf, &filters, 0.5), 1);
    let nothing = [f32::NEG_INFINITY, f32::NAN];
    assert_eq!(sample_by_thresholds(&nothing, &filters, 0.5), 0);
    // -inf and NaN entries never come out.
    let mixed = [f32::NEG_INFINITY, 0.0, f32::NAN, 0.0];
    for uniform in [0.0, 0.3, 0.7, 0.99] {
        let token = sample_by_thresholds(&mixed, &filters, uniform);
        assert!(token == 1 || token == 3, "{token}");
    }
}

/// Plain bisection over the bit patterns: the specification the multi-pivot search must meet.
fn bisect(low: f32, goal: f64, mut at_least: impl FnMut(f32) -> f64) -> f32 {
    let (mut lo, mut hi) = (low.to_bits(), 1f32.to_bits());
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if at_least(f32::from_bits(mid)) >= goal {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    f32::from_bits(lo)
}

#[test]
fn the_multi_pivot_search_finds_what_bisection_finds() {
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    let low = f32::from_bits(1);
    for row in 0..40 {
        let spread = [0.2f32, 3.0, 20.0, 80.0][row % 4];
        let weights: Vec<f32> = (0..500)
            .map(|_| (-(rng.random::<f32>() * spread)).exp())
            .chain([1.0])
            .collect();
        let total = mass_at_least(&weights, low);
        for share in [0.0, 0.1, 0.5, 0.9, 0.95, 0.999, 1.0] {
            let goal = share * total;
            let found = largest_threshold(low, goal, &mut |points| {
                points.map(|t| mass_at_least(&weights, t))
            });
            let expected = bisect(low, goal, |t| mass_at_least(&weights, t));
            assert_eq!(found.to_bits(), expected.to_bits(), "row {row}, share {share}");
        }
        for k in [1.0, 2.0, 40.0, 499.0, 501.0] {
            let found = largest_threshold(low, k, &mut |points| {
                points.map(|t| count_at_least(&weights, t))
            });
            let expected = bisect(low, k, |t| count_at_least(&weights, t));
            assert_eq!(found.to_bits(), expected.to_bits(), "row {row}, top-k {k}");
        }
    }
}

#[test]
fn pivots_lie_inside_the_range_and_the_search_takes_a_third_of_bisection_s_passes() {
    let weights = [1.0f32, 0.5, 0.25, 1e-6, 1e-30];
    let low = f32::from_bits(1);
    let mut bisection_passes = 0;
    bisect(low, 4.0, |t| {
        bisection_passes += 1;
        count_at_least(&weights, t)
    });
    let mut search_passes = 0;
    let found = largest_threshold(low, 4.0, &mut |points| {
        search_passes += 1;
        points.map(|t| count_at_least(&weights, t))
    });
    assert_eq!(found, 1e-6);
    assert!(bisection_passes >= 29, "bisection took {bisection_passes}");
    assert!(search_passes <= 11, "the search took {search_passes} passes");
    for (lo, hi) in [(0u32, 1), (5, 9), (1, 1_065_353_216), (100, 107), (100, 108)] {
        let points = pivots(lo, hi);
        assert!(points.iter().all(|&p| p > lo && p <= hi), "{points:?} of ({lo}, {hi}]");
        assert!(points.windows(2).all(|pair| pair[0] <= pair[1]), "{points:?}");
    }
}

/// The host pipeline's token for `logits` under a grammar's `mask` (greedy, or seeded).
fn host_token(logits: &[f32], mask: &TokenMask, params: &crate::request::SamplingParams) -> u32 {
    use crate::sampling::sampler::{SamplerScratch, SamplingContext, SequenceSampler};
    let ctx = SamplingContext {
        prompt_tokens: &[],
        output_tokens: &[],
        banned_token_ids: &[],
        allowed: Some(mask),
    };
    let mut sampler = SequenceSampler::new(params, 0);
    let sampled = sampler.sample(logits, &ctx, &mut SamplerScratch::default());
    sampled.expect("a row").token_id
}

fn mask_of(vocab_size: usize, allowed: impl IntoIterator<Item = u32>) -> TokenMask {
    let mut mask = TokenMask::new(vocab_size);
    for token in allowed {
        mask.allow(token);
    }
    mask
}

/// A row under a grammar's mask: the masked argmax is the host pipeline's greedy token, the
/// masked twin keeps what the host filters keep of the masked row, and draws only allowed tokens.
#[test]
fn masked_rows_choose_among_allowed_tokens_as_the_host_pipeline_does() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for row in 0..6 {
        let logits: Vec<f32> = (0..700).map(|_| rng.random::<f32>() * 8.0 - 4.0).collect();
        // Every third token, or a narrow band away from the row's best tokens.
        let mask = match row % 2 {
            0 => mask_of(700, (0..700).step_by(3)),
            _ => mask_of(700, 100..140),
        };
        let greedy = crate::request::SamplingParams::greedy();
        assert_eq!(argmax_allowed(&logits, &mask), host_token(&logits, &mask, &greedy), "row {row}");
        let mut masked_row = logits.clone();
        mask.apply_to(&mut masked_row);
        for p in CASES {
            let kept = kept_tokens(&masked_row, &p.row_filters());
            assert_eq!(kept, host_kept(&masked_row, &p), "row {row}, {p:?}");
            for uniform in [0.0, 0.25, 0.5, 0.99] {
                let token = sample_allowed_by_thresholds(&logits, Some(&mask), &p.row_filters(), uniform);
                assert!(mask.allows(token) && kept.contains(&token), "row {row}, {p:?}: {token}");
            }
        }
    }
}

/// Where nothing the mask allows is possible, the kernels' twins take what the host pipeline's
/// fallback takes: the first allowed token (token 0 when the mask allows none), and a `+inf`
/// outside the mask does not count.
#[test]
fn masked_rows_with_nothing_possible_take_the_host_pipeline_s_fallback() {
    let filters = RowFilters { inv_temperature: 1.0, top_k: 0, top_p: 0.9, min_p: 0.0 };
    let sampled = crate::request::SamplingParams { temperature: 1.0, top_p: 0.9, seed: Some(3), ..Default::default() };
    let greedy = crate::request::SamplingParams::greedy();
    let rows: [(&[f32], TokenMask); 4] = [
        (&[5.0, f32::NEG_INFINITY, f32::NAN, 7.0], mask_of(4, [1, 2])),
        (&[f32::INFINITY, 1.0, f32::NEG_INFINITY, 2.0], mask_of(4, [2])),
        (&[1.0, 2.0, 3.0, 4.0], mask_of(4, [])),
        (&[f32::INFINITY, 1.0, f32::INFINITY, 2.0], mask_of(4, [1, 2, 3])),
    ];
    for (i, (logits, mask)) in rows.iter().enumerate() {
        for params in [&greedy, &sampled] {
            let host = host_token(logits, mask, params);
            let twin = if params.is_greedy() {
                argmax_allowed(logits, mask)
            } else {
                sample_allowed_by_thresholds(logits, Some(mask), &filters, 0.5)
            };
            assert_eq!(twin, host, "row {i}, greedy {}", params.is_greedy());
        }
    }
    assert_eq!(argmax_allowed(rows[0].0, &rows[0].1), 1);
    assert_eq!(argmax_allowed(rows[3].0, &rows[3].1), 2);
}
