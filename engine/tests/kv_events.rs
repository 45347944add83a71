//! KV-cache events end to end on a tiny model: a subscriber that applies every batch in order
//! holds exactly the blocks the engine's prefix-cache statistics say are cached, every stored
//! block's tokens are a block of a request that ran, and a subscriber that never reads loses
//! batches (counted) but never a token.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashSet;

use common::*;
use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::{BlockHash, EngineConfig, KvCacheEvent, KvEventBatch};
use rand::{Rng, SeedableRng};

const BLOCK_SIZE: usize = 4;

/// 40 blocks of 4 tokens: far fewer than the prompts need, so cached blocks get evicted.
fn tight_config() -> EngineConfig {
    EngineConfig {
        block_size: BLOCK_SIZE,
        kv_cache_memory_bytes: Some(40 * BLOCK_SIZE * 256),
        max_model_len: Some(128),
        enable_prefix_caching: true,
        ..EngineConfig::default()
    }
}

fn prompts(count: usize, seed: u64) -> Vec<Vec<u32>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let prefixes: Vec<Vec<u32>> = (0..4)
        .map(|_| (0..40).map(|_| rng.random_range(1..256)).collect())
        .collect();
    (0..count)
        .map(|i| {
            let mut prompt = prefixes[i % prefixes.len()].clone();
            prompt.extend((0..rng.random_range(1..20)).map(|_| rng.random_range(1..256u32)));
            prompt
        })
        .collect()
}

/// The hashes a subscriber applying `batches` in order believes cached.
fn apply(batches: &[KvEventBatch]) -> (HashSet<BlockHash>, usize) {
    let mut live = HashSet::new();
    let mut num_removed = 0;
    for event in batches.iter().flat_map(|b| &b.events) {
        match event {
            KvCacheEvent::BlockStored(stored) => {
                assert_eq!(
                    stored.token_ids.len(),
                    stored.block_hashes.len() * BLOCK_SIZE
                );
                for hash in &stored.block_hashes {
                    assert!(live.insert(*hash), "{hash:?} stored twice");
                }
            }
            KvCacheEvent::BlockRemoved { block_hashes } => {
                for hash in block_hashes {
                    assert!(live.remove(hash), "{hash:?} removed but never stored");
                    num_removed += 1;
                }
            }
            KvCacheEvent::AllBlocksCleared => live.clear(),
        }
    }
    (live, num_removed)
}

/// Every stored run's tokens sit block-aligned in one request's tokens (prompt then output).
fn check_tokens(batches: &[KvEventBatch], sequences: &[Vec<u32>]) {
    for event in batches.iter().flat_map(|b| &b.events) {
        let KvCacheEvent::BlockStored(stored) = event else {
            continue;
        };
        let found = sequences.iter().any(|tokens| {
            tokens
                .chunks(BLOCK_SIZE)
                .collect::<Vec<_>>()
                .windows(stored.block_hashes.len())
                .any(|w| w.concat() == stored.token_ids)
        });
        assert!(
            found,
            "stored tokens {:?} are in no request",
            stored.token_ids
        );
        if stored.parent_block_hash.is_none() {
            assert!(
                sequences.iter().any(|t| t.starts_with(&stored.token_ids)),
                "a run without a parent starts a request"
            );
        }
    }
}

#[test]
fn a_subscriber_sees_exactly_what_the_prefix_cache_holds() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let handle = start(&model, tight_config());
    let mut events = handle.kv_events(10_000).unwrap();
    let prompts = prompts(16, 5);
    let requests = prompts
        .iter()
        .map(|p| request(&handle, p.clone(), greedy(8)))
        .collect();
    let outcomes = run_all(&handle, requests);
    wait_until_idle(&handle);
    let mut batches = Vec::new();
    while let Ok(batch) = events.try_recv() {
        batches.push(batch);
    }
    let stats = handle.stats();
    let (live, num_removed) = apply(&batches);
    assert!(stats.num_prefix_cache_evictions_total > 0, "{stats:?}");
    assert_eq!(live.len(), stats.num_cached_kv_blocks, "{stats:?}");
    assert_eq!(num_removed as u64, stats.num_prefix_cache_evictions_total);
    assert_eq!(stats.num_kv_event_batches_total, batches.len() as u64);
    assert_eq!(stats.num_kv_event_batches_dropped_total, 0);
    let sequences: Vec<Vec<u32>> = prompts
        .iter()
        .zip(&outcomes)
        .map(|(p, o)| [p.clone(), o.token_ids()].concat())
        .collect();
    check_tokens(&batches, &sequences);

    let num_cached = handle.blocking_reset_prefix_cache().unwrap();
    assert_eq!(num_cached, live.len());
    let last = events.blocking_recv().unwrap();
    assert_eq!(last.events, vec![KvCacheEvent::AllBlocksCleared]);
    handle.shutdown();
}

#[test]
fn a_subscriber_that_never_reads_loses_batches_not_tokens() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let prompts = prompts(12, 9);
    let expected = {
        let handle = start(&model, tight_config());
        let outputs: Vec<Vec<u32>> = prompts
            .iter()
            .map(|p| run_one(&handle, request(&handle, p.clone(), greedy(8))).token_ids())
            .collect();
        handle.shutdown();
        outputs
    };
    let handle = start(&model, tight_config());
    let _never_read = handle.kv_events(1).unwrap();
    let outputs: Vec<Vec<u32>> = prompts
        .iter()
        .map(|p| run_one(&handle, request(&handle, p.clone(), greedy(8))).token_ids())
        .collect();
    assert_eq!(outputs, expected);
    let stats = handle.stats();
    assert!(stats.num_kv_event_batches_total > 1, "{stats:?}");
    assert_eq!(
        stats.num_kv_event_batches_dropped_total,
        stats.num_kv_event_batches_total - 1,
        "one batch fits the queue, the rest are dropped"
    );
    handle.shutdown();
}
