//! Blocks with reference counts, an O(1) LRU free list and the hash → block map of prefix caching.
//!
//! A freed block that carries a hash stays cached in the free list; it is evicted (its hash
//! dropped) only when it is taken for fresh use, least recently freed first. A cache hit takes it
//! out of the middle of the free list in O(1). A freed block without a hash (prefix caching off,
//! or a partial block) goes to the head of the list and is reused first: no cached block is
//! evicted while such a block is free, and on the CPU, whose cache memory is committed only when
//! first written, a server's memory stays at the blocks its load needs instead of growing through
//! the whole cache.

use std::collections::HashMap;

use super::events::KvEventLog;
use super::free_list::FreeList;
use super::hash::BlockHash;

/// Index of one KV block in the cache tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(pub u32);

/// Number of blocks needed to hold `num_tokens` tokens.
pub fn num_blocks_for(num_tokens: usize, block_size: usize) -> usize {
    num_tokens.div_ceil(block_size)
}

impl BlockId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Debug, Clone)]
pub struct BlockPool {
    ref_counts: Vec<u32>,
    free: FreeList,
    /// Per block: its hash and token ids while it is in the prefix cache.
    cached_as: Vec<Option<(BlockHash, Vec<u32>)>>,
    cached: HashMap<BlockHash, BlockId>,
    num_evictions: u64,
    /// Evictions and resets, for KV-cache events (stores are logged by the manager).
    pub(crate) log: KvEventLog,
}

impl BlockPool {
    pub fn new(num_blocks: usize) -> Self {
        Self {
            ref_counts: vec![0; num_blocks],
            free: FreeList::full(num_blocks),
            cached_as: vec![None; num_blocks],
            cached: HashMap::new(),
            num_evictions: 0,
            log: KvEventLog::default(),
        }
    }

    pub fn num_blocks(&self) -> usize {
        self.ref_counts.len()
    }

    /// Blocks not referenced by any sequence (cached ones included: they are evictable).
    pub fn num_free_blocks(&self) -> usize {
        self.free.len()
    }

    pub fn num_used_blocks(&self) -> usize {
        self.num_blocks() - self.num_free_blocks()
    }

    pub fn num_cached_blocks(&self) -> usize {
        self.cached.len()
    }

    pub fn num_evictions(&self) -> u64 {
        self.num_evictions
    }

    pub fn ref_count(&self, block: BlockId) -> u32 {
        self.ref_counts[block.index()]
    }

    pub fn is_free(&self, block: BlockId) -> bool {
        self.free.contains(block.0)
    }

    /// Takes `num_blocks` fresh blocks (reference count 1 each), evicting cached ones in LRU
    /// order, or none if too few are free.
    pub fn allocate(&mut self, num_blocks: usize) -> Option<Vec<BlockId>> {
        if num_blocks > self.free.len() {
            return None;
        }
        let blocks: Vec<BlockId> = (0..num_blocks)
            .filter_map(|_| self.free.pop_front())
            .map(BlockId)
            .collect();
        for &block in &blocks {
            self.evict(block);
            self.ref_counts[block.index()] = 1;
        }
        Some(blocks)
    }

    fn evict(&mut self, block: BlockId) {
        if let Some((hash, _)) = self.cached_as[block.index()].take() {
            if self.cached.get(&hash) == Some(&block) {
                self.cached.remove(&hash);
                self.log.removed(hash);
            }
            self.num_evictions += 1;
        }
    }

    /// Adds one reference to each block, reviving cached free blocks.
    pub fn touch(&mut self, blocks: &[BlockId]) {
        for &block in blocks {
            if self.ref_counts[block.index()] == 0 {
                self.free.remove(block.0);
            }
            self.ref_counts[block.index()] += 1;
        }
    }

    /// Drops one reference per block. Blocks are released last-first, so a sequence's tail
    /// blocks are the first cached ones to be evicted; blocks without a hash are reused first.
    pub fn release(&mut self, blocks: &[BlockId]) {
        for &block in blocks.iter().rev() {
            let count = &mut self.ref_counts[block.index()];
            debug_assert!(*count > 0, "releasing free block {block:?}");
            *count = count.saturating_sub(1);
            if *count == 0 {
                if self.cached_as[block.index()].is_some() {
                    self.free.push_back(block.0);
                } else {
                    self.free.push_front(block.0);
                }
            }
        }
    }

    /// The cached block holding exactly `token_ids` under `hash`, if any.
    pub fn lookup(&self, hash: BlockHash, token_ids: &[u32]) -> Option<BlockId> {
        let block = *self.cached.get(&hash)?;
        let (_, tokens) = self.cached_as[block.index()].as_ref()?;
        // Equal hashes with different tokens are a collision: never reuse such a block.
        (tokens.as_slice() == token_ids).then_some(block)
    }

