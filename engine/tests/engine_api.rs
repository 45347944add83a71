//! The engine handle end to end on a tiny model: stops, seeds, logprobs, aborts, bad input.
#![allow(clippy::unwrap_used)]

mod common;

use common::gate::{Gate, GatedModel};
use common::*;
use pagoda_engine::models::load_model;
use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::{
    EngineConfig, EngineError, FinishReason, SamplingParams, StopConditions, TokenEvent,
};

fn engine() -> (TinyModel, pagoda_engine::EngineHandle) {
    let model = tiny_model(&TinyLlamaSpec::default());
    let handle = start(
        &model,
        EngineConfig {
            max_model_len: Some(256),
            ..EngineConfig::default()
        },
    );
    (model, handle)
}

#[test]
fn reports_capacity_and_concurrency() {
    let (_model, handle) = engine();
    let info = handle.info();
    // No budget given: what 256 sequences (max_num_seqs) of 256 tokens (max_model_len) can use,
    // 16 blocks of 16 tokens each (16 MiB at 2 layers × 2 (K,V) × 2 heads × 16 dims × 2 bytes
    // per token in f16), under the 1 GiB cap.
    assert_eq!(info.num_kv_blocks, 256 * 16);
    assert_eq!(info.kv_capacity_tokens, info.num_kv_blocks * 16);
    assert!(
        (info.max_concurrency_at_max_model_len - info.kv_capacity_tokens as f64 / 256.0).abs()
            < 1e-9
    );
    handle.shutdown();
}

#[test]
fn stop_token_ids_max_tokens_and_min_tokens() {
    let (_model, handle) = engine();
    let prompt = vec![3, 14, 15, 92, 65];
    let reference = run_one(&handle, request(&handle, prompt.clone(), greedy(20)));
    assert_eq!(reference.reason, FinishReason::Length);
    let ids = reference.token_ids();

    let stop_at = ids[5];
    let first = ids.iter().position(|&t| t == stop_at).unwrap();
    let mut params = greedy(20);
    params.1.stop_token_ids = vec![stop_at];
    let stopped = run_one(&handle, request(&handle, prompt.clone(), params.clone()));
    assert_eq!(stopped.token_ids(), ids[..=first].to_vec());
    assert_eq!(
        stopped.reason,
        FinishReason::Stop {
            stop_token_id: Some(stop_at)
        }
    );

    // min_tokens bans the stop token until enough tokens exist, so the output changes there.
    params.1.min_tokens = first + 2;
    let delayed = run_one(&handle, request(&handle, prompt.clone(), params));
    assert!(delayed.token_ids().len() > first + 1);
    assert!(
        !delayed.token_ids()[..first + 2].contains(&stop_at),
        "stop token sampled before min_tokens"
    );
    handle.shutdown();
}

#[test]
fn eos_ends_generation_unless_ignored() {
    let (_model, handle) = engine();
    let prompt = vec![7, 7, 7];
    let ids = run_one(&handle, request(&handle, prompt.clone(), greedy(12))).token_ids();
    // A model whose EOS is the third greedy token stops there; with ignore_eos it does not.
    let spec = TinyLlamaSpec {
        eos_token_id: ids[2],
        ..TinyLlamaSpec::default()
    };
    let eos_model = tiny_model(&spec);
    let eos_handle = start(&eos_model, EngineConfig::default());
    let mut params = greedy(12);
    params.1.ignore_eos = false;
    let stopped = run_one(&eos_handle, request(&eos_handle, prompt.clone(), params));
    assert_eq!(
        stopped.reason,
        FinishReason::Stop {
            stop_token_id: None
        }
    );
    assert_eq!(stopped.token_ids().last(), Some(&ids[2]));
    let ignored = run_one(&eos_handle, request(&eos_handle, prompt, greedy(12)));
    assert_eq!(ignored.token_ids(), ids);
    handle.shutdown();
    eos_handle.shutdown();
}

#[test]
fn seeded_sampling_is_reproducible_whatever_the_batch() {
    let (_model, handle) = engine();
    let sampled = |seed| {
        let sampling = SamplingParams {
            temperature: 1.0,
            top_p: 0.95,
            seed: Some(seed),
            ..SamplingParams::default()
        };
        let stop = StopConditions {
            max_tokens: Some(30),
            ignore_eos: true,
            ..StopConditions::default()
        };
        (sampling, stop)
    };
    let alone = run_one(&handle, request(&handle, vec![1, 2, 3], sampled(42))).token_ids();
    let mut batch = vec![request(&handle, vec![1, 2, 3], sampled(42))];
    batch.extend(
        random_prompts(6, 40, 256, 9)
            .into_iter()
            .map(|p| request(&handle, p, sampled(7))),
    );
    let together = run_all(&handle, batch);
    assert_eq!(together[0].token_ids(), alone);
    let other_seed = run_one(&handle, request(&handle, vec![1, 2, 3], sampled(43))).token_ids();
    assert_ne!(
        other_seed, alone,
        "a different seed should give a different sample"
    );
    handle.shutdown();
}

