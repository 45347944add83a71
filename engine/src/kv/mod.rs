//! The paged KV cache's bookkeeping: which block holds which tokens. No tensors here.

pub mod block_pool;
pub mod free_list;
pub mod manager;

pub use block_pool::{BlockId, BlockPool};
pub use manager::KvCacheManager;

/// Number of blocks needed to hold `num_tokens` tokens.
pub fn num_blocks_for(num_tokens: usize, block_size: usize) -> usize {
    num_tokens.div_ceil(block_size)
}