    /// Records that `block` (full, computed) holds `token_ids` under `hash`; returns whether it
    /// did. A hash already present (a duplicate or a collision) leaves the block uncached.
    pub fn register(&mut self, block: BlockId, hash: BlockHash, token_ids: &[u32]) -> bool {
        if self.cached_as[block.index()].is_some() || self.cached.contains_key(&hash) {
            return false;
        }
        self.cached.insert(hash, block);
        self.cached_as[block.index()] = Some((hash, token_ids.to_vec()));
        true
    }

    /// Forgets every cached prefix; returns how many blocks were dropped from the cache.
    pub fn reset_prefix_cache(&mut self) -> usize {
        let num_dropped = self.cached.len();
        self.cached.clear();
        self.cached_as.iter_mut().for_each(|entry| *entry = None);
        self.log.cleared();
        num_dropped
    }

    /// free + used == total; free blocks have no references and used ones have some; every map
    /// entry points at a block cached under that hash.
    pub fn check_invariants(&self) -> Result<(), String> {
        let num_zero = self.ref_counts.iter().filter(|&&c| c == 0).count();
        if num_zero != self.free.len() {
            return Err(format!(
                "{num_zero} blocks have no reference but {} are in the free list",
                self.free.len()
            ));
        }
        if let Some(block) = self.free.iter().find(|&b| self.ref_counts[b as usize] != 0) {
            return Err(format!("free block {block} still has references"));
        }
        for (hash, block) in &self.cached {
            if self.cached_as[block.index()].as_ref().map(|(h, _)| h) != Some(hash) {
                return Err(format!(
                    "hash map entry {hash:?} points at block {block:?} cached otherwise"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocate_share_release_keep_counts() {
        let mut pool = BlockPool::new(4);
        let a = pool.allocate(3).expect("three free blocks");
        assert_eq!(pool.num_free_blocks(), 1);
        assert!(pool.allocate(2).is_none(), "no partial allocation");
        pool.touch(&a[..1]);
        pool.release(&a);
        assert_eq!(pool.ref_count(a[0]), 1);
        assert_eq!(pool.num_free_blocks(), 3);
        pool.check_invariants().expect("invariants");
        pool.release(&a[..1]);
        assert_eq!(pool.num_free_blocks(), 4);
        pool.check_invariants().expect("invariants");
    }

    #[test]
    fn uncached_released_blocks_are_reused_before_untouched_and_cached_ones() {
        let mut pool = BlockPool::new(6);
        let cached = pool.allocate(1).expect("a block");
        pool.register(cached[0], BlockHash(9), &[9; 4]);
        pool.release(&cached);
        let blocks = pool.allocate(2).expect("blocks");
        assert!(!blocks.contains(&cached[0]), "never-used blocks before evicting a cached one");
        pool.release(&blocks);
        let again = pool.allocate(2).expect("blocks");
        assert_eq!(again, blocks, "the released blocks come back, not the untouched ones");
        assert_eq!(pool.num_evictions(), 0);
        assert_eq!(pool.lookup(BlockHash(9), &[9; 4]), Some(cached[0]));
        pool.check_invariants().expect("invariants");
    }

    #[test]
    fn cached_blocks_survive_release_and_are_evicted_in_lru_order() {
        let mut pool = BlockPool::new(3);
        let blocks = pool.allocate(3).expect("blocks");
        for (i, &block) in blocks.iter().enumerate() {
            pool.register(block, BlockHash(i as u64), &[i as u32; 4]);
        }
        pool.release(&blocks[..1]);
        pool.release(&blocks[1..]);
        // Free order (LRU first): 0, then 2, 1 (a sequence's tail goes first).
        assert_eq!(pool.lookup(BlockHash(1), &[1; 4]), Some(blocks[1]));
        let fresh = pool.allocate(1).expect("one block");
        assert_eq!(
            fresh[0], blocks[0],
            "the least recently freed block is evicted first"
        );
        assert_eq!(pool.num_evictions(), 1);
        assert_eq!(pool.lookup(BlockHash(0), &[0; 4]), None);
        // A hit revives a block from the middle of the free list.
        pool.touch(&[blocks[1]]);
        assert!(!pool.is_free(blocks[1]));
        assert_eq!(pool.allocate(1).expect("one block")[0], blocks[2]);
        pool.check_invariants().expect("invariants");
    }

    #[test]
    fn a_hash_collision_is_never_a_hit() {
        let mut pool = BlockPool::new(2);
        let blocks = pool.allocate(2).expect("blocks");
        assert!(pool.register(blocks[0], BlockHash(7), &[1, 2]));
        assert!(
            !pool.register(blocks[1], BlockHash(7), &[3, 4]),
            "a colliding hash leaves the block uncached"
        );
        assert_eq!(pool.lookup(BlockHash(7), &[1, 2]), Some(blocks[0]));
        assert_eq!(pool.lookup(BlockHash(7), &[3, 4]), None);
        assert_eq!(pool.num_cached_blocks(), 1);
        assert_eq!(pool.reset_prefix_cache(), 1);
        assert_eq!(pool.lookup(BlockHash(7), &[1, 2]), None);
    }
}