#[test]
fn logprobs_come_with_each_token_when_asked() {
    let (_model, handle) = engine();
    let mut params = greedy(5);
    params.0.logprobs = Some(3);
    let outcome = run_one(&handle, request(&handle, vec![4, 5, 6], params));
    for token in &outcome.tokens {
        let logprob = token.logprob.expect("logprob");
        assert!(logprob <= 0.0);
        assert_eq!(token.top_logprobs.len(), 3);
        // Greedy picks the most likely token, which therefore heads the alternatives.
        assert_eq!(token.top_logprobs[0].0, token.token_id);
        assert!(token.top_logprobs.windows(2).all(|w| w[0].1 >= w[1].1));
    }
    let plain = run_one(&handle, request(&handle, vec![4, 5, 6], greedy(5)));
    assert!(plain
        .tokens
        .iter()
        .all(|t| t.logprob.is_none() && t.top_logprobs.is_empty()));
    handle.shutdown();
}

#[test]
fn abort_and_dropped_streams_free_their_blocks() {
    // Every forward pass waits at the gate, so a request gets no further than the test allows.
    let model = tiny_model(&TinyLlamaSpec::default());
    let gate = Gate::new(3);
    let inner = load_model(&model.path, &candle_core::Device::Cpu, Default::default()).unwrap();
    let handle = pagoda_engine::start_engine_with_model(
        EngineConfig {
            max_model_len: Some(256),
            ..EngineConfig::default()
        },
        Box::new(GatedModel {
            inner,
            gate: gate.clone(),
        }),
    )
    .unwrap();
    let mut long = greedy(200);
    long.1.max_tokens = Some(200);
    let mut stream = handle
        .validate(request(&handle, vec![9; 40], long.clone()))
        .and_then(|r| handle.submit(r))
        .unwrap();
    for _ in 0..3 {
        assert!(matches!(stream.blocking_next(), Some(TokenEvent::Token(_))));
    }
    // The engine waits inside its fourth step: the abort is handled right after it.
    handle.abort(stream.id()).unwrap();
    gate.open();
    let last = std::iter::from_fn(|| stream.blocking_next()).last();
    assert!(
        matches!(
            last,
            Some(TokenEvent::Finished {
                reason: FinishReason::Abort,
                ..
            })
        ),
        "got {last:?}"
    );
    wait_until_idle(&handle);

    // Dropping a stream mid-way (client gone) aborts it too.
    gate.close_after(1);
    let mut dropped = handle
        .validate(request(&handle, vec![9; 40], long.clone()))
        .and_then(|r| handle.submit(r))
        .unwrap();
    assert!(matches!(
        dropped.blocking_next(),
        Some(TokenEvent::Token(_))
    ));
    // A waiting request dropped before it ever ran is removed as well: the engine waits inside
    // the dropped request's second step, and handles these submissions and drops after it.
    let queued: Vec<_> = (0..20)
        .map(|_| {
            handle
                .validate(request(&handle, vec![9; 40], long.clone()))
                .and_then(|r| handle.submit(r))
                .unwrap()
        })
        .collect();
    drop(dropped);
    drop(queued);
    gate.open();
    wait_until_idle(&handle);
    // The engine still serves afterwards.
    assert_eq!(
        run_one(&handle, request(&handle, vec![1], greedy(3)))
            .tokens
            .len(),
        3
    );
    handle.shutdown();
}

#[test]
fn stop_after_counts_only_the_tokens_the_caller_keeps() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let gate = Gate::new(3);
    let inner = load_model(&model.path, &candle_core::Device::Cpu, Default::default()).unwrap();
    let gated = GatedModel {
        inner,
        gate: gate.clone(),
    };
    let handle =
        pagoda_engine::start_engine_with_model(EngineConfig::default(), Box::new(gated)).unwrap();
    let mut stream = handle
        .validate(request(&handle, vec![9; 40], greedy(100)))
        .and_then(|r| handle.submit(r))
        .unwrap();
    for _ in 0..3 {
        assert!(matches!(stream.blocking_next(), Some(TokenEvent::Token(_))));
    }
    // A stop string matched in the second token's text; the engine is already inside the
    // step of the fourth.
    handle.stop_after(stream.id(), 2).unwrap();
    gate.open();
    let events: Vec<TokenEvent> = std::iter::from_fn(|| stream.blocking_next()).collect();
    assert!(matches!(
        events.last(),
        Some(TokenEvent::Finished {
            reason: FinishReason::Abort,
            ..
        })
    ));
    wait_until_idle(&handle);
    assert_eq!(handle.stats().num_generation_tokens_total, 2);
    handle.shutdown();
}

