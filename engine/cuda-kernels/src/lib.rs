//! Pagoda's CUDA kernels (docs/cuda.md): writing new keys and values into a paged KV cache, and
//! paged attention over it for every step the scheduler produces (decodes, prefills, chunked
//! prefills, prefills after a prefix-cache hit, mixed in one batch; split-K for long contexts).
//!
//! `plan` (how a step is split into thread blocks) is plain Rust and always built. The launchers
//! and the fatbin exist with the `cuda` feature only, so the workspace builds without CUDA.

pub mod plan;

#[cfg(feature = "cuda")]
pub mod fused;
#[cfg(feature = "cuda")]
pub mod launch;
#[cfg(feature = "cuda")]
pub mod module;
#[cfg(feature = "cuda")]
pub mod sample;
#[cfg(feature = "cuda")]
pub mod scratch;

#[cfg(feature = "cuda")]
pub use fused::{FusedKernels, RopeHeads, FUSED_FATBIN};
#[cfg(feature = "cuda")]
pub use launch::{
    cache_write, paged_attention, CacheGeometry, DeviceStep, Launch, LayerSettings, Rows,
};
#[cfg(feature = "cuda")]
pub use module::{CacheKernels, KernelDType, FATBIN};
pub use plan::{block_table_matrix, HeadCounts, SeqQuery, WorkPlan, SUPPORTED_HEAD_DIMS};
#[cfg(feature = "cuda")]
pub use sample::{RowSampling, SamplingKernel, TokenMasks, SAMPLE_FATBIN};
#[cfg(feature = "cuda")]
pub use scratch::SplitScratch;
