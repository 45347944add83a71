//! Prompt log-probabilities (`EngineRequest::prompt_logprobs`, what lm-eval's loglikelihood and
//! vLLM's `prompt_logprobs` read): equal to an independent f64 reference at every position, the
//! same however the prompt is chunked, preempted or batched, never taken from the prefix cache,
//! and consistent with the log-probabilities of the tokens the model generates.
#![allow(clippy::unwrap_used)]

mod common;

use common::dense_reference::dense_logits;
use common::*;
use pagoda_engine::config::KvCacheDType;
use pagoda_engine::models::WeightFormat;
use pagoda_engine::testing::{Family, TinyHfSpec, TinyLlamaSpec};
use pagoda_engine::{start_engine, EngineConfig, EngineHandle, PromptTokenLogprob};

/// f32 engine against the f64 reference (logits of standard deviation ≈ 2).
const REFERENCE_TOLERANCE: f32 = 2e-3;
/// The same f32 model computing a row in another chunk or batch.
const RECOMPUTE_TOLERANCE: f32 = 1e-4;

fn exact_config() -> EngineConfig {
    EngineConfig {
        weight_format: WeightFormat::F32,
        kv_cache_dtype: KvCacheDType::F32,
        ..EngineConfig::default()
    }
}

fn with_prompt_logprobs(
    handle: &EngineHandle,
    prompt: &[u32],
    num_top: usize,
    max_tokens: usize,
) -> Outcome {
    let mut request = request(handle, prompt.to_vec(), greedy(max_tokens));
    request.prompt_logprobs = Some(num_top);
    run_one(handle, request)
}

fn log_softmax_f64(logits: &[f32]) -> Vec<f64> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let log_z = logits
        .iter()
        .map(|&v| (v as f64 - max).exp())
        .sum::<f64>()
        .ln();
    logits.iter().map(|&v| v as f64 - max - log_z).collect()
}

fn assert_entries_close(label: &str, got: &[PromptTokenLogprob], want: &[PromptTokenLogprob]) {
    assert_eq!(got.len(), want.len(), "{label}: entry count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.token_id, w.token_id, "{label}: entry {i}");
        assert!(
            (g.logprob - w.logprob).abs() < RECOMPUTE_TOLERANCE,
            "{label}: entry {i}: {} vs {}",
            g.logprob,
            w.logprob
        );
    }
}

#[test]
fn prompt_logprobs_equal_the_reference_at_every_position_in_one_prefill_or_in_chunks() {
    let spec = TinyHfSpec::for_family(Family::Llama);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model");
    spec.write(&path).unwrap();
    let prompt: Vec<u32> = (0..40)
        .map(|i| ((i * 37 + 5) % spec.vocab_size) as u32)
        .collect();
    let want = dense_logits(&spec.config_json(), &spec.weights().unwrap(), &prompt);

    let whole = start_engine(exact_config(), &path).unwrap();
    let outcome = with_prompt_logprobs(&whole, &prompt, 3, 2);
    whole.shutdown();
    let entries = outcome
        .prompt_logprobs
        .clone()
        .expect("prompt log-probabilities");
    assert_eq!(entries.len(), prompt.len() - 1);
    for (position, entry) in entries.iter().enumerate() {
        let reference = log_softmax_f64(&want[position]);
        let target = prompt[position + 1];
        assert_eq!(entry.token_id, target);
        let expected = reference[target as usize];
        assert!(
            (f64::from(entry.logprob) - expected).abs() < f64::from(REFERENCE_TOLERANCE),
            "position {position}: {} vs reference {expected}",
            entry.logprob
        );
        let num_clearly_better = reference.iter().filter(|&&lp| lp > expected + 1e-3).count();
        let num_not_clearly_worse = reference.iter().filter(|&&lp| lp > expected - 1e-3).count();
        let rank = entry.rank as usize;
        assert!(
            (num_clearly_better + 1..=num_not_clearly_worse).contains(&rank),
            "position {position}: rank {rank}"
        );
        assert_eq!(entry.top_logprobs.len(), 3);
        let (best_id, best_lp) = entry.top_logprobs[0];
        assert!((f64::from(best_lp) - reference[best_id as usize]).abs() < 2e-3);
    }

    // Chunks of 7 tokens, none aligned with the 16-token blocks.
    let chunked = start_engine(
        EngineConfig {
            max_num_batched_tokens: 7,
            ..exact_config()
        },
        &path,
    )
    .unwrap();
    let chunked_outcome = with_prompt_logprobs(&chunked, &prompt, 3, 2);
    chunked.shutdown();
    assert_entries_close(
        "7-token chunks",
        chunked_outcome.prompt_logprobs.as_ref().unwrap(),
        &entries,
    );
    assert_eq!(chunked_outcome.token_ids(), outcome.token_ids());
}

