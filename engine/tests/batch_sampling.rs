//! Sampling behind the runner, end to end on a tiny model: a seeded request draws the same tokens
//! alone and inside batches of 1, 8 and 32 mixed requests (greedy, temperature with top-k /
//! top-p / min-p, penalties, logit bias, log-probabilities), because each sequence keeps its own
//! RNG where it is sampled and draws one number per step.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::{EngineConfig, EngineRequest, SamplingParams, StopConditions};

const MAX_TOKENS: usize = 24;

fn stop() -> StopConditions {
    StopConditions {
        max_tokens: Some(MAX_TOKENS),
        ignore_eos: true,
        ..StopConditions::default()
    }
}

/// The request under test: temperature sampling with every filter, seeded.
fn probe_params() -> SamplingParams {
    SamplingParams {
        temperature: 0.9,
        top_k: 40,
        top_p: 0.9,
        min_p: 0.02,
        seed: Some(1234),
        logprobs: Some(2),
        ..SamplingParams::default()
    }
}

/// The `i`-th companion: a mix of everything the sampler does.
fn companion_params(i: usize) -> SamplingParams {
    let base = SamplingParams {
        seed: Some(i as u64),
        ..SamplingParams::default()
    };
    match i % 5 {
        0 => SamplingParams::greedy(),
        1 => SamplingParams {
            temperature: 1.3,
            top_p: 0.8,
            ..base
        },
        2 => SamplingParams {
            temperature: 0.7,
            repetition_penalty: 1.3,
            presence_penalty: 0.5,
            frequency_penalty: 0.4,
            ..base
        },
        3 => SamplingParams {
            logit_bias: vec![(7, 5.0), (9, -100.0)],
            logprobs: Some(1),
            ..base
        },
        _ => SamplingParams {
            seed: None,
            min_p: 0.1,
            ..base
        },
    }
}

fn probe(handle: &pagoda_engine::EngineHandle) -> EngineRequest {
    EngineRequest::new(
        handle.next_request_id(),
        vec![5, 17, 3, 99],
        probe_params(),
        stop(),
    )
}

#[test]
fn a_seeded_request_draws_the_same_tokens_in_batches_of_1_8_and_32() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let config = EngineConfig {
        max_model_len: Some(256),
        ..EngineConfig::default()
    };
    let handle = start(&model, config);
    let alone = run_one(&handle, probe(&handle));
    assert_eq!(alone.tokens.len(), MAX_TOKENS);
    for batch_size in [1, 8, 32] {
        let prompts = random_prompts(batch_size - 1, 60, 256, batch_size as u64);
        let mut batch = vec![probe(&handle)];
        batch.extend(prompts.into_iter().enumerate().map(|(i, prompt)| {
            EngineRequest::new(
                handle.next_request_id(),
                prompt,
                companion_params(i),
                stop(),
            )
        }));
        let outcomes = run_all(&handle, batch);
        assert_eq!(
            outcomes[0].token_ids(),
            alone.token_ids(),
            "batch of {batch_size}"
        );
        // Log-probabilities come from the logits, which other rows in a batch change in the last
        // bits only (blocked matrix products): equal within 1e-4, same alternatives.
        for (a, b) in outcomes[0].tokens.iter().zip(&alone.tokens) {
            let (a_logprob, b_logprob) = (a.logprob.unwrap(), b.logprob.unwrap());
            assert!(
                (a_logprob - b_logprob).abs() < 1e-4,
                "batch of {batch_size}"
            );
            let ids = |t: &pagoda_engine::GeneratedToken| -> Vec<u32> {
                t.top_logprobs.iter().map(|&(id, _)| id).collect()
            };
            assert_eq!(ids(a), ids(b), "batch of {batch_size}");
        }
        // The biased companions never drew their banned token, and always could have.
        for (i, outcome) in outcomes[1..].iter().enumerate() {
            if i % 5 == 3 {
                assert!(!outcome.token_ids().contains(&9), "companion {i}");
                assert!(outcome.tokens.iter().all(|t| t.logprob.is_some()));
            }
        }
    }
    handle.shutdown();
}
