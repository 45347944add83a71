//! Blocks with reference counts and an O(1) LRU free list.

use super::free_list::FreeList;

/// Index of one KV block in the cache tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(pub u32);

impl BlockId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Owns every block's reference count; a block with count 0 sits in the free list.
#[derive(Debug, Clone)]
pub struct BlockPool {
    ref_counts: Vec<u32>,
    free: FreeList,
}

impl BlockPool {
    pub fn new(num_blocks: usize) -> Self {
        Self {
            ref_counts: vec![0; num_blocks],
            free: FreeList::full(num_blocks),
        }
    }

    pub fn num_blocks(&self) -> usize {
        self.ref_counts.len()
    }

    pub fn num_free_blocks(&self) -> usize {
        self.free.len()
    }

    pub fn num_used_blocks(&self) -> usize {
        self.num_blocks() - self.num_free_blocks()
    }

    pub fn ref_count(&self, block: BlockId) -> u32 {
        self.ref_counts[block.index()]
    }

    /// Takes `num_blocks` free blocks (reference count 1 each), or none if too few are free.
    pub fn allocate(&mut self, num_blocks: usize) -> Option<Vec<BlockId>> {
        if num_blocks > self.free.len() {
            return None;
        }
        let blocks: Vec<BlockId> = (0..num_blocks)
            .filter_map(|_| self.free.pop_front())
            .map(BlockId)
            .collect();
        for block in &blocks {
            self.ref_counts[block.index()] = 1;
        }
        Some(blocks)
    }

    /// Adds one reference to a block already in use.
    pub fn share(&mut self, block: BlockId) {
        debug_assert!(self.ref_counts[block.index()] > 0, "sharing a free block");
        self.ref_counts[block.index()] += 1;
    }

    /// Drops one reference per block. Blocks are released last-first, so a sequence's tail
    /// blocks are the first to be reused.
    pub fn release(&mut self, blocks: &[BlockId]) {
        for &block in blocks.iter().rev() {
            let count = &mut self.ref_counts[block.index()];
            debug_assert!(*count > 0, "releasing free block {block:?}");
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.free.push_back(block.0);
            }
        }
    }

    /// Checks free + used == total and that free blocks have no references and vice versa.
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
        if self.num_free_blocks() + self.num_used_blocks() != self.num_blocks() {
            return Err("free + used != total".into());
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
        assert_eq!(pool.num_free_blocks(), 1);
        pool.share(a[0]);
        pool.release(&a);
        assert_eq!(pool.ref_count(a[0]), 1);
        assert_eq!(pool.num_free_blocks(), 3);
        pool.check_invariants().expect("invariants");
        pool.release(&a[..1]);
        assert_eq!(pool.num_free_blocks(), 4);
        pool.check_invariants().expect("invariants");
    }

    #[test]
    fn released_tail_blocks_are_reused_first() {
        let mut pool = BlockPool::new(3);
        let blocks = pool.allocate(3).expect("blocks");
        pool.release(&blocks);
        let again = pool.allocate(1).expect("one block");
        assert_eq!(again[0], blocks[2]);
    }
}
