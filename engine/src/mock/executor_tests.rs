//! The mock's clocks, output order, EOS placement and bookkeeping, driven without an engine.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{jittered, MockExecutor};
use crate::batch::{BatchPlan, ScheduledSeq};
use crate::error::EngineError;
use crate::mock::{MockConfig, MockOutputLen};
use crate::models::ModelConfig;
use crate::request::{EngineRequest, RequestId, SamplingParams, StopConditions};
use crate::runner::{StepExecutor, StepOutput};

const EOS: u32 = 2;

fn config(ttft_ms: u64, tpot_ms: u64, output_len: MockOutputLen, seed: u64) -> MockConfig {
    MockConfig {
        ttft: Duration::from_millis(ttft_ms),
        tpot: Duration::from_millis(tpot_ms),
        jitter: 0.0,
        seed,
        output_len,
        output_token_ids: vec![10, 11, 12],
        fail_after_tokens: None,
        stall: None,
        step_time_per_token: Duration::ZERO,
    }
}

fn executor(ttft_ms: u64, tpot_ms: u64, output_len: MockOutputLen, seed: u64) -> MockExecutor {
    let mock = config(ttft_ms, tpot_ms, output_len, seed);
    MockExecutor::new(mock, &ModelConfig::mock(100, vec![EOS], 1024)).unwrap()
}

fn add(executor: &mut MockExecutor, id: u64, stop: StopConditions, max_output_tokens: usize) {
    let request = EngineRequest::new(
        RequestId(id),
        vec![1, 2, 3],
        SamplingParams::default(),
        stop,
    );
    executor.add_request(&request, max_output_tokens);
}

/// A plan where each of `ids` samples (a decode of one token).
fn plan(ids: &[u64]) -> BatchPlan {
    let seqs = ids
        .iter()
        .map(|&id| ScheduledSeq {
            id: RequestId(id),
            num_computed_tokens: 3,
            new_token_ids: vec![1],
            num_draft_tokens: 0,
            block_table: Vec::new(),
            sample: true,
            lora: None, prompt_logprobs: None,
        })
        .collect::<Vec<_>>();
    BatchPlan {
        num_batched_tokens: seqs.len(),
        seqs,
    }
}

fn tokens(output: StepOutput) -> Vec<Option<u32>> {
    output
        .tokens
        .into_iter()
        .map(|token| {
            token.map(|t| {
                assert!(
                    t.logprob.is_none(),
                    "the mock chooses without a distribution"
                );
                t.token_id
            })
        })
        .collect()
}

#[test]
fn zero_delays_make_every_token_due_at_once() {
    let mut mock = executor(0, 0, MockOutputLen::MaxTokens, 0);
    add(&mut mock, 1, StopConditions::default(), 16);
    add(&mut mock, 2, StopConditions::default(), 16);
    for _ in 0..3 {
        let output = tokens(mock.execute(&plan(&[1, 2])).unwrap());
        assert!(output.iter().all(Option::is_some), "{output:?}");
        assert_eq!(mock.idle_until(), None);
    }
}

#[test]
fn tokens_wait_for_their_clock_and_the_engine_is_told_when() {
    let mut mock = executor(40, 20, MockOutputLen::MaxTokens, 0);
    add(&mut mock, 1, StopConditions::default(), 16);
    let start = Instant::now();
    assert_eq!(tokens(mock.execute(&plan(&[1])).unwrap()), vec![None]);
    let due = mock
        .idle_until()
        .expect("nothing ready: the engine must wait");
    assert!(due >= start + Duration::from_millis(40));
    assert!(due <= Instant::now() + Duration::from_millis(40));
    std::thread::sleep(due.saturating_duration_since(Instant::now()));
    assert!(tokens(mock.execute(&plan(&[1])).unwrap())[0].is_some());
    assert_eq!(mock.idle_until(), None, "a token came: step again at once");
    let emitted = Instant::now();
    assert_eq!(tokens(mock.execute(&plan(&[1])).unwrap()), vec![None]);
    let next = mock.idle_until().unwrap();
    assert!(next > emitted && next <= emitted + Duration::from_millis(20));
}

#[test]
fn a_prefill_chunk_in_the_plan_means_no_waiting() {
    let mut mock = executor(40, 20, MockOutputLen::MaxTokens, 0);
    add(&mut mock, 1, StopConditions::default(), 16);
    add(&mut mock, 2, StopConditions::default(), 16);
    let mut step = plan(&[1, 2]);
    step.seqs[1].sample = false;
    assert_eq!(tokens(mock.execute(&step).unwrap()), vec![None]);
    assert_eq!(mock.idle_until(), None);
}

