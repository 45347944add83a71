//! Prefix caching end to end on a tiny model: identical outputs with and without the cache, only
//! the suffix computed after a shared prefix, correctness under eviction, salts, collisions.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::{EngineConfig, EngineHandle};
use rand::{Rng, SeedableRng};

const MAX_TOKENS: usize = 12;

fn config(enable_prefix_caching: bool) -> EngineConfig {
    EngineConfig {
        enable_prefix_caching,
        ..EngineConfig::default()
    }
}

/// `count` prompts made of one of `num_prefixes` shared prefixes plus a unique suffix.
fn shared_prefix_prompts(
    count: usize,
    num_prefixes: usize,
    prefix_len: usize,
    seed: u64,
) -> Vec<Vec<u32>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let prefixes: Vec<Vec<u32>> = (0..num_prefixes)
        .map(|_| (0..prefix_len).map(|_| rng.random_range(1..256)).collect())
        .collect();
    (0..count)
        .map(|i| {
            let suffix_len = rng.random_range(1..30);
            let mut prompt = prefixes[i % num_prefixes].clone();
            prompt.extend((0..suffix_len).map(|_| rng.random_range(1..256u32)));
            prompt
        })
        .collect()
}

fn one_by_one(handle: &EngineHandle, prompts: &[Vec<u32>]) -> Vec<Vec<u32>> {
    prompts
        .iter()
        .map(|p| run_one(handle, request(handle, p.clone(), greedy(MAX_TOKENS))).token_ids())
        .collect()
}

fn all_at_once(handle: &EngineHandle, prompts: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let requests = prompts
        .iter()
        .map(|p| request(handle, p.clone(), greedy(MAX_TOKENS)))
        .collect();
    run_all(handle, requests)
        .iter()
        .map(Outcome::token_ids)
        .collect()
}

#[test]
fn outputs_are_identical_with_and_without_the_cache() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let prompts = shared_prefix_prompts(10, 3, 45, 1);
    let uncached = start(&model, config(false));
    let expected = one_by_one(&uncached, &prompts);
    assert_eq!(uncached.stats().prefix_cache_hits_tokens_total, 0);
    uncached.shutdown();

    let cached = start(&model, config(true));
    assert_eq!(
        one_by_one(&cached, &prompts),
        expected,
        "sequential requests, cache on"
    );
    assert!(
        cached.stats().prefix_cache_hits_tokens_total > 0,
        "later requests should hit"
    );
    // Again, all at once and with every prefix already cached.
    assert_eq!(
        all_at_once(&cached, &prompts),
        expected,
        "concurrent requests, cache on"
    );
    wait_until_idle(&cached);
    cached.shutdown();
}

#[test]
fn a_request_sharing_a_1024_token_prefix_computes_only_its_suffix() {
    let model = tiny_model(&TinyLlamaSpec {
        context_length: 4096,
        ..TinyLlamaSpec::default()
    });
    let handle = start(&model, config(true));
    let prompts = shared_prefix_prompts(2, 1, 1024, 2);
    run_one(
        &handle,
        request(&handle, prompts[0].clone(), greedy(MAX_TOKENS)),
    );
    wait_until_idle(&handle);
    let before = handle.stats();
    let outcome = run_one(
        &handle,
        request(&handle, prompts[1].clone(), greedy(MAX_TOKENS)),
    );
    wait_until_idle(&handle);
    let after = handle.stats();
    let suffix_len = prompts[1].len() - 1024;
    assert_eq!(
        after.prefix_cache_hits_tokens_total - before.prefix_cache_hits_tokens_total,
        1024
    );
    assert_eq!(
        after.prefix_cache_queries_tokens_total - before.prefix_cache_queries_tokens_total,
        prompts[1].len() as u64
    );
    // The suffix, then one decode per generated token but the last.
    let computed = after.num_computed_tokens_total - before.num_computed_tokens_total;
    assert_eq!(computed, (suffix_len + MAX_TOKENS - 1) as u64);
    handle.shutdown();

    let uncached = start(&model, config(false));
    assert_eq!(
        run_one(
            &uncached,
            request(&uncached, prompts[1].clone(), greedy(MAX_TOKENS))
        )
        .token_ids(),
        outcome.token_ids()
    );
    uncached.shutdown();
}

#[test]
fn eviction_under_memory_pressure_keeps_outputs_correct() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let prompts = shared_prefix_prompts(16, 5, 60, 3);
    let uncached = start(&model, config(false));
    let expected = all_at_once(&uncached, &prompts);
    uncached.shutdown();
    // 40 blocks of 4 tokens (256 bytes per token in the default f16 cache): far less than the
    // prefixes need, so cached blocks are evicted and running requests preempted while others
    // reuse shared blocks.
    let tight = EngineConfig {
        block_size: 4,
        kv_cache_memory_bytes: Some(40 * 4 * 256),
        max_model_len: Some(128),
        ..config(true)
    };
    let handle = start(&model, tight);
    assert_eq!(all_at_once(&handle, &prompts), expected);
    assert_eq!(one_by_one(&handle, &prompts), expected);
    wait_until_idle(&handle);
    let stats = handle.stats();
    assert!(
        stats.num_prefix_cache_evictions_total > 0,
        "expected evictions: {stats:?}"
    );
    assert!(
        stats.prefix_cache_hits_tokens_total > 0,
        "expected hits: {stats:?}"
    );
    handle.shutdown();
}

#[test]
fn different_salts_never_share_and_reset_empties_the_cache() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let handle = start(&model, config(true));
    let prompt: Vec<u32> = (1..100).collect();
    let salted = |salt: Option<&str>| {
        let mut r = request(&handle, prompt.clone(), greedy(4));
        r.cache_salt = salt.map(str::to_string);
        r
    };
    let hits = || handle.stats().prefix_cache_hits_tokens_total;
    let first = run_one(&handle, salted(Some("a")));
    assert_eq!(hits(), 0);
    let other_tenant = run_one(&handle, salted(Some("b")));
    assert_eq!(hits(), 0, "another salt must not hit");
    assert_eq!(first.token_ids(), other_tenant.token_ids());
    run_one(&handle, salted(None));
    assert_eq!(hits(), 0, "no salt is a salt of its own");
    run_one(&handle, salted(Some("a")));
    assert_eq!(hits(), 96, "the same salt hits its six full blocks");
    wait_until_idle(&handle);
    assert!(handle.blocking_reset_prefix_cache().unwrap() > 0);
    assert_eq!(handle.stats().num_cached_kv_blocks, 0);
    run_one(&handle, salted(Some("a")));
    assert_eq!(hits(), 96, "nothing is cached after a reset");
    handle.shutdown();
}
