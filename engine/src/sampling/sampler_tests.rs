//! Tests of `SequenceSampler`, through its public API.

use super::*;
use crate::sampling::reference::{check_draws, filtered_distribution, FilterParams};

const NO_CONTEXT: SamplingContext<'static> = SamplingContext {
    prompt_tokens: &[],
    output_tokens: &[],
    banned_token_ids: &[],
    allowed: None,
};

fn params(temperature: f32) -> SamplingParams {
    SamplingParams {
        temperature,
        seed: Some(7),
        ..SamplingParams::default()
    }
}

fn sample_one(sampler: &mut SequenceSampler, logits: &[f32], ctx: &SamplingContext<'_>) -> u32 {
    sampler
        .sample(logits, ctx, &mut SamplerScratch::default())
        .expect("non-empty logits")
        .token_id
}

fn draws(
    params: &SamplingParams,
    fallback_seed: u64,
    logits: &[f32],
    num_draws: usize,
) -> Vec<u32> {
    let mut sampler = SequenceSampler::new(params, fallback_seed);
    (0..num_draws)
        .map(|_| sample_one(&mut sampler, logits, &NO_CONTEXT))
        .collect()
}

/// A 49,152-token row with a clear winner at `winner`.
fn vocab_row(winner: usize) -> Vec<f32> {
    let mut logits: Vec<f32> = (0..49_152u32)
        .map(|i| ((i * 37) % 101) as f32 / 50.0)
        .collect();
    logits[winner] = 8.0;
    logits
}

#[test]
fn greedy_is_argmax_with_ties_to_lowest_id() {
    assert_eq!(
        draws(&SamplingParams::greedy(), 0, &vocab_row(4_321), 3),
        vec![4_321; 3]
    );
    assert_eq!(
        draws(&SamplingParams::greedy(), 0, &[0.0, 2.0, 2.0, 1.0], 1),
        vec![1]
    );
}

#[test]
fn seeded_sampling_is_reproducible_and_seeds_matter() {
    let logits = [0.0, 0.5, 1.0, 0.2, -0.3, 0.8];
    let first = draws(&params(1.0), 0, &logits, 50);
    assert_eq!(
        first,
        draws(&params(1.0), 999, &logits, 50),
        "params.seed wins over the fallback"
    );
    let other_seed = SamplingParams {
        seed: Some(8),
        ..params(1.0)
    };
    assert_ne!(first, draws(&other_seed, 0, &logits, 50));

    let unseeded = SamplingParams {
        seed: None,
        ..params(1.0)
    };
    assert_eq!(
        draws(&unseeded, 42, &logits, 50),
        draws(&unseeded, 42, &logits, 50)
    );
    assert_ne!(
        draws(&unseeded, 42, &logits, 50),
        draws(&unseeded, 43, &logits, 50)
    );
}

#[test]
fn truncation_to_one_token_equals_greedy_at_any_temperature() {
    let logits = vocab_row(17);
    for temperature in [0.1, 1.0, 5.0, 100.0] {
        let top_k_one = SamplingParams {
            top_k: 1,
            ..params(temperature)
        };
        let tiny_top_p = SamplingParams {
            top_p: 1e-6,
            ..params(temperature)
        };
        let min_p_one = SamplingParams {
            min_p: 1.0,
            ..params(temperature)
        };
        for truncated in [top_k_one, tiny_top_p, min_p_one] {
            assert_eq!(
                draws(&truncated, 0, &logits, 20),
                vec![17; 20],
                "{truncated:?}"
            );
        }
    }
}

