//! Speculative decoding (prompt lookup) end to end through the engine, on a tiny random model:
//! greedy output is token-for-token the output without speculation — batched, chunked,
//! preempted, with prefix hits — the proposals are really verified (some accepted, some
//! rejected), and the KV blocks reserved for rejected proposals all come back.
#![allow(clippy::unwrap_used)]

mod common;

use common::speculative::{
    assert_identical, outputs_alone, run_batched, run_regime, shared_regimes, MAX_TOKENS,
};
use common::*;
use pagoda_engine::spec_decode::{NgramConfig, SpeculativeMethod};
use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::{EngineConfig, EngineHandle, SpecDecodeCounters, SpeculativeConfig};
use rand::{Rng, SeedableRng};

fn prompt_lookup(num_speculative_tokens: usize) -> Option<SpeculativeConfig> {
    Some(SpeculativeConfig {
        method: SpeculativeMethod::Ngram(NgramConfig {
            prompt_lookup_min: 1,
            prompt_lookup_max: 3,
        }),
        num_speculative_tokens,
        disable_by_batch_size: None,
    })
}

/// Prompts that quote themselves: a random passage, then part of it again.
fn quoting_prompts(count: usize, vocab: u32, seed: u64) -> Vec<Vec<u32>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let len = rng.random_range(8..=40);
            let passage: Vec<u32> = (0..len).map(|_| rng.random_range(1..vocab)).collect();
            let quoted = rng.random_range(2..=len);
            passage.iter().chain(&passage[..quoted]).copied().collect()
        })
        .collect()
}

fn spec_counters(handle: &EngineHandle) -> SpecDecodeCounters {
    handle
        .stats()
        .spec_decode
        .expect("a speculating engine reports its counters")
}

/// Runs `prompts` batched on a speculating engine; checks the output and that proposals were
/// both accepted and rejected.
fn check_regime(
    model: &TinyModel,
    prompts: &[Vec<u32>],
    expected: &[Vec<u32>],
    config: EngineConfig,
    label: &str,
) -> Vec<Outcome> {
    let (outcomes, counters) = run_regime(model, prompts, expected, config, label);
    assert!(counters.num_accepted_tokens > 0, "{label}: {counters:?}");
    assert!(
        counters.num_accepted_tokens < counters.num_draft_tokens,
        "{label}: {counters:?}"
    );
    outcomes
}

#[test]
fn greedy_output_with_prompt_lookup_equals_output_without_under_every_regime() {
    let spec = TinyLlamaSpec::default();
    let model = tiny_model(&spec);
    let prompts = quoting_prompts(12, spec.vocab_size as u32, 3);
    let expected = outputs_alone(&model, &prompts);
    let speculating = |config: EngineConfig| EngineConfig {
        speculative: prompt_lookup(4),
        ..config
    };
    for (config, label) in shared_regimes() {
        check_regime(&model, &prompts, &expected, speculating(config), label);
    }
    let few_seqs = EngineConfig {
        max_num_seqs: 3,
        max_num_batched_tokens: 40,
        ..EngineConfig::default()
    };
    check_regime(
        &model,
        &prompts,
        &expected,
        speculating(few_seqs),
        "max_num_seqs 3",
    );
    // 40 blocks of 4 tokens (256 bytes per token), while a request needs up to 27.
    let tight = EngineConfig {
        block_size: 4,
        kv_cache_memory_bytes: Some(40 * 4 * 256),
        max_model_len: Some(128),
        ..EngineConfig::default()
    };
    let preempted = check_regime(
        &model,
        &prompts,
        &expected,
        speculating(tight),
        "preemption",
    );
    let num_preemptions: u32 = preempted.iter().map(|o| o.num_preemptions).sum();
    assert!(num_preemptions > 0, "the tight KV budget should preempt");
}

