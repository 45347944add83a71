//! The ITL target end to end, on the mock engine with emulated compute (each step blocks for a
//! fixed time per token it computes): the engine learns step costs from the steps it measures,
//! and a long prompt arriving while streams decode is cut into many chunks when the target is
//! small, each beside a decode of every stream; with the target off it goes in one step. Every
//! request completes either way. The assertions count steps, never durations: emulated compute
//! only ever makes steps longer than nominal, which can only shrink the chunks.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::wait_until_idle;
use pagoda_engine::models::ModelConfig;
use pagoda_engine::{
    start_mock_engine, EngineConfig, EngineHandle, EngineRequest, FinishReason, GeneratedToken,
    ItlTarget, MockConfig, MockOutputLen, RequestStream, RequestTimings, SamplingParams,
    StopConditions, TokenEvent,
};

const EOS: u32 = 2;
const STEP_TIME_PER_TOKEN: Duration = Duration::from_micros(200);
const LONG_PROMPT_LEN: usize = 512;
const DECODE_MAX_TOKENS: usize = 2000;

fn start(itl_target: ItlTarget) -> EngineHandle {
    start_with(EngineConfig {
        itl_target,
        ..EngineConfig::default()
    })
}

fn start_with(config: EngineConfig) -> EngineHandle {
    let mock = MockConfig {
        ttft: Duration::ZERO,
        tpot: Duration::ZERO,
        jitter: 0.0,
        seed: 0,
        output_len: MockOutputLen::MaxTokens,
        output_token_ids: vec![40, 41, 42],
        fail_after_tokens: None,
        stall: None,
        step_time_per_token: STEP_TIME_PER_TOKEN,
    };
    start_mock_engine(config, ModelConfig::mock(1000, vec![EOS], 4096), mock).unwrap()
}

fn submit(handle: &EngineHandle, prompt_len: usize, max_tokens: usize) -> RequestStream {
    let id = handle.next_request_id();
    // Prompts differ per request, so no two share a cached prefix.
    let prompt = (0..prompt_len as u32)
        .map(|t| 100 + (id.0 as u32 * 7 + t) % 800)
        .collect();
    let stop = StopConditions {
        max_tokens: Some(max_tokens),
        ..StopConditions::default()
    };
    let request = EngineRequest::new(id, prompt, SamplingParams::default(), stop);
    handle
        .validate(request)
        .and_then(|r| handle.submit(r))
        .unwrap()
}

fn next_token(stream: &mut RequestStream) -> GeneratedToken {
    match stream.blocking_next().expect("an event") {
        TokenEvent::Token(token) => token,
        other => panic!("expected a token, got {other:?}"),
    }
}

/// Every token of a stream and its timings; the request must run to its `max_tokens`.
fn drain(mut stream: RequestStream, max_tokens: usize) -> (Vec<GeneratedToken>, RequestTimings) {
    let mut tokens = Vec::new();
    loop {
        match stream.blocking_next().expect("a final event") {
            TokenEvent::Token(token) => tokens.push(token),
            TokenEvent::Finished {
                reason, timings, ..
            } => {
                assert_eq!(reason, FinishReason::Length);
                assert_eq!(tokens.len(), max_tokens);
                return (tokens, timings);
            }
            TokenEvent::Error(error) => panic!("engine error: {error}"),
            TokenEvent::PromptLogprobs(_) => panic!("prompt log-probabilities were not asked for"),
        }
    }
}

/// Runs the scenario; returns how many tokens a decoding stream got while the long prompt was
/// in prefill (from its first scheduling to its first token).
fn decode_tokens_during_long_prefill(itl_target: ItlTarget) -> usize {
    let handle = start(itl_target);
    let mut decoding: Vec<RequestStream> = (0..2)
        .map(|_| submit(&handle, 8, DECODE_MAX_TOKENS))
        .collect();
    // Decode-only steps, then short prompts beside the decodes: the cost model learns both.
    for stream in &mut decoding {
        for _ in 0..12 {
            next_token(stream);
        }
    }
    for _ in 0..4 {
        drain(submit(&handle, 32, 2), 2);
    }
    if itl_target != ItlTarget::Off {
        wait_for_learned_costs(&handle);
    }
    let long = submit(&handle, LONG_PROMPT_LEN, 4);
    let (long_tokens, long_timings) = drain(long, 4);
    let mut decoding = decoding.into_iter();
    let (first_decoder_tokens, _) = drain(decoding.next().unwrap(), DECODE_MAX_TOKENS - 12);
    for stream in decoding {
        drain(stream, DECODE_MAX_TOKENS - 12);
    }
    let prefill_start = long_timings.first_scheduled.unwrap();
    let prefill_end = long_tokens[0].at;
    wait_until_idle(&handle);
    handle.shutdown();
    first_decoder_tokens
        .iter()
        .filter(|t| t.at >= prefill_start && t.at <= prefill_end)
        .count()
}

fn wait_for_learned_costs(handle: &EngineHandle) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stats = handle.stats();
        if stats.prefill_token_cost_seconds.is_some() && stats.itl_target_seconds.is_some() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the step costs were never learned: {stats:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_small_target_splits_a_long_prompt_beside_the_decodes() {
    // 2 ms: less than two decodes and any chunk cost, so each step carries the minimum chunk
    // (4 tokens) and the 512-token prompt takes 128 steps.
    let num_tokens = decode_tokens_during_long_prefill(ItlTarget::Fixed(Duration::from_millis(2)));
    let min_steps = LONG_PROMPT_LEN / 64;
    assert!(
        num_tokens >= min_steps,
        "a decoding stream got {num_tokens} tokens during the long prefill, expected at least {min_steps}"
    );
}

#[test]
fn without_a_target_the_long_prompt_goes_in_one_step() {
    let num_tokens = decode_tokens_during_long_prefill(ItlTarget::Off);
    assert!(num_tokens <= 2, "{num_tokens} steps");
}

/// One stream decoding, then short prompts beside it: enough steps of both kinds to learn from.
fn warm_up(handle: &EngineHandle) -> RequestStream {
    let mut decoding = submit(handle, 8, DECODE_MAX_TOKENS);
    for _ in 0..12 {
        next_token(&mut decoding);
    }
    for _ in 0..4 {
        drain(submit(handle, 32, 2), 2);
    }
    decoding
}

#[test]
fn the_target_and_the_learned_cost_are_published() {
    let handle = start(ItlTarget::Fixed(Duration::from_millis(3)));
    let _decoding = warm_up(&handle);
    wait_for_learned_costs(&handle);
    let stats = handle.stats();
    assert_eq!(stats.itl_target_seconds, Some(0.003));
    let per_token = stats.prefill_token_cost_seconds.unwrap();
    assert!(per_token > 0.0, "{per_token}");
    handle.shutdown();
}

#[test]
fn without_chunked_prefill_there_is_no_target() {
    let handle = start_with(EngineConfig {
        itl_target: ItlTarget::Fixed(Duration::from_millis(3)),
        enable_chunked_prefill: false,
        max_model_len: Some(2048),
        ..EngineConfig::default()
    });
    let _decoding = warm_up(&handle);
    let stats = handle.stats();
    assert_eq!(stats.num_running, 1, "the stream still decodes");
    assert_eq!(
        (stats.itl_target_seconds, stats.prefill_token_cost_seconds),
        (None, None)
    );
    handle.shutdown();
}
