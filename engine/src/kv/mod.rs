//! The paged KV cache's bookkeeping: which block holds which tokens. No tensors here.

pub mod block_pool;
#[cfg(any(feature = "cuda", test))]
pub mod budget;
pub mod cache_size;
pub mod events;
pub mod free_list;
pub mod hash;
pub mod manager;
#[cfg(test)]
mod event_tests;
#[cfg(test)]
mod manager_tests;

pub use block_pool::BlockId;
pub use manager::KvCacheManager;
#[cfg(feature = "testing")]
pub use {
    block_pool::{num_blocks_for, BlockPool},
    hash::{BlockHash, BlockHasher, CacheScope},
    manager::ComputedBlocks,
};
