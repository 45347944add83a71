//! `KvCacheManager` with prefix caching: hits, partial hits, salts, collisions, eviction.

use super::hash::{BlockHash, CacheScope};
use super::manager::KvCacheManager;
use crate::request::{EngineRequest, RequestId, SamplingParams, StopConditions};
use crate::sequence::Sequence;

const BLOCK_SIZE: usize = 4;

pub(super) fn sequence(id: u64, prompt: Vec<u32>, salt: Option<&str>) -> Sequence {
    let mut request = EngineRequest::new(
        RequestId(id),
        prompt,
        SamplingParams::greedy(),
        StopConditions::default(),
    );
    request.cache_salt = salt.map(str::to_string);
    Sequence::new(request, 4)
}

/// Admits a sequence the way the scheduler does, then marks its whole prompt computed.
pub(super) fn admit_and_compute(manager: &mut KvCacheManager, seq: &mut Sequence) -> usize {
    let computed = manager.get_computed_blocks(seq);
    let num_new = seq.num_tokens() - computed.num_tokens;
    manager
        .allocate_slots(
            &mut seq.block_table,
            computed.num_tokens,
            num_new,
            &computed.blocks,
        )
        .expect("room");
    seq.num_registered_blocks = computed.blocks.len();
    seq.num_computed_tokens = seq.num_tokens();
    manager.cache_full_blocks(seq);
    computed.num_tokens
}

fn check(manager: &KvCacheManager, seqs: &[&Sequence]) {
    manager
        .check_invariants(seqs.iter().map(|s| s.block_table.as_slice()))
        .expect("invariants");
}

#[test]
fn a_shared_prefix_is_reused_and_the_last_token_always_computed() {
    let mut manager = KvCacheManager::new(16, BLOCK_SIZE, true);
    let mut first = sequence(1, (0..10).collect(), None);
    assert_eq!(admit_and_compute(&mut manager, &mut first), 0);
    // Same 8-token prefix (two full blocks), different tail.
    let mut second = sequence(2, (0..8).chain([50, 51, 52]).collect(), None);
    assert_eq!(admit_and_compute(&mut manager, &mut second), 8);
    assert_eq!(first.block_table[..2], second.block_table[..2]);
    check(&manager, &[&first, &second]);
    // An identical 8-token prompt reuses one block only: its last token must be computed.
    let mut exact = sequence(3, (0..8).collect(), None);
    assert_eq!(admit_and_compute(&mut manager, &mut exact), 4);
    check(&manager, &[&first, &second, &exact]);
}

#[test]
fn freed_blocks_stay_cached_until_evicted_lru_first() {
    let mut manager = KvCacheManager::new(6, BLOCK_SIZE, true);
    let mut a = sequence(1, (0..9).collect(), None);
    let mut b = sequence(2, (100..109).collect(), None);
    admit_and_compute(&mut manager, &mut a);
    admit_and_compute(&mut manager, &mut b);
    manager.free(&mut a);
    manager.free(&mut b);
    assert_eq!(manager.num_used_blocks(), 0);
    assert_eq!(manager.num_cached_blocks(), 4);
    // Three fresh blocks: first the two partial tail blocks (nothing cached in them), then one
    // cached block: a's were freed first, tail block first.
    let mut fresh = sequence(3, (200..212).collect(), None);
    admit_and_compute(&mut manager, &mut fresh);
    assert_eq!(
        manager.num_evictions(),
        1,
        "only a's second full block is evicted; a's first and b's survive"
    );
    let mut b_again = sequence(4, (100..109).collect(), None);
    assert_eq!(manager.get_computed_blocks(&mut b_again).num_tokens, 8);
    let mut a_again = sequence(5, (0..9).collect(), None);
    assert_eq!(manager.get_computed_blocks(&mut a_again).num_tokens, 4);
    check(&manager, &[&fresh]);
}

#[test]
fn salts_separate_tenants() {
    let mut manager = KvCacheManager::new(16, BLOCK_SIZE, true);
    let prompt: Vec<u32> = (0..9).collect();
    admit_and_compute(
        &mut manager,
        &mut sequence(1, prompt.clone(), Some("tenant-a")),
    );
    assert_eq!(
        admit_and_compute(
            &mut manager,
            &mut sequence(2, prompt.clone(), Some("tenant-b"))
        ),
        0
    );
    assert_eq!(
        admit_and_compute(&mut manager, &mut sequence(3, prompt.clone(), None)),
        0
    );
    assert_eq!(
        admit_and_compute(&mut manager, &mut sequence(4, prompt, Some("tenant-a"))),
        8
    );
}

#[test]
fn colliding_hashes_never_return_another_prefix() {
    fn constant(_: Option<BlockHash>, _: &[u32], _: &CacheScope) -> BlockHash {
        BlockHash(42)
    }
    let mut manager = KvCacheManager::with_hasher(16, BLOCK_SIZE, true, constant);
    let mut first = sequence(1, (0..9).collect(), None);
    admit_and_compute(&mut manager, &mut first);
    let mut other = sequence(2, (10..19).collect(), None);
    assert_eq!(
        admit_and_compute(&mut manager, &mut other),
        0,
        "same hash, other tokens: a miss"
    );
    assert!(first
        .block_table
        .iter()
        .all(|b| !other.block_table.contains(b)));
    let mut same = sequence(3, (0..9).collect(), None);
    assert_eq!(
        admit_and_compute(&mut manager, &mut same),
        4,
        "only the first block is registered under hash 42"
    );
    check(&manager, &[&first, &other, &same]);
}

#[test]
fn disabled_prefix_caching_never_hits() {
    let mut manager = KvCacheManager::new(16, BLOCK_SIZE, false);
    let prompt: Vec<u32> = (0..9).collect();
    admit_and_compute(&mut manager, &mut sequence(1, prompt.clone(), None));
    assert_eq!(
        admit_and_compute(&mut manager, &mut sequence(2, prompt, None)),
        0
    );
    assert_eq!(manager.num_cached_blocks(), 0);
}

#[test]
fn reviving_cached_blocks_counts_against_free_space() {
    let mut manager = KvCacheManager::new(3, BLOCK_SIZE, true);
    let mut a = sequence(1, (0..9).collect(), None);
    admit_and_compute(&mut manager, &mut a);
    manager.free(&mut a);
    // 13 tokens sharing a's 8-token prefix need 4 blocks: 2 revived + 2 fresh > 3 in total.
    let mut b = sequence(2, (0..8).chain(60..65).collect(), None);
    let computed = manager.get_computed_blocks(&mut b);
    assert_eq!(computed.num_tokens, 8);
    assert!(manager
        .allocate_slots(&mut b.block_table, 8, 5, &computed.blocks)
        .is_none());
    assert!(b.block_table.is_empty());
    check(&manager, &[]);
    assert_eq!(manager.num_free_blocks(), 3);
}
