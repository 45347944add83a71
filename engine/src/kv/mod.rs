//! The paged KV cache's bookkeeping: which block holds which tokens. No tensors here.

pub mod block_count;
pub mod block_pool;
pub mod budget;
pub mod free_list;
pub mod hash;
pub mod manager;
#[cfg(test)]
mod manager_tests;

pub use block_count::num_blocks_for;
pub use block_pool::{BlockId, BlockPool};
pub use hash::{BlockHash, BlockHasher};
pub use manager::{ComputedBlocks, KvCacheManager};