#[test]
fn bad_requests_are_rejected_at_submit_and_the_engine_keeps_serving() {
    let (_model, handle) = engine();
    let field = |prompt: Vec<u32>, params| match handle
        .validate(request(&handle, prompt, params))
        .and_then(|r| handle.submit(r))
    {
        Err(EngineError::InvalidRequest { field, .. }) => field.to_string(),
        Err(other) => format!("other: {other}"),
        Ok(_) => "accepted".into(),
    };
    assert_eq!(field(vec![], greedy(4)), "prompt");
    assert_eq!(field(vec![256], greedy(4)), "prompt");
    assert_eq!(field(vec![u32::MAX], greedy(4)), "prompt");
    let mut hot = greedy(4);
    hot.0.temperature = f32::NAN;
    assert_eq!(field(vec![1], hot), "temperature");
    let mut top_p = greedy(4);
    top_p.0.top_p = 0.0;
    assert_eq!(field(vec![1], top_p), "top_p");
    let mut penalty = greedy(4);
    penalty.0.repetition_penalty = 0.0;
    assert_eq!(field(vec![1], penalty), "repetition_penalty");
    let mut stop = greedy(4);
    stop.1.stop_token_ids = vec![999];
    assert_eq!(field(vec![1], stop), "stop_token_ids");
    assert_eq!(field(vec![1], greedy(0)), "max_tokens");

    let too_long = handle
        .validate(request(&handle, vec![1; 200], greedy(100)))
        .and_then(|r| handle.submit(r));
    assert!(
        matches!(too_long, Err(EngineError::RequestTooLarge(m)) if m.contains("max_model_len"))
    );
    let whole_context = handle
        .validate(request(&handle, vec![1; 256], greedy(1)))
        .and_then(|r| handle.submit(r));
    assert!(matches!(
        whole_context,
        Err(EngineError::RequestTooLarge(_))
    ));

    assert_eq!(
        run_one(&handle, request(&handle, vec![1, 2], greedy(4)))
            .tokens
            .len(),
        4
    );
    assert_eq!(handle.stats().num_waiting, 0);
    handle.shutdown();
    assert!(matches!(
        handle
            .validate(request(&handle, vec![1], greedy(1)))
            .and_then(|r| handle.submit(r)),
        Err(EngineError::ShutDown)
    ));
}

#[test]
fn stats_count_tokens_and_steps() {
    let (_model, handle) = engine();
    let outcomes = run_all(
        &handle,
        vec![
            request(&handle, vec![1; 10], greedy(5)),
            request(&handle, vec![2; 7], greedy(3)),
        ],
    );
    assert_eq!(outcomes.iter().map(|o| o.tokens.len()).sum::<usize>(), 8);
    wait_until_idle(&handle);
    let stats = handle.stats();
    assert_eq!(stats.num_prompt_tokens_total, 17);
    assert_eq!(stats.num_generation_tokens_total, 8);
    assert!(stats.num_steps_total >= 5);
    assert_eq!(stats.kv_cache_usage(), 0.0);
    handle.shutdown();
}

#[test]
fn a_generation_config_beside_the_gguf_adds_eos_ids() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let handle = start(&model, EngineConfig::default());
    let ids = run_one(&handle, request(&handle, vec![5, 6], greedy(8))).token_ids();
    handle.shutdown();
    let dir = model.path.parent().unwrap();
    std::fs::write(
        dir.join("generation_config.json"),
        format!("{{\"eos_token_id\": [{}]}}", ids[3]),
    )
    .unwrap();
    let handle = start(&model, EngineConfig::default());
    assert!(handle.info().model.eos_token_ids.contains(&ids[3]));
    let mut params = greedy(8);
    params.1.ignore_eos = false;
    let stopped = run_one(&handle, request(&handle, vec![5, 6], params));
    let first = ids.iter().position(|&t| t == ids[3]).unwrap();
    assert_eq!(stopped.token_ids(), ids[..=first].to_vec());
    handle.shutdown();
}

#[test]
fn min_tokens_beyond_what_may_be_generated_is_rejected() {
    let (_model, handle) = engine();
    let mut params = greedy(4);
    params.1.max_tokens = None;
    params.1.min_tokens = 300;
    let result = handle
        .validate(request(&handle, vec![1; 10], params))
        .and_then(|r| handle.submit(r));
    assert!(
        matches!(
            result,
            Err(EngineError::InvalidRequest {
                field: "min_tokens",
                ..
            })
        ),
        "{result:?}"
    );
    handle.shutdown();
}
