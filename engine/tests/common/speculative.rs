//! Helpers of the speculative-decoding tests: greedy outputs without speculation, one at a time,
//! to compare a speculating engine's batched outputs with.

use pagoda_engine::{EngineConfig, EngineHandle, SpecDecodeCounters};

use super::{greedy, request, run_all, run_one, start, wait_until_idle, Outcome, TinyModel};

/// Tokens every request generates in these tests.
pub const MAX_TOKENS: usize = 24;

/// Each prompt's greedy output on an engine that runs one request at a time, without
/// speculation.
pub fn outputs_alone(model: &TinyModel, prompts: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let config = EngineConfig {
        max_num_seqs: 1,
        ..EngineConfig::default()
    };
    let handle = start(model, config);
    let outputs = prompts
        .iter()
        .map(|p| run_one(&handle, request(&handle, p.clone(), greedy(MAX_TOKENS))).token_ids())
        .collect();
    handle.shutdown();
    outputs
}

/// Every prompt at once, greedy.
pub fn run_batched(handle: &EngineHandle, prompts: &[Vec<u32>]) -> Vec<Outcome> {
    let requests = prompts
        .iter()
        .map(|p| request(handle, p.clone(), greedy(MAX_TOKENS)))
        .collect();
    run_all(handle, requests)
}

pub fn assert_identical(expected: &[Vec<u32>], outcomes: &[Outcome], label: &str) {
    for (i, (want, got)) in expected.iter().zip(outcomes).enumerate() {
        assert_eq!(want.len(), MAX_TOKENS, "{label}: request {i} alone");
        assert_eq!(&got.token_ids(), want, "{label}: request {i}");
    }
}

/// Runs `prompts` batched on an engine started with `config` (which speculates); checks the
/// output against `expected` and that proposals were made; returns the outcomes and counters.
pub fn run_regime(
    model: &TinyModel,
    prompts: &[Vec<u32>],
    expected: &[Vec<u32>],
    config: EngineConfig,
    label: &str,
) -> (Vec<Outcome>, SpecDecodeCounters) {
    let handle = start(model, config);
    let outcomes = run_batched(&handle, prompts);
    assert_identical(expected, &outcomes, label);
    wait_until_idle(&handle);
    let counters = handle
        .stats()
        .spec_decode
        .expect("a speculating engine reports counters");
    assert!(counters.num_drafts > 0, "{label}: {counters:?}");
    handle.shutdown();
    (outcomes, counters)
}

/// The regimes both speculative methods are checked under, besides their own: everything in
/// one step, and a 7-token step budget (proposals cut by the budget, prompts chunked).
pub fn shared_regimes() -> [(EngineConfig, &'static str); 2] {
    let chunked = EngineConfig {
        max_num_batched_tokens: 7,
        ..EngineConfig::default()
    };
    [
        (EngineConfig::default(), "batched"),
        (chunked, "7-token step budget"),
    ]
}