#[test]
fn prefix_hits_and_one_token_proposals_keep_the_output() {
    let spec = TinyLlamaSpec::default();
    let model = tiny_model(&spec);
    let prompts = quoting_prompts(8, spec.vocab_size as u32, 5);
    let expected = outputs_alone(&model, &prompts);
    let config = EngineConfig {
        speculative: prompt_lookup(1),
        block_size: 4,
        ..EngineConfig::default()
    };
    let handle = start(&model, config);
    assert_identical(&expected, &run_batched(&handle, &prompts), "first round");
    let again = run_batched(&handle, &prompts);
    assert_identical(&expected, &again, "second round, from the prefix cache");
    assert!(again.iter().all(|o| o.num_cached_tokens > 0), "prefix hits");
    wait_until_idle(&handle);
    let counters = spec_counters(&handle);
    assert_eq!(
        counters.num_draft_tokens, counters.num_drafts,
        "one token each"
    );
    assert_eq!(counters.num_accepted_tokens_per_pos.len(), 1);
    assert_eq!(
        counters.num_accepted_tokens_per_pos[0],
        counters.num_accepted_tokens
    );
    handle.shutdown();
}

#[test]
fn blocks_reserved_for_rejected_proposals_all_come_back_after_a_thousand_requests() {
    let spec = TinyLlamaSpec::default();
    let model = tiny_model(&spec);
    let config = EngineConfig {
        speculative: prompt_lookup(6),
        block_size: 4,
        ..EngineConfig::default()
    };
    let handle = start(&model, config);
    let num_blocks = handle.info().num_kv_blocks;
    let prompts = quoting_prompts(1000, spec.vocab_size as u32, 9);
    for wave in prompts.chunks(100) {
        let requests = wave
            .iter()
            .map(|p| request(&handle, p.clone(), greedy(8)))
            .collect();
        let outcomes = run_all(&handle, requests);
        assert!(outcomes.iter().all(|o| o.tokens.len() == 8));
    }
    wait_until_idle(&handle);
    let stats = handle.stats();
    assert_eq!(stats.num_kv_blocks_used, 0);
    assert_eq!(stats.num_kv_blocks_total, num_blocks);
    let counters = stats.spec_decode.unwrap();
    assert!(
        counters.num_accepted_tokens * 2 < counters.num_draft_tokens,
        "most proposals should be rejected here: {counters:?}"
    );
    assert!(counters.num_drafts >= 1000, "{counters:?}");
    handle.shutdown();
}

/// Requests of `prompts` each predicting its output as `predictions` (OpenAI's Predicted
/// Outputs), batched on an engine with prompt lookup; the outcomes and the engine's counters.
fn run_predicted(
    model: &TinyModel,
    prompts: &[Vec<u32>],
    predictions: &[Vec<u32>],
) -> (Vec<Outcome>, SpecDecodeCounters) {
    let handle = start(
        model,
        EngineConfig {
            speculative: prompt_lookup(4),
            ..EngineConfig::default()
        },
    );
    let requests = prompts
        .iter()
        .zip(predictions)
        .map(|(prompt, predicted)| {
            let mut request = request(&handle, prompt.clone(), greedy(MAX_TOKENS));
            request.predicted_token_ids = Some(predicted.as_slice().into());
            request
        })
        .collect();
    let outcomes = run_all(&handle, requests);
    wait_until_idle(&handle);
    let counters = spec_counters(&handle);
    handle.shutdown();
    (outcomes, counters)
}

#[test]
fn a_predicted_output_is_proposed_and_never_changes_the_output() {
    let spec = TinyLlamaSpec::default();
    let model = tiny_model(&spec);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let vocab = spec.vocab_size as u32;
    // Random prompts: their own tokens predict little.
    let prompts: Vec<Vec<u32>> = (0..4)
        .map(|_| (0..12).map(|_| rng.random_range(1..vocab)).collect())
        .collect();
    let expected = outputs_alone(&model, &prompts);

    // The right prediction: every proposal is accepted, most tokens come from proposals.
    let (outcomes, counters) = run_predicted(&model, &prompts, &expected);
    assert_identical(&expected, &outcomes, "right prediction");
    assert_eq!(
        counters.num_accepted_tokens, counters.num_draft_tokens,
        "{counters:?}"
    );
    let num_generated = (prompts.len() * MAX_TOKENS) as u64;
    assert!(
        counters.num_accepted_tokens * 2 > num_generated,
        "{counters:?} of {num_generated} tokens"
    );

    // A wrong one (other random tokens) costs rejected proposals, never other output.
    let wrong: Vec<Vec<u32>> = (0..4)
        .map(|_| {
            (0..MAX_TOKENS)
                .map(|_| rng.random_range(1..vocab))
                .collect()
        })
        .collect();
    let (outcomes, _) = run_predicted(&model, &prompts, &wrong);
    assert_identical(&expected, &outcomes, "wrong prediction");
}
