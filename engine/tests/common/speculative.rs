//! Helpers of the speculative-decoding tests: greedy outputs without speculation, one at a time,
//! to compare a speculating engine's batched outputs with.

use pagoda_engine::{EngineConfig, EngineHandle};

use super::{greedy, request, run_all, run_one, start, Outcome, TinyModel};

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