#[test]
fn temperature_sampling_frequencies_match_softmax() {
    let logits = [1.0f32, 2.0, 0.5, -1.0];
    let temperature = 0.8;
    let num_draws = 20_000;
    let weights: Vec<f64> = logits
        .iter()
        .map(|&l| (f64::from(l) / f64::from(temperature)).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let mut counts = [0usize; 4];
    for token_id in draws(&params(temperature), 0, &logits, num_draws) {
        counts[token_id as usize] += 1;
    }
    let chi_square: f64 = counts
        .iter()
        .zip(&weights)
        .map(|(&observed, &weight)| {
            let expected = num_draws as f64 * weight / total;
            (observed as f64 - expected).powi(2) / expected
        })
        .sum();
    // 3 degrees of freedom: 16.3 is the 0.1% critical value.
    assert!(
        chi_square < 16.3,
        "chi-square {chi_square}, counts {counts:?}"
    );
}

#[test]
fn top_k_and_min_p_restrict_the_draws() {
    let logits = [3.0, 2.9, 1.0, 2.8, 0.0];
    let top_k_two = SamplingParams {
        top_k: 2,
        ..params(2.0)
    };
    assert!(draws(&top_k_two, 0, &logits, 500).iter().all(|&t| t <= 1));
    // exp(2.9 - 3) ≈ 0.90 and exp(2.8 - 3) ≈ 0.82 survive min_p = 0.8; exp(-2) does not.
    let min_p = SamplingParams {
        min_p: 0.8,
        ..params(1.0)
    };
    let drawn = draws(&min_p, 0, &logits, 500);
    assert!(drawn.iter().all(|&t| [0, 1, 3].contains(&t)));
    assert!(drawn.contains(&3));
}

#[test]
fn repetition_penalty_moves_argmax_away_from_repeated_token() {
    let logits = [2.0, 1.5, -1.0];
    let mut sampler = SequenceSampler::new(
        &SamplingParams {
            repetition_penalty: 2.0,
            ..SamplingParams::greedy()
        },
        0,
    );
    assert_eq!(sample_one(&mut sampler, &logits, &NO_CONTEXT), 0);
    let ctx = SamplingContext {
        prompt_tokens: &[2],
        output_tokens: &[0],
        ..NO_CONTEXT
    };
    assert_eq!(sample_one(&mut sampler, &logits, &ctx), 1, "2.0 / 2 < 1.5");
}

#[test]
fn frequency_penalty_steers_greedy_choice() {
    let greedy = SamplingParams {
        presence_penalty: 0.5,
        frequency_penalty: 0.25,
        ..SamplingParams::greedy()
    };
    let mut sampler = SequenceSampler::new(&greedy, 0);
    let logits = [1.0, 0.3, 0.4];
    // Token 0 generated twice: 1 - (0.5 + 2 * 0.25) = 0.0; token 2 once: 0.4 - 0.75 < 0.3.
    let ctx = SamplingContext {
        output_tokens: &[0, 2, 0],
        ..NO_CONTEXT
    };
    assert_eq!(sample_one(&mut sampler, &logits, &ctx), 1);
}

#[test]
fn banned_ids_are_never_sampled() {
    let logits = [1.0, 5.0, 1.0, 1.0, 5.0, 1.0];
    let ctx = SamplingContext {
        banned_token_ids: &[1, 4],
        ..NO_CONTEXT
    };
    let mut sampler = SequenceSampler::new(&params(3.0), 0);
    for _ in 0..2_000 {
        let token_id = sample_one(&mut sampler, &logits, &ctx);
        assert!(token_id != 1 && token_id != 4);
    }
    let mut greedy = SequenceSampler::new(&SamplingParams::greedy(), 0);
    assert_eq!(sample_one(&mut greedy, &logits, &ctx), 0);
}

#[test]
fn logprobs_come_from_raw_logits() {
    let logits = [1.0, 3.0, 2.0, 0.0];
    let mut raw_logprobs = Vec::new();
    log_softmax_into(&logits, &mut raw_logprobs);
    let with_logprobs = SamplingParams {
        logprobs: Some(3),
        repetition_penalty: 1.5,
        ..params(0.5)
    };
    let mut sampler = SequenceSampler::new(&with_logprobs, 0);
    let ctx = SamplingContext {
        output_tokens: &[1],
        ..NO_CONTEXT
    };
    for _ in 0..20 {
        let sampled = sampler
            .sample(&logits, &ctx, &mut SamplerScratch::default())
            .expect("non-empty logits");
        assert_eq!(
            sampled.logprob,
            Some(raw_logprobs[sampled.token_id as usize])
        );
        let top_ids: Vec<u32> = sampled.top_logprobs.iter().map(|&(id, _)| id).collect();
        assert_eq!(
            top_ids,
            vec![1, 2, 0],
            "sorted by raw logprob, penalties ignored"
        );
        assert_eq!(sampled.top_logprobs[0].1, raw_logprobs[1]);
    }

    let only_sampled = SamplingParams {
        logprobs: Some(0),
        ..params(1.0)
    };
    let sampled = SequenceSampler::new(&only_sampled, 0)
        .sample(&logits, &NO_CONTEXT, &mut SamplerScratch::default())
        .expect("row");
    assert!(sampled.logprob.is_some() && sampled.top_logprobs.is_empty());
    let none = SequenceSampler::new(&params(1.0), 0)
        .sample(&logits, &NO_CONTEXT, &mut SamplerScratch::default())
        .expect("row");
    assert!(none.logprob.is_none() && none.top_logprobs.is_empty());
}

#[test]
fn degenerate_rows_fall_back_without_panicking() {
    let with_logprobs = SamplingParams {
        logprobs: Some(2),
        ..params(1.0)
    };
    for params in [SamplingParams::greedy(), with_logprobs] {
        let mut sampler = SequenceSampler::new(&params, 0);
        let all_minus_inf = [f32::NEG_INFINITY; 4];
        assert_eq!(sample_one(&mut sampler, &all_minus_inf, &NO_CONTEXT), 0);
        assert_eq!(sample_one(&mut sampler, &[f32::NAN; 3], &NO_CONTEXT), 0);
        let all_banned = SamplingContext {
            banned_token_ids: &[0, 1, 2],
            ..NO_CONTEXT
        };
        assert_eq!(
            sample_one(&mut sampler, &[0.0, 2.0, 1.0], &all_banned),
            1,
            "raw argmax"
        );
        assert_eq!(
            sample_one(&mut sampler, &[0.0, f32::INFINITY, 1.0], &NO_CONTEXT),
            1
        );
    }
}

#[test]
fn empty_logits_are_an_error() {
    let mut sampler = SequenceSampler::new(&params(1.0), 0);
    assert_eq!(
        sampler.sample(&[], &NO_CONTEXT, &mut SamplerScratch::default()),
        Err(EngineError::Execution("empty logits".to_string()))
    );
}

#[test]
fn logit_bias_shifts_logits_before_sampling_but_not_logprobs_and_bans_still_win() {
    let row = vocab_row(4_321);
    let forced = SamplingParams {
        logit_bias: vec![(7, 100.0)],
        ..SamplingParams::greedy()
    };
    assert_eq!(draws(&forced, 0, &row, 2), vec![7, 7]);
    let hot = SamplingParams {
        logit_bias: vec![(7, 100.0)],
        temperature: 1.5,
        ..params(1.5)
    };
    assert_eq!(
        draws(&hot, 3, &row, 20),
        vec![7; 20],
        "a +100 bias takes all the mass"
    );
    let banned_winner = SamplingParams {
        logit_bias: vec![(4_321, -100.0)],
        ..SamplingParams::greedy()
    };
    assert_ne!(draws(&banned_winner, 0, &row, 1), vec![4_321]);
    // A banned id (EOS before min_tokens) stays banned whatever its bias.
    let mut sampler = SequenceSampler::new(&forced, 0);
    let ctx = SamplingContext {
        banned_token_ids: &[7],
        ..NO_CONTEXT
    };
    assert_eq!(sample_one(&mut sampler, &row, &ctx), 4_321);
    // Reported log-probabilities stay those of the model's raw logits.
    let with_logprobs = SamplingParams {
        logprobs: Some(0),
        ..forced
    };
    let mut sampler = SequenceSampler::new(&with_logprobs, 0);
    let sampled = sampler
        .sample(&row, &NO_CONTEXT, &mut SamplerScratch::default())
        .expect("samples");
    assert_eq!(sampled.token_id, 7);
    let mut raw = Vec::new();
    crate::sampling::logprobs::log_softmax_into(&row, &mut raw);
    assert_eq!(sampled.logprob, Some(raw[7]));
}

/// `(temperature, top_k, top_p, min_p)`.
type FilterCase = (f32, usize, f32, f32);

/// 10,000 seeded draws from `logits` under each case pass a chi-square test against the exact
/// filtered distribution, which keeps between `min_kept` and 13 tokens (the test's table).
fn check_filtered_draws(logits: &[f32], cases: &[FilterCase], min_kept: usize) {
    for &(temperature, top_k, top_p, min_p) in cases {
        let params = SamplingParams {
            temperature,
            top_k,
            top_p,
            min_p,
            seed: Some(99),
            ..SamplingParams::default()
        };
        let filters = FilterParams {
            temperature,
            top_k,
            top_p,
            min_p,
        };
        let expected = filtered_distribution(logits, &filters);
        assert!(expected.len() >= min_kept, "{params:?}: {}", expected.len());
        let tokens = draws(&params, 0, logits, 10_000);
        if let Err(why) = check_draws(&tokens, &expected) {
            panic!("{params:?}: {why}");
        }
    }
}

#[test]
fn filtered_draws_follow_the_exact_filtered_distribution() {
    let logits = [
        3.0f32, 2.6, 2.2, 2.0, 1.5, 1.0, 0.5, 0.0, -1.0, -2.0, 2.4, 1.8, 2.5, -0.5,
    ];
    let cases = [
        (0.8, 6, 1.0, 0.0),
        (1.0, 0, 0.85, 0.0),
        (1.2, 0, 1.0, 0.2),
        (0.9, 8, 0.9, 0.1),
        (0.7, 0, 1.0, 0.0),
    ];
    check_filtered_draws(&logits, &cases, 2);
}

/// A 49,152-token row shaped like a model's: 12 likely tokens, a long tail far below. Large
/// enough that top-k and top-p prune the row before selecting (`prune.rs`).
fn peaked_vocab_row() -> Vec<f32> {
    let mut logits: Vec<f32> = (0..49_152u32)
        .map(|i| -8.0 + ((i * 37) % 101) as f32 / 50.0)
        .collect();
    for j in 0..12u32 {
        logits[(j * 4_001 + 5) as usize] = 3.0 + ((j * 7) % 13) as f32 / 6.0;
    }
    logits
}

#[test]
fn filtered_draws_over_a_whole_vocabulary_follow_the_exact_distribution() {
    let cases = [
        (1.0, 8, 1.0, 0.0),
        (0.8, 0, 0.9, 0.0),
        (1.1, 10, 0.95, 0.05),
        // Temperature and min-p: the dense draw (`prune::draw_at_least`).
        (0.9, 0, 1.0, 0.01),
    ];
    check_filtered_draws(&peaked_vocab_row(), &cases, 4);
}

/// Temperature alone over a whole vocabulary (the dense draw, every token kept): 10,000 draws
/// against the exact distribution, the long tail pooled into one bin (a chi-square needs
/// expected counts well above zero).
#[test]
fn temperature_alone_over_a_whole_vocabulary_follows_the_exact_distribution() {
    let logits = peaked_vocab_row();
    for temperature in [0.6f32, 1.0, 1.3] {
        let params = SamplingParams {
            temperature,
            seed: Some(5),
            ..SamplingParams::default()
        };
        let filters = FilterParams {
            temperature,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
        };
        let exact = filtered_distribution(&logits, &filters);
        assert_eq!(exact.len(), logits.len(), "every token is kept");
        let (likely, tail): (Vec<_>, Vec<_>) = exact.into_iter().partition(|&(_, p)| p > 1e-3);
        const TAIL: u32 = u32::MAX;
        let mut expected = likely.clone();
        expected.push((TAIL, tail.iter().map(|&(_, p)| p).sum()));
        let pooled: Vec<u32> = draws(&params, 0, &logits, 10_000)
            .into_iter()
            .map(|t| if likely.iter().any(|&(id, _)| id == t) { t } else { TAIL })
            .collect();
        if let Err(why) = check_draws(&pooled, &expected) {
            panic!("temperature {temperature}: {why}");
        }
    }
}
