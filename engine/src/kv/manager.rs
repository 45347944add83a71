//! `KvCacheManager`: hands blocks to sequences and takes them back, and finds cached prefixes.
//! Its verbs follow vLLM's: `allocate_slots` returning `None` is how the scheduler learns it must
//! preempt; `get_computed_blocks` is how a new request finds its cached prefix.

use super::block_pool::{num_blocks_for, BlockId, BlockPool};
use super::events::{KvCacheEvent, StoredBlocks, StoredLora};
use super::hash::{extend_block_hashes, hash_block, BlockHasher};
use crate::sequence::Sequence;

/// Blocks of a cached prefix, found for a sequence before it is admitted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComputedBlocks {
    pub blocks: Vec<BlockId>,
    pub num_tokens: usize,
}

#[derive(Debug, Clone)]
pub struct KvCacheManager {
    pool: BlockPool,
    block_size: usize,
    enable_prefix_caching: bool,
    hasher: BlockHasher,
}

impl KvCacheManager {
    pub fn new(num_blocks: usize, block_size: usize, enable_prefix_caching: bool) -> Self {
        Self::with_hasher(num_blocks, block_size, enable_prefix_caching, hash_block)
    }

    /// As `new`, with another block hash function (tests force collisions with it).
    pub fn with_hasher(
        num_blocks: usize,
        block_size: usize,
        enable_prefix_caching: bool,
        hasher: BlockHasher,
    ) -> Self {
        Self {
            pool: BlockPool::new(num_blocks),
            block_size,
            enable_prefix_caching,
            hasher,
        }
    }

    #[cfg(feature = "testing")]
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    pub fn num_blocks(&self) -> usize {
        self.pool.num_blocks()
    }

    #[cfg(feature = "testing")]
    pub fn num_free_blocks(&self) -> usize {
        self.pool.num_free_blocks()
    }

    pub fn num_used_blocks(&self) -> usize {
        self.pool.num_used_blocks()
    }

    pub fn num_cached_blocks(&self) -> usize {
        self.pool.num_cached_blocks()
    }

    pub fn num_evictions(&self) -> u64 {
        self.pool.num_evictions()
    }

    pub fn prefix_caching_enabled(&self) -> bool {
        self.enable_prefix_caching
    }

    /// The longest run of cached full blocks that starts the sequence. The last token is never
    /// taken from the cache, so that a fully cached prompt still yields logits; nothing is taken
    /// while the sequence still needs its prompt's log-probabilities.
    pub fn get_computed_blocks(&mut self, seq: &mut Sequence) -> ComputedBlocks {
        if !self.enable_prefix_caching || seq.prompt_logprobs.is_some() {
            return ComputedBlocks::default();
        }
        let max_blocks = (seq.num_tokens() - 1) / self.block_size;
        extend_block_hashes(
            &mut seq.block_hashes,
            &seq.token_ids,
            max_blocks,
            self.block_size,
            &seq.cache_scope,
            self.hasher,
        );
        let mut blocks = Vec::new();
        for (index, &hash) in seq.block_hashes.iter().take(max_blocks).enumerate() {
            let tokens = &seq.token_ids[index * self.block_size..(index + 1) * self.block_size];
            match self.pool.lookup(hash, tokens) {
                Some(block) => blocks.push(block),
                None => break,
            }
        }
        let num_tokens = blocks.len() * self.block_size;
        ComputedBlocks { blocks, num_tokens }
    }

    /// Grows `block_table` so that it holds `num_computed_tokens + num_new_tokens` tokens, first
    /// with `computed` (cached blocks taken over, counted in `num_computed_tokens`), then with
    /// fresh blocks. Returns `None` (and changes nothing) when too few blocks are free.
    pub fn allocate_slots(
        &mut self,
        block_table: &mut Vec<BlockId>,
        num_computed_tokens: usize,
        num_new_tokens: usize,
        computed: &[BlockId],
    ) -> Option<()> {
        let num_required = num_blocks_for(num_computed_tokens + num_new_tokens, self.block_size);
        let num_missing = num_required.saturating_sub(block_table.len() + computed.len());
        // Reviving a cached free block takes it out of the free list as well.
        let num_revived = computed.iter().filter(|&&b| self.pool.is_free(b)).count();
        if num_missing + num_revived > self.pool.num_free_blocks() {
            return None;
        }
        self.pool.touch(computed);
        block_table.extend_from_slice(computed);
        if num_missing > 0 {
            block_table.extend(self.pool.allocate(num_missing)?);
        }
        Some(())
    }

