//! KV-cache events from `KvCacheManager`: what is stored, evicted and cleared, in order, with
//! the hash chain the prefix cache really uses.

use super::events::{KvCacheEvent, StoredBlocks};
use super::hash::BlockHash;
use super::manager::KvCacheManager;
use super::manager_tests::{admit_and_compute, sequence};

const BLOCK_SIZE: usize = 4;

fn stored(events: &[KvCacheEvent]) -> Vec<&StoredBlocks> {
    events
        .iter()
        .filter_map(|event| match event {
            KvCacheEvent::BlockStored(stored) => Some(stored),
            _ => None,
        })
        .collect()
}

fn removed(events: &[KvCacheEvent]) -> Vec<BlockHash> {
    events
        .iter()
        .flat_map(|event| match event {
            KvCacheEvent::BlockRemoved { block_hashes } => block_hashes.clone(),
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn stores_carry_the_chain_the_tokens_and_the_salt_and_a_shared_prefix_is_not_stored_twice() {
    let mut manager = KvCacheManager::new(16, BLOCK_SIZE, true);
    manager.enable_events();
    let mut first = sequence(1, (0..10).collect(), Some("tenant"));
    admit_and_compute(&mut manager, &mut first);
    let events = manager.take_events();
    let runs = stored(&events);
    assert_eq!(runs.len(), 1, "{events:?}");
    assert_eq!(runs[0].block_hashes, first.block_hashes[..2].to_vec());
    assert_eq!(runs[0].parent_block_hash, None);
    assert_eq!(runs[0].token_ids, (0..8).collect::<Vec<u32>>());
    assert_eq!(runs[0].block_size, BLOCK_SIZE);
    assert_eq!(runs[0].cache_salt.as_deref(), Some("tenant"));
    assert_eq!(runs[0].lora, None);

    // Same salt, same first two blocks, then two more: only the new blocks are stored, chained
    // to the last shared one.
    let mut second = sequence(2, (0..17).collect(), Some("tenant"));
    assert_eq!(admit_and_compute(&mut manager, &mut second), 8);
    let events = manager.take_events();
    let runs = stored(&events);
    assert_eq!(runs.len(), 1, "{events:?}");
    assert_eq!(runs[0].parent_block_hash, Some(first.block_hashes[1]));
    assert_eq!(runs[0].block_hashes, second.block_hashes[2..4].to_vec());
    assert_eq!(runs[0].token_ids, (8..16).collect::<Vec<u32>>());
    assert!(manager.take_events().is_empty(), "drained");
}

#[test]
fn an_eviction_is_logged_before_the_block_is_stored_again_and_a_reset_clears_all() {
    // Four blocks: the first sequence's two cached blocks must be evicted for the third one.
    let mut manager = KvCacheManager::new(4, BLOCK_SIZE, true);
    manager.enable_events();
    let mut first = sequence(1, (0..9).collect(), None);
    admit_and_compute(&mut manager, &mut first);
    manager.free(&mut first);
    let mut second = sequence(2, (100..109).collect(), None);
    admit_and_compute(&mut manager, &mut second);
    manager.free(&mut second);
    let mut history = manager.take_events();
    let mut third = sequence(3, (200..213).collect(), None);
    admit_and_compute(&mut manager, &mut third);
    let events = manager.take_events();
    history.extend(events.iter().cloned());
    assert_eq!(removed(&history).len(), manager.num_evictions() as usize);
    assert!(removed(&events)
        .iter()
        .all(|h| first.block_hashes.contains(h) || second.block_hashes.contains(h)));
    let first_store = events
        .iter()
        .position(|e| matches!(e, KvCacheEvent::BlockStored(_)))
        .expect("the third sequence's blocks are stored");
    let last_removal = events
        .iter()
        .rposition(|e| matches!(e, KvCacheEvent::BlockRemoved { .. }))
        .expect("blocks were evicted");
    assert!(last_removal < first_store, "{events:?}");
    let live = live_blocks(&history);
    assert_eq!(live.len(), manager.num_cached_blocks(), "{history:?}");
    assert!(third.block_hashes.iter().all(|h| live.contains(h)));
    assert_eq!(manager.reset_prefix_cache(), live.len());
    assert_eq!(manager.take_events(), vec![KvCacheEvent::AllBlocksCleared]);
    manager.disable_events();
    manager.reset_prefix_cache();
    assert!(manager.take_events().is_empty());
}

/// The hashes a subscriber applying `events` in order believes cached.
fn live_blocks(events: &[KvCacheEvent]) -> std::collections::HashSet<BlockHash> {
    let mut live = std::collections::HashSet::new();
    for event in events {
        match event {
            KvCacheEvent::BlockStored(stored) => live.extend(stored.block_hashes.iter().copied()),
            KvCacheEvent::BlockRemoved { block_hashes } => {
                block_hashes.iter().for_each(|h| assert!(live.remove(h), "{h:?} never stored"));
            }
            KvCacheEvent::AllBlocksCleared => live.clear(),
        }
    }
    live
}

#[test]
fn without_a_subscriber_nothing_is_recorded() {
    let mut manager = KvCacheManager::new(8, BLOCK_SIZE, true);
    let mut seq = sequence(1, (0..9).collect(), None);
    admit_and_compute(&mut manager, &mut seq);
    manager.reset_prefix_cache();
    assert!(manager.take_events().is_empty());
}
