//! The mock engine end to end, through the handle: its clock (TTFT, TPOT, jitter), output
//! lengths and EOS, the real engine's limits, stats and block accounting, aborts and determinism.
//! Timing assertions are behaviour checks with generous margins, not speed targets.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::wait_until_idle;
use pagoda_engine::models::ModelConfig;
use pagoda_engine::{
    start_mock_engine, EngineConfig, EngineHandle, EngineRequest, FinishReason, GeneratedToken,
    MockConfig, MockOutputLen, RequestStream, RequestTimings, SamplingParams, StopConditions,
    TokenEvent, Usage,
};

const EOS: u32 = 2;
const TEXT: [u32; 5] = [40, 41, 42, 43, 44];
/// Slack for a noisy machine: a delay is at least its configured value and less than this late.
const SLACK: Duration = Duration::from_millis(50);

fn mock(ttft_ms: u64, tpot_ms: u64, output_len: MockOutputLen) -> MockConfig {
    MockConfig {
        ttft: Duration::from_millis(ttft_ms),
        tpot: Duration::from_millis(tpot_ms),
        jitter: 0.0,
        seed: 0,
        output_len,
        output_token_ids: TEXT.to_vec(),
        fail_after_tokens: None,
        stall: None,
        step_time_per_token: Duration::ZERO,
    }
}

fn start(mock: MockConfig, config: EngineConfig) -> EngineHandle {
    start_mock_engine(config, ModelConfig::mock(1000, vec![EOS], 4096), mock).unwrap()
}

fn stop(max_tokens: usize) -> StopConditions {
    StopConditions {
        max_tokens: Some(max_tokens),
        ..StopConditions::default()
    }
}

fn submit(handle: &EngineHandle, prompt_len: usize, stop: StopConditions) -> RequestStream {
    let id = handle.next_request_id();
    // Prompts differ per request, so no two share a cached prefix.
    let prompt = (0..prompt_len as u32)
        .map(|t| 100 + (id.0 as u32 * 7 + t) % 800)
        .collect();
    let request = EngineRequest::new(id, prompt, SamplingParams::default(), stop);
    handle
        .validate(request)
        .and_then(|r| handle.submit(r))
        .unwrap()
}

#[derive(Debug)]
struct Outcome {
    tokens: Vec<GeneratedToken>,
    reason: FinishReason,
    usage: Usage,
    timings: RequestTimings,
}

impl Outcome {
    fn token_ids(&self) -> Vec<u32> {
        self.tokens.iter().map(|t| t.token_id).collect()
    }
}

fn drain(mut stream: RequestStream) -> Outcome {
    let mut tokens = Vec::new();
    loop {
        match stream.blocking_next().expect("a final event") {
            TokenEvent::Token(token) => tokens.push(token),
            TokenEvent::Finished {
                reason,
                usage,
                timings,
            } => {
                assert_eq!(usage.completion_tokens, tokens.len());
                return Outcome {
                    tokens,
                    reason,
                    usage,
                    timings,
                };
            }
            TokenEvent::Error(error) => panic!("engine error: {error}"),
            TokenEvent::PromptLogprobs(_) => panic!("prompt log-probabilities were not asked for"),
        }
    }
}

/// Checks TTFT (first scheduling → first token) and every gap between tokens against the
/// configured delays, scaled by `1 ± jitter`.
fn assert_timing(outcome: &Outcome, ttft: Duration, tpot: Duration, jitter: f64) {
    let (low, high) = (1.0 - jitter, 1.0 + jitter);
    let first_token = outcome.timings.first_token.unwrap();
    assert_eq!(first_token, outcome.tokens[0].at);
    let measured = first_token - outcome.timings.first_scheduled.unwrap();
    assert!(
        measured >= ttft.mul_f64(low),
        "TTFT {measured:?} < {ttft:?}"
    );
    assert!(measured < ttft.mul_f64(high) + SLACK, "TTFT {measured:?}");
    for pair in outcome.tokens.windows(2) {
        let gap = pair[1].at - pair[0].at;
        // The mock reads its clock a few microseconds before the token's `at` is stamped.
        let floor = tpot.mul_f64(low).saturating_sub(Duration::from_millis(1));
        assert!(gap >= floor, "TPOT {gap:?} < {tpot:?}");
        assert!(gap < tpot.mul_f64(high) + SLACK, "TPOT {gap:?}");
    }
}