    /// Registers the sequence's newly completed blocks in the prefix cache (and logs them, one
    /// event per run of blocks actually registered).
    pub fn cache_full_blocks(&mut self, seq: &mut Sequence) {
        if !self.enable_prefix_caching {
            return;
        }
        let num_full = (seq.num_computed_tokens / self.block_size).min(seq.block_table.len());
        if num_full <= seq.num_registered_blocks {
            return;
        }
        extend_block_hashes(
            &mut seq.block_hashes,
            &seq.token_ids,
            num_full,
            self.block_size,
            &seq.cache_scope,
            self.hasher,
        );
        let mut run: Option<StoredBlocks> = None;
        for index in seq.num_registered_blocks..num_full {
            let tokens = &seq.token_ids[index * self.block_size..(index + 1) * self.block_size];
            let hash = seq.block_hashes[index];
            if self.pool.register(seq.block_table[index], hash, tokens) {
                if self.pool.log.is_enabled() {
                    let stored = run.get_or_insert_with(|| self.stored_run(seq, index));
                    stored.block_hashes.push(hash);
                    stored.token_ids.extend_from_slice(tokens);
                }
            } else if let Some(stored) = run.take() {
                self.pool.log.stored(stored);
            }
        }
        if let Some(stored) = run {
            self.pool.log.stored(stored);
        }
        seq.num_registered_blocks = num_full;
    }

    /// An empty store event for the sequence's blocks from `first_index` on.
    fn stored_run(&self, seq: &Sequence, first_index: usize) -> StoredBlocks {
        StoredBlocks {
            block_hashes: Vec::new(),
            parent_block_hash: first_index.checked_sub(1).map(|i| seq.block_hashes[i]),
            token_ids: Vec::new(),
            block_size: self.block_size,
            lora: seq.lora.as_deref().map(|adapter| StoredLora {
                id: adapter.id(),
                name: adapter.name().to_string(),
            }),
            cache_salt: seq.cache_scope.salt.clone(),
        }
    }

    /// Starts recording KV-cache events (`take_events` drains them).
    pub fn enable_events(&mut self) {
        self.pool.log.enable();
    }

    /// Stops recording KV-cache events.
    pub fn disable_events(&mut self) {
        self.pool.log.disable();
    }

    /// What the prefix cache stored, evicted or cleared since the last call, in order.
    pub fn take_events(&mut self) -> Vec<KvCacheEvent> {
        self.pool.log.take()
    }

    /// Releases every block of a sequence and empties its table (cached blocks stay cached).
    pub fn free(&mut self, seq: &mut Sequence) {
        self.pool.release(&seq.block_table);
        seq.block_table.clear();
        seq.num_registered_blocks = 0;
    }

    /// Gives back the blocks past those that hold the sequence's tokens: the slots reserved for
    /// proposed tokens the step rejected. They were never registered (only computed full blocks
    /// are), so they return to the free list.
    pub fn release_unused_tail(&mut self, seq: &mut Sequence) {
        let num_needed = num_blocks_for(seq.num_tokens(), self.block_size);
        if seq.block_table.len() <= num_needed {
            return;
        }
        let tail = seq.block_table.split_off(num_needed);
        self.pool.release(&tail);
        seq.num_registered_blocks = seq.num_registered_blocks.min(num_needed);
    }

    /// Forgets all cached prefixes; returns how many blocks left the cache.
    pub fn reset_prefix_cache(&mut self) -> usize {
        self.pool.reset_prefix_cache()
    }

    /// Fraction of blocks in use by sequences, in [0, 1].
    #[cfg(feature = "testing")]
    pub fn usage(&self) -> f32 {
        if self.num_blocks() == 0 {
            return 0.0;
        }
        self.num_used_blocks() as f32 / self.num_blocks() as f32
    }

    /// Checks the pool, and that each block's reference count equals the number of live block
    /// tables holding it.
    pub fn check_invariants<'a>(
        &self,
        live_tables: impl Iterator<Item = &'a [BlockId]>,
    ) -> Result<(), String> {
        self.pool.check_invariants()?;
        let mut expected = vec![0u32; self.num_blocks()];
        for table in live_tables {
            for block in table {
                expected[block.index()] += 1;
            }
        }
        for (index, &count) in expected.iter().enumerate() {
            let actual = self.pool.ref_count(BlockId(index as u32));
            if actual != count {
                return Err(format!(
                    "block {index}: reference count {actual}, held by {count} tables"
                ));
            }
        }
        Ok(())
    }
}
