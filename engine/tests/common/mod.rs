//! Shared helpers for the engine's integration tests: tiny random models and blocking drivers.
#![allow(dead_code, clippy::unwrap_used)]

pub mod dense_reference;
pub mod gate;
pub mod speculative;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::{
    start_engine, EngineConfig, EngineHandle, EngineRequest, FinishReason, GeneratedToken,
    PromptTokenLogprob, SamplingParams, StopConditions, TokenEvent,
};
use rand::{Rng, SeedableRng};

/// A tiny model on disk; the directory lives as long as this value.
pub struct TinyModel {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

pub fn tiny_model(spec: &TinyLlamaSpec) -> TinyModel {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.gguf");
    spec.write_gguf(&path).unwrap();
    TinyModel { _dir: dir, path }
}

pub fn start(model: &TinyModel, config: EngineConfig) -> EngineHandle {
    start_engine(config, &model.path).unwrap()
}

/// The outcome of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub tokens: Vec<GeneratedToken>,
    pub reason: FinishReason,
    pub num_preemptions: u32,
    /// The `PromptLogprobs` event, which must come before any token.
    pub prompt_logprobs: Option<Vec<PromptTokenLogprob>>,
    pub num_cached_tokens: usize,
}

impl Outcome {
    pub fn token_ids(&self) -> Vec<u32> {
        self.tokens.iter().map(|t| t.token_id).collect()
    }
}

pub fn greedy(max_tokens: usize) -> (SamplingParams, StopConditions) {
    let stop = StopConditions {
        max_tokens: Some(max_tokens),
        ignore_eos: true,
        ..StopConditions::default()
    };
    (SamplingParams::greedy(), stop)
}

pub fn request(
    handle: &EngineHandle,
    prompt: Vec<u32>,
    params: (SamplingParams, StopConditions),
) -> EngineRequest {
    EngineRequest::new(handle.next_request_id(), prompt, params.0, params.1)
}

fn drain(mut stream: pagoda_engine::RequestStream) -> Outcome {
    let mut tokens = Vec::new();
    let mut prompt_logprobs = None;
    loop {
        match stream
            .blocking_next()
            .expect("stream ended without a final event")
        {
            TokenEvent::Token(token) => tokens.push(token),
            TokenEvent::PromptLogprobs(entries) => {
                assert!(tokens.is_empty() && prompt_logprobs.is_none());
                prompt_logprobs = Some(entries);
            }
            TokenEvent::Finished {
                reason,
                timings,
                usage,
            } => {
                assert_eq!(usage.completion_tokens, tokens.len());
                return Outcome {
                    tokens,
                    reason,
                    num_preemptions: timings.num_preemptions,
                    prompt_logprobs,
                    num_cached_tokens: usage.num_cached_tokens,
                };
            }
            TokenEvent::Error(e) => panic!("engine error: {e}"),
        }
    }
}

/// Submits every request at once, then collects each stream.
pub fn run_all(handle: &EngineHandle, requests: Vec<EngineRequest>) -> Vec<Outcome> {
    let streams: Vec<_> = requests
        .into_iter()
        .map(|r| handle.validate(r).and_then(|r| handle.submit(r)).unwrap())
        .collect();
    streams.into_iter().map(drain).collect()
}

pub fn run_one(handle: &EngineHandle, request: EngineRequest) -> Outcome {
    drain(
        handle
            .validate(request)
            .and_then(|r| handle.submit(r))
            .unwrap(),
    )
}

/// Random prompts of varied lengths (1..=max_len) over the vocabulary.
pub fn random_prompts(count: usize, max_len: usize, vocab: u32, seed: u64) -> Vec<Vec<u32>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let len = rng.random_range(1..=max_len);
            (0..len).map(|_| rng.random_range(1..vocab)).collect()
        })
        .collect()
}

/// Waits until the engine holds no request and no block.
pub fn wait_until_idle(handle: &EngineHandle) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stats = handle.stats();
        if stats.num_running == 0 && stats.num_waiting == 0 && stats.num_kv_blocks_used == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "engine never became idle: {stats:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
