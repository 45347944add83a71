//! Speculative decoding with a draft model end to end through the engine, on tiny random
//! models: greedy output is token-for-token the output without speculation — batched, chunked,
//! preempted, with prefix hits — a draft identical to the target has its proposals accepted
//! (which only holds when the draft's own KV cache follows every token), and the blocks of
//! rejected proposals all come back.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::speculative::{
    assert_identical, outputs_alone, run_batched, run_regime, shared_regimes,
};
use common::*;
use pagoda_engine::spec_decode::{DraftModelConfig, SpeculativeMethod};
use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::{start_engine, EngineConfig, SpeculativeConfig};

fn draft_model(model: &TinyModel, num_speculative_tokens: usize) -> Option<SpeculativeConfig> {
    draft_at(&model.path, num_speculative_tokens)
}

fn draft_at(path: &Path, num_speculative_tokens: usize) -> Option<SpeculativeConfig> {
    Some(SpeculativeConfig {
        method: SpeculativeMethod::DraftModel(DraftModelConfig {
            model: path.to_path_buf(),
        }),
        num_speculative_tokens,
        disable_by_batch_size: None,
    })
}

/// A smaller model of the same vocabulary, other weights: it proposes badly.
fn other_draft() -> TinyModel {
    tiny_model(&TinyLlamaSpec {
        num_layers: 1,
        hidden_size: 32,
        intermediate_size: 64,
        num_heads: 2,
        num_kv_heads: 1,
        seed: 77,
        ..TinyLlamaSpec::default()
    })
}

#[test]
fn a_draft_identical_to_the_target_has_its_proposals_accepted() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let prompts = random_prompts(10, 40, 256, 21);
    let expected = outputs_alone(&model, &prompts);
    let config = EngineConfig {
        speculative: draft_model(&model, 4),
        ..EngineConfig::default()
    };
    let (_, counters) = run_regime(&model, &prompts, &expected, config, "self-draft");
    // All were accepted on 2026-12-03; only rounding between batch shapes may flip a near tie.
    // A draft cache that missed a token (a fully accepted proposal's last one) got 0.89.
    let rate = counters.acceptance_rate().unwrap();
    assert!(rate > 0.97, "{counters:?}");
    // Proposals of 4: every step but the last few of a request proposes all 4.
    assert!(
        counters.num_draft_tokens > 3 * counters.num_drafts,
        "{counters:?}"
    );
}

#[test]
fn greedy_output_with_another_draft_equals_output_without_under_every_regime() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let draft = other_draft();
    let prompts = random_prompts(12, 40, 256, 4);
    let expected = outputs_alone(&model, &prompts);
    let speculating = |config: EngineConfig| EngineConfig {
        speculative: draft_model(&draft, 3),
        ..config
    };
    for (config, label) in shared_regimes() {
        run_regime(&model, &prompts, &expected, speculating(config), label);
    }
    // Both caches share the budget: a token costs the target's 256 bytes (f16 keys and values,
    // 2 layers of 2 heads of 16) and the draft's 64 (1 layer of 1 head). 48 blocks of 4 tokens,
    // while one request needs up to 17.
    let bytes_per_token = 256 + 64;
    let tight = EngineConfig {
        block_size: 4,
        kv_cache_memory_bytes: Some(48 * 4 * bytes_per_token),
        max_model_len: Some(128),
        ..EngineConfig::default()
    };
    let (preempted, _) = run_regime(
        &model,
        &prompts,
        &expected,
        speculating(tight),
        "preemption",
    );
    let num_preemptions: u32 = preempted.iter().map(|o| o.num_preemptions).sum();
    assert!(num_preemptions > 0, "the tight KV budget should preempt");
    let cached = EngineConfig {
        block_size: 4,
        ..EngineConfig::default()
    };
    let handle = start(&model, speculating(cached));
    assert_identical(&expected, &run_batched(&handle, &prompts), "first round");
    let again = run_batched(&handle, &prompts);
    assert_identical(&expected, &again, "second round, from the prefix cache");
    let mut hits = again.iter().zip(&prompts);
    assert!(hits.all(|(o, p)| p.len() <= 4 || o.num_cached_tokens > 0));
    handle.shutdown();
}

#[test]
fn blocks_reserved_for_rejected_proposals_all_come_back() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let draft = other_draft();
    let config = EngineConfig {
        speculative: draft_model(&draft, 5),
        block_size: 4,
        ..EngineConfig::default()
    };
    let handle = start(&model, config);
    let prompts = random_prompts(1000, 30, 256, 9);
    for wave in prompts.chunks(100) {
        let requests = wave
            .iter()
            .map(|p| request(&handle, p.clone(), greedy(8)))
            .collect();
        assert!(run_all(&handle, requests)
            .iter()
            .all(|o| o.tokens.len() == 8));
    }
    wait_until_idle(&handle);
    let stats = handle.stats();
    assert_eq!(stats.num_kv_blocks_used, 0);
    let counters = stats.spec_decode.unwrap();
    assert!(
        counters.num_accepted_tokens * 2 < counters.num_draft_tokens,
        "a different random draft is mostly rejected: {counters:?}"
    );
    handle.shutdown();
}

/// Why an engine on `model` speculating as `speculative` does not start.
fn refusal(model: &TinyModel, speculative: Option<SpeculativeConfig>) -> String {
    let config = EngineConfig {
        speculative,
        ..EngineConfig::default()
    };
    start_engine(config, &model.path)
        .expect_err("refused")
        .to_string()
}

#[test]
fn a_draft_that_cannot_serve_stops_the_start_with_the_reason() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let missing = model.path.with_file_name("no-such-draft.gguf");
    let error = refusal(&model, draft_at(&missing, 3));
    assert!(
        error.contains("draft model") && error.contains("does not load"),
        "{error}"
    );
    let larger = tiny_model(&TinyLlamaSpec {
        vocab_size: 300,
        ..TinyLlamaSpec::default()
    });
    let error = refusal(&model, draft_model(&larger, 3));
    assert!(error.contains("vocabulary (300 tokens)"), "{error}");
}
