//! Paged attention: new keys/values go into their cache slots, then every query token attends to
//! its sequence's context through the block table. `cpu` is the CPU implementation (its kernel in
//! `cpu_kernel`, its element types in `kv_element`); the CUDA kernels (`cuda`) are tested
//! against it.

pub mod cpu;
pub mod cpu_kernel;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod kv_element;
pub mod metadata;
pub mod paged_cache;
#[cfg(test)]
mod reference;
pub mod shape;

pub use cpu::CpuKvCache;
pub use metadata::AttnMetadata;
pub use paged_cache::PagedKvCache;
#[cfg(feature = "testing")]
pub use shape::AttnShape;
