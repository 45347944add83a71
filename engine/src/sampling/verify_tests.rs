//! Verification is lossless: with the same model, a sampled output has the same distribution
//! with proposals as without. The "model" here is a Markov chain (each row of logits depends on
//! the previous token), so every row of a verification is the row plain decoding would see, and
//! penalties make each row depend on the tokens accepted before it.

use candle_core::{Device, Tensor};

use super::*;
use crate::request::{EngineRequest, SamplingParams, StopConditions};

const VOCAB: usize = 6;
const OUTPUT_LEN: usize = 4;
const NUM_DRAWS: u64 = 10_000;

/// The chain's logits after `previous`.
fn row(previous: u32) -> Vec<f32> {
    (0..VOCAB)
        .map(|next| ((previous as usize * 7 + next * 3) % 5) as f32 * 0.6 - next as f32 * 0.1)
        .collect()
}

fn rows(contexts: &[u32]) -> Tensor {
    let values: Vec<f32> = contexts.iter().flat_map(|&t| row(t)).collect();
    Tensor::from_vec(values, (contexts.len(), VOCAB), &Device::Cpu).expect("tensor")
}

/// A proposer that is deterministic given the context, right often enough to be accepted.
fn proposal(last: u32) -> Vec<u32> {
    vec![(last * 2 + 1) % VOCAB as u32, (last + 4) % VOCAB as u32]
}

fn sampler_for(seed: u64) -> (BatchSampler, RequestId) {
    let params = SamplingParams {
        temperature: 0.9,
        frequency_penalty: 0.7,
        seed: Some(seed),
        ..SamplingParams::default()
    };
    let id = RequestId(seed);
    let request = EngineRequest::new(id, vec![0], params, StopConditions::default());
    let mut sampler = BatchSampler::new(Vec::new(), VOCAB);
    sampler.add(&request);
    (sampler, id)
}

fn plain_output(seed: u64) -> Vec<u32> {
    let (mut sampler, id) = sampler_for(seed);
    let mut output = vec![0];
    while output.len() <= OUTPUT_LEN {
        let last = *output.last().expect("token");
        let token = sampler.sample(&rows(&[last]), &[id]).expect("sampled");
        output.push(token[0].token_id);
    }
    output[1..].to_vec()
}

/// `accept_blindly`: the broken rule of a control, keeping the first proposal whatever was drawn.
fn speculative_output(seed: u64, accept_blindly: bool) -> (Vec<u32>, usize) {
    let (mut sampler, id) = sampler_for(seed);
    let mut output = vec![0];
    let mut num_accepted = 0;
    while output.len() <= OUTPUT_LEN {
        let last = *output.last().expect("token");
        let drafts = proposal(last);
        let contexts: Vec<u32> = std::iter::once(last).chain(drafts.iter().copied()).collect();
        let verified = sampler
            .verify(&rows(&contexts), &[id], &[&drafts])
            .expect("verified")
            .remove(0);
        num_accepted += verified.accepted.len();
        if accept_blindly {
            output.push(drafts[0]);
            continue;
        }
        output.extend(verified.accepted.iter().map(|t| t.token_id));
        output.push(verified.token.token_id);
    }
    (output[1..=OUTPUT_LEN].to_vec(), num_accepted)
}

/// Two-sample chi-square statistic of equal-sized samples over the same categories, and its
/// degrees of freedom.
fn chi_square(a: &[u64], b: &[u64]) -> (f64, usize) {
    let mut statistic = 0.0;
    let mut num_categories = 0;
    for (&x, &y) in a.iter().zip(b) {
        if x + y > 0 {
            statistic += (x as f64 - y as f64).powi(2) / (x + y) as f64;
            num_categories += 1;
        }
    }
    (statistic, num_categories - 1)
}

/// Chi-square critical values at p = 0.001 for the degrees of freedom used here.
fn critical_value(df: usize) -> f64 {
    match df {
        5 => 20.515,
        35 => 66.619,
        _ => panic!("no critical value for {df} degrees of freedom"),
    }
}

/// Counts per category of position `position` (or of the pair at `0, 1` when `None`).
fn histogram(outputs: &[Vec<u32>], position: Option<usize>) -> Vec<u64> {
    let mut counts = vec![0; if position.is_some() { VOCAB } else { VOCAB * VOCAB }];
    for output in outputs {
        let category = match position {
            Some(p) => output[p] as usize,
            None => output[0] as usize * VOCAB + output[1] as usize,
        };
        counts[category] += 1;
    }
    counts
}

#[test]
fn sampled_outputs_are_distributed_as_without_speculation() {
    let plain: Vec<Vec<u32>> = (0..NUM_DRAWS).map(plain_output).collect();
    let mut num_accepted = 0;
    let speculative: Vec<Vec<u32>> = (0..NUM_DRAWS)
        .map(|seed| {
            let (output, accepted) = speculative_output(seed + NUM_DRAWS, false);
            num_accepted += accepted;
            output
        })
        .collect();
    assert!(
        num_accepted as u64 > NUM_DRAWS / 2,
        "proposals should often be accepted ({num_accepted})"
    );
    for position in (0..OUTPUT_LEN).map(Some).chain([None]) {
        let (statistic, df) =
            chi_square(&histogram(&plain, position), &histogram(&speculative, position));
        assert!(
            statistic < critical_value(df),
            "position {position:?}: chi-square {statistic:.1} with {df} degrees of freedom"
        );
    }
}

#[test]
fn the_test_tells_a_broken_acceptance_rule() {
    let plain: Vec<Vec<u32>> = (0..NUM_DRAWS).map(plain_output).collect();
    let broken: Vec<Vec<u32>> = (0..NUM_DRAWS)
        .map(|seed| speculative_output(seed + NUM_DRAWS, true).0)
        .collect();
    let (statistic, df) = chi_square(&histogram(&plain, Some(1)), &histogram(&broken, Some(1)));
    assert!(statistic > critical_value(df), "chi-square {statistic:.1}");
}

#[test]
fn greedy_rows_accept_the_longest_agreeing_prefix_then_the_argmax() {
    let request = EngineRequest::new(
        RequestId(1),
        vec![0],
        SamplingParams::greedy(),
        StopConditions::default(),
    );
    let mut sampler = BatchSampler::new(Vec::new(), VOCAB);
    sampler.add(&request);
    let argmax = |t: u32| {
        let r = row(t);
        (0..VOCAB).max_by(|&a, &b| r[a].total_cmp(&r[b]).then(b.cmp(&a))).expect("row") as u32
    };
    let first = argmax(0);
    let second = argmax(first);
    // The first proposal agrees, the second does not: one accepted, then the argmax after it.
    let drafts = [first, (second + 1) % VOCAB as u32];
    let verified = sampler
        .verify(&rows(&[0, drafts[0], drafts[1]]), &[RequestId(1)], &[&drafts])
        .expect("verified")
        .remove(0);
    assert_eq!(
        verified.accepted.iter().map(|t| t.token_id).collect::<Vec<_>>(),
        vec![first]
    );
    assert_eq!(verified.token.token_id, second);
    // A row count that does not match the proposals is an error, and keeps the state.
    assert!(sampler
        .verify(&rows(&[0, 1]), &[RequestId(1)], &[&drafts])
        .is_err());
    assert_eq!(sampler.num_sequences(), 1);
}