#[test]
fn generated_tokens_logprobs_match_the_same_tokens_read_as_a_prompt() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let handle = start(&model, exact_config());
    let prompt: Vec<u32> = (0..25).map(|i| (i * 11 + 3) % 256).collect();
    let (mut sampling, stop) = greedy(8);
    sampling.logprobs = Some(0);
    let generated = run_one(&handle, request(&handle, prompt.clone(), (sampling, stop)));
    let mut continued = prompt.clone();
    continued.extend(generated.token_ids());
    let read = with_prompt_logprobs(&handle, &continued, 0, 1);
    handle.shutdown();
    let entries = read.prompt_logprobs.clone().unwrap();
    for (i, token) in generated.tokens.iter().enumerate() {
        let entry = &entries[prompt.len() - 1 + i];
        assert_eq!(entry.token_id, token.token_id);
        assert_eq!(entry.rank, 1, "greedy tokens are the most likely");
        let logprob = token.logprob.unwrap();
        assert!(
            (entry.logprob - logprob).abs() < 1e-3,
            "token {i}: read {} vs generated {logprob}",
            entry.logprob
        );
        assert!(entry.top_logprobs.is_empty());
    }
}

#[test]
fn prompt_logprobs_take_nothing_from_the_prefix_cache_but_fill_it() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let handle = start(
        &model,
        EngineConfig {
            enable_prefix_caching: true,
            ..exact_config()
        },
    );
    let prompt: Vec<u32> = (0..70).map(|i| (i * 7 + 1) % 256).collect();
    let plain = run_one(&handle, request(&handle, prompt.clone(), greedy(2)));
    assert_eq!(plain.prompt_logprobs, None);
    let first = with_prompt_logprobs(&handle, &prompt, 1, 2);
    assert_eq!(first.num_cached_tokens, 0, "a cached block has no logits");
    let entries = first.prompt_logprobs.clone().unwrap();
    assert_eq!(entries.len(), prompt.len() - 1);
    let again = run_one(&handle, request(&handle, prompt.clone(), greedy(2)));
    assert!(again.num_cached_tokens > 0, "the prompt is still cached");
    assert_eq!(again.token_ids(), first.token_ids());
    let second = with_prompt_logprobs(&handle, &prompt, 1, 2);
    handle.shutdown();
    assert_entries_close("second request", &second.prompt_logprobs.unwrap(), &entries);
}

#[test]
fn prompt_logprobs_are_whole_and_unrepeated_under_preemption_batching_and_long_prompts() {
    let spec = TinyLlamaSpec::default();
    let model = tiny_model(&spec);
    // Long enough that the 512-row cap splits the longest prompt's prefill.
    let mut prompts = random_prompts(10, 90, spec.vocab_size as u32, 5);
    prompts.push((0..700).map(|i| (i * 13 + 2) % 256).collect());
    let alone = start(&model, exact_config());
    let expected: Vec<Vec<PromptTokenLogprob>> = prompts
        .iter()
        .map(|p| {
            with_prompt_logprobs(&alone, p, 2, 40)
                .prompt_logprobs
                .unwrap()
        })
        .collect();
    alone.shutdown();
    for (prompt, entries) in prompts.iter().zip(&expected) {
        assert_eq!(entries.len(), prompt.len() - 1);
    }

    // 200 blocks of 4 tokens (512 bytes per token in f32: 2 layers × K,V × 2 heads × 16 dims):
    // the long prompt fits alone, not beside the others, and arrives last, so it is preempted
    // part-way through its prefill.
    let tight = EngineConfig {
        block_size: 4,
        kv_cache_memory_bytes: Some(200 * 4 * 512),
        max_model_len: Some(800),
        max_num_batched_tokens: 32,
        ..exact_config()
    };
    let handle = start(&model, tight);
    let requests = prompts
        .iter()
        .map(|p| {
            let mut r = request(&handle, p.clone(), greedy(40));
            r.prompt_logprobs = Some(2);
            r
        })
        .collect();
    let outcomes = run_all(&handle, requests);
    let stats = handle.stats();
    handle.shutdown();
    for (i, (outcome, want)) in outcomes.iter().zip(&expected).enumerate() {
        let label = format!("request {i}");
        assert_entries_close(&label, outcome.prompt_logprobs.as_ref().unwrap(), want);
    }
    // The long prompt (the latest arrival) is the victim, part-way through its prefill.
    let long = outcomes.last().unwrap();
    assert!(
        long.num_preemptions > 0,
        "the tight cache should preempt the long prompt: {stats:?}"
    );
}