#[test]
fn ttft_and_tpot_are_honoured() {
    let (ttft, tpot) = (Duration::from_millis(80), Duration::from_millis(20));
    let handle = start(
        mock(80, 20, MockOutputLen::MaxTokens),
        EngineConfig::default(),
    );
    let first = submit(&handle, 12, stop(6));
    std::thread::sleep(Duration::from_millis(30));
    // Arrives while the first waits for its first token: admitted at once, its own clock.
    let second = submit(&handle, 700, stop(6));
    for outcome in [drain(first), drain(second)] {
        assert_eq!(outcome.reason, FinishReason::Length);
        assert_timing(&outcome, ttft, tpot, 0.0);
        let queued = outcome.timings.first_scheduled.unwrap() - outcome.timings.queued;
        assert!(queued < SLACK, "admission took {queued:?}");
    }
    handle.shutdown();
}

#[test]
fn jitter_keeps_delays_within_bounds() {
    let config = MockConfig {
        jitter: 0.5,
        seed: 11,
        ..mock(60, 20, MockOutputLen::MaxTokens)
    };
    let handle = start(config, EngineConfig::default());
    let streams: Vec<_> = (0..4).map(|_| submit(&handle, 20, stop(8))).collect();
    for stream in streams {
        let outcome = drain(stream);
        assert_timing(
            &outcome,
            Duration::from_millis(60),
            Duration::from_millis(20),
            0.5,
        );
    }
    handle.shutdown();
}

#[test]
fn max_tokens_ends_with_length_and_counts_usage() {
    let handle = start(
        mock(0, 0, MockOutputLen::MaxTokens),
        EngineConfig::default(),
    );
    let params = SamplingParams {
        logprobs: Some(2),
        ..SamplingParams::default()
    };
    let id = handle.next_request_id();
    let request = EngineRequest::new(id, vec![5; 9], params, stop(7));
    let outcome = drain(
        handle
            .validate(request)
            .and_then(|r| handle.submit(r))
            .unwrap(),
    );
    assert_eq!(outcome.reason, FinishReason::Length);
    assert_eq!(outcome.usage.prompt_tokens, 9);
    assert_eq!(outcome.usage.completion_tokens, 7);
    let offset = id.0 as usize % TEXT.len();
    let expected: Vec<u32> = (0..7).map(|i| TEXT[(offset + i) % TEXT.len()]).collect();
    assert_eq!(outcome.token_ids(), expected);
    assert!(outcome.tokens.iter().all(|t| t.logprob == Some(0.0)));
    assert!(outcome.tokens.iter().all(|t| t.top_logprobs.is_empty()));
    let stats = handle.stats();
    assert_eq!(stats.num_prompt_tokens_total, 9);
    assert_eq!(stats.num_generation_tokens_total, 7);
    handle.shutdown();
}

#[test]
fn drawn_lengths_end_with_eos_unless_ignored() {
    let handle = start(mock(0, 1, MockOutputLen::Fixed(5)), EngineConfig::default());
    let eos = FinishReason::Stop {
        stop_token_id: None,
    };
    let stopped = drain(submit(&handle, 4, stop(20)));
    assert_eq!((stopped.reason, stopped.usage.completion_tokens), (eos, 5));
    assert_eq!(stopped.token_ids().last(), Some(&EOS));
    let short = drain(submit(&handle, 4, stop(3)));
    assert_eq!(
        (short.reason, short.usage.completion_tokens),
        (FinishReason::Length, 3)
    );
    let ignoring = StopConditions {
        ignore_eos: true,
        ..stop(12)
    };
    let ignored = drain(submit(&handle, 4, ignoring));
    assert_eq!(ignored.reason, FinishReason::Length);
    assert_eq!(ignored.usage.completion_tokens, 12);
    assert_eq!(ignored.token_ids()[4], EOS);
    handle.shutdown();

    let uniform = MockOutputLen::Uniform { min: 3, max: 9 };
    let handle = start(mock(0, 0, uniform), EngineConfig::default());
    let streams: Vec<_> = (0..30).map(|_| submit(&handle, 6, stop(20))).collect();
    let mut lengths = Vec::new();
    for outcome in streams.into_iter().map(drain) {
        assert_eq!(outcome.reason, eos);
        let ids = outcome.token_ids();
        assert!(!ids[..ids.len() - 1].contains(&EOS) && ids.last() == Some(&EOS));
        lengths.push(ids.len());
    }
    assert!(lengths.iter().all(|l| (3..=9).contains(l)), "{lengths:?}");
    assert!(lengths.iter().any(|&l| l != lengths[0]), "lengths vary");
    handle.shutdown();
}

