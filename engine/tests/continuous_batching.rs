//! Greedy generation through continuous batching is token-identical to generating each request
//! alone — with a normal budget, with chunked prefill forced, and with preemptions forced.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::EngineConfig;

const NUM_REQUESTS: usize = 12;
const MAX_TOKENS: usize = 24;

fn alone_outputs(model: &TinyModel, prompts: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let handle = start(
        model,
        EngineConfig {
            max_num_seqs: 1,
            ..EngineConfig::default()
        },
    );
    let outputs = prompts
        .iter()
        .map(|p| run_one(&handle, request(&handle, p.clone(), greedy(MAX_TOKENS))).token_ids())
        .collect();
    handle.shutdown();
    outputs
}

fn batched_outcomes(model: &TinyModel, prompts: &[Vec<u32>], config: EngineConfig) -> Vec<Outcome> {
    let handle = start(model, config);
    let requests = prompts
        .iter()
        .map(|p| request(&handle, p.clone(), greedy(MAX_TOKENS)))
        .collect();
    let outcomes = run_all(&handle, requests);
    wait_until_idle(&handle);
    handle.shutdown();
    outcomes
}

fn assert_identical(expected: &[Vec<u32>], outcomes: &[Outcome], label: &str) {
    for (i, (want, got)) in expected.iter().zip(outcomes).enumerate() {
        assert_eq!(
            want.len(),
            MAX_TOKENS,
            "{label}: request {i} generated too few tokens alone"
        );
        assert_eq!(
            &got.token_ids(),
            want,
            "{label}: request {i} differs from its solo run"
        );
    }
}

#[test]
fn batched_greedy_output_equals_solo_output_under_every_regime() {
    let spec = TinyLlamaSpec::default();
    let model = tiny_model(&spec);
    let prompts = random_prompts(NUM_REQUESTS, 90, spec.vocab_size as u32, 11);
    let expected = alone_outputs(&model, &prompts);

    let normal = batched_outcomes(&model, &prompts, EngineConfig::default());
    assert_identical(&expected, &normal, "continuous batching");

    let chunked = EngineConfig {
        max_num_batched_tokens: 7,
        ..EngineConfig::default()
    };
    assert_identical(
        &expected,
        &batched_outcomes(&model, &prompts, chunked),
        "chunked prefill (7-token budget)",
    );

    let few_seqs = EngineConfig {
        max_num_seqs: 3,
        max_num_batched_tokens: 40,
        ..EngineConfig::default()
    };
    assert_identical(
        &expected,
        &batched_outcomes(&model, &prompts, few_seqs),
        "max_num_seqs 3",
    );

    // 256 bytes per token (2 layers × K,V × 2 heads × 16 dims × 2 bytes of the default f16
    // cache): 40 blocks of 4 tokens, while the requests need up to 29 blocks each.
    let tight = EngineConfig {
        block_size: 4,
        kv_cache_memory_bytes: Some(40 * 4 * 256),
        max_model_len: Some(128),
        ..EngineConfig::default()
    };
    let preempted = batched_outcomes(&model, &prompts, tight);
    assert_identical(&expected, &preempted, "preemption by recompute");
    let num_preemptions: u32 = preempted.iter().map(|o| o.num_preemptions).sum();
    assert!(
        num_preemptions > 0,
        "the tight KV budget should have forced preemptions"
    );
}
