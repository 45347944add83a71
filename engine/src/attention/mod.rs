//! Paged attention: new keys/values go into their cache slots, then every query token attends to
//! its sequence's context through the block table. `cpu` is the CPU implementation (its kernel
//! in `cpu_kernel`: tiles as matrix products in `cpu_blocked`, split-key decode in `cpu_split`,
//! what they share in `cpu_tile`, softmax in `softmax`; its element types in `kv_element`); the
//! CUDA kernels (`cuda`) are tested against it.

pub mod cpu;
mod cpu_blocked;
pub mod cpu_kernel;
mod cpu_split;
mod cpu_tile;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod kv_element;
pub mod layer;
pub mod metadata;
pub mod paged_cache;
#[cfg(test)]
mod reference;
pub mod shape;
mod softmax;

pub use cpu::CpuKvCache;
pub use layer::LayerAttention;
pub use metadata::AttnMetadata;
pub use paged_cache::PagedKvCache;
#[cfg(feature = "testing")]
pub use shape::AttnShape;