#[test]
fn max_num_seqs_is_respected() {
    let config = EngineConfig {
        max_num_seqs: 4,
        ..EngineConfig::default()
    };
    let handle = start(mock(5, 2, MockOutputLen::MaxTokens), config);
    let streams: Vec<_> = (0..16).map(|_| submit(&handle, 30, stop(10))).collect();
    let watcher = {
        let handle = handle.clone();
        std::thread::spawn(move || {
            let mut max_running = 0;
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                let stats = handle.stats();
                max_running = max_running.max(stats.num_running);
                if stats.num_generation_tokens_total == 160 {
                    break;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            max_running
        })
    };
    for outcome in streams.into_iter().map(drain) {
        assert_eq!(outcome.reason, FinishReason::Length);
        assert_eq!(outcome.usage.completion_tokens, 10);
    }
    assert_eq!(watcher.join().unwrap(), 4);
    wait_until_idle(&handle);
    handle.shutdown();
}

#[test]
fn blocks_are_freed_after_finishing_aborting_and_dropping() {
    let handle = start(
        mock(0, 3, MockOutputLen::MaxTokens),
        EngineConfig::default(),
    );
    let finishing: Vec<_> = (0..4).map(|_| submit(&handle, 40, stop(5))).collect();
    let mut aborted = submit(&handle, 40, stop(500));
    let mut dropped = submit(&handle, 40, stop(500));
    let waiting_dropped = submit(&handle, 40, stop(500));
    drop(waiting_dropped);
    for _ in 0..2 {
        assert!(matches!(
            aborted.blocking_next(),
            Some(TokenEvent::Token(_))
        ));
        assert!(matches!(
            dropped.blocking_next(),
            Some(TokenEvent::Token(_))
        ));
    }
    assert!(handle.stats().num_kv_blocks_used > 0);
    handle.abort(aborted.id()).unwrap();
    drop(dropped);
    for outcome in finishing.into_iter().map(drain) {
        assert_eq!(outcome.reason, FinishReason::Length);
    }
    let last = std::iter::from_fn(|| aborted.blocking_next()).last();
    assert!(matches!(
        last,
        Some(TokenEvent::Finished {
            reason: FinishReason::Abort,
            ..
        })
    ));
    wait_until_idle(&handle);
    assert_eq!(handle.stats().num_kv_blocks_used, 0);
    handle.shutdown();
}

#[test]
fn kv_cache_is_sized_for_the_model_and_preemption_works() {
    let handle = start(
        mock(0, 0, MockOutputLen::MaxTokens),
        EngineConfig::default(),
    );
    // SmolLM2-135M's shape in the default f16 cache: 2 × 30 layers × 3 KV heads × 64 dims × 2
    // bytes per token; 256 sequences of its 8192 tokens would need more than the 1 GiB cap.
    assert_eq!(handle.info().num_kv_blocks, (1 << 30) / (23_040 * 16));
    handle.shutdown();

    // 12 blocks of 16 tokens for 6 requests of up to 60 tokens: preemptions must happen.
    let config = EngineConfig {
        kv_cache_memory_bytes: Some(23_040 * 16 * 12),
        max_model_len: Some(128),
        enable_prefix_caching: false,
        ..EngineConfig::default()
    };
    let handle = start(mock(1, 1, MockOutputLen::MaxTokens), config);
    let streams: Vec<_> = (0..6).map(|_| submit(&handle, 20, stop(40))).collect();
    let outcomes: Vec<Outcome> = streams.into_iter().map(drain).collect();
    assert!(outcomes.iter().all(|o| o.usage.completion_tokens == 40));
    assert!(outcomes.iter().any(|o| o.timings.num_preemptions > 0));
    wait_until_idle(&handle);
    handle.shutdown();
}

#[test]
fn stats_count_what_a_model_would_compute() {
    let config = EngineConfig {
        enable_prefix_caching: false,
        max_num_batched_tokens: 64,
        ..EngineConfig::default()
    };
    let handle = start(mock(3, 1, MockOutputLen::Fixed(9)), config);
    let prompts = [5, 70, 130, 1, 33];
    let streams: Vec<_> = prompts
        .iter()
        .map(|&n| submit(&handle, n, stop(20)))
        .collect();
    let num_outputs: Vec<usize> = streams.into_iter().map(|s| drain(s).tokens.len()).collect();
    wait_until_idle(&handle);
    let stats = handle.stats();
    let num_prompt: usize = prompts.iter().sum();
    let num_output: usize = num_outputs.iter().sum();
    assert_eq!(stats.num_prompt_tokens_total, num_prompt as u64);
    assert_eq!(stats.num_generation_tokens_total, num_output as u64);
    // Every prompt token and every output token but the last is computed once, however many
    // steps found a token not ready.
    let expected = num_prompt + num_output - prompts.len();
    assert_eq!(stats.num_computed_tokens_total, expected as u64);
    handle.shutdown();
}

#[test]
fn prompt_logprobs_come_first_certain_and_whole_even_in_small_chunks() {
    let config = EngineConfig {
        max_num_batched_tokens: 16,
        ..EngineConfig::default()
    };
    let handle = start(mock(0, 1, MockOutputLen::MaxTokens), config);
    let prompt: Vec<u32> = (0..50).map(|t| 100 + t).collect();
    let mut request = EngineRequest::new(
        handle.next_request_id(),
        prompt.clone(),
        SamplingParams::default(),
        stop(3),
    );
    request.prompt_logprobs = Some(2);
    let mut stream = handle.submit(handle.validate(request).unwrap()).unwrap();
    let TokenEvent::PromptLogprobs(entries) = stream.blocking_next().expect("an event") else {
        panic!("prompt log-probabilities come first");
    };
    let ids: Vec<u32> = entries.iter().map(|e| e.token_id).collect();
    assert_eq!(ids, prompt[1..]);
    for entry in &entries {
        assert_eq!((entry.logprob, entry.rank), (0.0, 1));
        assert_eq!(entry.top_logprobs, vec![(entry.token_id, 0.0)]);
    }
    let outcome = drain(stream);
    assert_eq!(outcome.tokens.len(), 3);
    handle.shutdown();
}

#[test]
fn the_same_seed_gives_the_same_outputs() {
    let run = |seed| {
        let config = MockConfig {
            seed,
            jitter: 0.3,
            ..mock(0, 1, MockOutputLen::Uniform { min: 1, max: 30 })
        };
        let handle = start(config, EngineConfig::default());
        let streams: Vec<_> = (0..12).map(|_| submit(&handle, 8, stop(30))).collect();
        let outputs: Vec<Vec<u32>> = streams.into_iter().map(|s| drain(s).token_ids()).collect();
        handle.shutdown();
        outputs
    };
    assert_eq!(run(3), run(3));
    assert_ne!(run(3), run(4));
}

#[test]
fn shutdown_and_abort_do_not_wait_for_the_clock() {
    let handle = start(
        mock(30_000, 1, MockOutputLen::MaxTokens),
        EngineConfig::default(),
    );
    let aborted = submit(&handle, 8, stop(4));
    let shut_down = submit(&handle, 8, stop(4));
    std::thread::sleep(Duration::from_millis(20));
    let start = Instant::now();
    handle.abort(aborted.id()).unwrap();
    assert_eq!(drain(aborted).reason, FinishReason::Abort);
    handle.shutdown();
    assert_eq!(drain(shut_down).reason, FinishReason::Abort);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn bad_mock_configurations_are_refused() {
    let model = ModelConfig::mock(1000, vec![EOS], 4096);
    let with_eos = MockConfig {
        output_token_ids: vec![40, EOS],
        ..mock(0, 0, MockOutputLen::MaxTokens)
    };
    let error = start_mock_engine(EngineConfig::default(), model.clone(), with_eos).unwrap_err();
    assert!(error.to_string().contains("EOS"), "{error}");
    let too_long = EngineConfig {
        max_model_len: Some(8192),
        ..EngineConfig::default()
    };
    let error = start_mock_engine(too_long, model, mock(0, 0, MockOutputLen::MaxTokens));
    assert!(error.unwrap_err().to_string().contains("context length"));
}

#[test]
fn speculating_the_mock_accepts_proposals_of_its_own_text_and_keeps_it() {
    let run = |speculative| {
        let config = EngineConfig {
            speculative,
            ..EngineConfig::default()
        };
        let handle = start(mock(0, 1, MockOutputLen::Fixed(24)), config);
        let streams: Vec<_> = (0..6).map(|_| submit(&handle, 8, stop(30))).collect();
        let outcomes: Vec<Outcome> = streams.into_iter().map(drain).collect();
        let counters = handle.stats().spec_decode;
        handle.shutdown();
        (outcomes, counters)
    };
    let (plain, no_counters) = run(None);
    assert_eq!(no_counters, None);
    assert!(plain.iter().all(|o| o.usage.spec_decode.is_none()));
    let config = pagoda_engine::SpeculativeConfig::from_json(
        r#"{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_min":2,"prompt_lookup_max":3}"#,
    )
    .unwrap();
    let (speculative, counters) = run(Some(config));
    let counters = counters.expect("counters");
    for (a, b) in plain.iter().zip(&speculative) {
        assert_eq!(a.token_ids(), b.token_ids());
    }
    // The mock's text cycles every 5 tokens: once it repeats, lookup proposes the rest of it.
    assert!(counters.num_accepted_tokens > 6 * 10, "{counters:?}");
    let per_request: usize = speculative
        .iter()
        .map(|o| o.usage.spec_decode.expect("reported").num_accepted_tokens)
        .sum();
    assert_eq!(per_request as u64, counters.num_accepted_tokens);
    let num_drafted: usize = speculative
        .iter()
        .map(|o| o.usage.spec_decode.unwrap().num_draft_tokens)
        .sum();
    assert_eq!(num_drafted as u64, counters.num_draft_tokens);
}
