//! `KvCacheManager`: hands blocks to sequences and takes them back. Its verbs follow vLLM's:
//! `allocate_slots` returning `None` is how the scheduler learns it must preempt.

use super::block_pool::{BlockId, BlockPool};
use super::num_blocks_for;

#[derive(Debug, Clone)]
pub struct KvCacheManager {
    pool: BlockPool,
    block_size: usize,
}

impl KvCacheManager {
    pub fn new(num_blocks: usize, block_size: usize) -> Self {
        Self {
            pool: BlockPool::new(num_blocks),
            block_size,
        }
    }

    pub fn block_size(&self) -> usize {
        self.block_size
    }

    pub fn num_blocks(&self) -> usize {
        self.pool.num_blocks()
    }

    pub fn num_free_blocks(&self) -> usize {
        self.pool.num_free_blocks()
    }

    pub fn num_used_blocks(&self) -> usize {
        self.pool.num_used_blocks()
    }

    /// Capacity in tokens.
    pub fn num_token_slots(&self) -> usize {
        self.num_blocks() * self.block_size
    }

    /// Grows `block_table` so that it holds `num_computed_tokens + num_new_tokens` tokens.
    /// Returns `None` (and changes nothing) when too few blocks are free.
    pub fn allocate_slots(
        &mut self,
        block_table: &mut Vec<BlockId>,
        num_computed_tokens: usize,
        num_new_tokens: usize,
    ) -> Option<()> {
        let num_required = num_blocks_for(num_computed_tokens + num_new_tokens, self.block_size);
        let num_missing = num_required.saturating_sub(block_table.len());
        if num_missing > 0 {
            block_table.extend(self.pool.allocate(num_missing)?);
        }
        Some(())
    }

    /// Releases every block of a sequence and empties its table.
    pub fn free(&mut self, block_table: &mut Vec<BlockId>) {
        self.pool.release(block_table);
        block_table.clear();
    }

    /// Fraction of blocks in use, in [0, 1].
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocates_only_missing_blocks() {
        let mut manager = KvCacheManager::new(8, 4);
        let mut table = Vec::new();
        manager.allocate_slots(&mut table, 0, 5).expect("room");
        assert_eq!(table.len(), 2);
        manager.allocate_slots(&mut table, 5, 3).expect("room");
        assert_eq!(table.len(), 2, "8 tokens fit in 2 blocks of 4");
        manager.allocate_slots(&mut table, 8, 1).expect("room");
        assert_eq!(table.len(), 3);
        manager
            .check_invariants(std::iter::once(table.as_slice()))
            .expect("invariants");
        manager.free(&mut table);
        assert!(table.is_empty());
        assert_eq!(manager.num_free_blocks(), 8);
        manager
            .check_invariants(std::iter::empty())
            .expect("invariants");
    }

    #[test]
    fn refuses_without_side_effects_when_full() {
        let mut manager = KvCacheManager::new(2, 4);
        let mut first = Vec::new();
        manager.allocate_slots(&mut first, 0, 4).expect("room");
        let mut second = Vec::new();
        assert!(manager.allocate_slots(&mut second, 0, 8).is_none());
        assert!(second.is_empty());
        assert_eq!(manager.num_free_blocks(), 1);
        assert!((manager.usage() - 0.5).abs() < 1e-6);
    }
}