#[test]
fn output_cycles_from_the_request_offset_and_ends_with_eos() {
    let mut mock = executor(0, 0, MockOutputLen::Fixed(5), 0);
    add(&mut mock, 1, StopConditions::default(), 16);
    add(&mut mock, 3, StopConditions::default(), 16);
    let outputs: Vec<Vec<Option<u32>>> = (0..5)
        .map(|_| tokens(mock.execute(&plan(&[1, 3])).unwrap()))
        .collect();
    let first: Vec<Option<u32>> = outputs.iter().map(|row| row[0]).collect();
    let second: Vec<Option<u32>> = outputs.iter().map(|row| row[1]).collect();
    assert_eq!(first, [11, 12, 10, 11, EOS].map(Some));
    assert_eq!(second, [10, 11, 12, 10, EOS].map(Some));
}

#[test]
fn eos_position_follows_min_tokens_ignore_eos_and_max_tokens() {
    let mut mock = executor(0, 0, MockOutputLen::Fixed(4), 0);
    let min_tokens = |min_tokens, ignore_eos| StopConditions {
        min_tokens,
        ignore_eos,
        ..StopConditions::default()
    };
    add(&mut mock, 1, min_tokens(0, false), 16);
    add(&mut mock, 2, min_tokens(6, false), 16);
    add(&mut mock, 3, min_tokens(6, true), 16);
    add(&mut mock, 4, min_tokens(0, false), 4);
    add(&mut mock, 5, min_tokens(0, false), 3);
    let position = |id| mock.requests[&RequestId(id)].eos_position;
    assert_eq!(position(1), Some(4));
    assert_eq!(position(2), Some(7), "EOS is banned up to min_tokens");
    assert_eq!(
        position(3),
        Some(4),
        "ignore_eos: EOS comes, and does not stop"
    );
    assert_eq!(position(4), Some(4), "EOS as the last allowed token");
    assert_eq!(position(5), None, "the request ends at max_tokens first");
    let mut none = executor(0, 0, MockOutputLen::MaxTokens, 0);
    add(&mut none, 1, StopConditions::default(), 16);
    assert_eq!(none.requests[&RequestId(1)].eos_position, None);
}

#[test]
fn release_forgets_the_request() {
    let mut mock = executor(0, 0, MockOutputLen::MaxTokens, 0);
    add(&mut mock, 1, StopConditions::default(), 16);
    mock.execute(&plan(&[1, 9])).unwrap();
    assert_eq!(
        mock.num_requests(),
        2,
        "an unannounced request gets a clock too"
    );
    mock.release(RequestId(1));
    mock.release(RequestId(9));
    mock.release(RequestId(42));
    assert_eq!(mock.num_requests(), 0);
}

#[test]
fn the_same_seed_draws_the_same_lengths() {
    let uniform = MockOutputLen::Uniform { min: 1, max: 1000 };
    let positions = |seed| {
        let mut mock = executor(0, 0, uniform.clone(), seed);
        (1..=20)
            .map(|id| {
                add(&mut mock, id, StopConditions::default(), 2000);
                mock.requests[&RequestId(id)].eos_position
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(positions(5), positions(5));
    assert_ne!(positions(5), positions(6));
}

#[test]
fn jitter_stays_within_bounds() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let base = Duration::from_millis(100);
    let draws: Vec<Duration> = (0..2000).map(|_| jittered(&mut rng, base, 0.2)).collect();
    let (min, max) = (draws.iter().min().unwrap(), draws.iter().max().unwrap());
    assert!(*min >= Duration::from_millis(80) && *max <= Duration::from_millis(120));
    assert!(*min < Duration::from_millis(82) && *max > Duration::from_millis(118));
    assert_eq!(jittered(&mut rng, base, 0.0), base);
    assert_eq!(jittered(&mut rng, Duration::ZERO, 0.5), Duration::ZERO);
    assert!(jittered(&mut rng, base, 1.0) <= Duration::from_millis(200));
}

#[test]
fn an_injected_fault_fails_the_step_that_would_make_one_token_too_many() {
    let mock = MockConfig {
        fail_after_tokens: Some(2),
        stall: None,
        ..config(0, 0, MockOutputLen::MaxTokens, 0)
    };
    let mut mock = MockExecutor::new(mock, &ModelConfig::mock(100, vec![EOS], 1024)).unwrap();
    add(&mut mock, 1, StopConditions::default(), 16);
    for step in 1..=2 {
        let output = mock.execute(&plan(&[1]));
        assert!(
            matches!(&output, Ok(out) if out.tokens[0].is_some()),
            "step {step} makes token {step}: {output:?}"
        );
    }
    match mock.execute(&plan(&[1])) {
        Err(EngineError::Execution(message)) => assert!(message.contains("fault"), "{message}"),
        other => panic!("the step making token 3 must fail: {other:?}"),
    }
}
